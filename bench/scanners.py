#!/usr/bin/env python3
"""scanners.py build GITLEAKS_SRC DETECT_SECRETS_SRC OUT_DIR [TRUFFLEHOG_SRC [NOSEYPARKER_SRC [KINGFISHER_SRC [SECRETLINT_SRC]]]]
   scanners.py scan-coffer OUT_DIR COFFER_BIN
   scanners.py scan-detect-secrets OUT_DIR DETECT_SECRETS_BIN
   scanners.py score OUT_DIR TOOL FINDINGS_JSON
   scanners.py survivors OUT_DIR EXPORT_DIR

Builds an evaluation corpus from public secret scanners' own test data,
read from their source checkouts at run time (nothing of theirs is stored in
this repository):

- gitleaks: each rule's true and false positives in
  cmd/generate/config/rules/*.go. Those lists are Go expressions; the small
  subset used there (string literals, `+`, slices, `append`, local
  variables, `secrets.NewSecret(regex)`, the `utils` pattern helpers,
  `fmt.Sprintf`, and `utils.GenerateSampleSecrets`, whose context templates
  are read from utils/generate.go) is evaluated here. `NewSecret` draws a
  random string matching its regex (the `rstr` package), seeded.
- detect-secrets: the `(text, should_flag)` cases of tests/plugins/*_test.py
  `pytest.mark.parametrize` tables.
- trufflehog (optional): the `{input, want}` cases of each detector's
  pkg/detectors/**/*_test.go pattern tests (integration tests left out),
  evaluated with the same Go subset. A case that wants a result is a
  positive; its wanted values that occur verbatim in the input join the
  export check. Cases that want nothing are not used as negatives: most
  are a real token too far from the vendor's name for trufflehog's
  keyword window, or one character short of its regex, which a scrubber
  is right to redact.
- Nosey Parker and Kingfisher (optional): each rule's `examples` and
  `negative_examples` in its YAML rule files.
- secretlint (optional): each rule's snapshot tests (see `secretlint`).

OUT_DIR gets tp/ (positives as files), js/ (the same inside a JSONL string
value), bare/ (known-prefix tokens alone), fp/ (the projects' negatives),
meta.json, and session.jsonl + secrets.txt for the export survival check.

`score` reads one tool's findings ({path: [rule...]}) and prints its rates.
"""
import ast
import base64
import glob
import importlib
import json
import os
import random
import re
import sys
import textwrap
import urllib.parse

TOKEN = re.compile(
    r"""
 (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
|(?P<raw>`[^`]*`)
|(?P<str>"(?:\\.|[^"\\\n])*")
|(?P<chr>'(?:\\.|[^'\\])')
|(?P<num>[0-9]+)
|(?P<id>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
|(?P<op>:=|\.\.\.|[-+*/(){}\[\],:;=.<>!&|])
""",
    re.S | re.X,
)


def go_string(lit):
    if "\\x" in lit:
        return bytes(lit[1:-1], "utf-8").decode("unicode_escape")
    return json.loads(lit)


def lex(src):
    out, i = [], 0
    while i < len(src):
        m = TOKEN.match(src, i)
        if not m:
            out.append(("op", src[i]))
            i += 1
            continue
        i = m.end()
        kind, text = m.lastgroup, m.group()
        if kind == "ws":
            if "\n" in text:
                out.append(("nl", "\n"))
        elif kind == "raw":
            out.append(("s", text[1:-1]))
        elif kind == "str":
            out.append(("s", go_string(text)))
        else:
            out.append((kind, text))
    return out


class Sampler:
    """Random strings matching a Go regex (RE2 syntax mapped to Python's)."""

    def __init__(self, seed):
        import rstr

        importlib.import_module("rstr.xeger").STAR_PLUS_LIMIT = 300
        self.r = rstr.Rstr(random.Random(seed))

    def __call__(self, go):
        py = go.replace("(?i:", "(?:").replace("(?i)", "").replace("(?-i:", "(?:")
        py = py.replace("\\z", "$").replace("[[:alnum:]]", "[A-Za-z0-9]")
        py = py.replace("[:alnum:]", "A-Za-z0-9").replace("\\p{L}", "a-z")
        return self.r.xeger(py)


