#!/usr/bin/env python3
"""check-planted.py SECRETS_FILE DIR_OR_FILE...

Counts planted secrets that survive anywhere in the given files, in any of
the encodings plant.py uses (raw, JSON-escaped, \\u-escaped, base64 of the
carrier line, percent-encoded). Prints `survivors K of N`; exit 1 if K > 0."""
import base64
import os
import sys
import urllib.parse

secrets = [l for l in open(sys.argv[1]).read().splitlines() if l]
blob = bytearray()
for p in sys.argv[2:]:
    # A missing or empty path would count every secret as gone.
    if not os.path.exists(p):
        sys.exit(f"check-planted: {p} does not exist")
    paths = [p] if os.path.isfile(p) else [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs]
    if not paths:
        sys.exit(f"check-planted: {p} holds no files")
    for q in paths:
        blob += open(q, "rb").read()
blob = bytes(blob)
if not blob:
    sys.exit("check-planted: nothing to check (the files are empty)")
survivors = 0
for v in secrets:
    forms = {
        v,
        urllib.parse.quote(v, safe=""),
        "".join(f"\\u{ord(c):04x}" for c in v),
        base64.b64encode(f"cfg={v}\n".encode()).decode()[:24],
    }
    if any(f.encode() in blob for f in forms):
        survivors += 1
print(f"survivors {survivors} of {len(secrets)}")
sys.exit(1 if survivors else 0)
