#!/usr/bin/env bash
# pod-start.sh RENDERED.yaml NSRVD: runs the chart's pod start script, as rendered, the way
# the StatefulSet runs it, with a real nsrvd: uid 10001, the rendered env, the ConfigMap on
# /etc/nsrvd, a Secret made by deploy/kubernetes/gossip-keys.sh on /etc/nsrvd-keys (mode 0440,
# group 10001, as the kubelet makes a Secret volume's files with fsGroup), the image's nsrvd-conf, and a writable /data. The pod's filesystem is an overlay of
# this host's root in a private mount namespace, its network a private namespace with only
# loopback, so nothing on the host changes and no port can collide. It checks the generated
# properties, /health, /ready (503: no peer yet), the address service, a clean SIGTERM exit,
# and that a pod whose key is not in the Secret stops with a clear message. Needs root.
set -eu
rendered=$1
nsrvd=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
namespace=ns-test

# The ConfigMap's files and the container's plain env, from the rendering itself.
python3 - "$rendered" "$work" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cm = next(d for d in docs if d["kind"] == "ConfigMap")
sts = next(d for d in docs if d["kind"] == "StatefulSet")
for name, text in cm["data"].items():
    open("%s/%s" % (sys.argv[2], name), "w").write(text)
c = sts["spec"]["template"]["spec"]["containers"][0]
with open(sys.argv[2] + "/env", "w") as f:
    for e in c["env"]:
        if "value" in e:
            f.write("%s=%s\n" % (e["name"], e["value"]))
    f.write("REPLICAS_CHECK=%s\n" % sts["spec"]["replicas"])
with open(sys.argv[2] + "/command", "w") as f:
    f.write(" ".join(c["command"]))
PY
replicas=$(sed -n 's/^REPLICAS=//p' "$work/env")
[ "$replicas" = "$(sed -n 's/^REPLICAS_CHECK=//p' "$work/env")" ] || { echo "REPLICAS env differs from spec.replicas"; exit 1; }
NSRVD=$nsrvd "$top/deploy/kubernetes/gossip-keys.sh" "$replicas" >"$work/secret.yaml"

# run_pod ORDINAL: starts the pod (in the background), its pid in $work/pod.pid.
cat >"$work/pod.sh" <<'POD'
set -eu
work=$1 top=$2 nsrvd=$3 ordinal=$4 namespace=$5
mount --make-rprivate /
mount -t tmpfs tmpfs "$work/ov" -o mode=0755
mkdir -p "$work/ov/u" "$work/ov/w" "$work/ov/root"
r=$work/ov/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/ov/u,workdir=$work/ov/w" "$r"
mount --rbind /dev "$r/dev"
mount -t proc proc "$r/proc"
mount -t tmpfs tmpfs "$r/tmp"
ip link set lo up
mkdir -p "$r/data" "$r/keys" "$r/etc/nsrvd-keys" "$r/etc/nsrvd" "$r/usr/local/bin"
cp "$nsrvd" "$r/usr/local/bin/nsrvd"
# As in the image: TLS and ACL signatures, found from nsrvd as ../lib/nsrvd/.
mkdir -p "$r/usr/local/lib/nsrvd"
cp "$(dirname "$nsrvd")/nsrvd-crypto.so" "$r/usr/local/lib/nsrvd/"
cp "$top/docker/conf.sh" "$r/usr/local/bin/nsrvd-conf"
chmod 755 "$r/usr/local/bin/nsrvd-conf"
cp "$work/start.sh" "$work/extra.properties" "$r/etc/nsrvd/"
python3 - "$work/secret.yaml" "$r/etc/nsrvd-keys" <<'PY'
import base64, os, sys, yaml
for k, v in yaml.safe_load(open(sys.argv[1]))["data"].items():
    p = os.path.join(sys.argv[2], k)
    open(p, "wb").write(base64.b64decode(v))
    os.chown(p, 0, 10001)
    os.chmod(p, 0o440)
