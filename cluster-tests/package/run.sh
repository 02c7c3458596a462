#!/bin/sh
# Package test: installs the nsrvd .deb (cpack -G DEB) into a clean Debian 12 root made by
# debootstrap, makes a gossip key as the README says (root, keygen into /var/lib/nsrvd),
# starts nsrvd there from its installed paths as the nsrvd user with gossip on, asks it for a
# route and `nsrvd status` for its view, upgrades the package (an edited conffile must survive), then checks that remove
# keeps /var/lib/nsrvd and purge deletes it. Needs root, debootstrap and network access to
# the Debian mirror (debootstrap's default) for the root and the package's dependencies.
#
# usage: cluster-tests/package/run.sh --deb build/nsrvd_<v>_amd64.deb [--root DIR]
#   --root DIR  a bookworm root made earlier (copied, never changed); else one is made
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=$(cd "$here/../lib" && pwd)
deb= base=
while [ $# -gt 0 ]; do
    case $1 in
    --deb) deb=$2; shift 2 ;;
    --root) base=$2; shift 2 ;;
    *) echo "usage: $0 --deb FILE [--root DIR]" >&2; exit 2 ;;
    esac
done
[ -f "$deb" ] || { echo "no .deb given (--deb)" >&2; exit 2; }
work=$(mktemp -d)
root=$work/root
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    umount "$root/proc" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

if [ -n "$base" ]; then
    step "copying $base"
    cp -a "$base" "$root"
else
    step "debootstrap bookworm (minbase)"
    debootstrap --variant=minbase --include=adduser,util-linux bookworm "$root" >"$work/dbs.log" 2>&1 ||
        { tail -20 "$work/dbs.log"; fail debootstrap; }
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

step "install"
cp "$deb" "$root/tmp/nsrvd.deb"
in_root apt-get update -qq >/dev/null
in_root apt-get install -y -qq /tmp/nsrvd.deb >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail install; }
in_root id nsrvd >/dev/null || fail "no nsrvd user"
[ "$(in_root stat -c %U:%a /var/lib/nsrvd)" = "nsrvd:750" ] || fail "/var/lib/nsrvd not nsrvd:750"
[ -f "$root/lib/systemd/system/nsrvd.service" ] || fail "no unit"
[ -f "$root/usr/share/man/man8/nsrvd.8.gz" ] || fail "no manual page"
[ -f "$root/usr/lib/nsrvd/nsrvd-crypto.so" ] || fail "no /usr/lib/nsrvd/nsrvd-crypto.so (TLS, ACL)"
# The guide and what it links to (README.md, docs/, the container guide).
for f in README.md docs/README.md docs/compatibility.md docker/README.md; do
    [ -f "$root/usr/share/doc/nsrvd/$f" ] || fail "no /usr/share/doc/nsrvd/$f"
done
grep -q '^## Three nodes on one host' "$root/usr/share/doc/nsrvd/README.md" || fail "README.md there is not the guide"

# The host's network namespace is shared: pick free ports, set them in the conffile (an edit
# the upgrade below must keep). Gossip uses its number for UDP and TCP.
free_port() {
    python3 -c '
import socket
while True:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass'
}
port=$(free_port) status_port=$(free_port) gossip_port=$(free_port) peer_port=$(free_port)
echo "listenPort=$port" >>"$root/etc/nsrvd/nsrvd.properties"

# Gossip keys as the README gives them for the package: root runs keygen into /var/lib/nsrvd,
# the key is the service user's; the printed item goes into every node's gossipPeerKeys.
# Node 2's key stands for one made on another host.
step "gossip key per the docs"
item1=$(in_root nsrvd keygen -o /var/lib/nsrvd/gossip.key -n 1 2>"$work/keygen.log") ||
    { cat "$work/keygen.log"; fail "keygen"; }
item2=$(in_root nsrvd keygen -o /tmp/node2.key -n 2 2>>"$work/keygen.log") || { cat "$work/keygen.log"; fail "keygen"; }
case $item1 in 1:1:*=) ;; *) fail "keygen printed '$item1', not one 1:1:PUBLIC item" ;; esac
owner=$(in_root stat -c %U:%G:%a /var/lib/nsrvd/gossip.key)
[ "$owner" = "nsrvd:nsrvd:600" ] || fail "key made by root in /var/lib/nsrvd is $owner, not nsrvd:nsrvd:600"
{
    echo "statusPort=$status_port"
    echo "gossipEnable=true"
    echo "gossipNodeId=1"
    echo "gossipListenAddress=127.0.0.1"
    echo "gossipPort=$gossip_port"
    echo "gossipPeers=2@127.0.0.1:$peer_port"
    echo "gossipPeerKeys=$item1,$item2"
    echo "gossipSecretKeyFile=/var/lib/nsrvd/gossip.key"
} >>"$root/etc/nsrvd/nsrvd.properties"

# What the unit does: User=nsrvd, HOME=/var/lib/nsrvd, -c the conffile.
as_service() {
    chroot "$root" setpriv --reuid=nsrvd --regid=nsrvd --init-groups --no-new-privs \
        env -i HOME=/var/lib/nsrvd /usr/bin/nsrvd "$@"
}

