#!/usr/bin/env bash
# docker/node4-demo.sh: a fourth node joins the running compose cluster without a restart of
# any node, broker or client, and is found by a real broker and a real client through the
# cluster's own address service (GET /rocketmq/nsaddr on the status listener):
#   1. the cluster, plus broker-b and producer-ns of docker/node4.yml, which know no
#      NameServer address: they poll http://nsrvd1:9877/rocketmq/nsaddr;
#   2. nsrvd4 starts; nodes 1-3 get it as a gossip peer with nsrvd-add-peer (config rewritten,
#      SIGHUP), so their address service starts listing it once its gossip is heard;
#   3. waits (deadline 300 s: the broker polls the address service every 10 s, the client
#      every 2 min) until broker-b is `direct` on nsrvd4 and producer-ns's own log names nsrvd4
#      in its new NameServer list, and prints the broker's and the client's own log lines;
#   4. shows the client using node 4: a Java client keeps its current NameServer until that
#      one fails, so nodes 1-3 are paused (`pause`: same addresses afterwards) until the
#      client's own log says it chose nsrvd4, nsrvd4's /metrics counts its route queries
#      (GET_ROUTEINFO_BY_TOPIC, code 105) and the producer's acknowledged count keeps rising;
#      then nodes 1-3 are unpaused and listed again.
# Uses podman-compose (or `docker compose` when a Docker engine answers); leaves the cluster
# running (`... -f docker/docker-compose.yml -f docker/node4.yml down -v` removes it).
set -euo pipefail
cd "$(dirname "$0")/.."
nsrvd=${NSRVD_BIN:-build/src/nsrvd}
. docker/compose-lib.sh
compose_init docker/docker-compose.yml docker/node4.yml
engine=$COMPOSE_ENGINE
# -a: a paused container is not in plain `ps` (podman)
cname() { $engine ps -a --filter "label=com.docker.compose.service=$1" --format '{{.Names}}' | head -1; }
direct_on() { # PORT BROKER-NAME: is that broker direct on the node behind that status port?
  "$nsrvd" status --json "127.0.0.1:$1" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(b["brokerName"] == sys.argv[1] and b["source"] == "direct" for b in d["brokers"]) else 1)' "$2"
}
wait_for() { # SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2 t0
  shift 2
  t0=$(date +%s)
  until "$@"; do
    if [ $(($(date +%s) - t0)) -ge "$limit" ]; then echo "FAILED: $what (not within ${limit}s)"; exit 1; fi
    sleep 1
  done
  echo "ok: $what after $(($(date +%s) - t0))s"
}

# images first: a failed build stops here with the engine's error, not after a 420 s wait.
# Maven Central through the host's own Maven (docker/maven-mirror.sh), as docker-smoke.sh does
mirror=
if [ -z "${MAVEN_MIRROR:-}" ] && command -v mvn >/dev/null; then
  MAVEN_MIRROR=$(docker/maven-mirror.sh start | sed -n 's/^MAVEN_MIRROR=//p')
  export MAVEN_MIRROR
  mirror=1
fi
build_rc=0
compose_build || build_rc=$?
[ -z "$mirror" ] || docker/maven-mirror.sh stop
[ $build_rc -eq 0 ] || exit 1
compose up -d nsrvd1 nsrvd2 nsrvd3 broker-a broker-a-s producer consumer prometheus broker-b producer-ns \
  >/dev/null 2>&1
for p in 29886 29887 29888; do
  wait_for 420 "broker-b (address service only) direct on status port $p" direct_on $p broker-b
done
echo "node 1's address service: $(curl -m 5 -fsS http://127.0.0.1:29886/rocketmq/nsaddr)"

