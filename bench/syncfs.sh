#!/usr/bin/env bash
# Durability cost of small puts, quiet and beside another writer.
#
#   bench/syncfs.sh                  # this build
#   COFFER=path/to/coffer bench/syncfs.sh   # another build (A/B)
#
# For N in 1 2 8 32 128 tiny files (1 KiB each): median wall time of
# `coffer put` of N new files into a store, (q) on a quiet filesystem and
# (c) right after another process wrote 1 GiB of random bytes to the same
# filesystem without syncing it (its dirty pages are what `syncfs` would wait for).
# Peer in the same run: python's os.fsync of one new 1 KiB file, in the
# same two conditions (the least any durable write can cost).
set -euo pipefail
cd "$(dirname "$0")/.."
for t in python3 dd; do command -v $t >/dev/null || { echo "needs $t"; exit 1; }; done
B=${BENCH_DIR:-$PWD/target/bench}/syncfs
rm -rf "$B"; mkdir -p "$B"
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
RUNS=${RUNS:-5}
"$COFFER" --store "$B/store" init -q

median() { python3 -c 'import sys, statistics; print(f"{statistics.median(map(float, sys.argv[1:])):.4f}")' "$@"; }
seq_id=0
files() { # files N -> prints N new file paths
  seq_id=$((seq_id + 1)); local d="$B/in/$seq_id"; mkdir -p "$d"
  for i in $(seq "$1"); do head -c 1024 /dev/urandom > "$d/$i"; done
  ls -d "$d"/*
}
# Another writer: 1 GiB of incompressible bytes copied without a sync.
head -c $((1 << 30)) /dev/urandom > "$B/source"
dirty() { cp "$B/source" "$B/other-writer"; }
clean() { rm -f "$B/other-writer"; sync; }

one_put() { # one_put N CONDITION -> seconds
  local paths; paths=$(files "$1")
  [ "$2" = c ] && dirty
  local t0 t1; t0=$EPOCHREALTIME
  # shellcheck disable=SC2086
  "$COFFER" --store "$B/store" put -q $paths
  t1=$EPOCHREALTIME
  clean
  python3 -c "print(f'{$t1 - $t0:.4f}')"
}
one_fsync() { # one_fsync CONDITION -> seconds
  [ "$1" = c ] && dirty
  local s; s=$(python3 -c '
import os, sys, time
p = sys.argv[1]
t = time.monotonic()
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, os.urandom(1024)); os.fsync(fd); os.close(fd)
print(f"{time.monotonic() - t:.4f}")' "$B/peer.$RANDOM.$RANDOM")
  clean
  echo "$s"
}

clean
for cond in q c; do
  label=$([ $cond = q ] && echo quiet || echo "after 1 GiB unsynced by another writer")
  echo "== $label"
  peer=(); for _ in $(seq "$RUNS"); do peer+=("$(one_fsync $cond)"); done
  p=$(median "${peer[@]}")
  echo "peer: fsync of one new 1 KiB file: ${p}s"
  for n in 1 2 8 32 128; do
    runs=(); for _ in $(seq "$RUNS"); do runs+=("$(one_put "$n" $cond)"); done
    m=$(median "${runs[@]}")
    echo "coffer put of $n tiny file(s): ${m}s  ratio to the peer fsync: $(python3 -c "print(f'{$m / $p:.1f}')")"
  done
done
rm -rf "$B"
