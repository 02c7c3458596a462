#!/usr/bin/env bash
# Builds the image, starts docker/docker-compose.yml (3 nodes), registers 20 simulated brokers
# with node 1 only, and checks that nodes 2 and 3 route them through gossip. Uses `docker
# compose` when a Docker engine answers, else podman-compose (docker/README.md has the podman
# set-up for hosts without Docker: runc, no default ulimits, a debootstrapped
# debian:bookworm-slim base). Needs build/src/tools/nsrv-brokersim
# and build/src/nsrvd on the host. Ends with "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
top=$PWD
if docker info >/dev/null 2>&1; then compose() { docker compose -f docker/docker-compose.yml "$@"; }
else compose() { podman-compose -f docker/docker-compose.yml "$@"; }; fi
cleanup() { pkill -f "nsrv-brokersim -n 127.0.0.1:19876" 2>/dev/null; compose down >/dev/null 2>&1; }
trap cleanup EXIT
compose build >/dev/null 2>&1 || { echo "image build failed"; echo "0 passed, 1 failed"; exit 1; }
compose up -d >/dev/null 2>&1 || { echo "compose up failed"; echo "0 passed, 1 failed"; exit 1; }
for _ in $(seq 1 60); do
  "$top/build/src/nsrvd" status 127.0.0.1:19888 >/dev/null 2>&1 && break; sleep 1
done
"$top/build/src/tools/nsrv-brokersim" -n 127.0.0.1:19876 -b 20 -t 5 -d 60 </dev/null >/dev/null 2>&1 &
passed=0; failed=0
for port in 19887 19888; do
  n=0
  for _ in $(seq 1 30); do
    n=$("$top/build/src/nsrvd" status --json "127.0.0.1:$port" 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(b["source"].startswith("peer:") for b in d["brokers"]))' 2>/dev/null)
    [ "${n:-0}" -ge 20 ] && break; sleep 0.5
  done
  if [ "${n:-0}" -ge 20 ]; then echo "status port $port: 20 brokers learnt through gossip"; passed=$((passed + 1))
  else echo "status port $port: only ${n:-0} brokers"; failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
