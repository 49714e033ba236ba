#!/usr/bin/env python3
"""make-runs.py N EVENTS OUT_DIR

Writes N run bundles under OUT_DIR (run-00000 ...), made from the shipped
`complete` (verifier passed) and `task-failed` (verifier failed) fixtures:
each its own bundle id, one of four models, passed or failed by a fixed
pseudo-random draw, a session of EVENTS events (tool calls with times,
messages, results; about 215 bytes each) and a patch touching one of a few
files; digests and sizes rewritten, the verifier bound to the new patch.
Used by bench/analysis.sh."""
import hashlib
import json
import os
import random
import sys

n, events, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, "..", "fixtures", "run-bundles")
templates = {}
for name, old in (("complete", "coffer-complete"), ("task-failed", "coffer-task-failed")):
    files = {}
    root = os.path.join(fixtures, name)
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            files[os.path.relpath(p, root)] = open(p, encoding="utf-8").read()
    templates[name] = (old, files)

rng = random.Random(42)
models = ["model-a", "model-b", "model-c", "model-d"]
paths = ["src/calc.py", "src/util.py", "tests/test_calc.py", "README.md"]
words = "the agent reads the failing test then edits the parser and runs the suite again".split()
for i in range(n):
    bid = f"run-{i:05d}"
    model = models[i % 4]
    passed = rng.random() < (0.3 + 0.15 * (i % 4))
    old, files = templates["complete" if passed else "task-failed"]
    d = os.path.join(out, bid)
    docs = {rel: text.replace(old, bid) for rel, text in files.items()}
    lines = [json.dumps({"type": "session.start", "sessionId": f"sess-{bid}", "time": "2026-12-05T10:00:00Z"})]
    for e in range(1, events):
        t = f"2026-12-05T{10 + e // 3600:02d}:{e // 60 % 60:02d}:{e % 60:02d}Z"
        k = e % 3
        if k == 0:
            lines.append(json.dumps({"type": "tool.call", "tool": "bash", "time": t,
                                     "input": {"command": f"pytest -q tests/test_{e % 17}.py"}}))
        elif k == 1:
            lines.append(json.dumps({"type": "tool.result", "tool": "bash", "time": t,
                                     "output": f"{e % 7} passed, {e % 3} failed in 0.{e % 10}s"}))
        else:
            text = " ".join(rng.choice(words) for _ in range(64))
            lines.append(json.dumps({"type": "assistant.message", "time": t, "text": text}))
    docs["session.jsonl"] = "\n".join(lines) + "\n"
    f = paths[i % len(paths)]
    patch = f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-old\n+new {i}\n"
    docs["workspace.patch"] = patch
    ver = json.loads(docs["verifier.json"])
    ver["workspace"]["digest"] = "sha256:" + hashlib.sha256(patch.encode()).hexdigest()
    docs["verifier.json"] = json.dumps(ver, indent=2) + "\n"
    m = json.loads(docs["manifest.json"])
    m["run"]["model"]["id"] = model
    for e in m["evidence"]:
        b = docs[e["relativePath"]].encode()
        e["digest"] = "sha256:" + hashlib.sha256(b).hexdigest()
        e["sizeBytes"] = len(b)
    docs["manifest.json"] = json.dumps(m, indent=2) + "\n"
    for rel, text in docs.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