step "a key root made outside /var/lib/nsrvd: the service names its user and the fix"
in_root nsrvd keygen -o /etc/nsrvd/root.key -n 1 >/dev/null 2>&1 || fail "keygen /etc/nsrvd/root.key"
sed -e 's#^gossipSecretKeyFile=.*#gossipSecretKeyFile=/etc/nsrvd/root.key#' \
    -e "s#^listenPort=.*#listenPort=$peer_port#" -e 's#^statusPort=.*#statusPort=0#' \
    "$root/etc/nsrvd/nsrvd.properties" >"$root/etc/nsrvd/root-key.properties"
chmod 0644 "$root/etc/nsrvd/root-key.properties"
if as_service -c /etc/nsrvd/root-key.properties >"$work/rootkey.log" 2>&1; then
    cat "$work/rootkey.log"; fail "started with a key its user cannot read"
fi
grep -q "gossipSecretKeyFile '/etc/nsrvd/root.key': permission denied: nsrvd runs as user nsrvd" "$work/rootkey.log" &&
    grep -q "chown nsrvd: '/etc/nsrvd/root.key'" "$work/rootkey.log" ||
    { cat "$work/rootkey.log"; fail "unreadable key: no message naming the file, the user and the fix"; }
rm -f "$root/etc/nsrvd/root.key" "$root/etc/nsrvd/root-key.properties"

step "start as nsrvd on port $port, gossip on $gossip_port, status on $status_port"
# Not through as_service: $! must be nsrvd itself (chroot, setpriv and env exec), not a subshell.
chroot "$root" setpriv --reuid=nsrvd --regid=nsrvd --init-groups --no-new-privs \
    env -i HOME=/var/lib/nsrvd /usr/bin/nsrvd -c /etc/nsrvd/nsrvd.properties >"$work/nsrvd.log" 2>&1 &
pid=$!
PYTHONPATH=$lib python3 - "$port" <<'PY' || { cat "$work/nsrvd.log"; fail "route query"; }
import socket, ssl, sys, time
from rmq import Connection, NamesrvClient, ResponseCode
port = int(sys.argv[1])
for _ in range(100):
    try:
        conn = Connection("127.0.0.1", port)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("nsrvd never accepted")
ns = NamesrvClient(conn)
r = ns.get_route("PackageTestTopic")
assert r.code == ResponseCode.TOPIC_NOT_EXIST, r
r = ns.put_kv("pkgtest", "k", "v")
assert r.code == ResponseCode.SUCCESS, r
# TLS (permissive by default) loads /usr/lib/nsrvd/nsrvd-crypto.so at the first handshake.
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
tls = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")
r = NamesrvClient(Connection("127.0.0.1", port, sock=tls)).get_route("PackageTestTopic")
assert r.code == ResponseCode.TOPIC_NOT_EXIST, r
print("route query answered (TOPIC_NOT_EXIST), KV put accepted, the same over TLS")
PY
# `nsrvd status` with no address reads the packaged configuration (root may read it).
in_root nsrvd status >"$work/status.txt" 2>&1 || { cat "$work/status.txt" "$work/nsrvd.log"; fail "nsrvd status"; }
grep -q "^gossip    node 1," "$work/status.txt" || { cat "$work/status.txt"; fail "nsrvd status shows no gossip node 1"; }
# Stays up with its key: a node that cannot use it exits within milliseconds of starting.
sleep 2
kill -0 "$pid" 2>/dev/null || { cat "$work/nsrvd.log"; fail "nsrvd did not stay up"; }
echo "gossip on with the key made per the docs; nsrvd status (no address) answered"
kill -TERM "$pid"
wait "$pid" || fail "nsrvd exit code $? after SIGTERM"
pid=
[ -f "$root/var/lib/nsrvd/namesrv/kvConfig.json" ] || fail "kvConfig not under /var/lib/nsrvd"
[ "$(stat -c %u "$root/var/lib/nsrvd/namesrv/kvConfig.json")" = "$(in_root id -u nsrvd)" ] ||
    fail "kvConfig not written by nsrvd"

step "upgrade keeps the edited conffile"
dpkg-deb -R "$deb" "$work/up"
sed -i 's/^Version: \(.*\)$/Version: \1+up1/' "$work/up/DEBIAN/control"
dpkg-deb -b "$work/up" "$root/tmp/nsrvd-up.deb" >/dev/null
in_root dpkg -i --force-confold /tmp/nsrvd-up.deb >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail upgrade; }
grep -q "^listenPort=$port\$" "$root/etc/nsrvd/nsrvd.properties" || fail "conffile edit lost on upgrade"

step "remove keeps /var/lib/nsrvd"
in_root dpkg -r nsrvd >/dev/null
[ -f "$root/var/lib/nsrvd/namesrv/kvConfig.json" ] || fail "remove deleted /var/lib/nsrvd"
[ ! -e "$root/usr/bin/nsrvd" ] || fail "binary left after remove"

step "purge deletes it"
in_root dpkg -P nsrvd >/dev/null
[ ! -e "$root/var/lib/nsrvd" ] || fail "purge kept /var/lib/nsrvd"
[ ! -e "$root/etc/nsrvd/nsrvd.properties" ] || fail "purge kept the conffile"
echo "PASS: package install, key per the docs, start as nsrvd with gossip, route query, status, upgrade, remove, purge"