class Evaluator:
    """Evaluates one Go expression at a time over a token list."""

    def __init__(self, toks, env, funcs):
        self.t, self.i, self.env, self.funcs = toks, 0, env, funcs

    def peek(self):
        j = self.i
        while j < len(self.t) and self.t[j][0] == "nl":
            j += 1
        return self.t[j] if j < len(self.t) else ("eof", "")

    def next(self):
        while self.t[self.i][0] == "nl":
            self.i += 1
        self.i += 1
        return self.t[self.i - 1]

    def expect(self, v):
        tok = self.next()
        if tok[1] != v:
            raise ValueError(f"expected {v}, got {tok}")

    def expr(self):
        v = self.primary()
        while self.peek()[1] == "+":
            self.next()
            w = self.primary()
            v = v + w if isinstance(v, str) else v + [w]
        return v

    def primary(self):
        kind, v = self.next()
        if kind in ("s", "num"):
            return v
        if v == "[":
            self.expect("]")
            self.next()
            return self.elements("}")
        if v == "map":
            self.expect("[")
            self.next()
            self.expect("]")
            self.next()
            return self.elements("}", keyed=True)
        if kind != "id":
            raise ValueError(f"unexpected {v}")
        if self.peek()[1] != "(":
            if v in self.env:
                return self.env[v]
            raise ValueError(f"unknown name {v}")
        self.next()
        args = []
        while self.peek()[1] != ")":
            args.append(self.expr())
            if self.peek()[1] == "...":
                self.next()
            if self.peek()[1] == ",":
                self.next()
        self.expect(")")
        if v == "append":
            out = list(args[0])
            for a in args[1:]:
                out.extend(a if isinstance(a, list) else [a])
            return out
        if v == "fmt.Sprintf":
            return re.sub(r"%[-+ 0-9]*[vqds]", "%s", args[0]) % tuple(args[1:])
        if v in self.funcs:
            return self.funcs[v](*args)
        raise ValueError(f"unknown function {v}")

    def skip_element(self, close):
        depth = 0
        while True:
            k, v = self.peek()
            if k == "eof" or (depth == 0 and v in (",", close)):
                return
            depth += v in "({[" and k == "op"
            depth -= v in ")}]" and k == "op"
            self.next()

    def elements(self, close, keyed=False):
        self.expect("{")
        out = []
        while self.peek()[1] != close:
            start = self.i
            try:
                if keyed:
                    self.expr()
                    self.expect(":")
                e = self.expr()
            except (ValueError, IndexError, TypeError):
                self.i = start
                self.skip_element(close)
                e = []
            out.extend(e if isinstance(e, list) else [e])
            if self.peek()[1] == ",":
                self.next()
        self.expect(close)
        return out


def gitleaks(src, sample):
    """{rule: {"tps": [...], "fps": [...], "secrets": [(text, secret)...],
    "keywords": [...]}} from a gitleaks checkout."""
    gen = open(os.path.join(src, "cmd/generate/config/utils/generate.go")).read()
    body = gen[gen.index("func GenerateSampleSecrets") :]
    body = body[body.index("map[string]string{") : body.index("\n\t}\n")]
    body = re.sub(r"(?m)^\s*//.*$", "", body)
    templates = []
    for m in re.finditer(r'"[^"\n]*":\s*("(?:\\.|[^"\\])*"|`[^`]*`)', body):
        lit = m.group(1)
        templates.append(go_string(lit) if lit[0] == '"' else lit[1:-1])
    known = []  # (text, secret) pairs whose secret span is known

    def samples(i, s):
        out = [t.replace("{i}", i).replace("{I}", i.upper()).replace("{s}", s) for t in templates]
        known.extend((t, s) for t in out)
        return out

    funcs = {
        "utils.Numeric": lambda n: "[0-9]{%s}" % n,
        "utils.Hex": lambda n: "[a-f0-9]{%s}" % n,
        "utils.AlphaNumeric": lambda n: "[a-z0-9]{%s}" % n,
        "utils.AlphaNumericExtendedShort": lambda n: "[a-z0-9_-]{%s}" % n,
        "utils.AlphaNumericExtended": lambda n: "[a-z0-9=_\\-]{%s}" % n,
        "utils.AlphaNumericExtendedLong": lambda n: "[a-z0-9\\/=_\\+\\-]{%s}" % n,
        "utils.Hex8_4_4_4_12": lambda: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "secrets.NewSecret": sample,
        "utils.GenerateSampleSecrets": samples,
        "utils.GenerateSampleSecret": lambda i, s: f'{i}_api_token = "{s}"',
        "strings.ToUpper": str.upper,
        "strings.ToLower": str.lower,
        "strings.Repeat": lambda s, n: s * int(n),
    }
    out = {}
    for path in sorted(glob.glob(os.path.join(src, "cmd/generate/config/rules/*.go"))):
        for part in re.split(r"\nfunc ", open(path).read())[1:]:
            m = re.search(r'RuleID:\s*"([^"]+)"', part)
            if not m:
                continue
            kw = re.search(r"Keywords:\s*\[\]string\{([^}]*)\}", part)
            keywords = [go_string(k) for k in re.findall(r'"(?:\\.|[^"\\])*"', kw.group(1))] if kw else []
            toks, env = lex(part), {}
            known.clear()
            for j in range(len(toks) - 2):
                at_start = j == 0 or toks[j - 1][0] == "nl" or toks[j - 1][1] in ("{", ";")
                if toks[j][0] == "id" and toks[j + 1][1] in (":=", "=") and at_start:
                    ev = Evaluator(toks, env, funcs)
                    ev.i = j + 2
                    try:
                        env[toks[j][1]] = ev.expr()
                    except (ValueError, IndexError, TypeError):
                        pass
            strs = lambda v: [x for x in ([v] if isinstance(v, str) else v) if isinstance(x, str)]
            tps = strs(env.get("tps", []))
            out[m.group(1)] = {
                "tps": tps,
                "fps": strs(env.get("fps", [])),
                "secrets": [(t, s) for t, s in known if t in tps],
                "keywords": keywords,
            }
    return out


