#!/bin/sh
# grpc-entrypoint produce|consume: the RocketMQ 5 client pair on the gRPC client
# (rocketmq-client-java 5.0.7, GrpcClient from docker/rocketmq/grpc), which reaches the cluster
# only through the Proxy. Environment:
#   PROXY          the Proxy's gRPC endpoint (proxy:8081)
#   TOPIC (GrpcDemoTopic), GROUP (GrpcDemoGroup), INTERVAL_MS (100)
#   NAMESRV_ADDR   produce: the NameServers mqadmin creates the topic through first (a gRPC
#                  client cannot create topics, and the Proxy routes only existing ones)
#   CLUSTER_NAME   the brokers' cluster the topic is created on (DefaultCluster)
#   WAIT_FOR, WAIT_BROKERS as for client-entrypoint (wait-ready -b)
# Output: "ACK i MSGID" / "NACK i REASON" (producer), "RECV g-i MSGID" (consumer) and every 50
# a summary: "STATS sent=.. acked=.. nacked=.." / "STATS received=.. distinct=.. duplicates=..".
set -eu
role=${1:?produce or consume}
[ -n "${WAIT_FOR:-}" ] && wait-ready -b "${WAIT_BROKERS:-1}" $WAIT_FOR
home=/home/rocketmq
topic=${TOPIC:-GrpcDemoTopic}
jvm="-Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss512k -Dsun.net.inetaddr.ttl=1
  -Dsun.net.inetaddr.negative.ttl=0 -Duser.home=$home -Drocketmq.home.dir=$home"
case $role in
  produce)
    [ -n "${NAMESRV_ADDR:-}" ] || { echo "grpc-entrypoint: NAMESRV_ADDR is required to create $topic" >&2; exit 2; }
    # message.type=NORMAL: the Proxy checks a 5.x topic's message type against what is sent
    tries=0
    # shellcheck disable=SC2086
    until out=$(java $jvm -cp "/opt/rocketmq/tools/lib/*" org.apache.rocketmq.tools.command.MQAdminStartup \
      updateTopic -n "$NAMESRV_ADDR" -c "${CLUSTER_NAME:-DefaultCluster}" -t "$topic" \
      -a +message.type=NORMAL 2>&1) && echo "$out" | grep -q '^create topic to .* success'; do
      tries=$((tries + 1))
      if [ $tries -ge 10 ]; then
        echo "$out" | grep -v '|-INFO' >&2
        echo "grpc-entrypoint: mqadmin updateTopic $topic failed 10 times" >&2
        exit 1
      fi
      sleep 2
    done
    echo "$out" | grep '^create topic to'
    args="produce --topic $topic --interval ${INTERVAL_MS:-100}" ;;
  consume) args="consume --topic $topic --group ${GROUP:-GrpcDemoGroup}" ;;
  *) echo "usage: grpc-entrypoint produce|consume" >&2; exit 2 ;;
esac
unset NAMESRV_ADDR
# shellcheck disable=SC2086
exec java $jvm -cp "/opt/rocketmq/grpc/lib/*" nsrvd.demo.GrpcClient $args --endpoints "${PROXY:-proxy:8081}"
