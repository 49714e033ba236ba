#!/usr/bin/env python3
"""services.py TRUFFLEHOG_SRC GITLEAKS_SRC NOSEYPARKER_SRC > crates/export/src/rules/services.txt

Writes the service names the named-credential detector knows
(crates/export/src/rules/named.rs), one per line, from public scanners' detector
catalogs: trufflehog's detector keywords and folder names, gitleaks' rule
files, Nosey Parker's rule files. Names are facts; nothing else of theirs
is kept.

A name that is also a common English word (`wordfreq` Zipf frequency of
at least 2.5, e.g. `stripe`, `asana`) is written with ` ~`: the detector
counts it only when a credential word (`key`, `token`, `secret`...)
follows it. A very common word (Zipf 4 or more: `line`, `box`, `front`)
is left out: next to a credential word the label rules already read it,
and alone it is prose. Generic words (`api`, `token`, `database`) and
token prefixes that trufflehog uses as keywords (`akia`, `eyj`) are left
out too: they name no service.

Needs `pip install wordfreq==3.1.1`.
"""
import glob
import os
import re
import sys

from wordfreq import zipf_frequency

# Credential words, generic technical words and token-prefix fragments:
# keywords of detectors, not names of services.
GENERIC = set(
    """
    access accessid accesskey account accountkey accountname admin api apikey app apps auth auths
    bearer bot client cloud code credential credentials data database dev developer domain email
    endpoint endpointsuffix generic hapikey host http https jdbc jwt key keys login mail manifest
    oauth parsers password private prod protocols public secret secrets server service session
    signing sql storage storageaccount test token tokens user verifier web webhook
    chatbot config curl django docker geocode gradle hashes kanban kubernetes ldap mongo netrc
    odbc privatekey psexec readme sqlserver stopwords webscraping
    """.split()
)
PREFIX_LIKE = re.compile(
    r"^(?:abia|acca|akia|asia|a3t|eaaa|eyj.*|aiza.*|akcp|atbb|atctt.*|cmvm.*|ffff.*|flyv1|ewo.*|"
    r"dapi|sq0.*|sntr.*|t3bl.*|thog|unplu|ltai|glpat|ghp|gho|ghu|ghs|ghr|xox.*|sk|pk|rk)$"
)


def names(th, gl, np_):
    out = set()
    root = os.path.join(th, "pkg/detectors")
    for d in os.listdir(root):
        if os.path.isdir(os.path.join(root, d)):
            out.add(d.lower())
    for go in glob.glob(os.path.join(root, "**/*.go"), recursive=True):
        if go.endswith("_test.go"):
            continue
        m = re.search(
            r"Keywords\(\)\s*\[\]string\s*\{\s*return\s*\[\]string\{([^}]*)\}",
            open(go, encoding="utf-8", errors="replace").read(),
        )
        if m:
            out.update(k.lower() for k in re.findall(r'"([^"\\]*)"', m.group(1)))
    for f in os.listdir(os.path.join(gl, "cmd/generate/config/rules")):
        out.add(os.path.splitext(f)[0].lower())
    for f in glob.glob(os.path.join(np_, "crates/noseyparker/data/default/builtin/rules/*.yml")):
        out.add(os.path.splitext(os.path.basename(f))[0].lower())
    return out


def main():
    th, gl, np_ = sys.argv[1:4]
    rows = []
    for n in sorted(names(th, gl, np_)):
        if not re.fullmatch(r"[a-z][a-z0-9]{3,23}", n) or n in GENERIC or PREFIX_LIKE.match(n):
            continue
        # A name that ends in a credential word names it twice
        # (`airbrakeprojectkey`): its service is the rest.
        z = zipf_frequency(n, "en")
        if z >= 4.0:
            continue
        rows.append(n + (" ~" if z >= 2.5 else ""))
    print("# Service names for crates/export/src/rules/named.rs, written by bench/services.py")
    print("# from trufflehog's, gitleaks' and Nosey Parker's detector catalogs.")
    print("# ` ~`: also a common word; counted only before a credential word.")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