PY
chown 10001:10001 "$r/data" "$r/keys"
chmod 0555 "$r/etc/nsrvd-keys" "$r/etc/nsrvd"
env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOSTNAME="nsrvd-$ordinal" POD_NAMESPACE="$namespace" \
  $(grep -v '^REPLICAS_CHECK=' "$work/env") \
  chroot --userspec=10001:10001 "$r" $(cat "$work/command") &
echo $! >"$work/pod.pid"
wait $!
POD

# get PATH inside the pod's network namespace: "CODE BODY".
get() {
  nsenter -t "$(cat "$work/holder.pid")" -n python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:9877" + sys.argv[1], timeout=3)
    print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except OSError as e:
    print(0, e)
PY
}

fail() { echo "FAIL: $*"; [ -f "$work/pod.log" ] && tail -20 "$work/pod.log"; exit 1; }

# Pod nsrvd-1 (node 2). A holder process keeps the namespaces for nsenter.
mkdir -p "$work/ov"
unshare -m -n sh -c 'echo $$ >"$0/holder.pid"; exec bash "$0/pod.sh" "$0" "$@"' \
  "$work" "$top" "$nsrvd" 1 "$namespace" >"$work/pod.log" 2>&1 &
runner=$!
for _ in $(seq 1 100); do
  [ -f "$work/holder.pid" ] && [ "$(get /health | cut -d' ' -f1)" = 200 ] && break
  kill -0 "$runner" 2>/dev/null || fail "the pod exited"
  sleep 0.2
done
h=$(get /health)
[ "${h%% *}" = 200 ] || fail "/health: $h"
echo "/health: $h"
props=$(nsenter -t "$(cat "$work/holder.pid")" -m cat "$work/ov/root/data/nsrvd.properties")
echo "$props"
domain="nsrvd-headless.$namespace.svc.cluster.local"
want_peers=$(for i in $(seq 1 "$replicas"); do [ "$i" = 2 ] || printf '%s@nsrvd-%s.%s:9878\n' "$i" $((i - 1)) "$domain"; done | paste -sd,)
for line in gossipEnable=true gossipNodeId=2 "gossipPeers=$want_peers" statusAddress=0.0.0.0 \
  "advertisedAddress=nsrvd-1.$domain:9876" gossipSecretKeyFile=/keys/node2.key \
  shutdownWaitTimeSeconds=30; do
  printf '%s\n' "$props" | grep -qxF "$line" || fail "no line $line"
done
keys=$(printf '%s\n' "$props" | sed -n 's/^gossipPeerKeys=//p' | tr ',' '\n' | cut -d: -f1 | sort -n | paste -sd,)
[ "$keys" = "$(seq 1 "$replicas" | paste -sd,)" ] || fail "gossipPeerKeys for nodes $keys"
while IFS= read -r extra; do
  [ -z "$extra" ] || printf '%s\n' "$props" | grep -qxF "$extra" || fail "config line $extra missing"
done <"$work/extra.properties"
r=$(get /ready)
[ "${r%% *}" = 503 ] || fail "/ready with no peer reachable: $r"
echo "/ready: $r"
a=$(get /rocketmq/nsaddr)
[ "${a%% *}" = 200 ] && case $a in *"nsrvd-1.$domain:9876"*) ;; *) false ;; esac || fail "/rocketmq/nsaddr: $a"
echo "/rocketmq/nsaddr: $a"
kill -TERM "$(cat "$work/pod.pid")"
rc=0
wait "$runner" || rc=$?
[ "$rc" = 0 ] || fail "nsrvd exited $rc on SIGTERM"
grep -q . "$work/pod.log" && tail -3 "$work/pod.log"

# A pod whose node has no key pair in the Secret (one more than the Secret holds).
rm -f "$work/holder.pid"
rc=0
unshare -m -n sh -c 'echo $$ >"$0/holder.pid"; exec bash "$0/pod.sh" "$0" "$@"' \
  "$work" "$top" "$nsrvd" "$replicas" "$namespace" >"$work/pod.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a pod without its key started"
grep -q "no gossip secret key for node $((replicas + 1))" "$work/pod.log" || fail "no clear message"
echo "node $((replicas + 1)) without a key: $(tail -1 "$work/pod.log") (exit $rc)"
echo "pod start: ok"
