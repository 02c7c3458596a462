#!/usr/bin/env bash
# The compose cluster (docker/docker-compose.yml) from scratch: builds the images, starts it
# and checks, each against a deadline (polling, never a fixed sleep):
#   1. both real brokers (broker-a master and slave) are `direct` on all three nodes
#      (nsrvd status --json on each node's status port): the time from `up` is printed;
#   2. messages move: the producer has messages acknowledged and the consumer receives them;
#   3. the RocketMQ 5 path: the gRPC producer's first N messages (DOCKER_SMOKE_GRPC_N, 100)
#      acknowledged through the Proxy, and every one of them received by the gRPC
#      SimpleConsumer through the Proxy (the Proxy takes its routes from the nodes);
#   4. gossip: 20 simulated brokers registered with node 1 only are routed by nodes 2 and 3;
#   5. Prometheus (127.0.0.1:29090) scrapes every node: its targets API says "up" for each;
#   6. the alert rules pass their unit test (promtool, when installed).
# Uses `docker compose` when a Docker engine answers, else podman-compose (docker/README.md has
# the podman set-up for hosts without Docker). The images are built one at a time first; the
# first build that fails ends the smoke at once with the engine's error (docker/compose-lib.sh).
# Needs build/src/nsrvd and build/src/tools/nsrv-brokersim on the host. Ends with
# "N passed, M failed".
#   DOCKER_SMOKE_KEEP=1   leave the cluster running afterwards
set -u
cd "$(dirname "$0")/../.."
top=$PWD
nsrvd=${NSRVD_BIN:-$top/build/src/nsrvd}
brokersim=$(dirname "$nsrvd")/tools/nsrv-brokersim
for b in "$nsrvd" "$brokersim"; do
  [ -x "$b" ] || { echo "docker-smoke: $b missing (build first)"; echo "0 passed, 1 failed"; exit 1; }
done
. docker/compose-lib.sh
compose_init docker/docker-compose.yml || { echo "0 passed, 1 failed"; exit 1; }
echo "docker-smoke: $COMPOSE_ENGINE"
# Maven Central through the host's own Maven (docker/maven-mirror.sh) unless told otherwise
mirror=
if [ -z "${MAVEN_MIRROR:-}" ] && command -v mvn >/dev/null; then
  MAVEN_MIRROR=$(docker/maven-mirror.sh start | sed -n 's/^MAVEN_MIRROR=//p') || {
    echo "docker/maven-mirror.sh start failed"; echo "0 passed, 1 failed"; exit 1; }
  export MAVEN_MIRROR
  mirror=1
fi
sim=
cleanup() {
  [ -n "$sim" ] && kill "$sim" 2>/dev/null
  [ -n "$mirror" ] && docker/maven-mirror.sh stop
  [ -n "${DOCKER_SMOKE_KEEP:-}" ] || compose down -v >/dev/null 2>&1
}
trap cleanup EXIT
passed=0; failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
# count_brokers PORT KIND: brokers on that node whose source is KIND ("direct" or "peer:")
count_brokers() {
  "$nsrvd" status --json "127.0.0.1:$1" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(b["source"].startswith(sys.argv[1]) for b in d["brokers"]))' "$2" 2>/dev/null || echo 0
}

compose down -v >/dev/null 2>&1 # a volume left by an earlier run would hold old keys
t=$(now)
compose_build || { echo "0 passed, 1 failed"; exit 1; }
echo "images built in $(since "$t") s"
t=$(now)
uplog=$(mktemp "${TMPDIR:-/tmp}/docker-smoke-up.XXXXXX")
compose up -d >"$uplog" 2>&1 || { tail -40 "$uplog"; echo "compose up failed"; echo "0 passed, 1 failed"; exit 1; }
# podman-compose 1.0.3 exits 0 from `up` even when a container could not be created
missing=$(compose_missing_containers)
if [ -n "$missing" ]; then
  tail -40 "$uplog"; echo "compose up started no container for: $missing"; echo "0 passed, 1 failed"; exit 1
fi
rm -f "$uplog"

# 1. every real broker direct on all three nodes (start-up: Java broker boot included)
deadline=$(($(date +%s) + 420))
all=0
while [ "$(date +%s)" -lt $deadline ]; do
  all=1
  for port in 29886 29887 29888; do
    [ "$(count_brokers $port direct)" -ge 2 ] || { all=0; break; }
  done
  [ $all = 1 ] && break
  sleep 0.5
done
if [ $all = 1 ]; then ok "broker-a master and slave direct on all 3 nodes, $(since "$t") s after up"
else
  bad "real brokers not direct on every node within 420 s"
  for port in 29886 29887 29888; do "$nsrvd" status "127.0.0.1:$port"; done
fi

