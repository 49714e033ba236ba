#!/usr/bin/env python3
"""transcripts.py COFFER OUT TOOL=SOURCE[,SOURCE...] ...

Exports real agent transcripts, published in public repositories, with a
partner policy (1 MiB strings) and a public one (8 KiB), and reports per
tool what a recipient would see: accepted exports, placeholders per MB by
kind, secret placeholders per MB, strings cut (and cut without a marker),
traceback frames that keep their module path, what is left after a path
placeholder, prompt users and hosts left, and a sample of secret
placeholders in context for a hand check. See bench/transcripts.sh for the
sources. A SOURCE is GITDIR:PATH-REGEX (files of HEAD whose path matches).

Each transcript becomes one bundle: its messages, steps or chat blocks as
session.jsonl records (`message` with role and content, `tool.call` with
the command, `tool.result` with the output); Claude Code's records go in
as they are."""
import collections
import json
import os
import re
import subprocess
import sys

coffer, out = sys.argv[1], sys.argv[2]
specs = sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "fixtures", "run-bundles", "observational-completed")
PLACEHOLDER = re.compile(
    r"\[(REDACTED_SECRET:[a-z0-9-]+:[0-9a-f]{8}|LOCAL_PATH|HOME|WORKSPACE|LOCAL_HOST|LOCAL_USER:[0-9]+)\]")
MARKER = re.compile(r"…\[TRUNCATED: [0-9]+ bytes\]$")
FRAME = re.compile(r'File "([^"\n]+)", line [0-9]+')
# A placeholder, a space, then a word and a separator: what a cut at the
# first space of a path leaves behind.
REMAINDER = re.compile(r"\[(?:HOME|LOCAL_PATH)\] [A-Za-z0-9._-]+[/\\]")
PROMPT = re.compile(r"(?m)^\[?([A-Za-z0-9._-]+)@([A-Za-z0-9][A-Za-z0-9-]*)(?::[~/][^\s]*[$#%]| [^\s\]]+\]?[$#%] )")


def files_of(source):
    gitdir, pattern = source.split(":", 1)
    names = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    rx = re.compile(pattern)
    for n in sorted(x for x in names if rx.search(x)):
        blob = subprocess.run(["git", "--git-dir", gitdir, "show", "HEAD:" + n],
                              capture_output=True, check=True).stdout
        yield n, blob.decode("utf-8", "replace")


def text_of(v):
    if isinstance(v, str):
        return v
    if isinstance(v, list):  # content parts
        return "\n".join(text_of(x.get("text", x) if isinstance(x, dict) else x) for x in v)
    return json.dumps(v)


def records(name, text):
    """session.jsonl records of one transcript."""
    recs = []
    if name.endswith(".md") or name.endswith(".txt"):
        block = []
        for line in text.split("\n"):
            if line.startswith("#### ") and block:
                recs.append({"type": "message", "role": "assistant", "content": "\n".join(block)})
                block = []
            block.append(line)
            if len(block) >= 200:
                recs.append({"type": "message", "role": "assistant", "content": "\n".join(block)})
                block = []
        if block:
            recs.append({"type": "message", "role": "assistant", "content": "\n".join(block)})
        return recs
    if name.endswith(".jsonl"):  # Claude Code: its own records, as written
        return [json.loads(x) for x in text.split("\n") if x.strip()]
    doc = json.loads(text)
    if isinstance(doc, dict) and "loglines" in doc:  # the same, as one document
        return [x for x in doc["loglines"] if isinstance(x, dict)]
    if isinstance(doc, list):  # a bare list of messages
        doc = {"messages": doc}
    for m in doc.get("messages", doc.get("history", [])):
        if isinstance(m, dict):
            recs.append({"type": "message", "role": m.get("role", "user"),
                         "content": text_of(m.get("content", ""))})
    for step in doc.get("trajectory", []):
        if isinstance(step, dict):
            recs.append({"type": "tool.call", "command": text_of(step.get("action", ""))})
            recs.append({"type": "tool.result", "output": text_of(step.get("observation", ""))})
    return recs


