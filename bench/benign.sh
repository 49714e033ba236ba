#!/usr/bin/env bash
# Exports a session of real, benign content (crate sources, Python stdlib
# modules, doc texts; a real crate diff as the workspace patch; see
# bench/benign.py) and measures what the scrubber changed: placeholders per
# MB, share of lines changed, and whether the patch is byte-identical and
# still applies. Issue 16's targets: accepted, <= 50 placeholders/MB,
# <= 2% of lines changed, identical patch. detect-secrets runs on the same
# session for the side-by-side count of what a peer would flag.
#
#   bench/benign.sh              # 10 MiB session
#   MIB=2 bench/benign.sh        # smoke run
#   COFFER=path/to/coffer bench/benign.sh   # another build (A/B)
#   PY_SRC=target/ci-venv/lib/python3.11/site-packages bench/benign.sh
#                                # third-party Python instead of the stdlib
#   JS_SRC=path/to/node_modules bench/benign.sh   # JavaScript and TypeScript
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${MIB:-10}
B=${BENCH_DIR:-$PWD/target/bench}/benign
rm -rf "$B"
mkdir -p "$B"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
python3 bench/benign.py build "$B/src" "$MIB"
python3 bench/make-bundle.py "$B/src/session.jsonl" fixtures/run-bundles/observational-completed "$B/bundle" "$B/src/workspace.patch"
cat > "$B/policy.json" <<'P'
{"schemaVersion":"coffer.export-policy/v1","sharingClass":"partner","maxArtifactBytes":1073741824,"maxStringBytes":1048576,"sensitiveValues":[]}
P
"$COFFER" --store "$B/store" init -q
"$COFFER" --store "$B/store" bundle ingest -q "$B/bundle"
start=$(date +%s.%N)
if ! "$COFFER" --store "$B/store" --json export create coffer-observational "$B/policy.json" "$B/out" > "$B/create.json"; then
  python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print('export refused:', v['status']); [print(' ', i['code'], i.get('path')) for i in v['issues'][:20]]" "$B/create.json"
  exit 1
fi
end=$(date +%s.%N)
echo "export accepted in $(python3 -c "print(f'{$end-$start:.2f}')")s"
set +e
python3 bench/benign.py measure "$B/bundle" "$B/out"; measured=$?
set -e
# The exported patch must still apply to the older crate version.
old=$(sed -n '1s/^patch: diff -ruN \(\S*\) .*/\1/p' "$B/src/sources.txt")
mkdir -p "$B/apply" && cp -r "$old" "$B/apply/$(basename "$old")"
if (cd "$B/apply" && patch -p0 --dry-run -s < "$B/out/workspace.patch" > /dev/null); then echo "exported patch applies"; else echo "exported patch does NOT apply"; measured=1; fi
if [ ! -x "$B/../venv/bin/detect-secrets" ]; then
  python3 -m venv "$B/../venv" && "$B/../venv/bin/pip" install -q detect-secrets==1.5.0
fi
"$B/../venv/bin/detect-secrets" scan -n "$B/bundle/session.jsonl" "$B/bundle/workspace.patch" > "$B/ds.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; print('detect-secrets findings on the same content:', sum(len(v) for v in r.values()))" "$B/ds.json"
exit $measured
