#!/usr/bin/env bash
# Times `coffer put` against public tools on the same bytes, in the same run,
# and prints each ratio (lower is better for time ratios).
#
#   bench/put.sh            # full size: 1 GiB, 256 MiB, 20,000 files
#   SCALE=small bench/put.sh   # quick smoke run: 64 MiB, 32 MiB, 2,000 files
#
# Inputs are generated once into $BENCH_DIR (default target/bench) and read
# from a warm page cache by every tool. Peers:
#   (a) 1 GiB incompressible: durable copy (dd conv=fsync), openssl dgst -sha256
#   (b) 256 MiB JSONL: zstd -3 -T0 (time and output size), openssl dgst -sha256
#   (c) 20,000 files 1-64 KiB, 30% duplicates: git init && git add -A (no fsync)
# Peak RSS comes from GNU time (%M).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
for t in zstd openssl git dd python3; do command -v $t >/dev/null || { echo "needs $t"; exit 1; }; done

if [ "${SCALE:-full}" = small ]; then BIG_MIB=64; TEXT_MIB=32; FILES=2000; else BIG_MIB=1024; TEXT_MIB=256; FILES=20000; fi
B=${BENCH_DIR:-$PWD/target/bench}
mkdir -p "$B"
cargo build --release -q -p coffer-cli
COFFER=$PWD/target/release/coffer

[ -f "$B/random-$BIG_MIB.bin" ] || head -c $((BIG_MIB << 20)) /dev/urandom > "$B/random-$BIG_MIB.bin"
[ -f "$B/session-$TEXT_MIB.jsonl" ] || python3 bench/gen.py jsonl "$B/session-$TEXT_MIB.jsonl" "$TEXT_MIB"
[ -d "$B/tree-$FILES" ] || python3 bench/gen.py tree "$B/tree-$FILES" "$FILES"
BIG=$B/random-$BIG_MIB.bin; TEXT=$B/session-$TEXT_MIB.jsonl; TREE=$B/tree-$FILES
cat "$BIG" "$TEXT" > /dev/null; find "$TREE" -type f -exec cat {} + > /dev/null
sync

# run NAME CMD... : prints "seconds peak_kib" for one run of CMD.
measure() {
  /usr/bin/time -o "$B/time.out" -f "%e %M" "$@" > /dev/null 2> "$B/stderr.out" || { cat "$B/stderr.out" >&2; return 1; }
  tail -n 1 "$B/time.out"
}
fresh_store() { rm -rf "$B/store"; "$COFFER" --store "$B/store" init -q; sync; sleep 1; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

echo "== (a) $BIG_MIB MiB incompressible"
fresh_store
read -r c_s c_kb < <(measure "$COFFER" --store "$B/store" put -q "$BIG")
rm -f "$B/copy"; sync
read -r d_s _ < <(measure dd if="$BIG" of="$B/copy" bs=1M conv=fsync)
rm -f "$B/copy"
read -r o_s _ < <(measure openssl dgst -sha256 "$BIG")
echo "coffer put ${c_s}s (peak ${c_kb} KiB) | durable copy ${d_s}s | openssl sha256 ${o_s}s"
echo "ratio coffer/durable-copy: $(ratio "$c_s" "$d_s")   (target <= 1.3)"

echo "== (b) $TEXT_MIB MiB JSONL"
fresh_store
read -r c_s c_kb < <(measure "$COFFER" --store "$B/store" put -q "$TEXT")
stored=$("$COFFER" --store "$B/store" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["storedBytes"])')
read -r z_s _ < <(measure zstd -3 -T0 -q -f "$TEXT" -o "$B/text.zst")
zsize=$(stat -c %s "$B/text.zst"); rm -f "$B/text.zst"
read -r o_s _ < <(measure openssl dgst -sha256 "$TEXT")
echo "coffer put ${c_s}s (peak ${c_kb} KiB, stored $stored B) | zstd -3 -T0 ${z_s}s ($zsize B) | openssl sha256 ${o_s}s"
echo "ratio coffer/zstd time: $(ratio "$c_s" "$z_s")   (target <= 1.1)"
echo "ratio coffer/zstd stored size: $(ratio "$stored" "$zsize")   (target <= 1.1)"

echo "== (c) $FILES small files, 30% duplicates"
fresh_store
read -r c_s c_kb < <(measure "$COFFER" --store "$B/store" put -q "$TREE")
rm -rf "$B/gitrepo"; mkdir -p "$B/gitrepo"; cp -r "$TREE" "$B/gitrepo/tree"; sync; sleep 1
read -r g_s _ < <(measure sh -c "cd '$B/gitrepo' && git init -q && git add -A")
rm -rf "$B/gitrepo"
python3 - "$FILES" "$c_s" "$g_s" "$c_kb" <<'PY'
import sys
files, c, g, kb = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(f"coffer put {c}s = {files / c:.0f} files/s (peak {kb} KiB, durable) | git add {g}s = {files / g:.0f} files/s (no fsync)")
print(f"ratio coffer/git files per second: {g / c:.2f}   (target >= 1.0)")
PY
rm -rf "$B/store"