def policy(path, cls, max_string):
    with open(path, "w") as f:
        json.dump({"schemaVersion": "coffer.export-policy/v1", "sharingClass": cls,
                   "maxArtifactBytes": 1 << 30, "maxStringBytes": max_string}, f)


def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)


os.makedirs(out, exist_ok=True)
store = os.path.join(out, "store")
subprocess.run([coffer, "--store", store, "init", "-q"], check=True)
policies = {"partner": 1 << 20, "public": 8192}
for cls, limit in policies.items():
    policy(os.path.join(out, cls + ".json"), cls, limit)
report = {}
for spec in specs:
    tool, sources = spec.split("=", 1)
    for cls in policies:
        t = collections.Counter()
        kinds = collections.Counter()
        sample = []
        for source in sources.split(","):
            for name, text in files_of(source):
                recs = records(name, text)
                if not recs:
                    continue
                t["transcripts"] += 1
                base = os.path.join(out, tool, re.sub(r"[^A-Za-z0-9_.-]", "_", name))
                os.makedirs(base, exist_ok=True)
                sess = os.path.join(base, "session.jsonl")
                with open(sess, "w") as f:
                    f.write(json.dumps({"type": "session.start", "sessionId": "sess-" + tool}) + "\n")
                    for r in recs:
                        f.write(json.dumps(r) + "\n")
                t["bytes"] += os.path.getsize(sess)
                subprocess.run([sys.executable, os.path.join(HERE, "make-bundle.py"), sess, TEMPLATE,
                                os.path.join(base, "bundle")], check=True)
                dest = os.path.join(base, "out-" + cls)
                subprocess.run(["rm", "-rf", dest], check=True)
                r = subprocess.run([coffer, "--store", store, "export", "create", "--json", os.path.join(base, "bundle"),
                                    os.path.join(out, cls + ".json"), dest], capture_output=True, text=True)
                if r.returncode != 0:
                    t["refused"] += 1
                    print(f"{tool}/{name} ({cls}): exit {r.returncode}: {r.stdout[:300]}", file=sys.stderr)
                    continue
                t["accepted"] += 1
                m = json.load(open(os.path.join(dest, "manifest.json")))
                t["truncated"] += sum(x["count"] for x in m["transformations"] if x["action"] == "truncated")
                with open(os.path.join(dest, "session.jsonl")) as f:
                    for line in f:
                        for s in strings(json.loads(line)):
                            if MARKER.search(s):
                                t["marked"] += 1
                            for p in PLACEHOLDER.finditer(s):
                                kind = p.group(1).split(":")[0]
                                kinds[kind] += 1
                                if kind == "REDACTED_SECRET" and len(sample) < 12:
                                    a, b = p.span()
                                    sample.append(s[max(0, a - 50):b + 30].replace("\n", " "))
                            for fr in FRAME.finditer(s):
                                t["frames"] += 1
                                # Kept: more than a placeholder stands for it.
                                if not PLACEHOLDER.fullmatch(fr.group(1)):
                                    t["frames_kept"] += 1
                            t["remainders"] += len(REMAINDER.findall(s))
                            for pm in PROMPT.finditer(s):
                                if not (pm.group(1).startswith("[") or "LOCAL_" in pm.group(0)):
                                    t["prompts_left"] += 1
        mb = t["bytes"] / 1e6 or 1
        report[f"{tool}/{cls}"] = {
            "transcripts": t["transcripts"], "accepted": t["accepted"], "MB": round(mb, 2),
            "placeholdersPerMB": {k: round(v / mb, 2) for k, v in sorted(kinds.items())},
            "secretPlaceholdersPerMB": round(kinds["REDACTED_SECRET"] / mb, 2),
            "stringsCut": t["truncated"], "cutWithoutMarker": t["truncated"] - t["marked"],
            "tracebackFrames": t["frames"],
            "framesKeepingModulePath": f"{t['frames_kept']}/{t['frames']}",
            "pathRemainders": t["remainders"], "promptNamesLeft": t["prompts_left"],
            "secretSample": sample,
        }
json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
print()
