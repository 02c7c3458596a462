#!/usr/bin/env bash
# The Helm chart on a real single-node Kubernetes, with a real RocketMQ 5.3.3 broker, producer
# and consumer, through a rolling update of the StatefulSet and the deletion of one pod.
#
#   cluster-tests/kubernetes/run.sh [--nsrvd NSRVD] [--out DIR] [--tsv FILE] [--break-gossip]
#
# What runs (everything as root, on loopback and on one CNI bridge this script makes):
# * etcd (Debian), kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet
#   built from the k8s.io/kubernetes Go module (build.sh, cached per version), a private
#   containerd (Debian) with its own root, socket and CNI config, a pause image built from a
#   static C program, and the nsrvd image built from docker/Dockerfile by podman and imported
#   into containerd. No registry and no release download is reached.
# * Cluster DNS: CoreDNS (Go module) as a host process, its kubernetes plugin reading the API
#   server, listening on the bridge's gateway address, which the kubelet hands to the pods as
#   their nameserver. So the peer names the chart writes into gossipPeers
#   (nsrvd-0.nsrvd-headless.<ns>.svc.cluster.local) resolve in the pods exactly as on any
#   cluster, and a replaced pod's new address is found through DNS. There is no kube-proxy,
#   so Service virtual IPs do not route: the broker and the clients use the headless
#   Service's name (every pod's address) for the address service, never the client Service.
# * The broker and the clients are host processes (the jars prepared by
#   cluster-tests/compat/prepare-peers.sh), each in a private mount namespace whose
#   /etc/resolv.conf names CoreDNS, so they resolve the cluster's names; they reach the pods
#   over the bridge, and the pods never need to reach them. The broker has no namesrvAddr:
#   it asks the address service (fetchNamesrvAddrByAddressServer), which answers the pods'
#   stable names, so it follows the NameServer pods through every change of IP.
#
# Checks (one "passed|failed<TAB>kubernetes/<id>" line each, then "N passed, M failed"):
# the cluster and the chart come up, the broker is routed by every pod, then a rolling update
# (helm upgrade to a new image tag) and the deletion of one pod while monitor.py asks every
# Ready pod for the route about five times a second: every Ready pod routes the broker
# throughout; every new pod has the broker within 1 s of Ready, learned from its peers (its
# REGISTER_BROKER count is still 0 when the broker appears: the broker itself registers only
# every 30 s); every message the producer had acknowledged reaches the consumer, and no send
# failed. --break-gossip upgrades to pods of another gossip cluster name, so the new pods get
# nothing from their peers: that run must fail (the checks can fail).
#
# The first run builds the Kubernetes programs and CoreDNS (kept in ~/.cache/nsrvd-k8s) and
# the image (podman's layer cache); later runs only start things.
# Every wait is bounded; everything started is stopped on exit (trap), the bridge and the
# state directory removed.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
here=$top/cluster-tests/kubernetes
out=$top/build-test/kubernetes
tsv=""
nsrvd=""
break_gossip=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    --nsrvd) nsrvd=$2; shift 2 ;;
    --break-gossip) break_gossip=1; shift ;;
    *) echo "usage: $0 [--nsrvd NSRVD] [--out DIR] [--tsv FILE] [--break-gossip]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
tsv=${tsv:-$out/results.tsv}
: >"$tsv"
for c in build-test/src/nsrvd build/src/nsrvd; do
  [ -n "$nsrvd" ] || { [ -x "$top/$c" ] && nsrvd=$top/$c; }
done

# Addresses and ports: loopback, and the bridge's /24 (neither used by anything else here).
bridge=nsk8s0
subnet_prefix=10.244.77
gw=$subnet_prefix.1
etcd_port=23791
etcd_peer_port=23801
api_port=16444
api=https://127.0.0.1:$api_port
broker_port=18911
ns=rocketmq
topic=K8sTopic
domain=nsrvd-headless.$ns.svc.cluster.local
t_begin=$(date +%s)
run=$out/last-logs

