#!/usr/bin/env python3
"""make-bundle.py SESSION_JSONL TEMPLATE_BUNDLE OUT_DIR [WORKSPACE_PATCH]

Copies TEMPLATE_BUNDLE (e.g. fixtures/run-bundles/observational-completed) to
OUT_DIR, puts SESSION_JSONL in as session.jsonl (hard copy) and, when given,
WORKSPACE_PATCH as workspace.patch, and rewrites the manifest's digests and
sizes. Used by bench/ingest.sh, bench/export.sh and bench/benign.sh."""
import hashlib
import json
import os
import shutil
import sys

session, template, out = sys.argv[1:4]
if os.path.exists(out):
    shutil.rmtree(out)
shutil.copytree(template, out)
shutil.copyfile(session, os.path.join(out, "session.jsonl"))
if len(sys.argv) > 4:
    shutil.copyfile(sys.argv[4], os.path.join(out, "workspace.patch"))
m = json.load(open(os.path.join(out, "manifest.json")))
for d in m["evidence"]:
    h = hashlib.sha256()
    n = 0
    with open(os.path.join(out, d["relativePath"]), "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
    d["digest"] = "sha256:" + h.hexdigest()
    d["sizeBytes"] = n
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(m, f, indent=2)
    f.write("\n")
