#!/bin/sh
# Starts the RocketMQ 5 Proxy (5.4.0) in cluster mode: gRPC clients (port 8081) and remoting
# clients (port 8080) reach the brokers through it; it takes the routes from the NameServers.
# Environment:
#   GRPC_PORT, REMOTING_PORT  the ports it listens on (8081, 8080). A gRPC client is sent back
#                 the host it connected to with the Proxy's own port, so a client outside the
#                 container network needs the published port to be this same number
#   NAMESRV_ADDR  "nsrvd1:9876;nsrvd2:9876;nsrvd3:9876": every node, by name (the JVM's DNS
#                 cache is 1 s, so a node that comes back on a new address is found again)
#   WAIT_FOR      status listeners to wait on before starting, WAIT_BROKERS the number of
#                 brokers each must see directly (wait-ready -b)
#   CLUSTER_NAME  the brokers' cluster (DefaultCluster)
#   PROXY_JAVA_OPTS extra JVM options
# Prints "rocketmq-proxy startup successfully" once both ports listen; its own log is
# ~rocketmq/logs/rocketmqlogs/proxy.log in the container.
set -eu
[ -n "${WAIT_FOR:-}" ] && wait-ready -b "${WAIT_BROKERS:-1}" $WAIT_FOR
[ -n "${NAMESRV_ADDR:-}" ] || { echo "proxy-entrypoint: NAMESRV_ADDR is required" >&2; exit 2; }
ns=$NAMESRV_ADDR
unset NAMESRV_ADDR
home=/home/rocketmq
mkdir -p "$home/conf"
conf=$home/conf/rmq-proxy.json
cat >"$conf" <<CONF
{"rocketMQClusterName": "${CLUSTER_NAME:-DefaultCluster}", "namesrvAddr": "$ns",
 "grpcServerPort": ${GRPC_PORT:-8081}, "remotingListenPort": ${REMOTING_PORT:-8080}}
CONF
echo "proxy: cluster mode, cluster ${CLUSTER_NAME:-DefaultCluster}, NameServers $ns"
# shellcheck disable=SC2086
exec java -server -Xms128m -Xmx384m -XX:MaxDirectMemorySize=256m -XX:+UseG1GC \
  -XX:ParallelGCThreads=2 -XX:ConcGCThreads=1 -XX:CICompilerCount=2 \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED -XX:+IgnoreUnrecognizedVMOptions \
  -Dsun.net.inetaddr.ttl=1 -Dsun.net.inetaddr.negative.ttl=0 \
  -Duser.home="$home" -Drocketmq.home.dir="$home" ${PROXY_JAVA_OPTS:-} \
  -cp "/opt/rocketmq/proxy/lib/*" org.apache.rocketmq.proxy.ProxyStartup -pm cluster -pc "$conf"
