#!/usr/bin/env bash
# Recall and false positives of `coffer scan` and detect-secrets, side by
# side, on public scanners' own test data (bench/scanners.py builds
# the corpus from their source checkouts at run time), then the share of
# distinct secrets that survive a `coffer export create` of all of them in
# their contexts, plain and in three carriers (base64, percent, JSON in
# JSON), looked for plain, JSON-escaped, percent-encoded and as base64 at
# all three alignments.
#
#   GITLEAKS_SRC=~/src/gitleaks DETECT_SECRETS_SRC=~/src/detect-secrets \
#     [TRUFFLEHOG_SRC=~/src/trufflehog] [NOSEYPARKER_SRC=~/src/noseyparker] \
#     [KINGFISHER_SRC=~/src/kingfisher] [SECRETLINT_SRC=~/src/secretlint] \
#     bench/scanners.sh
#   COFFER=path/to/coffer ... bench/scanners.sh   # another build (A/B)
#
# (clones of github.com/gitleaks/gitleaks, github.com/Yelp/detect-secrets
# and, optionally, github.com/trufflesecurity/trufflehog, whose detector
# tests add positives, and github.com/praetorian-inc/noseyparker, whose
# rules carry examples and negative examples, and github.com/mongodb/kingfisher,
# whose rules, in Nosey Parker's format, add several hundred vendors, and
# github.com/secretlint/secretlint, whose snapshot tests hold positives
# and negatives; the script skips with a message when the first two are
# not given).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d "${GITLEAKS_SRC:-}/cmd/generate/config/rules" ] || [ ! -d "${DETECT_SECRETS_SRC:-}/tests/plugins" ]; then
  echo "skipped: set GITLEAKS_SRC and DETECT_SECRETS_SRC to checkouts of gitleaks and detect-secrets"
  exit 0
fi
B=${BENCH_DIR:-$PWD/target/bench}/scanners
rm -rf "$B" && mkdir -p "$B"
if [ ! -x "$B/../venv/bin/detect-secrets" ] || ! "$B/../venv/bin/python" -c 'import rstr, yaml' 2>/dev/null; then
  python3 -m venv "$B/../venv" && "$B/../venv/bin/pip" install -q detect-secrets==1.5.0 rstr==3.2.2 pyyaml==6.0.2
fi
PY="$B/../venv/bin/python"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
if [ -n "${TRUFFLEHOG_SRC:-}" ] && [ ! -d "$TRUFFLEHOG_SRC/pkg/detectors" ]; then
  echo "TRUFFLEHOG_SRC has no pkg/detectors"; exit 1
fi
if [ -n "${NOSEYPARKER_SRC:-}" ] && [ ! -d "$NOSEYPARKER_SRC/crates/noseyparker/data/default/builtin/rules" ]; then
  echo "NOSEYPARKER_SRC has no crates/noseyparker/data/default/builtin/rules"; exit 1
fi
if [ -n "${KINGFISHER_SRC:-}" ] && [ ! -d "$KINGFISHER_SRC/data/rules" ]; then
  echo "KINGFISHER_SRC has no data/rules"; exit 1
fi
if [ -n "${SECRETLINT_SRC:-}" ] && [ ! -d "$SECRETLINT_SRC/packages/@secretlint" ]; then
  echo "SECRETLINT_SRC has no packages/@secretlint"; exit 1
fi
"$PY" bench/scanners.py build "$GITLEAKS_SRC" "$DETECT_SECRETS_SRC" "$B/corpus" "${TRUFFLEHOG_SRC:-}" "${NOSEYPARKER_SRC:-}" "${KINGFISHER_SRC:-}" "${SECRETLINT_SRC:-}"
"$PY" bench/scanners.py scan-coffer "$B/corpus" "$COFFER"
"$PY" bench/scanners.py score "$B/corpus" coffer "$B/corpus/findings-coffer.json"
"$PY" bench/scanners.py scan-detect-secrets "$B/corpus" "$B/../venv/bin/detect-secrets"
"$PY" bench/scanners.py score "$B/corpus" detect-secrets "$B/corpus/findings-detect-secrets.json"
python3 bench/make-bundle.py "$B/corpus/session.jsonl" fixtures/run-bundles/observational-completed "$B/bundle"
cat > "$B/policy.json" <<'P'
{"schemaVersion":"coffer.export-policy/v1","sharingClass":"partner","maxArtifactBytes":1073741824,"maxStringBytes":65536,"sensitiveValues":[]}
P
"$COFFER" --store "$B/store" init -q
"$COFFER" --store "$B/store" bundle ingest -q "$B/bundle"
"$COFFER" --store "$B/store" export create -q coffer-observational "$B/policy.json" "$B/export"
"$PY" bench/scanners.py survivors "$B/corpus" "$B/export"
