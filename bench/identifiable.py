"""Recall of `coffer scan` on keys generated from Microsoft's published
secret patterns (github.com/microsoft/security-utilities,
`GeneratedRegexPatterns/*.json`), a suite not used to build any rule
before the forty-eighth session, which first ran it as a held-out check.
Its high-confidence and precisely classified patterns are mostly Azure's
identifiable keys: random base64 with a service's signature at a fixed
place. Two keys are generated from each pattern (seeded), each written
alone on a line after a neutral word, and counted as found when the
scan flags that line.

    bench/../venv/bin/python bench/identifiable.py SECURITY_UTILITIES_SRC [COFFER]

(SECURITY_UTILITIES_SRC: a checkout; the generator is `rstr`, which the
venv of bench/scanners.sh holds.) The medium and low confidence files
are left out: their patterns are loose (a host name, then anything), so
what a generator draws from them is noise, not a credential's shape.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import rstr

FILES = ["HighConfidenceSecurityModels", "PreciselyClassifiedSecurityKeys"]


def samples(src):
    """(file, pattern id, name, key) for two keys of each pattern."""
    random.seed(7)
    out = []
    for f in FILES:
        for p in json.load(open(os.path.join(src, "GeneratedRegexPatterns", f + ".json"))):
            r = re.compile(p["Pattern"])
            for _ in range(2):
                s = rstr.xeger(p["Pattern"])
                m = r.search(s)
                key = m.group("refine") if m and "refine" in r.groupindex and m.group("refine") else s.strip()
                out.append((f, p["Id"], p["Name"], key))
    return out


def main():
    src = sys.argv[1]
    coffer = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "target/release/coffer")
    found = {f: [0, 0] for f in FILES}
    with tempfile.TemporaryDirectory(prefix="coffer-identifiable-") as tmp:
        for i, (f, pid, name, key) in enumerate(samples(src)):
            path = os.path.join(tmp, f"{i}.txt")
            with open(path, "w") as out:
                out.write(f"value {key}\n")
            flagged = ":1:" in subprocess.run([coffer, "scan", path], capture_output=True, text=True).stdout
            found[f][0] += flagged
            found[f][1] += 1
            if not flagged:
                print(f"  missed {pid} {name}: {key[:24]}...")
    for f, (hit, total) in found.items():
        print(f"coffer: {f}: {hit} of {total} generated keys flagged = {100 * hit / total:.1f}%")


if __name__ == "__main__":
    main()
