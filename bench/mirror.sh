#!/usr/bin/env bash
# `coffer mirror` of a store of small objects into a fresh local store.
#
#   bench/mirror.sh                       # 20k objects, 3 rounds
#   OBJECTS=100000 ROUNDS=1 bench/mirror.sh
#   BASE=path/to/old/coffer bench/mirror.sh   # A/B: alternates with BASE
#
# The source store holds OBJECTS unique files of 0.5-4 KiB (put 10,000 at
# a time). Each round, measured in the same run and alternating:
#   - `coffer mirror` into a fresh store (every object read, decoded,
#     re-hashed, written, made durable, then refs copied and the catalog
#     rebuilt), wall time and peak RSS (GNU time);
#   - the same with BASE, when given;
#   - the peer: `cp -a` of the source's objects directory, then
#     `sync -f` (a copy made durable, with no verification and no catalog).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)"; exit 1; }
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
B=${BENCH_DIR:-$PWD/target/bench}/mirror
OBJECTS=${OBJECTS:-20000}
ROUNDS=${ROUNDS:-3}
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli
  COFFER=$PWD/target/release/coffer
fi
rm -rf "$B"; mkdir -p "$B"
S="$B/src"
"$COFFER" --store "$S" init -q
for n in $(seq 1 $(( (OBJECTS + 9999) / 10000 ))); do
  python3 bench/gen.py small "$B/in" "$n"
  "$COFFER" --store "$S" put -q "$B/in" >/dev/null
  rm -rf "$B/in"
done
echo "source: $("$COFFER" --store "$S" stats | head -1)"

timed() { # timed LABEL CMD... -> "LABEL seconds s, peak KiB"
  local label=$1; shift
  sync; sleep "${PAUSE:-1}"
  /usr/bin/time -f "%e %M" -o "$B/time" "$@" >/dev/null 2>"$B/err" || { cat "$B/err" >&2; return 1; }
  read -r s kb < "$B/time"
  echo "$label: ${s} s, ${kb} KiB"
}
mirror() { # mirror BINARY LABEL
  rm -rf "$B/dst"; "$1" --store "$B/dst" init -q
  timed "$2" "$1" --store "$S" mirror "$B/dst"
}
for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  mirror "$COFFER" "coffer mirror"
  [ -n "${BASE:-}" ] && mirror "$BASE" "base mirror"
  rm -rf "$B/peer"
  timed "cp -a + sync -f" sh -c "cp -a '$S/objects' '$B/peer' && sync -f '$B/peer'"
done
rm -rf "$B"