t_join=$(date +%s)
compose up -d nsrvd4 >/dev/null 2>&1
for n in 1 2 3; do $engine exec "$(cname nsrvd$n)" nsrvd-add-peer 4@nsrvd4:9878; done
ip4=$($engine inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(cname nsrvd4)")
wait_for 60 "nsrvd4 ($ip4) listed by node 1's address service" \
  sh -c "curl -m 5 -fsS http://127.0.0.1:29886/rocketmq/nsaddr | grep -q '$ip4:9876'"
echo "node 1's address service: $(curl -m 5 -fsS http://127.0.0.1:29886/rocketmq/nsaddr)"
wait_for 300 "broker-b direct on nsrvd4 (heartbeats to the new node)" direct_on 29889 broker-b
# The Java client adopts the new list at its 2-minute refresh but keeps the NameServer it is
# connected to until that one fails (MQClientInstance/NettyRemotingClient), so what shows that
# the client found node 4 is its own "name server address updated" line naming it.
client_knows() {
  $engine exec "$(cname producer-ns)" sh -c "grep -rih 'name server address updated' ~/logs/" \
    | grep -q "$ip4:9876"
}
wait_for 300 "producer-ns's address list includes nsrvd4 (its own log)" client_knows
echo "node 4 joined $(($(date +%s) - t_join))s ago; no node, broker or client was restarted"
echo "--- broker-b's own log (~/logs/rocketmqlogs/) on the NameServer list:"
$engine exec "$(cname broker-b)" sh -c "grep -rihE 'name ?server|namesrv' ~/logs/" \
  | grep -i "$ip4\|addr" | tail -5 || true
echo "--- producer-ns's own log (~/logs/):"
$engine exec "$(cname producer-ns)" sh -c "grep -rihE 'name ?server|namesrv' ~/logs/" | grep "$ip4" | tail -5 || true

# 4. The client uses node 4. Pausing nodes 1-3 leaves it nsrvd4 as the only NameServer that
# answers: each request to a paused one times out (3 s), the client closes that channel and
# picks the next address of its list ("new name server is chosen"), until it reaches nsrvd4.
routes4() { # nsrvd4's count of route queries (GET_ROUTEINFO_BY_TOPIC)
  curl -m 5 -fsS http://127.0.0.1:29889/metrics | sed -n 's/^nsrvd_requests_by_code_total{code="105"[^}]*} //p'
}
acked() { $engine logs "$(cname producer-ns)" 2>/dev/null | grep -c '^ACK ' || true; }
chosen4() { # how often producer-ns's own log says it chose nsrvd4
  $engine exec "$(cname producer-ns)" sh -c "grep -rih 'new name server is chosen' ~/logs/" \
    | grep -c "NEW: $ip4:9876" || true
}
chose4() { [ "$(chosen4)" -gt "$c0" ]; }
routes_above() { [ "$(routes4)" -gt "$1" ]; }
acked_above() { [ "$(acked)" -gt "$1" ]; }
listed4() { [ "$(curl -m 5 -fsS http://127.0.0.1:29886/rocketmq/nsaddr | tr ';' '\n' | grep -c ':9876')" -eq 4 ]; }
unpause123() { for n in 1 2 3; do $engine unpause "$(cname nsrvd$n)" >/dev/null 2>&1 || true; done; }

r0=$(routes4); a0=$(acked); c0=$(chosen4)
echo "before the pause: nsrvd4 answered $r0 route queries; producer-ns had $a0 messages acknowledged"
t_pause=$(date +%s)
trap unpause123 EXIT
for n in 1 2 3; do $engine pause "$(cname nsrvd$n)" >/dev/null; done
echo "nodes 1-3 paused"
wait_for 180 "producer-ns chose nsrvd4 as its NameServer (its own log)" chose4
r1=$(routes4)
wait_for 120 "nsrvd4 answers producer-ns's route queries (its code-105 counter rises past $r1)" routes_above "$r1"
a1=$(acked)
wait_for 60 "producer-ns keeps having messages acknowledged (past $a1)" acked_above "$a1"
r2=$(routes4); a2=$(acked)
echo "with nodes 1-3 paused for $(($(date +%s) - t_pause))s: nsrvd4 answered $((r2 - r0)) more route" \
  "queries (counter $r0 -> $r2); producer-ns's acknowledged count $a0 -> $a2"
echo "--- producer-ns's own log on choosing its NameServer:"
$engine exec "$(cname producer-ns)" sh -c "grep -rih 'new name server is chosen' ~/logs/" | tail -4 || true
echo "--- nsrvd4's /metrics:"
curl -m 5 -fsS http://127.0.0.1:29889/metrics | grep '^nsrvd_requests_by_code_total{code="105"'
unpause123
trap - EXIT
wait_for 60 "nodes 1-3 restored: node 1's address service lists all four again" listed4
echo "node 1's address service: $(curl -m 5 -fsS http://127.0.0.1:29886/rocketmq/nsaddr)"
