#!/usr/bin/env bash
# Times `coffer export create` of a stored bundle whose session.jsonl is
# 256 MiB of JSONL with a few hundred planted secrets (bench/plant.py), with
# peak RSS, checks that every planted secret is gone, and runs
# detect-secrets (PyPI, in a venv this script creates) on a prefix of the
# same file for the side-by-side ratio.
#
#   bench/export.sh              # 256 MiB session, 400 secrets
#   SCALE=small bench/export.sh  # 16 MiB smoke run
#   COFFER=path/to/coffer NO_PEER=1 bench/export.sh  # another build, coffer only
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
if [ "${SCALE:-full}" = small ]; then MIB=16; N=60; else MIB=256; N=400; fi
DS_MIB=${DS_MIB:-2}
B=${BENCH_DIR:-$PWD/target/bench}
mkdir -p "$B"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
[ -f "$B/session-$MIB.jsonl" ] || python3 bench/gen.py jsonl "$B/session-$MIB.jsonl" "$MIB"
python3 bench/plant.py "$B/session-$MIB.jsonl" "$B/planted-$MIB.jsonl" "$B/secrets-$MIB.txt" "$N"
python3 bench/make-bundle.py "$B/planted-$MIB.jsonl" fixtures/run-bundles/observational-completed "$B/xbundle-$MIB"
cat > "$B/policy.json" <<'P'
{"schemaVersion":"coffer.export-policy/v1","sharingClass":"partner","maxArtifactBytes":1073741824,"maxStringBytes":65536,"sensitiveValues":[]}
P
rm -rf "$B/store" "$B/export-out"
"$COFFER" --store "$B/store" init -q
"$COFFER" --store "$B/store" bundle ingest -q "$B/xbundle-$MIB"
sync; sleep 1
bytes=$(stat -c %s "$B/planted-$MIB.jsonl")
/usr/bin/time -o "$B/time.out" -f "%e %M" "$COFFER" --store "$B/store" export create -q coffer-observational "$B/policy.json" "$B/export-out" 2> "$B/stderr.out" || { cat "$B/stderr.out"; exit 1; }
read -r e_s e_kb < <(tail -n 1 "$B/time.out")
python3 bench/check-planted.py "$B/secrets-$MIB.txt" "$B/export-out"
/usr/bin/time -o "$B/time.out" -f "%e %M" "$COFFER" scan -q "$B/planted-$MIB.jsonl" > /dev/null 2>&1 || true
read -r s_s s_kb < <(tail -n 1 "$B/time.out")
echo "coffer export create: ${MIB} MiB in ${e_s}s = $(python3 -c "print(f'{$bytes/1e6/$e_s:.1f}')") MB/s, peak ${e_kb} KiB"
echo "coffer scan (source): ${s_s}s = $(python3 -c "print(f'{$bytes/1e6/$s_s:.1f}')") MB/s, peak ${s_kb} KiB"

[ -n "${NO_PEER:-}" ] && { rm -rf "$B/store" "$B/export-out"; exit 0; }
# detect-secrets on a prefix (at its speed the whole file takes an hour).
if [ ! -x "$B/venv/bin/detect-secrets" ]; then
  python3 -m venv "$B/venv" && "$B/venv/bin/pip" install -q detect-secrets==1.5.0
fi
head -c $((DS_MIB << 20)) "$B/planted-$MIB.jsonl" | sed '$d' > "$B/prefix.jsonl"
pbytes=$(stat -c %s "$B/prefix.jsonl")
/usr/bin/time -o "$B/time.out" -f "%e %M" "$B/venv/bin/detect-secrets" scan -n "$B/prefix.jsonl" > "$B/ds.json"
read -r d_s d_kb < <(tail -n 1 "$B/time.out")
python3 - "$B/ds.json" "$B/prefix.jsonl" "$B/secrets-$MIB.txt" <<'PY'
import json, sys
found = json.load(open(sys.argv[1]))["results"]
lines = {r["line_number"] for rs in found.values() for r in rs}
secrets = [l for l in open(sys.argv[3]).read().splitlines() if l]
planted_lines = [i + 1 for i, l in enumerate(open(sys.argv[2])) if '"seq"' in l and not l.startswith('{"seq"')]
hit = sum(1 for n in planted_lines if n in lines)
print(f"detect-secrets flagged {hit} of {len(planted_lines)} planted records in the prefix")
PY
echo "detect-secrets scan -n: $((DS_MIB)) MiB in ${d_s}s = $(python3 -c "print(f'{$pbytes/1e6/$d_s:.2f}')") MB/s, peak ${d_kb} KiB"
python3 -c "print(f'throughput ratio coffer export / detect-secrets: {($bytes/$e_s)/($pbytes/$d_s):.0f}x')"
# Recall on the planted records alone (fast for both tools).
grep '^{"type"' "$B/planted-$MIB.jsonl" > "$B/planted-only.jsonl"
"$B/venv/bin/detect-secrets" scan -n "$B/planted-only.jsonl" > "$B/ds-planted.json"
python3 - "$B/ds-planted.json" "$B/planted-only.jsonl" <<'PY'
import json, sys
found = json.load(open(sys.argv[1]))["results"]
lines = {r["line_number"] for rs in found.values() for r in rs}
total = sum(1 for _ in open(sys.argv[2]))
print(f"detect-secrets recall on the planted records: {len(lines)} of {total}")
PY
# scan exits nonzero on findings, which pipefail would take for a failure.
{ "$COFFER" --json scan "$B/planted-only.jsonl" || true; } | python3 -c "import json,sys; v=json.load(sys.stdin); print('coffer scan recall on the planted records:', len({i['path'].split('#/')[1].split('/')[0] for i in v['issues'] if '#/' in (i.get('path') or '')}), 'of', sum(1 for _ in open(sys.argv[1])))" "$B/planted-only.jsonl"
rm -rf "$B/store" "$B/export-out"