passed=0
failed=0
result() { # result STATUS ID [DETAIL]
  printf '%s\tkubernetes/%s\t%s\n' "$1" "$2" "${3:-}" >>"$tsv"
  printf '%s %-6s kubernetes/%s %s\n' "$(date +%T)" "$1" "$2" "${3:-}"
  if [ "$1" = passed ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
say() { echo "$(date +%T) $*"; }
finish() {
  echo "kubernetes: $passed passed, $failed failed ($(($(date +%s) - t_begin)) s; logs in $out/last-logs)"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && exit 0
  exit 1
}
# abort ID DETAIL: a step the rest depends on failed; the trap tears everything down.
abort() {
  result failed "$1" "$2"
  finish
}

[ "$(id -u)" = 0 ] || { echo "needs root (a kubelet, containerd, a bridge)"; result failed prerequisites "not root"; finish; }

# --- prerequisites: Debian packages installed when missing ---------------------------------------
missing=""
for pair in etcd:etcd-server containerd:containerd runc:runc podman:podman ip:iproute2 unshare:util-linux \
  java:openjdk-17-jdk-headless mvn:maven go:golang-go; do
  command -v "${pair%%:*}" >/dev/null || missing="$missing ${pair#*:}"
done
[ -d /usr/lib/cni ] && [ -x /usr/lib/cni/bridge ] || missing="$missing containernetworking-plugins"
if [ -n "$missing" ]; then
  say "installing:$missing"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >"$out/apt.log" 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >"$out/apt.log" 2>&1; } ||
    abort prerequisites "could not install:$missing ($(tail -1 "$out/apt.log"))"
fi
[ -n "$nsrvd" ] && [ -x "$nsrvd" ] || abort prerequisites "no nsrvd binary (build one, or --nsrvd PATH): it makes the gossip keys"
command -v kubectl >/dev/null || abort prerequisites "no kubectl on PATH"
# A bridge left by an interrupted run goes; any other user of the subnet stops the run.
ip link show "$bridge" >/dev/null 2>&1 && ip link delete "$bridge"
ip -4 -o addr show | grep -q " $subnet_prefix\." && abort prerequisites "$subnet_prefix.0/24 is in use on this host"
result passed prerequisites

# --- state directory, and the trap that tears everything down ----------------------------------
run=$(mktemp -d /tmp/nsrvd-k8s.XXXXXX)
mkdir -p "$run/logs" "$run/pids"
touch "$run/podlogs.start" # pods' log directories newer than this are this run's
netns_before=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
# start NAME COMMAND...: in its own session (its process group id is its pid), logged.
start() {
  local name=$1
  shift
  setsid "$@" >"$run/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$run/pids/$name"
}
stop() { # stop NAME [SIGNAL]: the process group started as NAME, bounded
  local f=$run/pids/$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -"${2:-TERM}" -- -"$pid" 2>/dev/null
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- -"$pid" 2>/dev/null
  rm -f "$f"
}
kc() { kubectl --kubeconfig "$run/kubeconfig" --request-timeout=20s "$@"; }
ctr_() { ctr --address "$run/containerd/containerd.sock" -n k8s.io "$@"; }
teardown() {
  set +e
  trap - EXIT INT TERM
  say "teardown"
  touch "$run/monitor.stop"
  for p in producer consumer monitor podlogs broker; do stop "$p"; done
  if [ -f "$run/pids/kubelet" ] && [ -f "$run/pids/kube-apiserver" ]; then
    # Let the kubelet stop the pods (and their sandboxes' network namespaces) itself.
    kc delete namespace "$ns" --wait=false >/dev/null 2>&1
    kc -n "$ns" delete pods --all --grace-period=2 --wait=false >/dev/null 2>&1
    for _ in $(seq 1 60); do
      [ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  stop kubelet
  if [ -S "$run/containerd/containerd.sock" ]; then
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$t" >/dev/null 2>&1; done
    sleep 1
  fi
  # The shims outlive containerd by design; ours are the ones given our socket.
  for pid in $(pgrep -f -- "-address $run/containerd/containerd.sock" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for p in containerd coredns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$p"; done
  for pid in $(pgrep -f -- "-address $run/containerd/containerd.sock" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | sort | comm -13 <(echo "$netns_before") -); do
    case $n in cni-*) ip netns delete "$n" 2>/dev/null ;; esac
  done
  awk -v r="$run" '$2 ~ "^"r {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  ip link delete "$bridge" 2>/dev/null
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && grep -qx "$d" "$run/cgroups-before" 2>/dev/null || find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  # The kubelet's log directories of this run's pods (it was stopped before it could remove them).
  [ -f "$run/podlogs.start" ] &&
    find /var/log/pods -maxdepth 1 -name "${ns}_*" -newer "$run/podlogs.start" -exec rm -rf {} + 2>/dev/null
  rm -rf "$out/last-logs"
  cp -r "$run/logs" "$out/last-logs" 2>/dev/null
  rm -rf "$run"
  run=$out/last-logs
}
ls -d /sys/fs/cgroup/*/kubepods >"$run/cgroups-before" 2>/dev/null
trap teardown EXIT
trap 'exit 1' INT TERM

# --- binaries: Kubernetes, CoreDNS, pause (cached), helm (cached by the k8s-manifests stage) --------
t0=$(date +%s)
# Bounded too: a cold build on a loaded machine can take an hour; Go's build cache keeps
# what was compiled, so a run stopped here resumes the build next time.
build_timeout=${NSRVD_K8S_BUILD_TIMEOUT:-3600}
bin=$(timeout "$build_timeout" "$here/build.sh" 2>"$run/logs/build.log" | tail -1) && [ -x "$bin/kubelet" ] ||
  abort build "not built in $build_timeout s or failed: $(tail -3 "$run/logs/build.log" | tr '\n\t' '  ')"
# helm: the k8s-manifests stage's (cluster-tests/k8s/run.sh), else built the same way.
helm_version=v4.3.2
helm=$top/build-test/k8s/bin/helm
if [ "$("$helm" version --template '{{.Version}}' 2>/dev/null)" != "$helm_version" ]; then
  mkdir -p "$top/build-test/k8s/bin"
  GOBIN=$top/build-test/k8s/bin GOFLAGS="-modcacherw" nice go install "helm.sh/helm/v4/cmd/helm@$helm_version" \
    >>"$run/logs/build.log" 2>&1 || abort build "go install helm failed: $(tail -2 "$run/logs/build.log" | tr '\n' ' ')"
fi
result passed build "$(($(date +%s) - t0)) s"

# --- images: nsrvd from docker/Dockerfile (podman's layer cache), pause from the static program -----
t0=$(date +%s)
mkdir -p "$run/pause"
cp "$bin/pause" "$run/pause/pause"
printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$run/pause/Containerfile"
pause_image=localhost/nsrvd-k8s-pause:1
image=localhost/nsrvd
images() {
  docker/podman-base-image.sh &&
    podman build -q -t "$pause_image" "$run/pause" &&
    nice podman build -q -f docker/Dockerfile -t "$image:k8s-a" . &&
    podman tag "$image:k8s-a" "$image:k8s-b" &&
    podman save -q -m -o "$run/images.tar" "$pause_image" "$image:k8s-a" "$image:k8s-b"
}
images >"$run/logs/images.log" 2>&1 || abort images "$(tail -3 "$run/logs/images.log" | tr '\n\t' '  ')"
result passed images "$(($(date +%s) - t0)) s"

# --- the control plane --------------------------------------------------------------------------
t0=$(date +%s)
ip link add "$bridge" type bridge && ip addr add "$gw/24" dev "$bridge" && ip link set "$bridge" up ||
  abort control-plane "cannot make the bridge $bridge"
openssl genrsa -out "$run/sa.key" 2048 2>/dev/null && openssl rsa -in "$run/sa.key" -pubout -out "$run/sa.pub" 2>/dev/null
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,admin,admin,system:masters" >"$run/tokens.csv"
echo "$token" >"$run/token"
cat >"$run/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "$api", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
EOF
start etcd etcd --name nsk8s --data-dir "$run/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "nsk8s=http://127.0.0.1:$etcd_peer_port"
start kube-apiserver "$bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
  --service-account-key-file="$run/sa.pub" --service-account-signing-key-file="$run/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc --cert-dir="$run/certs" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
  --authorization-mode=AlwaysAllow --token-auth-file="$run/tokens.csv" \
  --service-cluster-ip-range=10.96.0.0/16 --enable-priority-and-fairness=false
ok=0
for _ in $(seq 1 120); do
  [ "$(curl -sk -m 2 -H "Authorization: Bearer $token" "$api/readyz" 2>/dev/null)" = ok ] && { ok=1; break; }
  kill -0 "$(cat "$run/pids/kube-apiserver")" 2>/dev/null || break
  sleep 1
done
[ "$ok" = 1 ] || abort control-plane "kube-apiserver not ready in 120 s: $(tail -2 "$run/logs/kube-apiserver.log" | tr '\n' ' ')"
start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$run/kubeconfig" \
  --authentication-kubeconfig="$run/kubeconfig" --authorization-kubeconfig="$run/kubeconfig" \
  --service-account-private-key-file="$run/sa.key" --controllers='*,-nodeipam' --leader-elect=false \
  --secure-port=10357 --bind-address=127.0.0.1 --use-service-account-credentials=false
start kube-scheduler "$bin/kube-scheduler" --kubeconfig="$run/kubeconfig" --leader-elect=false \
  --authentication-kubeconfig="$run/kubeconfig" --authorization-kubeconfig="$run/kubeconfig" \
  --secure-port=10359 --bind-address=127.0.0.1

# Cluster DNS on the bridge's gateway address: the cluster's names from the API server, nothing else.
cat >"$run/Corefile" <<EOF
cluster.local:53 {
  bind $gw
  errors
  kubernetes cluster.local {
    kubeconfig $run/kubeconfig test
  }
}
EOF
start coredns "$bin/coredns" -conf "$run/Corefile"
printf 'nameserver %s\nsearch %s.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:1\n' "$gw" "$ns" >"$run/resolv.conf"
# The host's nsswitch may send *.local names to mDNS only (mdns4_minimal [NOTFOUND=return]).
sed 's/^hosts:.*/hosts: files dns/' /etc/nsswitch.conf >"$run/nsswitch.conf"
in_cluster_dns=$run/in-cluster-dns # COMMAND...: runs it with the cluster's DNS
cat >"$in_cluster_dns" <<'EOF'
#!/bin/sh
run=$(dirname "$0")
exec unshare -m sh -c 'mount --bind "$0/resolv.conf" /etc/resolv.conf &&
  mount --bind "$0/nsswitch.conf" /etc/nsswitch.conf && exec "$@"' "$run" "$@"
EOF
chmod +x "$in_cluster_dns"
result passed control-plane "$(($(date +%s) - t0)) s"

# --- the node: containerd with its own state and CNI config, then the kubelet -------------------------
t0=$(date +%s)
mkdir -p "$run/containerd" "$run/cni/net.d" "$run/cni/ipam"
containerd config default | python3 "$here/containerd-config.py" "$run" "$pause_image" >"$run/containerd/config.toml" ||
  abort node "cannot write the containerd config"
cat >"$run/cni/net.d/10-nsk8s.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "nsk8s", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$run/cni/ipam",
            "ranges": [[{"subnet": "$subnet_prefix.0/24", "rangeStart": "$subnet_prefix.10", "rangeEnd": "$subnet_prefix.250", "gateway": "$gw"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
EOF
start containerd containerd --config "$run/containerd/config.toml"
for _ in $(seq 1 50); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
ctr_ images import "$run/images.tar" >"$run/logs/import.log" 2>&1 ||
  abort node "ctr images import: $(tail -2 "$run/logs/import.log" | tr '\n' ' ')"
rm -f "$run/images.tar"
cat >"$run/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
address: 127.0.0.1
port: 10350
healthzPort: 10348
readOnlyPort: 0
containerRuntimeEndpoint: unix://$run/containerd/containerd.sock
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
clusterDNS: [$gw]
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi"}
serializeImagePulls: false
EOF
start kubelet "$bin/kubelet" --kubeconfig="$run/kubeconfig" --config="$run/kubelet.yaml" \
  --hostname-override=node1 --node-ip="$gw" --root-dir="$run/kubelet"
ok=0
for _ in $(seq 1 90); do
  [ "$(kc get node node1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && { ok=1; break; }
  kill -0 "$(cat "$run/pids/kubelet")" 2>/dev/null || break
  sleep 1
done
[ "$ok" = 1 ] || abort node "node1 not Ready in 90 s: $(grep -E '^E' "$run/logs/kubelet.log" | tail -2 | tr '\n' ' ')"
result passed node "$(($(date +%s) - t0)) s"

# --- the chart ------------------------------------------------------------------------------------
t0=$(date +%s)
# Test values: no PersistentVolume provisioner here (emptyDir /data), the imported images only.
cat >"$run/values.yaml" <<EOF
image: {repository: $image, tag: k8s-a, pullPolicy: Never}
persistence: {enabled: false}
EOF
install() {
  kc create namespace "$ns" &&
    for _ in $(seq 1 30); do kc -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 1; done &&
    NSRVD=$nsrvd deploy/kubernetes/gossip-keys.sh 3 | kc -n "$ns" apply -f - &&
    "$helm" --kubeconfig "$run/kubeconfig" install nsrvd deploy/helm/nsrvd -n "$ns" -f "$run/values.yaml" &&
    kc -n "$ns" rollout status statefulset/nsrvd --timeout=180s
}
install >"$run/logs/install.log" 2>&1 ||
  abort chart-install "$(tail -3 "$run/logs/install.log" | tr '\n' ' '); pods: $(kc -n "$ns" get pods --no-headers 2>&1 | tr '\n' ';')"
pod_ip() { kc -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}'; }
result passed chart-install "3 pods Ready in $(($(date +%s) - t0)) s"

# The pods' peers are DNS names: each must resolve through the cluster DNS to the pod's address.
dns_ok=1
for i in 0 1 2; do
  want=$(pod_ip nsrvd-$i)
  got=$("$in_cluster_dns" getent hosts "nsrvd-$i.$domain" | awk '{print $1}')
  [ -n "$want" ] && [ "$got" = "$want" ] || { dns_ok=0; echo "nsrvd-$i.$domain: $got, pod IP $want" >>"$run/logs/dns.log"; }
done
[ "$dns_ok" = 1 ] && result passed cluster-dns-peer-names || result failed cluster-dns-peer-names "$(cat "$run/logs/dns.log" | tr '\n' ' ')"
nsaddr=$(curl -s -m 3 "http://$(pod_ip nsrvd-0):9877/rocketmq/nsaddr")
missing_names=""
for i in 0 1 2; do
  case ";$nsaddr;" in *";nsrvd-$i.$domain:9876;"*) ;; *) missing_names="$missing_names nsrvd-$i" ;; esac
done
[ -z "$missing_names" ] && result passed address-service-lists-stable-names "$nsaddr" ||
  result failed address-service-lists-stable-names "no$missing_names in: $nsaddr"

# --- the broker and the clients: host processes that resolve the cluster's names ------------------
peers=${NSRVD_COMPAT_CACHE:-$HOME/.cache/nsrvd-peers}
cluster-tests/compat/prepare-peers.sh java533 >"$run/logs/peers.log" 2>&1 ||
  abort broker "prepare-peers.sh java533: $(tail -2 "$run/logs/peers.log" | tr '\n' ' ')"
j17=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED -XX:+IgnoreUnrecognizedVMOptions)
# The address service through the headless Service's name (every pod's address; no kube-proxy
# here for the client Service's virtual IP), names looked up again after 1 s (the JVM keeps
# them 30 s by default, past a replaced pod's new address).
ns_jvm=(-Drocketmq.namesrv.domain="$domain:9877" -Drocketmq.namesrv.domain.subgroup=nsaddr
  -Dsun.net.inetaddr.ttl=1 -Dsun.net.inetaddr.negative.ttl=0)
mkdir -p "$run/broker/store/config" "$run/broker/home" "$run/broker/run"
python3 - "$run/broker/store/config/topics.json" "$topic" <<'PY'
import json, sys, time
t = sys.argv[2]
json.dump({"dataVersion": {"counter": 1, "stateVersion": 0, "timestamp": int(time.time() * 1000)},
           "topicConfigTable": {t: {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                                    "topicName": t, "topicSysFlag": 0, "writeQueueNums": 4}}},
          open(sys.argv[1], "w"))
PY
cat >"$run/broker/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
fetchNamesrvAddrByAddressServer=true
brokerIP1=$gw
brokerIP2=$gw
listenPort=$broker_port
haListenPort=$((broker_port + 1))
storePathRootDir=$run/broker/store
storePathCommitLog=$run/broker/store/commitlog
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=600000
maxHashSlotNum=10000
maxIndexNum=40000
autoCreateTopicEnable=false
sendMessageThreadPoolNums=2
timerWheelEnable=false
EOF
t0=$(date +%s)
start broker "$in_cluster_dns" java -server -Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m -XX:+UseG1GC \
  -XX:ParallelGCThreads=2 -XX:CICompilerCount=2 "${j17[@]}" "${ns_jvm[@]}" \
  -Duser.home="$run/broker/run" -Drocketmq.home.dir="$run/broker/home" \
  -cp "$(cat "$peers/5.3.3/broker.cp")" org.apache.rocketmq.broker.BrokerStartup -c "$run/broker/broker.conf"
# routed_everywhere: every pod routes the broker for the topic.
routed_everywhere() {
  python3 - "$(pod_ip nsrvd-0)" "$(pod_ip nsrvd-1)" "$(pod_ip nsrvd-2)" "$topic" <<'PY'
import sys
sys.path.insert(0, "cluster-tests/kubernetes")
from monitor import route_has_broker
sys.exit(0 if all(route_has_broker(ip, sys.argv[4], "broker-a")[0] for ip in sys.argv[1:4]) else 1)
PY
}
ok=0
for _ in $(seq 1 120); do
  routed_everywhere 2>/dev/null && { ok=1; break; }
  kill -0 "$(cat "$run/pids/broker")" 2>/dev/null || break
  sleep 1
done
[ "$ok" = 1 ] || abort broker-routed-by-every-pod "not in 120 s: $(tail -3 "$run/logs/broker.log" | tr '\n' ' ')"
result passed broker-routed-by-every-pod "$(($(date +%s) - t0)) s after start"

client() { # client NAME ARGS...: CompatClient 5.3.3, NameServers from the address service
  local name=$1
  shift
  mkdir -p "$run/$name"
  start "$name" "$in_cluster_dns" java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "${j17[@]}" "${ns_jvm[@]}" \
    -Duser.home="$run/$name" -Drocketmq.client.logRoot="$run/$name/logs" -Drocketmq.client.logLevel=WARN \
    -cp "$peers/5.3.3/java-client/compat-java.jar:$(cat "$peers/5.3.3/java-client/classpath.txt")" \
    nsrvd.compat.CompatClient "$@"
}
client consumer stream-consume --topic "$topic" --group K8sGroup --duration 900 --poll 1000
client producer stream-produce --topic "$topic" --interval 50 --duration 900 --poll 1000
acks() { awk '/^ACK /{n++} END{print n+0}' "$run/logs/producer.log" 2>/dev/null || echo 0; }
ok=0
for _ in $(seq 1 90); do
  [ "$(acks)" -ge 20 ] && grep -q '^RECV ' "$run/logs/consumer.log" && { ok=1; break; }
  sleep 1
done
[ "$ok" = 1 ] || abort messages-flowing "acks $(acks); producer: $(grep -v '^ACK' "$run/logs/producer.log" | tail -2 | tr '\n' ' ')"
result passed messages-flowing "$(acks) acknowledged so far"

# --- the rolling update and the deletion of a pod, watched by the monitor ---------------------------
# Every nsrvd pod's log, copied each second from the kubelet's log directory on this host
# (it goes when its pod is deleted) until the monitor stops: last-logs/pod-NAMESPACE_NAME_UID.log.
start podlogs bash -c '
  while [ ! -f "$0/monitor.stop" ]; do
    for d in $(find /var/log/pods -maxdepth 1 -name "$1_nsrvd-*" -newer "$0/podlogs.start" 2>/dev/null); do
      f=$0/logs/pod-${d##*/}.log
      cat "$d"/nsrvd/*.log >"$f.new" 2>/dev/null && mv "$f.new" "$f" || rm -f "$f.new"
    done
    sleep 1
  done' "$run" "$ns"
start monitor python3 "$here/monitor.py" --api "$api" --token "$run/token" --namespace "$ns" \
  --selector app.kubernetes.io/name=nsrvd --topic "$topic" --broker broker-a --stop "$run/monitor.stop" \
  --out "$run/logs/monitor.json"
sleep 2
before=$(kc -n "$ns" get pods -l app.kubernetes.io/name=nsrvd -o jsonpath='{.items[*].metadata.uid}')
t_update=$(date +%s.%N)
upgrade=(--set image.tag=k8s-b)
[ "$break_gossip" = 1 ] && upgrade+=(--set gossip.clusterName=BrokenOnPurpose)
t0=$(date +%s)
{ "$helm" --kubeconfig "$run/kubeconfig" upgrade nsrvd deploy/helm/nsrvd -n "$ns" -f "$run/values.yaml" "${upgrade[@]}" &&
  kc -n "$ns" rollout status statefulset/nsrvd --timeout=300s; } >"$run/logs/upgrade.log" 2>&1
rc=$?
after=$(kc -n "$ns" get pods -l app.kubernetes.io/name=nsrvd -o jsonpath='{.items[*].metadata.uid}')
images_now=$(kc -n "$ns" get pods -l app.kubernetes.io/name=nsrvd -o jsonpath='{.items[*].spec.containers[0].image}')
replaced=$(comm -12 <(tr ' ' '\n' <<<"$before" | sort) <(tr ' ' '\n' <<<"$after" | sort) | grep -c . || true)
if [ "$rc" = 0 ] && [ "$replaced" = 0 ] && [ "$(tr ' ' '\n' <<<"$images_now" | grep -c ":k8s-b$")" = 3 ]; then
  result passed rolling-update-completed "3 pods replaced in $(($(date +%s) - t0)) s"
else
  result failed rolling-update-completed "rc $rc, $replaced old pods left, images: $images_now; $(tail -2 "$run/logs/upgrade.log" | tr '\n' ' ')"
fi
t_delete=$(date +%s.%N)
sleep 3
t0=$(date +%s)
old=$(kc -n "$ns" get pod nsrvd-1 -o jsonpath='{.metadata.uid}')
( kc -n "$ns" delete pod nsrvd-1 --timeout=120s &&
  for _ in $(seq 1 120); do
    uid=$(kc -n "$ns" get pod nsrvd-1 -o jsonpath='{.metadata.uid}' 2>/dev/null)
    [ -n "$uid" ] && [ "$uid" != "$old" ] && kc -n "$ns" wait pod/nsrvd-1 --for=condition=Ready --timeout=1s >/dev/null 2>&1 && exit 0
    sleep 1
  done
  exit 1 ) >"$run/logs/delete.log" 2>&1
rc=$?
[ "$rc" = 0 ] && result passed pod-deleted-and-replaced "nsrvd-1 back Ready in $(($(date +%s) - t0)) s" ||
  result failed pod-deleted-and-replaced "$(tail -2 "$run/logs/delete.log" | tr '\n' ' ')"
sleep 3
touch "$run/monitor.stop"
for _ in $(seq 1 30); do [ -f "$run/logs/monitor.json" ] && break; sleep 0.5; done
stop monitor

# --- messages: stop the producer, let the consumer catch up, compare --------------------------------
stop producer
for _ in $(seq 1 60); do
  python3 - "$run/logs/producer.log" "$run/logs/consumer.log" <<'PY' && break
import sys
acked = {l.split()[1] for l in open(sys.argv[1]) if l.startswith("ACK ")}
got = {l.split()[1][2:] for l in open(sys.argv[2]) if l.startswith("RECV s-")}
sys.exit(0 if acked <= got else 1)
PY
  sleep 1
done
stop consumer
python3 - "$run/logs/producer.log" "$run/logs/consumer.log" >"$run/logs/messages.txt" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
acked = {l.split()[1] for l in lines if l.startswith("ACK ")}
nacks = [l for l in lines if l.startswith("NACK ")]
got = {l.split()[1][2:] for l in open(sys.argv[2]) if l.startswith("RECV s-")}
lost = sorted(acked - got, key=int)
print("acked %d received %d lost %d nack %d %s %s" % (len(acked), len(got & acked), len(lost), len(nacks),
                                                     lost[:5], nacks[:2]))
sys.exit(0 if acked and not lost and not nacks and len(acked) >= 200 else 1)
PY
[ $? = 0 ] && result passed no-message-lost "$(cat "$run/logs/messages.txt")" ||
  result failed no-message-lost "$(cat "$run/logs/messages.txt")"

# --- the monitor's record -------------------------------------------------------------------------
python3 - "$run/logs/monitor.json" "$t_update" "$t_delete" "$tsv" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
t_update, t_delete = float(sys.argv[2]), float(sys.argv[3])
def res(status, name, detail):
    open(sys.argv[4], "a").write("%s\tkubernetes/%s\t%s\n" % (status, name, detail))
v = m["violations"]
res("passed" if not v and m["ready_checks"] >= 100 else "failed", "every-ready-pod-routes-the-broker-throughout",
    "%d route checks of Ready pods, %d without the broker %s" % (m["ready_checks"], len(v), v[:3]))
for phase, lo, hi, want in (("rolling-update", t_update, t_delete, 3), ("pod-deletion", t_delete, m["end"], 1)):
    new = [p for p in m["pods"] if not p["seen_at_start"] and lo <= p["first_seen"] < hi]
    bad, shown = [], []
    for p in new:
        d = p.get("ready_to_complete_s")
        ok = d is not None and d <= 1.0 and p["register_count_at_complete"] == 0
        shown.append("%s ready->complete %s s, answer->complete %s s, REGISTER_BROKER %s" % (
            p["name"], d, p.get("answer_to_complete_s"), p["register_count_at_complete"]))
        if not ok:
            bad.append(p["name"])
    res("passed" if len(new) == want and not bad else "failed",
        "%s-new-pods-complete-from-peers-within-1s-of-ready" % phase,
        "%d new pods (want %d): %s" % (len(new), want, "; ".join(shown)))
PY
tail -n +1 "$tsv" | awk -F'\t' 'NR>0 && $2 ~ /every-ready|complete-from/ {print}' | while IFS=$'\t' read -r s id d; do
  printf '%s %-6s %s %s\n' "$(date +%T)" "$s" "$id" "$d"
done
passed=$(grep -c '^passed' "$tsv")
failed=$(grep -c '^failed' "$tsv")
finish