def detect_secrets(src):
    """{plugin: {"tps": [...], "fps": [...]}} from a detect-secrets checkout.
    Cases whose text is unformatted (`{secret}`) or that are not about
    credentials (IP addresses, e-mail addresses) are left out."""
    out = {}
    for path in sorted(glob.glob(os.path.join(src, "tests/plugins/*_test.py"))):
        name = os.path.basename(path)[: -len("_test.py")]
        if name in ("ip_public", "email_address", "base", "init", "extract_pragma"):
            continue
        tree = ast.parse(open(path).read())
        ns = {"textwrap": textwrap}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                try:
                    exec(compile(ast.Module([node], []), path, "exec"), ns)
                except Exception:
                    pass
        tps, fps = [], []
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"):
                continue
            if len(node.args) < 2 or not isinstance(node.args[1], (ast.List, ast.Tuple)):
                continue
            for elt in node.args[1].elts:
                try:
                    v = eval(compile(ast.Expression(elt), path, "eval"), ns)
                except Exception:
                    continue
                if not isinstance(v, tuple):
                    continue
                texts = [x for x in v if isinstance(x, str)]
                flags = [x for x in v if isinstance(x, bool)]
                if texts and flags and "{" not in texts[0]:
                    (tps if flags[0] else fps).append(texts[0])
        if tps or fps:
            out[name] = {"tps": tps, "fps": fps, "secrets": [], "keywords": []}
    return out


def trufflehog(src):
    """{detector: {"tps": [...], "fps": [], "secrets": [(text, secret)...],
    "keywords": [...]}} from a trufflehog checkout."""
    out = {}
    root = os.path.join(src, "pkg/detectors")
    for path in sorted(glob.glob(os.path.join(root, "**/*_test.go"), recursive=True)):
        if "integration" in os.path.basename(path):
            continue
        det = os.path.relpath(os.path.dirname(path), root)
        toks, env = lex(open(path, encoding="utf-8", errors="replace").read()), {}
        for j in range(len(toks) - 2):
            at_start = j == 0 or toks[j - 1][0] == "nl" or toks[j - 1][1] in ("{", ";", "(")
            if toks[j][0] == "id" and toks[j + 1][1] in (":=", "=") and at_start:
                ev = Evaluator(toks, env, {})
                ev.i = j + 2
                try:
                    env[toks[j][1]] = ev.expr()
                except (ValueError, IndexError, TypeError, KeyError):
                    pass
        tps, secrets = [], []
        for j in range(len(toks) - 2):
            if toks[j] != ("id", "input") or toks[j + 1][1] != ":":
                continue
            ev = Evaluator(toks, env, {})
            ev.i = j + 2
            try:
                text = ev.expr()
                if ev.next()[1] != "," or ev.next() != ("id", "want") or ev.next()[1] != ":":
                    continue
                want = ev.expr()
            except (ValueError, IndexError, TypeError, KeyError):
                continue
            if not isinstance(text, str) or not isinstance(want, list) or not want:
                continue
            tps.append(text)
            secrets.extend((text, w) for w in want if isinstance(w, str) and len(w) >= 8 and w in text)
        keywords = []
        for go in glob.glob(os.path.join(os.path.dirname(path), "*.go")):
            if not go.endswith("_test.go"):
                m = re.search(r"Keywords\(\)\s*\[\]string\s*\{\s*return\s*\[\]string\{([^}]*)\}", open(go).read())
                if m:
                    keywords += [go_string(k) for k in re.findall(r'"(?:\\.|[^"\\])*"', m.group(1))]
        if tps:
            out[det] = {"tps": tps, "fps": [], "secrets": secrets, "keywords": keywords}
    return out


