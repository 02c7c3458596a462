#!/bin/sh
# client-entrypoint produce|consume: a real RocketMQ 5.3.3 client (CompatClient from
# cluster-tests/compat/java) moving messages continuously. Environment:
#   NAMESRV_ADDR    "nsrvd1:9876;nsrvd2:9876;nsrvd3:9876"; empty with NAMESRV_DOMAIN set: the
#                   client asks http://$NAMESRV_DOMAIN/rocketmq/nsaddr for the list instead
#   WAIT_FOR        status listeners to wait on before starting, WAIT_BROKERS the number of
#                   brokers each must see directly (wait-ready -b)
#   TOPIC (DemoTopic), GROUP (DemoGroup), INTERVAL_MS (100), POLL_MS (route polling, 30000)
# Output: the client's own lines ("ACK i" / "NACK i reason" from the producer, "RECV s-i" from
# the consumer; the chaos suite counts them), and every REPORT_EVERY lines a summary:
#   STATS sent=.. acked=.. nacked=..            (producer)
#   STATS received=.. distinct=.. duplicates=.. (consumer)
set -eu
role=${1:?produce or consume}
[ -n "${WAIT_FOR:-}" ] && wait-ready -b "${WAIT_BROKERS:-1}" $WAIT_FOR
ns=""
[ -n "${NAMESRV_ADDR:-}" ] && ns="--ns $NAMESRV_ADDR"
unset NAMESRV_ADDR # the client would take it as its list and never ask the address service
props=""
[ -n "${NAMESRV_DOMAIN:-}" ] && props="-Drocketmq.namesrv.domain=$NAMESRV_DOMAIN -Drocketmq.namesrv.domain.subgroup=nsaddr"
home=/home/rocketmq
case $role in
  produce) args="stream-produce --topic ${TOPIC:-DemoTopic} --interval ${INTERVAL_MS:-100}" ;;
  consume) args="stream-consume --topic ${TOPIC:-DemoTopic} --group ${GROUP:-DemoGroup}" ;;
  *) echo "usage: client-entrypoint produce|consume" >&2; exit 2 ;;
esac
# The shell stays PID 1 (a pipeline cannot be exec'd): it passes `stop`'s SIGTERM on to the
# pipeline, which a PID 1 without a handler would ignore until the engine's kill.
trap 'trap - TERM INT; kill 0' TERM INT
# mawk (Debian's awk) reads a pipe in large blocks: lines would reach the log tens of seconds
# late; -W interactive makes it read line by line
awk=awk
awk -W version 2>&1 | grep -q mawk && awk="awk -W interactive"
# shellcheck disable=SC2086
java -Xmx192m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss512k \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED -XX:+IgnoreUnrecognizedVMOptions \
  -Dsun.net.inetaddr.ttl=1 -Dsun.net.inetaddr.negative.ttl=0 -Duser.home="$home" -Drocketmq.home.dir="$home" -Drocketmq.log.root="$home/logs" $props \
  -cp "/opt/rocketmq/client/lib/*" nsrvd.compat.CompatClient $args $ns \
  --duration 31536000 --poll "${POLL_MS:-30000}" 2>&1 |
  $awk -v every="${REPORT_EVERY:-50}" '
    function report() {
      if (sent) printf "STATS sent=%d acked=%d nacked=%d\n", sent, acked, nacked
      if (recv) printf "STATS received=%d distinct=%d duplicates=%d\n", recv, distinct, recv - distinct
      fflush()
    }
    { print; fflush() }
    $1 == "ACK" { sent++; acked++ }
    $1 == "NACK" { sent++; nacked++ }
    $1 == "RECV" { recv++; if (!($2 in seen)) { seen[$2] = 1; distinct++ } }
    ($1 == "ACK" || $1 == "NACK" || $1 == "RECV") && ++n % every == 0 { report() }
    END { report() }' &
wait
