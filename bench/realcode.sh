#!/usr/bin/env bash
# Precision on real code at scale: `coffer scan` over every source, doc and
# config file of the crates this workspace depends on (the Cargo registry
# sources a build leaves on the machine), the Python standard library
# (its tests included, third-party site-packages not) and, when npm is
# installed, its global packages (npm itself and corepack: JavaScript),
# with the findings counted by rule and by crate. None of it holds a live
# credential, so every finding is either a test value or a false positive;
# the counts should only go down. Files over 1000 KiB are left out.
#
#   bench/realcode.sh            # prints totals; FINDINGS=path keeps them
#   COFFER=path/to/coffer bench/realcode.sh   # another build
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
REG=${CARGO_HOME:-$HOME/.cargo}/registry/src
STDLIB=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
NPM_ROOT=$(npm root -g 2>/dev/null || true)
python3 - "$COFFER" "$REG" "$STDLIB" "${FINDINGS:-}" "$NPM_ROOT" <<'PY'
import collections, json, os, subprocess, sys
coffer, reg, stdlib, keep, npm_root = sys.argv[1:6]
exts = (".py", ".rs", ".md", ".toml", ".json", ".yml", ".yaml", ".xml", ".txt",
        ".js", ".cjs", ".mjs", ".ts")
files = []
for root in (reg, stdlib) + ((npm_root,) if npm_root and os.path.isdir(npm_root) else ()):
    for d, dirs, fs in os.walk(root):
        dirs[:] = [x for x in dirs if x not in ("site-packages", "dist-packages")]
        files += [os.path.join(d, f) for f in fs if f.endswith(exts)
                  and os.path.getsize(os.path.join(d, f)) < 1000 << 10]
files.sort()
size = sum(os.path.getsize(f) for f in files)
by_rule, by_source, found = collections.Counter(), collections.Counter(), []
def scan(batch):
    """Issues of `batch` (one result lists at most 1,000: split until not)."""
    res = json.loads(subprocess.run([coffer, "scan", "--json"] + batch, capture_output=True, text=True).stdout)
    if len(res["issues"]) < 1000:
        return res["issues"]
    assert len(batch) > 1, f"{batch[0]}: 1,000 findings or more"
    return scan(batch[: len(batch) // 2]) + scan(batch[len(batch) // 2 :])


for k in range(0, len(files), 200):
    for i in scan(files[k : k + 200]):
        if not i.get("path"):
            continue
        m = i.get("message", "")
        rule = m.split("rule ")[1].split(" ")[0] if "rule " in m else i["code"]
        path = i["path"].split("#")[0]
        src = (os.path.relpath(path, reg).split(os.sep)[1] if path.startswith(reg)
               else "npm-global" if npm_root and path.startswith(npm_root) else "python-stdlib")
        by_rule[rule] += 1
        by_source[src] += 1
        found.append([rule, i["path"]])
print(f"{len(files)} files, {size / 1e6:.1f} MB: {sum(by_rule.values())} findings")
for rule, n in by_rule.most_common():
    print(f"  {n:6}  {rule}")
print("most findings:", ", ".join(f"{s} {n}" for s, n in by_source.most_common(8)))
if keep:
    json.dump(found, open(keep, "w"))
PY
