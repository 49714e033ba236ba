#!/usr/bin/env bash
# Startup cost: `coffer has D` against `git cat-file -e` (both on a
# one-object store/repo), and `--version` of each, interleaved round by
# round so the machine's mood hits every command alike.
#
#   bench/startup.sh                 # the default release build
#   STATIC=1 bench/startup.sh        # also a static-pie build (glibc)
#   NOPIE=1 bench/startup.sh         # also a non-PIE build
#   COFFER=path/to/coffer bench/startup.sh
#
# STATIC=1 builds with `-C target-feature=+crt-static` for the host target
# into target/static; NOPIE=1 with `-C relocation-model=static` (a fixed
# load address: no relocations at startup, and no ASLR for the binary)
# into target/nopie. Both need an explicit --target: proc-macros cannot
# be built that way. Prints the median wall time of RUNS runs per command
# per round, then the medians over ROUNDS rounds and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null && command -v python3 >/dev/null || { echo "needs git and python3"; exit 1; }
B=${BENCH_DIR:-$PWD/target/bench}/startup
RUNS=${RUNS:-200}
ROUNDS=${ROUNDS:-5}
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
host=$(rustc -vV | sed -n 's/^host: //p')
variant() { # name rustflags -> path of the built binary
  RUSTFLAGS="$2" CARGO_TARGET_DIR=$PWD/target/$1 \
    cargo build --release -q -p coffer-cli --target "$host"
  echo "$PWD/target/$1/$host/release/coffer"
}
VARIANTS=()
if [ "${STATIC:-0}" = 1 ]; then
  VARIANTS+=("static=$(variant static "-C target-feature=+crt-static")")
fi
if [ "${NOPIE:-0}" = 1 ]; then
  VARIANTS+=("non-PIE=$(variant nopie "-C relocation-model=static")")
fi
rm -rf "$B"; mkdir -p "$B"
"$COFFER" --store "$B/store" init -q
echo one > "$B/one"
digest=$("$COFFER" --store "$B/store" --json put "$B/one" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["files"][0]["digest"])')
git init -q "$B/git"; echo one > "$B/git/f"; git -C "$B/git" add f
blob=$(git -C "$B/git" hash-object f)

python3 - "$RUNS" "$ROUNDS" "$COFFER" "$B/store" "$digest" "$B/git" "$blob" "${VARIANTS[@]}" <<'PY'
import statistics, subprocess, sys, time
runs, rounds, coffer, store, digest, repo, blob = sys.argv[1:8]
variants = [v.split("=", 1) for v in sys.argv[8:]]
runs, rounds = int(runs), int(rounds)
cmds = {
    "git cat-file -e": ["git", "-C", repo, "cat-file", "-e", blob],
    "coffer has": [coffer, "--store", store, "has", digest],
    "git --version": ["git", "--version"],
    "coffer --version": [coffer, "--version"],
}
for label, binary in variants:
    cmds[f"{label} coffer has"] = [binary, "--store", store, "has", digest]
    cmds[f"{label} coffer --version"] = [binary, "--version"]
for cmd in cmds.values():  # warm the page cache, and fail early
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
medians = {name: [] for name in cmds}
for r in range(rounds):
    for name, cmd in cmds.items():
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            ts.append(time.perf_counter() - t)
        medians[name].append(statistics.median(ts) * 1000)
    print(f"round {r + 1}: " + "  ".join(f"{n} {m[-1]:.2f}" for n, m in medians.items()))
mid = {n: statistics.median(m) for n, m in medians.items()}
for n, m in mid.items():
    print(f"{n:26} {m:.2f} ms")
print(f"coffer has / git cat-file -e: {mid['coffer has'] / mid['git cat-file -e']:.2f}x")
print(f"coffer --version / git --version: {mid['coffer --version'] / mid['git --version']:.2f}x")
for label, _ in variants:
    print(f"{label} coffer has / git cat-file -e: {mid[label + ' coffer has'] / mid['git cat-file -e']:.2f}x")
PY
