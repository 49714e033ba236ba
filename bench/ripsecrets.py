"""Recall and false positives of `coffer scan` on sirwart/ripsecrets' test
files, a suite not used to build any rule (first run as a held-out check
in the forty-first session): `test/one_per_line/*` hold one secret a line,
`test/one_per_file/*` one a file, and `test/none` lines that ripsecrets
leaves alone. Counted: lines (files) flagged among those with a secret,
and lines of `none` flagged.

    python3 bench/ripsecrets.py RIPSECRETS_SRC [COFFER [DETECT_SECRETS]]

(RIPSECRETS_SRC: a checkout of github.com/sirwart/ripsecrets; the other
arguments as bench/whispers.py takes them.) `none` is ripsecrets' own
judgement, not a list of look-alikes: it holds a live-looking Stripe key
silenced by `pragma: allowlist secret` and URL passwords (`public:secret`)
that docs/EXPORT.md requires replacing, so a flag there is not always a
false positive.
"""
import os
import sys

from whispers import scanners


def run(src, label, scan):
    test = os.path.join(src, "test")
    total = found = 0
    per_line = os.path.join(test, "one_per_line")
    for name in sorted(os.listdir(per_line)):
        path = os.path.join(per_line, name)
        lines = [i for i, l in enumerate(open(path, errors="replace").read().split("\n")) if l.strip()]
        flagged = scan(path)
        hit = len([i for i in lines if i in flagged])
        total, found = total + len(lines), found + hit
        print(f"{label}: {name:12} secrets {len(lines):3}  flagged {hit:3}")
    per_file = os.path.join(test, "one_per_file")
    for name in sorted(os.listdir(per_file)):
        hit = 1 if scan(os.path.join(per_file, name)) else 0
        total, found = total + 1, found + hit
        print(f"{label}: {name:12} secrets   1  flagged {hit:3}")
    none = os.path.join(test, "none")
    lines = [l for l in open(none, errors="replace").read().split("\n") if l.strip()]
    wrong = len(scan(none))
    print(f"{label}: ripsecrets tests: {found} of {total} secrets flagged = {100 * found / total:.1f}%; "
          f"lines of `none` flagged: {wrong} of {len(lines)}")


def main():
    for label, scan in scanners(sys.argv[1:]).items():
        run(sys.argv[1], label, scan)


if __name__ == "__main__":
    main()
