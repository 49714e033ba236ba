#!/usr/bin/env bash
# bench/analysis.sh: the analysis commands at scale (issue 43), each beside
# the public tool an analyst would otherwise use, measured in the same run.
#  1. `coffer events` over RUNS bundles of EVENTS events each (default
#     1,000 x 5,000 = 5M events): time and peak RSS, beside `jq -c` over the
#     same session files (already out of the store, so jq does less).
#  2. `bundle stats --by model` on STATS_RUNS bundles (default 10,000):
#     median of 5 runs (target: under 1 s).
#  3. `coffer grep` over the stored sessions of (1) (about 1 GiB), beside
#     `zstd -dc | rg` over the same object files; both must find the same
#     number of lines.
# Needs jq, zstd and rg (apt-get install jq zstd ripgrep).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BENCH_DIR:-target/bench/analysis}
RUNS=${RUNS:-1000}
EVENTS=${EVENTS:-5000}
STATS_RUNS=${STATS_RUNS:-10000}
if [ -z "${COFFER:-}" ]; then
  cargo build --release --locked -q
  COFFER=target/release/coffer
fi
for t in jq zstd rg; do
  command -v "$t" >/dev/null || { echo "bench/analysis.sh needs $t" >&2; exit 2; }
done
mkdir -p "$B"
timed() { /usr/bin/time -f "%e s, peak %M KiB" "$@"; }

big="$B/store-$RUNS-$EVENTS"
if [ ! -d "$big" ]; then
  rm -rf "$B/runs"
  python3 bench/make-runs.py "$RUNS" "$EVENTS" "$B/runs"
  "$COFFER" --store "$big" init >/dev/null
  echo "ingest of $RUNS bundles:"
  timed "$COFFER" --store "$big" bundle ingest "$B"/runs/run-* --label exp=bench >/dev/null
fi
sync
sleep 2

echo "== events: $RUNS bundles, $((RUNS * EVENTS)) events"
echo -n "coffer events:        "
timed "$COFFER" --store "$big" events 2>&1 >/dev/null | tail -n 1
echo -n "jq -c over the files: "
timed sh -c "jq -c '{type, tool, time, event: .}' $B/runs/run-*/session.jsonl >/dev/null" 2>&1 | tail -n 1
echo "lines: coffer $("$COFFER" --store "$big" events | wc -l), sessions $(cat "$B"/runs/run-*/session.jsonl | wc -l)"

echo "== grep: every stored session of $RUNS bundles"
bytes=$(cat "$B"/runs/run-*/session.jsonl | wc -c)
echo "session bytes: $bytes"
pattern='test_13\.py'
echo -n "coffer grep --in session: "
timed "$COFFER" --store "$big" grep "$pattern" --in session 2>&1 >/dev/null | tail -n 1
# The peer reads the same object files: the session objects, listed from
# the catalog's read-only view (docs/QUERY.md).
python3 - "$big" >"$B/session-objects" <<'PY'
import sqlite3, sys
store = sys.argv[1]
db = sqlite3.connect(f"file:{store}/catalog.sqlite?mode=ro", uri=True)
for (d,) in db.execute("SELECT DISTINCT digest FROM v_artifacts WHERE kind = 'session' ORDER BY digest"):
    hexd = d.split(":")[1]
    print(f"{store}/objects/sha256/{hexd[:2]}/{hexd}")
PY
echo -n "zstd -dc | rg:            "
timed sh -c "xargs zstd -dcq <'$B/session-objects' | rg '$pattern' >/dev/null" 2>&1 | tail -n 1
echo "lines: coffer $("$COFFER" --store "$big" grep "$pattern" --in session | wc -l), rg $(xargs zstd -dcq <"$B/session-objects" | rg -c "$pattern")"

wide="$B/store-$STATS_RUNS-stats"
if [ ! -d "$wide" ]; then
  rm -rf "$B/runs-stats"
  python3 bench/make-runs.py "$STATS_RUNS" 20 "$B/runs-stats"
  "$COFFER" --store "$wide" init >/dev/null
  echo "ingest of $STATS_RUNS bundles:"
  timed sh -c "ls -d '$B'/runs-stats/run-* | xargs -n 1000 '$COFFER' --store '$wide' bundle ingest --label exp=bench >/dev/null"
fi
echo "== bundle stats --by model: $STATS_RUNS bundles (5 runs)"
for _ in 1 2 3 4 5; do
  timed "$COFFER" --store "$wide" bundle stats --by model 2>&1 >/dev/null | tail -n 1
done
"$COFFER" --store "$wide" bundle stats --by model
