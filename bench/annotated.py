#!/usr/bin/env python3
"""annotated.py COFFER DIR...

Scores `coffer scan` on test files annotated the way semgrep's rule tests
are: a comment holding `ruleid: <rule>` (or `todoruleid:`) marks the next
line that is not itself an annotation as a secret, one holding `ok: <rule>`
(or `todook:`) as a line that must not be flagged. Every file under each
DIR is scanned (rule definitions, `*.yaml`/`*.yml`, are skipped); a line
counts as flagged when a finding's location is on it.

    python3 bench/annotated.py target/release/coffer \\
        ~/src/semgrep-rules/generic/secrets

Prints positives and negatives flagged, then every missed positive and
every flagged negative (file:line and the line's first 120 characters),
so a change can be judged case by case. A held-out check: the rules were
not written from these files.
"""
import json
import os
import re
import subprocess
import sys

from tally import Tally

ANNOTATION = re.compile(r"\b(ruleid|ok|todoruleid|todook)\s*:")


def flagged_lines(coffer, path):
    out = subprocess.run(
        [coffer, "--json", "scan", path], capture_output=True, text=True
    ).stdout
    result = json.loads(out)["result"]
    return {loc["line"] for loc in result.get("locations", []) if loc.get("line")}


def cases(lines):
    """(line number, is positive) for every annotated line."""
    i = 0
    while i < len(lines):
        m = ANNOTATION.search(lines[i])
        # A long line that happens to say `ok:` is content, not a comment.
        if not m or len(lines[i]) >= 200:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and ANNOTATION.search(lines[j]):
            j += 1
        if j < len(lines):
            yield j + 1, m.group(1) in ("ruleid", "todoruleid")
        i = j


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    coffer, dirs = sys.argv[1], sys.argv[2:]
    tally = Tally()
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith((".yaml", ".yml")):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().split("\n")
                hit = flagged_lines(coffer, path)
                for ln, positive in cases(lines):
                    tally.add(positive, ln in hit, f"{path}:{ln}: {lines[ln - 1][:120]}")
    tally.report()

if __name__ == "__main__":
    main()
