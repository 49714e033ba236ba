#!/usr/bin/env bash
# Peak memory and time of an export dense with secrets: the session that
# bench/scanners.sh builds from public scanners' test data (2.6 MB, 2,503
# distinct secrets, each swept in its ~15 encoded forms). Run scanners.sh
# first. BASE=<another coffer build> times it too, interleaved, and checks
# the two trees are byte-identical (same store, same key).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
S=${SCANNERS_DIR:-$PWD/target/bench/scanners}
[ -f "$S/bundle/session.jsonl" ] || { echo "run bench/scanners.sh first"; exit 1; }
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$COFFER" --store "$W/store" init -q
"$COFFER" --store "$W/store" bundle ingest -q "$S/bundle"
for round in 1 2 3; do
  for build in "$COFFER" ${BASE:+"$BASE"}; do
    rm -rf "$W/out-$round"
    # GNU time's %M is in KiB (1,024 bytes): printed in MiB beside it, as
    # the issue's bound is written.
    /usr/bin/time -f "$build: %e s, peak %M KiB" "$build" --store "$W/store" export create -q \
      coffer-observational "$S/policy.json" "$W/out-$round" 2>&1 | tail -n 1 |
      awk '{ printf "%s (%.1f MiB)\n", $0, $(NF-1) / 1024 }'
  done
done
if [ -n "${BASE:-}" ]; then
  "$COFFER" --store "$W/store" export create -q coffer-observational "$S/policy.json" "$W/a"
  "$BASE" --store "$W/store" export create -q coffer-observational "$S/policy.json" "$W/b"
  diff -rq "$W/a" "$W/b" && echo "trees byte-identical"
fi
