"""Recall and false positives of `coffer scan` on semgrep-rules' secret
tests (generic/secrets/**), a suite this project never tuned on: each
test file marks the line after `ruleid: <rule>` as a secret and the line
after `ok: <rule>` as a look-alike that must not be flagged (`todoruleid`
and `todook`, semgrep's own known misses and false alarms, count the same
way). `security/` holds semgrep's own cases; `gitleaks/` restates
gitleaks' rules, whose tests bench/scanners.sh already uses, so it is
reported apart.

    python3 bench/semgrep.py SEMGREP_RULES_SRC [COFFER [DETECT_SECRETS]]

(SEMGREP_RULES_SRC: a checkout of github.com/semgrep/semgrep-rules;
COFFER defaults to target/release/coffer; DETECT_SECRETS, the
`detect-secrets` of the venv `bench/scanners.sh` makes, is counted the
same way beside it.) First run as a held-out check in the thirty-eighth
session.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whispers import scanners  # noqa: E402

MARK = re.compile(r"\b(todoruleid|ruleid|todook|ok):\s*[\w.-]+")


def cases(path):
    """(line index, is_secret) for each annotated line of a test file."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    out, pending = [], None
    for i, line in enumerate(lines):
        m = MARK.search(line)
        if m and len(line.strip()) - len(m.group(0)) < 8:
            pending = m.group(1).endswith("ruleid")
            continue
        if pending is not None and line.strip():
            out.append((i, pending))
            pending = None
    return out


def run(src, label, scan):
    root = os.path.join(src, "generic", "secrets")
    for part in ("security", "gitleaks"):
        d = os.path.join(root, part)
        tp = found = neg = flagged = 0
        missed = []
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if name.endswith((".yaml", ".yml")) and not name.endswith(".test.yaml"):
                continue
            marked = cases(path)
            if not marked:
                continue
            hit = scan(path)
            for i, secret in marked:
                if secret:
                    tp += 1
                    found += i in hit
                    if i not in hit:
                        missed.append(f"{name}:{i + 1}")
                else:
                    neg += 1
                    flagged += i in hit
        print(f"{label} {part}: secrets flagged {found} of {tp} = {100 * found / max(tp, 1):.1f}%; "
              f"look-alikes flagged {flagged} of {neg} = {100 * flagged / max(neg, 1):.1f}%")
        if missed and os.environ.get("VERBOSE"):
            print("  missed: " + " ".join(missed))


def main():
    for label, scan in scanners(sys.argv[1:]).items():
        run(sys.argv[1], label, scan)


if __name__ == "__main__":
    main()
