#!/usr/bin/env bash
# Real agent transcripts through partner and public exports (issue 46):
# per tool, accepted exports, placeholders per MB by kind, secret
# placeholders per MB, strings cut (and cut without a marker), traceback
# frames that keep their module path, path remainders and prompt names
# left, and a sample of secret placeholders for a hand check
# (bench/transcripts.py). Nothing is stored here: the transcripts are read
# from git directories of the public repositories that publish them, given
# by path (fetched as the scanner corpus is, bench/scanners.sh):
#
#   SWE_AGENT_SRC  SWE-agent/SWE-agent (MIT), 3ea751c0: trajectories/
#                  demonstrations/*.traj (SWE-agent); held out: its
#                  tests/test_data/trajectories/**.traj
#   MINI_SRC       SWE-agent/mini-swe-agent (MIT), a83fcae8:
#                  tests/test_data/*.traj.json (mini-swe-agent)
#   AIDER_SRC      Aider-AI/aider (Apache-2.0), 5dc9490b:
#                  tests/fixtures/chat-history.md (aider chat history);
#                  held out: tests/fixtures/chat-history-search-replace-gold.txt
#   CLAUDE_SRC     simonw/claude-code-transcripts (Apache-2.0), cad133d9:
#                  tests/sample_session.json{,l} (Claude Code sessions;
#                  small samples written for that tool's tests)
#
#   SWE_AGENT_SRC=/path/repo.git MINI_SRC=... AIDER_SRC=... CLAUDE_SRC=... bench/transcripts.sh
#   HELD_OUT=1 ...               # the held-out set instead
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SWE_AGENT_SRC:?a git directory of SWE-agent/SWE-agent}"
: "${MINI_SRC:?a git directory of SWE-agent/mini-swe-agent}"
: "${AIDER_SRC:?a git directory of Aider-AI/aider}"
: "${CLAUDE_SRC:?a git directory of simonw/claude-code-transcripts}"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
B=${BENCH_DIR:-$PWD/target/bench}/transcripts
rm -rf "$B"
mkdir -p "$B"
if [ -n "${HELD_OUT:-}" ]; then
  python3 bench/transcripts.py "$COFFER" "$B" \
    "swe-agent=$SWE_AGENT_SRC:^tests/test_data/trajectories/.*\.traj$" \
    "aider=$AIDER_SRC:^tests/fixtures/chat-history-search-replace-gold\.txt$"
else
  python3 bench/transcripts.py "$COFFER" "$B" \
    "swe-agent=$SWE_AGENT_SRC:^trajectories/demonstrations/.*\.traj$" \
    "mini-swe-agent=$MINI_SRC:^tests/test_data/.*\.traj\.json$" \
    "aider=$AIDER_SRC:^tests/fixtures/chat-history\.md$" \
    "claude-code=$CLAUDE_SRC:^tests/sample_session\.jsonl?$"
fi
