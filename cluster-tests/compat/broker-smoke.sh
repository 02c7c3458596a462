#!/usr/bin/env bash
# Starts a real Apache RocketMQ 5.3.3 broker (small heap) against a running
# NameServer at 127.0.0.1:$NS_PORT and checks, with the real mqadmin, that
# clusterList shows the broker and topicRoute shows its routes.
# Usage: broker-smoke.sh NS_PORT [WORKDIR]. Jars are resolved from Maven
# Central once into $NSRV_PEERS_CACHE (default ~/.cache/nsrvd-peers/5.3.3).
set -eu
ns_port=$1
work=${2:-$(mktemp -d /tmp/nsrvd-smoke.XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
lib=${NSRV_PEERS_CACHE:-$HOME/.cache/nsrvd-peers/5.3.3}
if [ ! -f "$lib/rocketmq-broker-5.3.3.jar" ]; then
  mkdir -p "$lib"
  (cd "$here/peers-533" && mvn -q dependency:copy-dependencies -DoutputDirectory="$lib")
fi
mkdir -p "$work/home/conf" "$work/store" "$work/run"
broker_port=${BROKER_PORT:-$((20000 + RANDOM % 20000))}
cat > "$work/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
namesrvAddr=127.0.0.1:$ns_port
brokerIP1=127.0.0.1
listenPort=$broker_port
storePathRootDir=$work/store
storePathCommitLog=$work/store/commitlog
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=600000
maxHashSlotNum=10000
maxIndexNum=40000
autoCreateTopicEnable=true
timerWheelEnable=false
sendMessageThreadPoolNums=2
CONF
J17="--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
 --add-exports java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
 --add-opens java.base/java.lang=ALL-UNNAMED -XX:+IgnoreUnrecognizedVMOptions"
java -server -Xms256m -Xmx512m -XX:MaxDirectMemorySize=512m $J17 -Duser.home="$work/run" \
  -Drocketmq.home.dir="$work/home" -cp "$lib/*" org.apache.rocketmq.broker.BrokerStartup \
  -c "$work/broker.conf" >"$work/broker.out" 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null; wait $broker_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 90); do
  grep -q "boot success" "$work/broker.out" 2>/dev/null && break
  sleep 1
done
grep "boot success" "$work/broker.out" || { cat "$work/broker.out"; exit 1; }
mqadmin() {
  java -Xmx256m $J17 -Duser.home="$work/run" -Drocketmq.home.dir="$work/home" -cp "$lib/*" \
    org.apache.rocketmq.tools.command.MQAdminStartup "$@" -n "127.0.0.1:$ns_port" 2>&1 | grep -v "^[0-9:,]* |-"
}
mqadmin updateTopic -c DefaultCluster -t SmokeTopic -r 4 -w 4 | tail -2
echo "--- mqadmin clusterList"
mqadmin clusterList | tee "$work/clusterList.txt"
echo "--- mqadmin topicRoute -t SmokeTopic"
mqadmin topicRoute -t SmokeTopic | tee "$work/topicRoute.txt"
grep -q "broker-a" "$work/clusterList.txt" && grep -q "127.0.0.1:$broker_port" "$work/topicRoute.txt" \
  && grep -q '"writeQueueNums":4' "$work/topicRoute.txt" && echo "SMOKE OK" || { echo "SMOKE FAILED"; exit 1; }