NOSEYPARKER_RULES = "crates/noseyparker/data/default/builtin/rules"
KINGFISHER_RULES = "data/rules"


def rule_examples(src, rules_dir):
    """{rule id: {"tps": examples, "fps": negative examples, "secrets":
    [(text, secret)...], "keywords": []}} from a checkout whose rules carry
    their own examples (Nosey Parker, and Kingfisher, which grew from it
    and keeps its rule format). A secret is the rule's first capture group
    where Python's `re` reads the pattern."""
    import yaml

    out = {}
    root = os.path.join(src, rules_dir)
    for path in sorted(glob.glob(os.path.join(root, "*.yml"))):
        for rule in (yaml.safe_load(open(path)) or {}).get("rules", []):
            tps = [t for t in rule.get("examples") or [] if isinstance(t, str)]
            fps = [t for t in rule.get("negative_examples") or [] if isinstance(t, str)]
            try:
                pat = re.compile(rule["pattern"])
            except (re.error, KeyError):
                pat = None
            secrets = []
            for t in tps:
                m = pat.search(t) if pat else None
                if m and m.groups() and m.group(1) and len(m.group(1)) >= 8:
                    secrets.append((t, m.group(1)))
            if tps or fps:
                out[rule["id"]] = {"tps": tps, "fps": fps, "secrets": secrets, "keywords": []}
    return out


SECRETLINT_SKIP = ("example", "filter-comments", "internal-test-cjs", "internal-test-esm",
                   "no-dotenv", "no-k8s-kind-secret", "pattern", "preset-canary",
                   "preset-recommend")


def secretlint(src):
    """{rule/case: {...}} from a secretlint checkout: each rule package's
    test/snapshots/<case>/input* with the output.json secretlint wrote for
    it. A case with messages is a positive: the lines of each message are
    one, and the message's range is its secret. A case without messages
    is a negative (its whole input). Cases run with their own options
    (.secretlintrc.json), binary inputs, and rules that judge file names
    or take their patterns from configuration are left out."""
    out = {}
    root = os.path.join(src, "packages/@secretlint")
    for case in sorted(glob.glob(os.path.join(root, "secretlint-rule-*/test/snapshots/*/"))):
        pkg = case[len(root) + 1:].split("/")[0][len("secretlint-rule-"):]
        name = os.path.basename(case.rstrip("/"))
        inputs = glob.glob(os.path.join(case, "input*"))
        result = os.path.join(case, "output.json")
        if (pkg in SECRETLINT_SKIP or len(inputs) != 1 or not os.path.exists(result)
                or os.path.exists(os.path.join(case, ".secretlintrc.json"))):
            continue
        try:
            text = open(inputs[0], encoding="utf-8").read()
            msgs = json.load(open(result))["messages"]
        except (UnicodeDecodeError, ValueError, KeyError):
            continue
        v = {"tps": [], "fps": [], "secrets": [], "keywords": []}
        lines = text.split("\n")
        for m in msgs:
            a, b = m["loc"]["start"]["line"], m["loc"]["end"]["line"]
            t = "\n".join(lines[a - 1:b])
            v["tps"].append(t)
            r = m.get("range")
            if r and len(text[r[0]:r[1]]) >= 8 and text[r[0]:r[1]] in t:
                v["secrets"].append((t, text[r[0]:r[1]]))
        if not msgs:
            v["fps"].append(text)
        out[f"{pkg}/{name}"] = v
    return out


