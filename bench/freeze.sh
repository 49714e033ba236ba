#!/usr/bin/env bash
# Times `coffer packet freeze` of a packet whose fixture is a 100 MiB,
# 10,000-member TAR+gzip archive, against `tar -xzf` of the same archive into
# a temp dir, in the same run, with peak RSS.
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
rm -rf "$B/store" "$B/untar"; mkdir -p "$B/untar"
"$COFFER" --store "$B/store" init -q; sync; sleep 1
read -r t_s t_kb < <(measure tar -xzf "$ARCH" -C "$B/untar")
sync; sleep 1
read -r f_s f_kb < <(measure "$COFFER" --store "$B/store" packet freeze "$B/packet-$N" "$B/packet-$N/packets/calc-add.json")
echo "archive $(stat -c %s "$ARCH") bytes, $N members"
echo "tar -xzf ${t_s}s (peak ${t_kb} KiB) | coffer packet freeze ${f_s}s (peak ${f_kb} KiB, durable)"
python3 -c "import sys; print(f'ratio freeze/tar: {float(sys.argv[1]) / float(sys.argv[2]):.2f}   (target <= 2.0)')" "$f_s" "$t_s"
rm -rf "$B/store" "$B/untar" "$B/packet-$N"
