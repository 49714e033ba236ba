#!/usr/bin/env bash
# Puts 1,000 x 1 MiB objects (incompressible) into a bucket on a moto
# server on loopback: `coffer put DIR` on an S3-backed store (8 uploads in
# flight) against boto3 uploading the same files with 8 threads, in the
# same run, on fresh prefixes, two rounds each in alternating order.
# Reports objects/s and the ratio of the best rounds.
#
#   bench/s3.sh            # 1000 x 1 MiB
#   N=100 bench/s3.sh      # smoke run
#   COFFER=path/to/coffer bench/s3.sh   # another build (with --features aws)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
B=${BENCH_DIR:-$PWD/target/bench}
mkdir -p "$B"
. bench/moto.sh
rm -rf "$B/s3-files" && mkdir -p "$B/s3-files"
"$venv/bin/python" - "$B/s3-files" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, f"{i:05d}"), "wb") as f:
        f.write(os.urandom(1 << 20))
PY
sync; sleep 1

coffer_round() {  # $1: round number; prints seconds
  rm -rf "$B/s3-store"
  "$COFFER" --store "$B/s3-store" init -q --backend "s3://coffer-bench/coffer-$1" --endpoint "$ep"
  local t0 t1
  t0=$(date +%s.%N)
  "$COFFER" --store "$B/s3-store" put -q "$B/s3-files"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
boto_round() {  # $1: round number; prints seconds
  "$venv/bin/python" - "$B/s3-files" "$ep" "$1" <<'PY'
import os, sys, time, boto3
from concurrent.futures import ThreadPoolExecutor
d, ep, r = sys.argv[1], sys.argv[2], sys.argv[3]
s3 = boto3.client("s3", endpoint_url=ep)
names = sorted(os.listdir(d))
def up(n):
    with open(os.path.join(d, n), "rb") as f:
        s3.put_object(Bucket="coffer-bench", Key=f"boto3-{r}/{n}", Body=f.read())
t0 = time.time()
with ThreadPoolExecutor(8) as ex:
    list(ex.map(up, names))
print(time.time() - t0)
PY
}
# Alternate the two clients (the server warms up and grows as it runs);
# report every round and compare the best of each.
c1=$(coffer_round 1); b1=$(boto_round 1); b2=$(boto_round 2); c2=$(coffer_round 2)
"$COFFER" --store "$B/s3-store" fsck -q --read-data
python3 - "$N" "$c1" "$c2" "$b1" "$b2" <<'PY'
import sys
n = int(sys.argv[1]); c1, c2, b1, b2 = map(float, sys.argv[2:6])
print(f"{n} x 1 MiB to moto on loopback, 8 in flight; rounds: coffer, boto3, boto3, coffer")
for name, t in (("coffer put (S3 store)", (c1, c2)), ("boto3 put_object x8 threads", (b1, b2))):
    print(f"{name}: {t[0]:.2f} s, {t[1]:.2f} s; best {n/min(t):.1f} objects/s")
print(f"ratio coffer/boto3 (best of each): {min(b1, b2)/min(c1, c2):.2f}")
PY