def b64_cores(s):
    """The base64 of `s` at each of the three byte alignments, without the
    characters that depend on the neighbouring bytes."""
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + s.encode()).decode().rstrip("=")
        start = (pad * 4 + 2) // 3 + (1 if pad else 0)
        end = len(enc) - 2
        if end - start >= 8:
            out.append(enc[start:end])
    return out


def forms(s):
    return {
        "plain": [s],
        "json": [json.dumps(s)[1:-1]],
        "percent": [urllib.parse.quote(s, safe="")],
        "base64": b64_cores(s),
    }


def build(gl_src, ds_src, out, th_src="", np_src="", kf_src="", sl_src=""):
    sample = Sampler(2026)
    corpus = {}
    for rule, v in gitleaks(gl_src, sample).items():
        corpus["gitleaks/" + rule] = v
    for plugin, v in detect_secrets(ds_src).items():
        corpus["detect-secrets/" + plugin] = v
    if th_src:
        for det, v in trufflehog(th_src).items():
            corpus["trufflehog/" + det] = v
    if np_src:
        for rule, v in rule_examples(np_src, NOSEYPARKER_RULES).items():
            corpus["noseyparker/" + rule] = v
    if kf_src:
        for rule, v in rule_examples(kf_src, KINGFISHER_RULES).items():
            corpus["kingfisher/" + rule] = v
    if sl_src:
        for rule, v in secretlint(sl_src).items():
            corpus["secretlint/" + rule] = v
    for d in ("tp", "js", "fp", "bare"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    meta, n = {}, 0

    def put(sub, kind, rule, text, ext="txt"):
        nonlocal n
        n += 1
        rel = f"{sub}/{n:06d}.{ext}"
        with open(os.path.join(out, rel), "w") as f:
            f.write(text)
        meta[rel] = [rule, kind]

    secrets, bare = {}, set()
    for rule, v in sorted(corpus.items()):
        for t in v["tps"]:
            put("tp", "tp", rule, t + "\n")
            put("js", "js", rule, json.dumps({"type": "observation.tool_result", "output": t}) + "\n", "jsonl")
        for t in v["fps"]:
            put("fp", "fp", rule, t + "\n")
        for text, s in v["secrets"]:
            secrets.setdefault(s, (rule, text))
            if s not in bare and any(s.lower().startswith(k.lower()) for k in v["keywords"]):
                bare.add(s)
                put("bare", "bare", rule, s + "\n")
    # The export check: each distinct known secret, in its context, plain
    # and in three carriers (base64 of the line, percent-encoded, JSON in a
    # JSON string).
    with open(os.path.join(out, "session.jsonl"), "w") as f, open(os.path.join(out, "secrets.json"), "w") as g:
        seq = 0
        for s, (rule, text) in sorted(secrets.items()):
            carriers = [
                {"type": "observation.tool_result", "output": text},
                {"type": "observation.tool_result", "output": base64.b64encode(text.encode()).decode()},
                {"type": "observation.tool_use", "input": {"url": "https://h.test/cb?q=" + urllib.parse.quote(text, safe="")}},
                {"type": "observation.message", "text": json.dumps({"config": text})},
            ]
            for c in carriers:
                seq += 1
                c["seq"] = seq
                f.write(json.dumps(c) + "\n")
        json.dump([[s, rule] for s, (rule, _) in sorted(secrets.items())], g)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    kinds = {}
    for rule, kind in meta.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"corpus: {len(corpus)} rules/plugins, {kinds}, {len(secrets)} distinct secrets for the export check")


def score(out, tool, findings_path):
    meta = json.load(open(os.path.join(out, "meta.json")))
    found = json.load(open(findings_path))
    by_src = {}
    for rel, (rule, kind) in meta.items():
        src = rule.split("/")[0]
        key = (src, kind)
        t = by_src.setdefault(key, [0, 0])
        t[0] += 1
        t[1] += bool(found.get(rel))
    rows = {}
    for (src, kind), (total, hit) in sorted(by_src.items()):
        rows.setdefault(kind, [0, 0])
        rows[kind][0] += total
        rows[kind][1] += hit
        print(f"  {tool:15} {src:15} {kind:5} {hit:5} / {total:5} = {100 * hit / total:5.1f}%")
    names = {"tp": "secrets flagged in context (files)", "js": "secrets flagged inside JSONL string values",
             "bare": "bare known-prefix tokens flagged", "fp": "false positives on the projects' negatives"}
    result = {}
    for kind in ("tp", "js", "bare", "fp"):
        if kind in rows:
            total, hit = rows[kind]
            result[kind] = round(100 * hit / total, 1)
            print(f"{tool}: {names[kind]}: {hit} of {total} = {100 * hit / total:.1f}%")
    json.dump(result, open(os.path.join(out, f"score-{tool}.json"), "w"))