# 2. messages moving through the real broker
stat() { compose logs "$1" 2>/dev/null | grep "^STATS\|[| ]STATS" | tail -1 | sed 's/.*STATS //'; }
deadline=$(($(date +%s) + 180))
p=""; c=""
while [ "$(date +%s)" -lt $deadline ]; do
  p=$(stat producer); c=$(stat consumer)
  acked=$(echo "$p" | sed -n 's/.* acked=\([0-9]*\).*/\1/p')
  distinct=$(echo "$c" | sed -n 's/.*distinct=\([0-9]*\).*/\1/p')
  [ "${acked:-0}" -ge 100 ] && [ "${distinct:-0}" -ge 100 ] && break
  sleep 1
done
if [ "${acked:-0}" -ge 100 ] && [ "${distinct:-0}" -ge 100 ]; then ok "messages moving: producer $p; consumer $c"
else bad "messages not moving: producer '${p}', consumer '${c}'"; fi

# 3. the RocketMQ 5 path: gRPC producer -> Proxy -> broker -> Proxy -> gRPC SimpleConsumer.
# The first N messages the producer had acknowledged must all be received, by message body
# (g-i); the logs are each program's own "ACK i" and "RECV g-i" lines.
grpc_n=${DOCKER_SMOKE_GRPC_N:-100}
grpc_check() {
  python3 - "$grpc_n" "$1" "$2" <<'PY'
import re, sys
n = int(sys.argv[1])
acked = []
for line in open(sys.argv[2], errors="replace"):
    m = re.search(r"(?:^|\s)ACK (\d+) ", line)
    if m:
        acked.append(int(m.group(1)))
acked = sorted(set(acked))[:n]
got = set()
for line in open(sys.argv[3], errors="replace"):
    m = re.search(r"(?:^|\s)RECV g-(\d+)\b", line)
    if m:
        got.add(int(m.group(1)))
missing = [i for i in acked if i not in got]
print(f"{len(acked)} {len(missing)} {' '.join(map(str, missing[:10]))}")
PY
}
t_grpc=$(now)
plog=$(mktemp "${TMPDIR:-/tmp}/docker-smoke-grpc-p.XXXXXX")
clog=$(mktemp "${TMPDIR:-/tmp}/docker-smoke-grpc-c.XXXXXX")
deadline=$(($(date +%s) + 300))
res="0 0"
while [ "$(date +%s)" -lt $deadline ]; do
  compose logs grpc-producer >"$plog" 2>&1
  compose logs grpc-consumer >"$clog" 2>&1
  res=$(grpc_check "$plog" "$clog")
  set -- $res
  [ "$1" -ge "$grpc_n" ] && [ "$2" -eq 0 ] && break
  sleep 2
done
set -- $res
if [ "$1" -ge "$grpc_n" ] && [ "$2" -eq 0 ]; then
  ok "gRPC through the Proxy: the first $grpc_n messages acknowledged all received," \
    "$(since "$t") s after up ($(since "$t_grpc") s after step 2); producer $(stat grpc-producer);" \
    "consumer $(stat grpc-consumer)"
else
  bad "gRPC through the Proxy: $1 of $grpc_n messages acknowledged, $2 of them not received (${3:-none}...)"
  for svc in proxy grpc-producer grpc-consumer; do
    echo "--- $svc (last lines)"; compose logs "$svc" 2>&1 | grep -v '|-INFO' | tail -15
  done
fi
rm -f "$plog" "$clog"

# 4. gossip: simulated brokers heard by node 1 only reach nodes 2 and 3
"$brokersim" -n 127.0.0.1:29876 -b 20 -t 5 -d 120 </dev/null >/dev/null 2>&1 &
sim=$!
for port in 29887 29888; do
  n=0
  deadline=$(($(date +%s) + 30))
  while [ "$(date +%s)" -lt $deadline ]; do
    n=$(count_brokers $port peer:)
    [ "${n:-0}" -ge 20 ] && break
    sleep 0.5
  done
  if [ "${n:-0}" -ge 20 ]; then ok "status port $port: 20 brokers learnt through gossip"
  else bad "status port $port: only ${n:-0} of 20 gossiped brokers"; fi
done

# 5. Prometheus scrapes every node
targets() {
  curl -fsS --max-time 3 http://127.0.0.1:29090/api/v1/targets 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]["activeTargets"]
up = sorted(t["labels"]["instance"] for t in d if t["labels"]["job"] == "nsrvd" and t["health"] == "up")
print(" ".join(up))' 2>/dev/null
}
deadline=$(($(date +%s) + 60))
up=""
while [ "$(date +%s)" -lt $deadline ]; do
  up=$(targets)
  [ "$up" = "nsrvd1:9877 nsrvd2:9877 nsrvd3:9877" ] && break
  sleep 1
done
if [ "$up" = "nsrvd1:9877 nsrvd2:9877 nsrvd3:9877" ]; then ok "Prometheus scrapes all 3 nodes (targets up: $up)"
else bad "Prometheus targets up: '${up}'"; fi

# 6. alert rules
if command -v promtool >/dev/null; then
  if (cd docker/prometheus && promtool test rules alerts.test.yml >/dev/null 2>&1); then ok "alert rules unit test"
  else bad "alert rules unit test (cd docker/prometheus && promtool test rules alerts.test.yml)"; fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
