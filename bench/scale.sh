#!/usr/bin/env bash
# How coffer behaves as a store grows: put rate, fsck per object, `ls`
# memory and command startup, at checkpoints up to OBJECTS (default 1M).
#
#   bench/scale.sh                    # 10k, 100k, 500k, 1M objects
#   CHECKPOINTS="10000 100000" bench/scale.sh   # a quicker run
#   COFFER=path/to/coffer bench/scale.sh        # another build (A/B)
#   KEEP=1 bench/scale.sh             # keep the store for profiling
#   BASE=path/to/old/coffer bench/scale.sh      # fsck rows against that build too
#
# The store is filled with unique small files (0.5-4 KiB) put 10,000 at a
# time. At each checkpoint, measured in the same run:
#   - put of the next 10,000 files (rate), and of the same files into a
#     fresh empty store right after (the same-run peer: the ratio separates
#     the catalog's size from the filesystem's mood of the moment);
#   - fsck and fsck --read-data (microseconds per object); with BASE, both
#     again for BASE and this build in turn, two rounds on the same store
#     (BASE must be able to open it), as a ratio;
#   - `ls` and `--json ls` to /dev/null (peak RSS, GNU time);
#   - `has D` startup against `git cat-file -e` in a one-object repo
#     (median of 200 runs each, in a shell loop).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
for t in git python3; do command -v $t >/dev/null || { echo "needs $t"; exit 1; }; done
B=${BENCH_DIR:-$PWD/target/bench}/scale
CHECKPOINTS=${CHECKPOINTS:-"10000 100000 500000 1000000"}
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
rm -rf "$B"; mkdir -p "$B"
S="$B/store"
"$COFFER" --store "$S" init -q

# batch N DIR: 10,000 unique files of 0.5-4 KiB under DIR (seeded by N),
# written over the previous batch's files of the same names: deleting each
# batch beside the growing store made this journal-less ext4's inode
# allocator scan past the freed inodes (`recently_deleted`), which the
# put then paid for (see HISTORY.md, twenty-fifth session).
batch() {
  python3 bench/gen.py small "$2" "$1"
}
count() { "$COFFER" --store "$S" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["objects"])'; }
seconds() { /usr/bin/time -f "%e %M" -o "$B/time" "$@" >/dev/null 2>"$B/err" || { cat "$B/err" >&2; return 1; }; cat "$B/time"; }
per_object() { python3 -c "print(f'{float(\"$1\") * 1e6 / int(\"$2\"):.1f}')"; }
median_loop() { # median_loop N CMD... -> median seconds of one run
  python3 - "$@" <<'PY'
import statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
runs = []
for _ in range(n):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    runs.append(time.perf_counter() - t)
print(f"{statistics.median(runs) * 1000:.2f}")
PY
}

git init -q "$B/git"; echo one > "$B/git/f"; git -C "$B/git" add f
blob=$(git -C "$B/git" hash-object f)
echo one > "$B/one"; one=$("$COFFER" --store "$S" put -q "$B/one"; "$COFFER" --store "$S" --json put "$B/one" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["files"][0]["digest"])')

n=0
for target in $CHECKPOINTS; do
  while [ "$(count)" -lt "$target" ]; do
    n=$((n + 1)); batch "$n" "$B/in"
    "$COFFER" --store "$S" put -q "$B/in" >/dev/null
  done
  objects=$(count)
  n=$((n + 1)); rm -rf "$B/fresh"; batch "$n" "$B/in"; sync; sleep "${PAUSE:-1}"
  cat "$B"/in/*/* >/dev/null
  read -r put_s _ < <(seconds "$COFFER" --store "$S" put -q "$B/in")
  "$COFFER" --store "$B/fresh" init -q
  read -r fresh_s _ < <(seconds "$COFFER" --store "$B/fresh" put -q "$B/in")
  read -r fsck_s _ < <(seconds "$COFFER" --store "$S" fsck)
  read -r data_s _ < <(seconds "$COFFER" --store "$S" fsck --read-data)
  read -r _ ls_kb < <(seconds "$COFFER" --store "$S" ls)
  read -r _ lsj_kb < <(seconds "$COFFER" --store "$S" --json ls)
  has_ms=$(median_loop 200 "$COFFER" --store "$S" has "$one")
  git_ms=$(median_loop 200 git -C "$B/git" cat-file -e "$blob")
  echo "== $objects objects"
  echo "put of the next 10,000 files: ${put_s}s ($(python3 -c "print(f'{10000 / float(\"$put_s\"):.0f}')") files/s); into a fresh store: ${fresh_s}s; ratio $(python3 -c "print(f'{float(\"$fresh_s\") / float(\"$put_s\"):.2f}')")x the fresh rate"
  echo "fsck: $(per_object "$fsck_s" "$objects") us/object; fsck --read-data: $(per_object "$data_s" "$objects") us/object"
  if [ -n "${BASE:-}" ]; then
    for round in 1 2; do
      for args in "fsck" "fsck --read-data"; do
        read -r base_s _ < <(seconds "$BASE" --store "$S" $args)
        read -r this_s _ < <(seconds "$COFFER" --store "$S" $args)
        echo "$args against BASE, round $round: $(per_object "$this_s" "$objects") against $(per_object "$base_s" "$objects") us/object, $(python3 -c "print(f'{float(\"$base_s\") / float(\"$this_s\"):.2f}')")x faster"
      done
    done
  fi
  echo "ls peak RSS: ${ls_kb} KiB; --json ls: ${lsj_kb} KiB"
  echo "has startup: ${has_ms} ms | git cat-file -e: ${git_ms} ms | ratio $(python3 -c "print(f'{float(\"$has_ms\") / float(\"$git_ms\"):.2f}')")"
done
if [ "${KEEP:-0}" = 1 ]; then echo "kept: $S"; else rm -rf "$B"; fi