def scan_coffer(out, coffer):
    """Runs `coffer scan --json` over the corpus (in batches, since one
    result lists at most 1,000 issues) and writes findings-coffer.json."""
    import subprocess

    meta = json.load(open(os.path.join(out, "meta.json")))
    rels, found = sorted(meta), {}
    for k in range(0, len(rels), 200):
        batch = rels[k : k + 200]
        p = subprocess.run([coffer, "scan", "--json"] + batch, cwd=out, capture_output=True, text=True)
        res = json.loads(p.stdout)
        assert len(res["issues"]) < 1000, "a batch hit the issue limit"
        for i in res["issues"]:
            rel = i["path"].split("#")[0]
            found.setdefault(rel, []).append(i["code"])
    json.dump(found, open(os.path.join(out, "findings-coffer.json"), "w"))


def scan_detect_secrets(out, bin_):
    """Runs `detect-secrets scan --all-files` over the corpus and writes
    findings-detect-secrets.json."""
    import subprocess

    p = subprocess.run([bin_, "scan", "--all-files", "tp", "js", "bare", "fp"], cwd=out,
                       capture_output=True, text=True, check=True)
    res = json.loads(p.stdout)["results"]
    found = {rel: [r["type"] for r in rs] for rel, rs in res.items()}
    json.dump(found, open(os.path.join(out, "findings-detect-secrets.json"), "w"))


def survivors(out, export_dir):
    secrets = json.load(open(os.path.join(out, "secrets.json")))
    blob = bytearray()
    for d, _, fs in os.walk(export_dir):
        for f in fs:
            blob += open(os.path.join(d, f), "rb").read()
    blob = bytes(blob)
    left, surviving = {}, set()
    for s, rule in secrets:
        for name, fs in forms(s).items():
            if any(f.encode() in blob for f in fs):
                left.setdefault(name, []).append(rule)
                surviving.add(s)
    distinct, total = len(surviving), len(secrets)
    print(f"coffer export: distinct secrets surviving: {distinct} of {total} = {100 * distinct / max(total, 1):.2f}%"
          + "".join(f"; {k}: {len(v)}" for k, v in sorted(left.items())))
    for k, v in sorted(left.items()):
        print(f"  survived as {k}: {sorted(set(v))[:20]}")
    real = [s for s, _ in secrets if real_looking(s)]
    kept = [s for s in real if s in surviving]
    print(f"coffer export: real-looking secrets surviving (filler and values under 8 characters not counted): "
          f"{len(kept)} of {len(real)} = {100 * len(kept) / max(len(real), 1):.2f}%")
    rules = dict((s, r) for s, r in secrets)
    for s in sorted(kept, key=lambda s: rules[s])[:60]:
        print(f"  {rules[s]}: {s[:90]!r}")


def real_looking(s):
    """Whether a corpus secret is real-looking, as the issue counts them:
    not filler (runs of one character over half of it, `EXAMPLE` and its
    kin, `xxxx`) and 8 characters or more."""
    if len(s) < 8:
        return False
    low = s.lower()
    if any(m in low for m in ("example", "xxxx", "dummy", "placeholder", "your_", "your-", "sample", "fake")):
        return False
    runs, i = 0, 0
    while i < len(s):
        n = len(s[i:]) - len(s[i:].lstrip(s[i]))
        if n >= 4:
            runs += n
        i += n
    return runs * 2 < len(s)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(*sys.argv[2:9])
    elif cmd == "score":
        score(*sys.argv[2:5])
    elif cmd == "scan-coffer":
        scan_coffer(*sys.argv[2:4])
    elif cmd == "scan-detect-secrets":
        scan_detect_secrets(*sys.argv[2:4])
    elif cmd == "survivors":
        survivors(*sys.argv[2:4])
    else:
        sys.exit(__doc__)
