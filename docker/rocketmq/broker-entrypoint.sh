#!/bin/sh
# Starts one real RocketMQ 5.3.3 broker. Environment:
#   NAMESRV_ADDR   "nsrvd1:9876;nsrvd2:9876;nsrvd3:9876": every node, by name: the JVM resolves
#                  them at each connection (DNS cache 1 s), so a node container that comes
#                  back on a new address (podman gives one on restart) is found again
#   WAIT_FOR       "nsrvd1:9877 ..." status listeners to wait for (wait-ready) before starting
#   BROKER_NAME, BROKER_ID (0 = master), BROKER_ROLE (ASYNC_MASTER | SLAVE), CLUSTER_NAME
#   NAMESRV_DOMAIN HOST:STATUSPORT of an nsrvd node, instead of NAMESRV_ADDR: the broker then
#                  takes its NameServer list from that node's address service
#                  (http://HOST:STATUSPORT/rocketmq/nsaddr, fetchNamesrvAddrByAddressServer=true;
#                  the broker polls it every 2 minutes, and only when namesrvAddr is unset)
#   BROKER_JAVA_OPTS extra JVM options
# Store sizes are those of a 2-core demo host (small commit log and timer log files). The timer
# wheel is on: the Proxy's gRPC consumers pop messages, and pop needs it (without it the Proxy
# answers their receive with code 50001).
set -eu
[ -n "${WAIT_FOR:-}" ] && wait-ready $WAIT_FOR
resolve() { getent hosts "$1" | awk '{print $1; exit}'; }
ns=${NAMESRV_ADDR:-}
list=$ns
unset NAMESRV_ADDR # the broker would take it as its namesrvAddr and never ask the address service
[ -n "$list" ] || [ -n "${NAMESRV_DOMAIN:-}" ] || { echo "NAMESRV_ADDR or NAMESRV_DOMAIN" >&2; exit 2; }
self=$(resolve "$(hostname)")
home=/home/rocketmq
mkdir -p "$home/conf" /store/commitlog
conf=$home/conf/broker.conf
cat > "$conf" <<CONF
brokerClusterName=${CLUSTER_NAME:-DefaultCluster}
brokerName=${BROKER_NAME:-broker-a}
brokerId=${BROKER_ID:-0}
brokerRole=${BROKER_ROLE:-ASYNC_MASTER}
flushDiskType=ASYNC_FLUSH
brokerIP1=$self
brokerIP2=$self
listenPort=10911
storePathRootDir=/store
storePathCommitLog=/store/commitlog
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=600000
maxHashSlotNum=10000
maxIndexNum=40000
autoCreateTopicEnable=true
timerWheelEnable=true
mappedFileSizeTimerLog=16777216
sendMessageThreadPoolNums=2
registerNameServerPeriod=10000
CONF
[ -n "$ns" ] && echo "namesrvAddr=$ns" >> "$conf"
if [ -n "${NAMESRV_DOMAIN:-}" ]; then
  echo "fetchNamesrvAddrByAddressServer=true" >> "$conf"
  domain="-Drocketmq.namesrv.domain=$NAMESRV_DOMAIN -Drocketmq.namesrv.domain.subgroup=nsaddr"
else
  domain=""
fi
echo "broker ${BROKER_NAME:-broker-a}/${BROKER_ID:-0} at $self, NameServers $ns"
# shellcheck disable=SC2086
exec java -server -Xms256m -Xmx384m -XX:MaxDirectMemorySize=256m -XX:+UseG1GC \
  -XX:ParallelGCThreads=2 -XX:ConcGCThreads=1 -XX:CICompilerCount=2 \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED -XX:+IgnoreUnrecognizedVMOptions \
  -Dsun.net.inetaddr.ttl=1 -Dsun.net.inetaddr.negative.ttl=0 \
  -Duser.home="$home" -Drocketmq.home.dir="$home" $domain ${BROKER_JAVA_OPTS:-} \
  -cp "/opt/rocketmq/broker/lib/*" org.apache.rocketmq.broker.BrokerStartup -c "$conf"
