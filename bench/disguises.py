#!/usr/bin/env python3
"""disguises.py COFFER WORKDIR

Secrets in pieces and in disguise, through a real partner export: seven
generated credentials (vendor tokens and a named one), each carried in
about forty shapes nobody tuned a rule for: streamed in the deltas of
several vendors' schemas and of none (Gemini parts, an event feed, two
tool results), and written as hexdumps, character dumps, compressed
blobs in base64 and hex, base32, UTF-16, entities, escapes, byte lists,
JSON arrays of bytes or characters, concatenated literals, reversed,
spaced out, as a big number. Builds a bundle, ingests, exports, then
reads every case back the way its shape is written and counts the
secrets of which a 16-character run survives. Prints the shapes with
survivors and the total. Values are generated here, never stored."""
import base64, gzip, zlib, json, os, random, re, shutil, subprocess, sys

COFFER, W = sys.argv[1], sys.argv[2]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rng = random.Random(7)
AL = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
def s(a, k): return "".join(rng.choice(a) for _ in range(k))

def secrets():
    return [
        ("ghp", "ghp_" + s(AL, 36)),
        ("aws", "AKIA" + s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        ("ant", "sk-ant-api03-" + s(AL + "-_", 93) + "AA"),
        ("xoxb", "xoxb-" + s("0123456789", 12) + "-" + s("0123456789", 13) + "-" + s(AL, 24)),
        ("glpat", "glpat-" + s(AL, 20)),
        ("stripe", "sk_live_" + s(AL, 24)),
        ("named", "Zq" + s(AL, 30)),  # carried as api_key=VALUE
    ]

def text_of(kind, v):
    if kind == "named":
        return f"export ACME_API_KEY={v}\n"
    return f"token in use: {v}\n"

def chunks(t, k):
    return [t[i:i + k] for i in range(0, len(t), k)]

cases = []  # (name, secret, records, decoder(records)->text)

def case(name, v, recs, dec):
    cases.append((name, v, recs, dec))

def joined(field_path):
    def dec(recs):
        out = []
        for r in recs:
            x = r
            try:
                for f in field_path:
                    x = x[f]
                out.append(x if isinstance(x, str) else json.dumps(x))
            except Exception:
                out.append(json.dumps(r))
        return "".join(out)
    return dec

def whole(recs): return "\n".join(json.dumps(r) for r in recs)

def xxd(b):
    out = []
    for o in range(0, len(b), 16):
        row = b[o:o + 16]
        hx = " ".join(row[i:i + 2].hex() for i in range(0, len(row), 2))
        out.append(f"{o:08x}: {hx:<39}  " + "".join(chr(c) if 32 <= c < 127 else "." for c in row))
    return "\n".join(out)

def hexdump_c(b):
    out = []
    for o in range(0, len(b), 16):
        row = b[o:o + 16]
        h1 = " ".join(f"{c:02x}" for c in row[:8]); h2 = " ".join(f"{c:02x}" for c in row[8:])
        out.append(f"{o:08x}  {h1:<23}  {h2:<23}  |" + "".join(chr(c) if 32 <= c < 127 else "." for c in row) + "|")
    return "\n".join(out)

def od_c(b):
    out = []
    for o in range(0, len(b), 16):
        row = b[o:o + 16]
        NL = "\\n"
        cs = "".join("%4s" % (chr(c) if 32 < c < 127 else (NL if c == 10 else " ")) for c in row)
        out.append(f"{o:07o}{cs}")
    return "\n".join(out)

def od_x1(b):
    out = []
    for o in range(0, len(b), 16):
        row = b[o:o + 16]
        out.append(f"{o:06x} " + " ".join(f"{c:02x}" for c in row) + "  >" + "".join(chr(c) if 32 <= c < 127 else "." for c in row) + "<")
    return "\n".join(out)

def unhex_any(t):
    # strips offsets and ascii columns roughly: takes all 2-hex groups after the offset column
    bs = bytearray()
    for line in t.splitlines():
        line = re.sub(r"^\s*[0-9a-fA-F]{6,8}:?\s", "", line)
        line = re.split(r"\s\s[|>]|\s{2,}\S*$", line)[0]
        for g in re.findall(r"\b[0-9a-fA-F]{2,4}\b", line):
            try: bs += bytes.fromhex(g)
            except ValueError: pass
    return bs.decode("latin1")

for kind, v in secrets():
    t = text_of(kind, v)
    b = t.encode()
    # pieces
    for k in (1, 3, 5, 8):
        case(f"anthropic-text-delta-{k}", v,
             [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": c}} for c in chunks("Sure. " + t, k)],
             joined(["delta", "text"]))
    args = json.dumps({"command": t.strip()})
    case("anthropic-json-delta-4", v,
         [{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": c}} for c in chunks(args, 4)],
         joined(["delta", "partial_json"]))
    case("openai-chunk-3", v,
         [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": c}}]} for c in chunks(t, 3)],
         joined(["choices", 0, "delta", "content"]))
    case("openai-toolargs-5", v,
         [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": c}}]}}]} for c in chunks(args, 5)],
         joined(["choices", 0, "delta", "tool_calls", 0, "function", "arguments"]))
    case("responses-delta-4", v,
         [{"type": "response.output_text.delta", "item_id": "msg_1", "delta": c} for c in chunks(t, 4)],
         joined(["delta"]))
    case("generic-event-6", v,
         [{"event": "token", "data": c} for c in chunks(t, 6)], joined(["data"]))
    case("gemini-parts-7", v,
         [{"candidates": [{"content": {"parts": [{"text": c}], "role": "model"}}]} for c in chunks(t, 7)],
         joined(["candidates", 0, "content", "parts", 0, "text"]))
    half = len(t) // 2
    case("two-outputs", v, [{"type": "tool_result", "output": t[:half]}, {"type": "tool_result", "output": t[half:]}], joined(["output"]))
    case("stdout-lines", v, [{"type": "stdout", "line": "ACME_API_KEY=\\"}, {"type": "stdout", "line": "  " + v}], lambda rs: "".join(r.get("line", "") for r in rs))
    # disguises (one record, text in an output field)
    def one(name, text, dec):
        case(name, v, [{"type": "tool_result", "output": text}], lambda rs, dec=dec: dec(rs[0].get("output", json.dumps(rs[0]))))
    one("xxd", xxd(b), unhex_any)
    one("hexdump-C", hexdump_c(b), unhex_any)
    one("od-x1", od_x1(b), unhex_any)
    one("od-c", od_c(b), lambda x: "".join(re.findall(r"(?<=\s)\S(?=\s|$)", x)))
    one("gzip-b64", base64.b64encode(gzip.compress(b)).decode(), lambda x: x)
    one("zlib-b64", base64.b64encode(zlib.compress(b)).decode(), lambda x: x)
    one("gzip-hex", gzip.compress(b).hex(), lambda x: x)
    one("b64", base64.b64encode(b).decode(), lambda x: x)
    one("b64-b64", base64.b64encode(base64.b64encode(b)).decode(), lambda x: x)
    one("b32", base64.b32encode(b).decode(), lambda x: x)
    one("hex", b.hex(), lambda x: x)
    one("utf16-hex", t.encode("utf-16-le").hex(), lambda x: x)
    one("dec-entities", "".join(f"&#{c};" for c in b), lambda x: x)
    one("hex-entities", "".join(f"&#x{c:x};" for c in b), lambda x: x)
    one("x-escapes", "".join(f"\\x{c:02x}" for c in b), lambda x: x)
    one("pct-all", "".join(f"%{c:02X}" for c in b), lambda x: x)
    one("byte-list", "[" + ", ".join(str(c) for c in b) + "]", lambda x: x)
    one("hex-list", "{" + ", ".join(f"0x{c:02x}" for c in b) + "}", lambda x: x)
    one("chr-concat", "+".join(f"chr({c})" for c in b), lambda x: x)
    one("str-concat", 'key = "' + '" + "'.join(chunks(v, 8)) + '"', lambda x: x)
    one("reversed", t[::-1], lambda x: x[::-1])
    one("spaced", " ".join(t), lambda x: x.replace(" ", ""))
    one("bigint", str(int.from_bytes(v.encode(), "big")), lambda x: x)
    # as a terminal or a mail shows it
    one("grep-colour", t.replace(v, "\x1b[01;31m\x1b[K" + v[:10] + "\x1b[m\x1b[K" + v[10:]), lambda x: re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", x))
    one("fullwidth", "".join(chr(ord(c) + 0xFEE0) if 33 <= ord(c) < 127 else c for c in t), lambda x: "".join(chr(ord(c) - 0xFEE0) if 0xFF01 <= ord(c) <= 0xFF5E else c for c in x))
    qp_head = "Your token for the build bot: " + t.split(v)[0][-10:] + v[:12] + "="
    one("quoted-printable", "-" * (76 - len(qp_head)) + qp_head + "\r\n" + v[12:] + " =E2=80=94 ops\r\n", lambda x: re.sub(r"=\r?\n", "", x))
    # a raw stream inside one output (curl -N of a streaming API)
    one("sse-in-output", "".join("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": c}}]}) + "\n\n" for c in chunks(t, 5)),
        lambda x: "".join(json.loads(l[6:])["choices"][0]["delta"]["content"] for l in x.splitlines() if l.startswith("data: {")))
    # an asciinema recording, each write in colour
    case("asciicast-colour", v, [[i * 0.1, "o", "\x1b[32m" + c + "\x1b[0m"] for i, c in enumerate(chunks(t, 3))],
         lambda rs: re.sub(r"\x1b\[[0-9;]*m", "", "".join(r[2] for r in rs if isinstance(r, list) and len(r) > 2 and isinstance(r[2], str))))
    # the token, then its base64, two outputs of one tool (glued, a match runs on into the blob)
    case("token-then-blob", v, [{"type": "tool_result", "output": "oops " + v}, {"type": "tool_result", "output": base64.b64encode(("oops " + v).encode()).decode()}], joined(["output"]))
    case("json-number-array", v, [{"type": "tool_result", "bytes": list(b)}], lambda rs: json.dumps(rs[0]))
    case("json-char-array", v, [{"type": "tool_result", "chars": list(t)}], lambda rs: "".join(rs[0]["chars"]) if isinstance(rs[0].get("chars"), list) else json.dumps(rs[0]))

# A private key, streamed in 100-byte pieces of a schema nobody names.
def pem():
    body = "".join(rng.choice(AL) for _ in range(64 * 6))
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n", lines[1]
key, probe = pem()
said = "Here it is:\n" + key + "Keep it safe."
case("pem-gemini-100", probe + "AAAA", [{"candidates": [{"content": {"parts": [{"text": c}]}}]} for c in chunks(said, 100)],
     lambda rs: "".join(r["candidates"][0]["content"]["parts"][0]["text"] for r in rs if isinstance(r, dict) and "candidates" in r).replace("\n", ""))

def decode_forms(x):
    """Every way a surviving secret could be read back from x."""
    out = [x]
    def b64(m):
        try: return base64.b64decode(m + "=" * (-len(m) % 4))
        except Exception:
            m = m.rstrip("=")
            return base64.b64decode(m[:len(m) // 4 * 4])
    def b32(m): return base64.b32decode(m + "=" * (-len(m) % 8))
    for m0 in re.findall(r"[A-Za-z0-9+/=]{16,}", x):
        # a blob cut anywhere is read at every alignment
        for m in (m0, m0[1:], m0[2:], m0[3:]):
            for f in (b64, b32):
                try:
                    d = f(m)
                    out.append(d.decode("latin1"))
                    for z in (gzip.decompress, zlib.decompress, lambda d: b64(d.decode("latin1"))):
                        try: out.append(z(d).decode("latin1"))
                        except Exception: pass
                except Exception: pass
    for m in re.findall(r"(?:[0-9a-fA-F]{2}){8,}", x):
        d = bytes.fromhex(m)
        out.append(d.decode("latin1"))
        try: out.append(d.decode("utf-16-le", "ignore"))
        except Exception: pass
        try: out.append(gzip.decompress(d).decode("latin1"))
        except Exception: pass
    out.append(re.sub(r"&#x([0-9a-fA-F]+);", lambda m: chr(int(m.group(1), 16)), re.sub(r"&#(\d+);", lambda m: chr(int(m.group(1))), x)))
    out.append(re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), x))
    out.append(re.sub(r"%([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), x))
    nums = re.findall(r"\b(?:0x[0-9a-fA-F]{1,2}|\d{1,3})\b", x)
    try: out.append("".join(chr(int(n, 0) if n.startswith("0x") else int(n)) for n in nums if int(n, 0) < 256))
    except Exception: pass
    out.append("".join(re.findall(r'"([^"]*)"', x)))
    for m in re.findall(r"\d{30,}", x):
        n = int(m); out.append(n.to_bytes((n.bit_length() + 7) // 8, "big").decode("latin1"))
    return out

def survives(v, text):
    w = min(16, len(v) - 4)
    win = {v[i:i + w] for i in range(4, len(v) - w + 1)}  # skip the vendor prefix
    return any(any(p in f for p in win) for f in decode_forms(text))

# write the session, one group of records per case, separated by a marker
sess = []
for i, (name, v, recs, dec) in enumerate(cases):
    assert survives(v, dec(recs)), (name, "harness cannot read its own input")
    for r in recs:
        if isinstance(r, list):
            r = r + [i]
        else:
            r = dict(r); r["case"] = i
        sess.append(r)
shutil.rmtree(W, ignore_errors=True); os.makedirs(W)
sp = os.path.join(W, "session.jsonl")
with open(sp, "w") as f:
    for r in sess: f.write(json.dumps(r) + "\n")
subprocess.run(["python3", f"{REPO}/bench/make-bundle.py", sp, f"{REPO}/fixtures/run-bundles/observational-completed", f"{W}/bundle"], check=True)
pol = f"{W}/policy.json"
open(pol, "w").write('{"schemaVersion":"coffer.export-policy/v1","sharingClass":"partner","maxArtifactBytes":1073741824,"maxStringBytes":65536,"sensitiveValues":[]}')
st = f"{W}/store"
subprocess.run([COFFER, "--store", st, "init", "-q"], check=True)
subprocess.run([COFFER, "--store", st, "bundle", "ingest", "-q", f"{W}/bundle"], check=True)
r = subprocess.run([COFFER, "--store", st, "export", "create", "-q", "coffer-observational", pol, f"{W}/out"], capture_output=True, text=True)
if r.returncode:
    print(r.stdout, r.stderr); sys.exit(1)
out = None
for d, _, fs in os.walk(f"{W}/out"):
    if "session.jsonl" in fs: out = os.path.join(d, "session.jsonl")
got = {}
for line in open(out):
    rec = json.loads(line)
    got.setdefault(rec[-1] if isinstance(rec, list) else rec.get("case"), []).append(rec)
bad = {}
per = {}
for i, (name, v, recs, dec) in enumerate(cases):
    rs = got.get(i, [])
    text = dec(rs) if rs else ""
    # also the raw JSON of the case's records, in case the decoder misses
    hit = survives(v, text) or survives(v, "".join(json.dumps(x) for x in rs))
    per.setdefault(name, [0, 0])[1] += 1
    if hit:
        per[name][0] += 1
        bad.setdefault(name, []).append(v[:12])
tot = sum(b for _, b in per.values()); sv = sum(a for a, _ in per.values())
for name, (a, b) in per.items():
    if a: print(f"{name:28} {a}/{b} survive  {bad[name][:3]}")
print(f"survive {sv} of {tot} ({100*sv/tot:.1f}%)")
