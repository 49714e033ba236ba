#!/usr/bin/env python3
"""examples.py COFFER DIR

Scores `coffer scan` on the examples of rule files written the way
SonarSource's sonar-text writes its secret rules: YAML with
`provider.rules[].examples[]`, each example a `text`, `containsSecret`
(true or false) and perhaps a `fileName`. Each example is written to a
file of its own (under that name, else `example.txt`) in a temp
directory and scanned; it counts as flagged when the scan has a finding.

    target/bench/venv/bin/python bench/examples.py target/release/coffer \\
        ~/src/sonar-text/sonar-text-plugin/src/main/resources/org/sonar/plugins/secrets/configuration

Needs PyYAML (bench/scanners.sh's venv has it, through detect-secrets).
Lines that only include another file (`${common/patternNot.yaml}`) are
dropped before parsing. Prints positives and negatives flagged, then each
missed positive and flagged negative (file, rule id, the text's first 160
characters). A negative there is a negative for that rule: a database
URL's dev password or another vendor's key is one to coffer.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml
from tally import Tally

INCLUDE = re.compile(r"(?m)^\s*\$\{[^}]*\}\s*$")


def examples(root):
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".yaml", ".yml")):
                continue
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                doc = yaml.safe_load(INCLUDE.sub("", fh.read()))
            provider = (doc or {}).get("provider") or {}
            for rule in provider.get("rules") or []:
                for ex in rule.get("examples") or []:
                    yield f"{f}:{rule.get('id')}", ex


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    coffer, root = sys.argv[1:]
    tally = Tally()
    with tempfile.TemporaryDirectory() as work:
        for n, (tag, ex) in enumerate(examples(root)):
            text = ex.get("text") or ""
            d = os.path.join(work, str(n))
            os.mkdir(d)
            path = os.path.join(d, os.path.basename(ex.get("fileName") or "example.txt"))
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            out = subprocess.run(
                [coffer, "--json", "scan", path], capture_output=True, text=True
            ).stdout
            found = json.loads(out)["result"].get("findings", 0) > 0
            shown = f"{tag} | {text.strip().replace(chr(10), ' / ')[:160]}"
            tally.add(bool(ex.get("containsSecret")), found, shown)
    tally.report()

if __name__ == "__main__":
    main()
