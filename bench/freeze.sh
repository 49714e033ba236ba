#!/usr/bin/env bash
# Times `coffer packet freeze` of a packet whose fixture is a 100 MiB,
# 10,000-member TAR+gzip archive, against `tar -xzf` of the same archive into
# a temp dir, in the same run, with peak RSS; ROUNDS interleaved rounds
# (default 5).
#
#   bench/freeze.sh              # 10,000 members, 100 MiB
#   SCALE=small bench/freeze.sh  # 1,000 members, 10 MiB
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
if [ "${SCALE:-full}" = small ]; then N=1000; MIB=10; else N=10000; MIB=100; fi
B=${BENCH_DIR:-$PWD/target/bench}
mkdir -p "$B"
cargo build --release -q -p coffer-cli
COFFER=$PWD/target/release/coffer
python3 bench/make-packet.py "$B/packet-$N" "$N" "$MIB"
ARCH=$B/packet-$N/fixtures/calc.tar.gz
cat "$ARCH" > /dev/null
measure() {
  /usr/bin/time -o "$B/time.out" -f "%e %M" "$@" > /dev/null 2> "$B/stderr.out" || { cat "$B/stderr.out" "$B/time.out" >&2; exit 1; }
  tail -n 1 "$B/time.out"
}
# Interleaved rounds, each into directories of its own (deleting a tree
# of 10,000 files slows file creation on this ext4 for a while, so nothing
# is deleted until the end); the ratio is the median of the rounds'.
ROUNDS=${ROUNDS:-5}
rm -rf "$B/freeze-runs"; mkdir -p "$B/freeze-runs"
ratios=()
for r in $(seq "$ROUNDS"); do
  R=$B/freeze-runs/$r; mkdir -p "$R/untar"
  "$COFFER" --store "$R/store" init -q; sync; sleep 1
  read -r t_s t_kb < <(measure tar -xzf "$ARCH" -C "$R/untar")
  sync; sleep 1
  read -r f_s f_kb < <(measure "$COFFER" --store "$R/store" packet freeze "$B/packet-$N" "$B/packet-$N/packets/calc-add.json")
  rm -f "$B/packet-$N/packets/calc-add.json.freeze.json"
  ratio=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$f_s" "$t_s")
  ratios+=("$ratio")
  echo "round $r: tar -xzf ${t_s}s (peak ${t_kb} KiB) | coffer packet freeze ${f_s}s (peak ${f_kb} KiB, durable) | ${ratio}x"
done
echo "archive $(stat -c %s "$ARCH") bytes, $N members"
python3 -c "import statistics, sys; print(f'ratio freeze/tar, median of {len(sys.argv) - 1} rounds: {statistics.median(map(float, sys.argv[1:])):.2f}   (target <= 2.0)')" "${ratios[@]}"
rm -rf "$B/freeze-runs" "$B/packet-$N"
