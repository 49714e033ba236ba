#!/usr/bin/env bash
# Times `coffer bundle ingest` of a bundle whose session.jsonl is 1 GiB of
# JSONL against `coffer put` of the same file, in the same run, with peak RSS.
#
#   bench/ingest.sh              # 1 GiB session
#   SCALE=small bench/ingest.sh  # 64 MiB smoke run
#   COFFER=path/to/coffer bench/ingest.sh   # another build (A/B)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
if [ "${SCALE:-full}" = small ]; then MIB=64; else MIB=1024; fi
B=${BENCH_DIR:-$PWD/target/bench}
mkdir -p "$B"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
[ -f "$B/session-$MIB.jsonl" ] || python3 bench/gen.py jsonl "$B/session-$MIB.jsonl" "$MIB"
python3 bench/make-bundle.py "$B/session-$MIB.jsonl" fixtures/run-bundles/observational-completed "$B/bundle-$MIB"
cat "$B/session-$MIB.jsonl" "$B/bundle-$MIB/session.jsonl" > /dev/null
measure() {
  /usr/bin/time -o "$B/time.out" -f "%e %M" "$@" > /dev/null 2> "$B/stderr.out" || true
  tail -n 1 "$B/time.out"
}
fresh_store() { rm -rf "$B/store"; "$COFFER" --store "$B/store" init -q; sync; sleep 1; }

fresh_store
read -r p_s p_kb < <(measure "$COFFER" --store "$B/store" put -q "$B/session-$MIB.jsonl")
fresh_store
read -r i_s i_kb < <(measure "$COFFER" --store "$B/store" bundle ingest -q "$B/bundle-$MIB")
"$COFFER" --store "$B/store" bundle ls | grep -q coffer-observational || { echo "ingest failed"; cat "$B/stderr.out"; exit 1; }
echo "coffer put ${p_s}s (peak ${p_kb} KiB) | coffer bundle ingest ${i_s}s (peak ${i_kb} KiB)"
python3 -c "import sys; print(f'ratio ingest/put: {float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$i_s" "$p_s"
rm -rf "$B/store"
