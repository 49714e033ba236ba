#!/usr/bin/env bash
# Small objects on a bucket (moto on loopback): how many write requests a
# put of 10,000 small files (0.5-4 KiB) costs on a bucket store that packs
# (a bucket `init` marks version 2) against one that takes loose objects
# (a bucket marked version 1 by an older build), and the rate of `mirror`
# to a bucket from a local store whose objects are packed (100k objects)
# against one whose objects are loose (9,900 objects, each its own PUT:
# the only way before packs), in the same run.
#
#   bench/s3-packs.sh
#   MIRROR_BATCHES=2 bench/s3-packs.sh   # a quicker run (20k packed objects)
#   COFFER=path/to/coffer bench/s3-packs.sh   # another build (--features aws)
#
# Requests are counted from moto's request log: PUT (single puts and
# multipart parts) and POST (multipart create and complete).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BENCH_DIR:-$PWD/target/bench}/s3-packs
MIRROR_BATCHES=${MIRROR_BATCHES:-10}
rm -rf "$B"; mkdir -p "$B"
. bench/moto.sh
"$venv/bin/python" - "$ep" <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
# A bucket prefix an older build claimed: its marker says version 1.
s3.put_object(Bucket="coffer-bench", Key="loose/STORE-FORMAT",
              Body=b'{"format": "coffer", "version": 1, "objectKey": "sha256"}\n')
PY
python3 bench/gen.py small "$B/in" 1
sync; sleep 1

# writes CMD...: runs it; prints "<seconds> <PUT requests> <POST requests>".
writes() {
  local before t0 t1
  before=$(wc -l <"$B/moto.log")
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  sleep 0.2 # moto writes its log line after the reply
  tail -n +"$((before + 1))" "$B/moto.log" >"$B/slice.log"
  echo "$(echo "$t1 - $t0" | bc -l) $(grep -c '"PUT ' "$B/slice.log" || true) $(grep -c '"POST ' "$B/slice.log" || true)"
}
s3store() { # s3store DIR PREFIX
  "$COFFER" --store "$1" init -q --backend "s3://coffer-bench/$2" --endpoint "$ep"
}

s3store "$B/packed" packed
s3store "$B/loose" loose
read -r tp pp op < <(writes "$COFFER" --store "$B/packed" put -q "$B/in")
read -r tl pl ol < <(writes "$COFFER" --store "$B/loose" put -q "$B/in")
"$COFFER" --store "$B/packed" fsck -q --read-data
echo "put of 10,000 small files to a bucket store:"
echo "  packing (version 2 bucket): ${tp}s, $pp PUT + $op POST requests"
echo "  loose (version 1 bucket):   ${tl}s, $pl PUT + $ol POST requests"

# Mirror sources: MIRROR_BATCHES x 10k objects put 10k at a time (packed),
# and 9,900 put 99 at a time (fewer than a batch packs: loose).
"$COFFER" --store "$B/src-packed" init -q
for i in $(seq 1 "$MIRROR_BATCHES"); do
  python3 bench/gen.py small "$B/in" "$((100 + i))"
  "$COFFER" --store "$B/src-packed" put -q "$B/in"
done
"$COFFER" --store "$B/src-loose" init -q
python3 bench/gen.py small "$B/in" 999
for d in "$B"/in/*/; do
  "$COFFER" --store "$B/src-loose" put -q $(ls -d "$d"* | head -n 99)
done
count() { "$COFFER" --store "$1" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["objects"])'; }
np=$(count "$B/src-packed"); nl=$(count "$B/src-loose")
s3store "$B/dst-packed" mirror-packed
s3store "$B/dst-loose" mirror-loose
read -r mp mpp mop < <(writes "$COFFER" --store "$B/src-packed" mirror "$B/dst-packed")
read -r ml mlp mlo < <(writes "$COFFER" --store "$B/src-loose" mirror "$B/dst-loose")
"$COFFER" --store "$B/dst-packed" fsck -q
python3 - "$np" "$mp" "$mpp" "$mop" "$nl" "$ml" "$mlp" "$mlo" <<'PY'
import sys
np_, mp, mpp, mop, nl, ml, mlp, mlo = sys.argv[1:]
rp, rl = int(np_) / float(mp), int(nl) / float(ml)
print("mirror of a local store to a bucket:")
print(f"  packed source: {np_} objects in {float(mp):.2f}s ({rp:.0f} objects/s), {mpp} PUT + {mop} POST")
print(f"  loose source:  {nl} objects in {float(ml):.2f}s ({rl:.0f} objects/s), {mlp} PUT + {mlo} POST")
print(f"  rate ratio packed/loose: {rp / rl:.1f}x")
PY
rm -rf "$B"
