#!/usr/bin/env python3
"""benign.py build OUT_DIR [MIB]  |  benign.py measure SRC_BUNDLE EXPORT_DIR

build: makes a session of real, benign content that any machine with the
Rust toolchain and Python has, as tool outputs of an agent session:
  - crate sources from the cargo registry (~/.cargo/registry/src),
  - Python standard-library modules (or, with PY_SRC=DIR, the Python
    files under DIR, such as a venv's site-packages; or, with JS_SRC=DIR,
    the JavaScript and TypeScript files under DIR, such as a node_modules),
  - doc texts (/usr/share/common-licenses, /usr/share/doc/*/copyright),
and, as the workspace patch, a real `diff -ruN` between two versions of one
crate in the registry. Files are taken in sorted order, so two runs on one
machine build the same session. Writes OUT_DIR/session.jsonl,
OUT_DIR/workspace.patch and OUT_DIR/sources.txt (what went in).

measure: compares the export with its source: placeholders per MB, share of
content lines changed, whether the patch is byte-identical; prints one JSON
object and exits 1 when a target of issue 16 is missed
(<= 50 placeholders per MB, <= 2% of lines changed, identical patch).
"""
import glob
import json
import os
import re
import subprocess
import sys

PLACEHOLDER = re.compile(r"\[(?:REDACTED_[A-Z_]+|LOCAL_[A-Z_]+|WORKSPACE)(?::[^\]\s]*)?\]")


def registry_dirs():
    home = os.path.expanduser("~/.cargo/registry/src")
    return sorted(glob.glob(os.path.join(home, "*", "*")))


def take_files(paths, budget):
    out, used = [], 0
    for p in paths:
        try:
            size = os.path.getsize(p)
            data = open(p, "rb").read()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if size == 0 or size > 256 << 10:
            continue
        out.append((p, text))
        used += size
        if used >= budget:
            break
    return out


def version_pairs():
    by_name = {}
    for d in registry_dirs():
        m = re.match(r"(.+)-(\d+\.\d+\.\d+[^/]*)$", os.path.basename(d))
        if m:
            by_name.setdefault(m.group(1), []).append(d)
    return sorted((n, sorted(v)) for n, v in by_name.items() if len(v) >= 2)


def build(out, mib):
    os.makedirs(out, exist_ok=True)
    budget = mib << 20
    rust = [
        f
        for d in registry_dirs()
        for f in sorted(glob.glob(os.path.join(d, "src", "**", "*.rs"), recursive=True))
    ]
    # PY_SRC: Python from another tree instead of the standard library
    # (a venv's site-packages: third-party code, moto's fake credentials).
    py_src = os.environ.get("PY_SRC")
    py = sorted(
        glob.glob(os.path.join(py_src, "**", "*.py"), recursive=True)
        if py_src
        else glob.glob("/usr/lib/python3*/*.py")
    )
    # JS_SRC: JavaScript and TypeScript from a tree (a node_modules) in
    # the Python share's place.
    js_src = os.environ.get("JS_SRC")
    if js_src:
        py = sorted(
            f
            for ext in ("js", "mjs", "cjs", "ts")
            for f in glob.glob(os.path.join(js_src, "**", "*." + ext), recursive=True)
        )
    docs = sorted(glob.glob("/usr/share/common-licenses/*")) + sorted(
        glob.glob("/usr/share/doc/*/copyright")
    )
    chosen = (
        take_files(rust, budget * 6 // 10)
        + take_files(py, budget * 3 // 10)
        + take_files(docs, budget // 10)
    )
    # The workspace patch: the smallest real diff between two versions of
    # one crate that is at least 20 KiB.
    patch = b""
    for name, versions in version_pairs():
        a, b = versions[0], versions[-1]
        r = subprocess.run(
            ["diff", "-ruN", os.path.basename(a), os.path.basename(b)],
            cwd=os.path.dirname(a),
            capture_output=True,
        )
        if len(r.stdout) >= 20 << 10 and (not patch or len(r.stdout) < len(patch)):
            patch, pair = r.stdout, (a, b)
    if not patch:
        sys.exit("no crate with two versions in the cargo registry")
    with open(os.path.join(out, "workspace.patch"), "wb") as f:
        f.write(patch)
    with open(os.path.join(out, "session.jsonl"), "w") as f:
        f.write(json.dumps({"type": "session.start", "sessionId": "sess-coffer-observational"}) + "\n")
        for i, (p, text) in enumerate(chosen):
            call = f"toolu_{i:024d}"
            f.write(json.dumps({"type": "tool.call", "seq": i, "tool": "read_file",
                                "callId": call, "input": {"path": os.path.basename(p)}}) + "\n")
            f.write(json.dumps({"type": "tool.result", "seq": i, "callId": call,
                                "output": text}) + "\n")
    with open(os.path.join(out, "sources.txt"), "w") as f:
        f.write(f"patch: diff -ruN {pair[0]} {pair[1]} ({len(patch)} bytes)\n")
        for p, _ in chosen:
            f.write(p + "\n")
    print(f"{len(chosen)} files, patch {len(patch)} bytes ({os.path.basename(pair[0])} -> {os.path.basename(pair[1])})")


def outputs(path):
    res = []
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        if rec.get("type") == "tool.result":
            res.append(rec.get("output", ""))
    return res


def measure(src, dst):
    a = outputs(os.path.join(src, "session.jsonl"))
    b = outputs(os.path.join(dst, "session.jsonl"))
    assert len(a) == len(b), (len(a), len(b))
    lines = changed = 0
    for x, y in zip(a, b):
        xl, yl = x.split("\n"), y.split("\n")
        lines += len(xl)
        changed += sum(1 for i, l in enumerate(xl) if i >= len(yl) or yl[i] != l) + max(0, len(yl) - len(xl))
    exported = open(os.path.join(dst, "session.jsonl"), encoding="utf-8").read()
    mb = os.path.getsize(os.path.join(src, "session.jsonl")) / 1e6
    placeholders = len(PLACEHOLDER.findall(exported))
    patch_src = open(os.path.join(src, "workspace.patch"), "rb").read()
    patch_dst = open(os.path.join(dst, "workspace.patch"), "rb").read()
    r = {
        "sessionMB": round(mb, 2),
        "placeholders": placeholders,
        "placeholdersPerMB": round(placeholders / mb, 1),
        "contentLines": lines,
        "linesChanged": changed,
        "linesChangedPercent": round(100 * changed / max(lines, 1), 3),
        "patchIdentical": patch_src == patch_dst,
        "patchBytes": len(patch_src),
    }
    print(json.dumps(r))
    ok = r["placeholdersPerMB"] <= 50 and r["linesChangedPercent"] <= 2 and r["patchIdentical"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
    else:
        measure(sys.argv[2], sys.argv[3])
