#!/usr/bin/env python3
"""Deterministic benchmark inputs for the bench/ scripts.

  gen.py jsonl PATH MIB      text-like JSONL session log of MIB MiB
  gen.py tree DIR FILES      FILES small files of 1-64 KiB, 30% duplicate contents
  gen.py small DIR SEED      10,000 unique files of 0.5-4 KiB (seeded by SEED)
"""
import json
import os
import random
import sys

WORDS = (
    "the agent ran tests failed passed patch file diff tool bash read write edit "
    "workspace verifier assertion error timeout budget token model harness session "
    "hook event observation result output stdout stderr exit code retry attempt "
    "fixture prompt reference solution review packet bundle manifest telemetry trace"
).split()
TOOLS = ["bash", "read_file", "write_file", "edit", "grep", "list_dir", "run_tests"]


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def record(rng, seq):
    kind = rng.choice(["observation.tool_use", "observation.tool_result", "observation.message"])
    rec = {
        "seq": seq,
        "ts": f"2026-11-{1 + seq % 28:02d}T{seq % 24:02d}:{seq % 60:02d}:{(seq * 7) % 60:02d}.{seq % 1000:03d}Z",
        "id": f"evt_{rng.getrandbits(128):032x}",
        "type": kind,
        "tool": rng.choice(TOOLS),
        "text": sentence(rng, rng.randint(4, 40)),
    }
    if kind == "observation.tool_result":
        rec["exitCode"] = rng.choice([0, 0, 0, 1, 2])
        rec["output"] = "\n".join(sentence(rng, rng.randint(3, 12)) for _ in range(rng.randint(1, 6)))
    return json.dumps(rec, separators=(",", ":")) + "\n"


def jsonl(path, mib):
    rng = random.Random(17)
    target = mib << 20
    written = 0
    seq = 0
    with open(path, "w") as f:
        buf = []
        while written < target:
            line = record(rng, seq)
            seq += 1
            buf.append(line)
            written += len(line)
            if len(buf) >= 4096:
                f.write("".join(buf))
                buf = []
        f.write("".join(buf))


def tree(root, files):
    rng = random.Random(23)
    made = []
    for i in range(files):
        d = os.path.join(root, f"d{i % 100:02d}", f"e{(i // 100) % 20:02d}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"f{i:05d}.txt")
        if made and rng.random() < 0.30:
            data = made[rng.randrange(len(made))]
        else:
            size = rng.randint(1 << 10, 64 << 10)
            text = sentence(rng, size // 5).encode()
            data = (text + rng.randbytes(size // 8))[:size]
            made.append(data)
        with open(p, "wb") as f:
            f.write(data)


def small(root, seed):
    rng = random.Random(seed)
    for i in range(10000):
        d = os.path.join(root, f"{i % 100:02d}")
        os.makedirs(d, exist_ok=True)
        size = rng.randint(512, 4096)
        with open(os.path.join(d, f"{i}"), "wb") as f:
            f.write(f"batch {seed} file {i}\n".encode() + rng.randbytes(size))


if __name__ == "__main__":
    if sys.argv[1] == "jsonl":
        jsonl(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "tree":
        tree(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "small":
        small(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
