#!/usr/bin/env bash
# Store format 2: what 10,000 small text files (0.2-3 KB) cost on disk
# after one put, packed, against the sum of their zstd frames; and the
# same files put in batches of 99 (which stay loose, as format 1 stores
# every object), for the ratio the packs replace. Public tools only (du).
#
#   COFFER=target/release/coffer BENCH_DIR=/tmp/x bench/packs.sh
set -euo pipefail
COFFER=${COFFER:-target/release/coffer}
if [ -z "${BENCH_DIR:-}" ]; then
  BENCH_DIR=$(mktemp -d)
  trap 'rm -rf "$BENCH_DIR"' EXIT
fi
DIR=$BENCH_DIR/packs
N=${N:-10000}
rm -rf "$DIR" && mkdir -p "$DIR/files"
python3 - "$DIR/files" "$N" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
words = ["alpha", "beta", "gamma", "delta", "result", "error", "value", "test",
         "def", "return", "import", "self", "assert", "print", "config", "path"]
for i in range(n):
    d = os.path.join(root, f"{i // 99:04d}")
    os.makedirs(d, exist_ok=True)
    size = rng.randint(200, 3000)
    out = []
    while sum(map(len, out)) < size:
        out.append(" ".join(rng.choice(words) for _ in range(8)) + f" {rng.randint(0, 10**6)}\n")
    open(os.path.join(d, f"f{i}.txt"), "w").write("".join(out)[:size])
PY
disk() { du -sB1 "$1/objects" "$1/packs" 2>/dev/null | awk '{s+=$1} END {print s}'; }
frames() { "$COFFER" --json --store "$1" stats | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["storedBytes"])'; }

"$COFFER" --store "$DIR/packed" init >/dev/null
"$COFFER" --store "$DIR/packed" put "$DIR/files" >/dev/null
"$COFFER" --store "$DIR/loose" init >/dev/null
for d in "$DIR"/files/*/; do "$COFFER" --store "$DIR/loose" put "$d" >/dev/null; done
for s in packed loose; do
  # Objects of the files only: the put's own records are a few objects more.
  printf '%-7s disk %10d B  frames %10d B  ratio %.2fx\n' "$s" \
    "$(disk "$DIR/$s")" "$(frames "$DIR/$s")" \
    "$(python3 -c "print($(disk "$DIR/$s") / $(frames "$DIR/$s"))")"
done
