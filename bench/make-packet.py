#!/usr/bin/env python3
"""make-packet.py OUT_ROOT MEMBERS TOTAL_MIB

Copies fixtures/task-packets to OUT_ROOT and replaces its fixture with a
TAR+gzip archive of MEMBERS files under src/ totalling about TOTAL_MIB MiB
(text-like, deterministic), then re-binds every digest (component digests,
the review record's pre-admission digest, the review record digest)."""
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import sys
import tarfile

out, members, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "fixtures", "task-packets")
if os.path.exists(out):
    shutil.rmtree(out)
shutil.copytree(src, out)
rng = random.Random(5)
words = "fn let mut impl struct enum match return self pub use mod crate error result value digest store".split()
per = (mib << 20) // members
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as t:
    for d in ["README.md", "package.json"]:
        data = b"x\n"
        ti = tarfile.TarInfo(d); ti.size = len(data); ti.mtime = 0
        t.addfile(ti, io.BytesIO(data))
    for i in range(members):
        n = max(16, int(rng.uniform(0.5, 1.5) * per))
        text = " ".join(rng.choice(words) for _ in range(n // 5)).encode()[:n]
        ti = tarfile.TarInfo(f"src/m{i // 100:03d}/f{i:05d}.rs"); ti.size = len(text); ti.mtime = 0; ti.mode = 0o644
        t.addfile(ti, io.BytesIO(text))
arch = io.BytesIO()
with gzip.GzipFile(fileobj=arch, mode="wb", mtime=0, compresslevel=6) as g:
    g.write(raw.getvalue())
with open(os.path.join(out, "fixtures/calc.tar.gz"), "wb") as f:
    f.write(arch.getvalue())
dig = lambda b: {"algorithm": "sha256", "value": hashlib.sha256(b).hexdigest()}
rd = lambda p: open(os.path.join(out, p), "rb").read()
pp = os.path.join(out, "packets/calc-add.json")
p = json.load(open(pp))
p["agentInput"]["fixture"]["source"]["limits"] = {"maxCompressedBytes": 104857600, "maxExpandedBytes": 1073741824, "maxMembers": 100000}
p["agentInput"]["fixture"]["source"]["digest"] = dig(arch.getvalue())
p["agentInput"]["fixture"]["materializer"]["includePaths"] = ["README.md", "src"]
pre = {k: v for k, v in p.items() if k != "admission"}
rr = os.path.join(out, "restricted/review-record.json")
review = json.load(open(rr))
review["preAdmissionDigest"] = dig(json.dumps(pre, sort_keys=True, separators=(",", ":")).encode())
open(rr, "w").write(json.dumps(review, indent=2) + "\n")
p["admission"]["review"]["reviewRecord"]["digest"] = dig(rd("restricted/review-record.json"))
open(pp, "w").write(json.dumps(p, indent=2) + "\n")
