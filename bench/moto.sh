# Sourced by the S3 benches (bench/s3.sh, bench/s3-packs.sh): the CI's
# moto venv (made here if absent), a release build with the aws feature
# unless COFFER names one, a moto server on a free loopback port logging
# to "$B/moto.log" (stopped on exit), credentials for it, the endpoint in
# `ep`, and the bucket `coffer-bench`. Needs `B`, an existing directory.
venv=target/ci-venv
if [ ! -x "$venv/bin/moto_server" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r .ci/moto-requirements.txt
fi
if [ -z "${COFFER:-}" ]; then
  cargo build --release -q -p coffer-cli --features aws
  COFFER=$PWD/target/release/coffer
fi
port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$B/moto.log" 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true' EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
ep="http://127.0.0.1:$port"
"$venv/bin/python" - "$ep" <<'PY'
import sys, time, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
for _ in range(100):
    try:
        s3.create_bucket(Bucket="coffer-bench"); break
    except Exception:
        time.sleep(0.1)
PY
