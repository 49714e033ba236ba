#!/usr/bin/env bash
# Batch lookups: `coffer has --stdin` against `git cat-file --batch-check`
# on the same OBJECTS small files (default 100,000; 0.5-4 KiB, unique),
# both asked for every object once, in one shuffled order (seeded), plus
# as many names that are absent. git is measured twice: on loose objects
# (one file per object, as coffer's format 1 stores them) and after
# `git repack -ad` (one pack and its index).
#
#   bench/batch.sh                    # 100,000 objects
#   OBJECTS=20000 bench/batch.sh      # a quicker run
#   COFFER=path/to/coffer bench/batch.sh
#
# Five interleaved rounds; medians and the rate ratio (coffer's names per
# second over git's) are printed. Files go to $BENCH_DIR/batch
# (default target/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
for t in git python3; do command -v $t >/dev/null || { echo "needs $t"; exit 1; }; done
B=${BENCH_DIR:-$PWD/target/bench}/batch
OBJECTS=${OBJECTS:-100000}
ROUNDS=${ROUNDS:-5}
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
rm -rf "$B"; mkdir -p "$B/in"
S="$B/store"
"$COFFER" --store "$S" init -q
git init -q "$B/git"

for ((n = 0; n < OBJECTS / 10000; n++)); do
  python3 bench/gen.py small "$B/in/$n" "$((n + 1000))"
done
"$COFFER" --store "$S" -q put "$B/in"
( cd "$B/git" && GIT_WORK_TREE="$B/in" git --git-dir="$B/git/.git" add -A . )

# The names: every object's, plus as many absent ones, shuffled alike.
"$COFFER" --store "$S" --json ls | python3 -c '
import json, sys
for o in json.load(sys.stdin)["result"]["objects"]:
    print(o["digest"])' > "$B/present.coffer"
GIT_WORK_TREE="$B/in" git --git-dir="$B/git/.git" ls-files -s | awk '{print $2}' > "$B/present.git"
python3 - "$B" <<'PY'
import hashlib, random, sys
b = sys.argv[1]
for kind, absent in (("coffer", lambda i: "sha256:" + hashlib.sha256(b"absent %d" % i).hexdigest()),
                     ("git", lambda i: hashlib.sha1(b"absent %d" % i).hexdigest())):
    names = open(f"{b}/present.{kind}").read().split()
    names += [absent(i) for i in range(len(names))]
    random.Random(7).shuffle(names)
    open(f"{b}/names.{kind}", "w").write("\n".join(names) + "\n")
PY
echo "names: $(wc -l < "$B/names.coffer") coffer, $(wc -l < "$B/names.git") git ($(wc -l < "$B/present.coffer") present each)"

# Every run must answer every line: the answers are counted once.
"$COFFER" --store "$S" has --stdin < "$B/names.coffer" > "$B/out.coffer" 2>/dev/null || true
git --git-dir="$B/git/.git" cat-file --batch-check < "$B/names.git" > "$B/out.git"
for k in coffer git; do
  echo "$k: $(grep -vc ' missing$' "$B/out.$k") present, $(grep -c ' missing$' "$B/out.$k") missing"
done

cp -r "$B/git" "$B/git-packed"
git --git-dir="$B/git-packed/.git" repack -adq
git --git-dir="$B/git-packed/.git" prune-packed

python3 - "$B" "$COFFER" "$S" "$ROUNDS" <<'PY'
import statistics, subprocess, sys, time
b, coffer, store, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runs = {
    "coffer has --stdin": ([coffer, "--store", store, "has", "--stdin"], "coffer"),
    "git cat-file --batch-check (loose)": (["git", "--git-dir", f"{b}/git/.git", "cat-file", "--batch-check"], "git"),
    "git cat-file --batch-check (packed)": (["git", "--git-dir", f"{b}/git-packed/.git", "cat-file", "--batch-check"], "git"),
}
times = {k: [] for k in runs}
lines = {k: sum(1 for _ in open(f"{b}/names.{kind}")) for k, (_, kind) in runs.items()}
for _ in range(rounds):
    for k, (cmd, kind) in runs.items():
        with open(f"{b}/names.{kind}", "rb") as inp:
            t = time.perf_counter()
            subprocess.run(cmd, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[k].append(time.perf_counter() - t)
rate = {k: lines[k] / statistics.median(v) for k, v in times.items()}
for k, v in times.items():
    print(f"{k}: median {statistics.median(v):.3f} s (runs {', '.join(f'{x:.3f}' for x in v)}), {rate[k]:,.0f} names/s")
ours = rate["coffer has --stdin"]
for k in list(runs)[1:]:
    print(f"rate ratio coffer / {k}: {ours / rate[k]:.2f}x")
PY
