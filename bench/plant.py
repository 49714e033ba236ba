#!/usr/bin/env python3
"""plant.py IN_JSONL OUT_JSONL SECRETS_OUT N

Copies IN_JSONL to OUT_JSONL, replacing N evenly spaced records with records
that carry a freshly generated credential in one of many shapes and
encodings (raw text, after a JSON \\n escape, \\u-escaped, JSON inside a
JSON string, base64, percent-encoded, a secret-named field, a PEM block, an
env assignment, a URL with a password). Writes every planted value to
SECRETS_OUT, one per line. Values are generated here, never stored."""
import base64
import json
import random
import sys
import urllib.parse

src, out, secrets_out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(2026)
ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def s(alpha, k):
    return "".join(rng.choice(alpha) for _ in range(k))


def secret(i):
    kind = i % 12
    if kind == 0:
        return "ghp_" + s(ALNUM, 36)
    if kind == 1:
        return "AKIA" + s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    if kind == 2:
        return "sk-ant-api03-" + s(URLSAFE, 93)
    if kind == 3:
        return "sk-proj-" + s(URLSAFE, 60)
    if kind == 4:
        return "xoxb-" + s("0123456789", 12) + "-" + s("0123456789", 13) + "-" + s(ALNUM, 24)
    if kind == 5:
        return "glpat-" + s(ALNUM, 20)
    if kind == 6:
        return "AIza" + s(URLSAFE, 35)
    if kind == 7:
        return "hf_" + s(ALNUM, 34)
    if kind == 8:
        return "npm_" + s(ALNUM, 36)
    if kind == 9:
        return "sk_live_" + s(ALNUM, 24)
    if kind == 10:
        return "eyJ" + s(URLSAFE, 20) + ".eyJ" + s(URLSAFE, 40) + "." + s(URLSAFE, 43)
    return "Q7" + s(ALNUM, 22)  # generic: only found by its name


def carrier(i, v):
    how = (i // 12) % 9
    if i % 12 == 11:
        how = 6 + how % 3  # generic secrets need a name next to them
    if how == 0:
        return {"type": "observation.tool_result", "output": f"running with {v} now"}
    if how == 1:
        return {"type": "observation.tool_result", "output": f"line one\\n{v}\\nline three"}
    if how == 2:
        return {"type": "observation.message", "text": json.dumps({"config": {"value": v}})}
    if how == 3:
        return {"type": "observation.tool_result", "output": base64.b64encode(f"cfg={v}\n".encode()).decode()}
    if how == 4:
        return {"type": "observation.tool_use", "input": {"url": "https://h.test/cb?next=" + urllib.parse.quote(f"id={v}", safe="")}}
    if how == 5:
        return {"type": "observation.tool_result", "output": "".join(f"\\u{ord(c):04x}" for c in v)}
    if how == 6:
        return {"type": "observation.tool_use", "input": {"apiKey": v}}
    if how == 7:
        return {"type": "observation.tool_use", "input": {"command": f"export SERVICE_TOKEN={v}"}}
    return {"type": "observation.tool_result", "output": f"postgres://app:{v}@db.internal:5432/x"}


with open(src) as f:
    total = sum(1 for _ in f)
step = max(1, total // n)
planted = []
with open(src) as f, open(out, "w") as o:
    for i, line in enumerate(f):
        k = i // step
        if i % step == step // 2 and k < n:
            v = secret(k)
            planted.append(v)
            rec = carrier(k, v)
            rec["seq"] = i
            o.write(json.dumps(rec, separators=(",", ":")) + "\n")
        else:
            o.write(line)
with open(secrets_out, "w") as f:
    f.write("\n".join(planted) + "\n")
print(f"planted {len(planted)} secrets in {total} records")
