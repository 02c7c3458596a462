#!/bin/sh
# nsrvd-conf: writes /data/nsrvd.properties: the ports of the image, and with NODE_ID set the
# gossip keys of the node and of the peers in /data/peers. Peer host names are resolved here
# (nsrvd takes literal addresses and checks that gossip packets come from the peer's address),
# waiting up to 60 s for each name and each peer's public key in /keys. A peer that does not
# resolve within 2 s but had an address in the previous properties keeps it: a stopped peer
# container has no name, and its address is what it will most likely come back with (podman
# may give it a new one; nsrvd-add-peer, run again once it is back, picks that up).
set -eu
conf=/data/nsrvd.properties
tmp=$conf.new
old_peers=$(sed -n 's/^gossipPeers=//p' "$conf" 2>/dev/null | tr ',' ' ')
{
  echo "listenPort=9876"
  echo "kvConfigPath=/data/kvConfig.json"
  echo "statusAddress=0.0.0.0"
  echo "statusPort=9877"
} > "$tmp"
if [ -n "${NODE_ID:-}" ] && [ -s /data/peers ]; then
  peers=""
  keys=$(cat "/keys/node$NODE_ID.pub")
  for p in $(cat /data/peers); do
    id=${p%%@*}; hostport=${p#*@}; host=${hostport%:*}; port=${hostport##*:}
    ip=""
    old=""
    for o in $old_peers; do [ "${o%%@*}" = "$id" ] && old=${o#*@} && old=${old%:*}; done
    tries=120
    [ -n "$old" ] && tries=1
    for _ in $(seq 1 $tries); do
      ip=$(getent hosts "$host" | awk '{print $1; exit}') && [ -n "$ip" ] && break
      sleep 0.5
    done
    [ -n "$ip" ] || ip=$old
    [ -n "$ip" ] || { echo "cannot resolve $host" >&2; exit 1; }
    for _ in $(seq 1 120); do [ -s "/keys/node$id.pub" ] && break; sleep 0.5; done
    [ -s "/keys/node$id.pub" ] || { echo "no public key from node $id" >&2; exit 1; }
    peers="$peers${peers:+,}$id@$ip:$port"
    keys="$keys,$(cat "/keys/node$id.pub")"
  done
  {
    echo "gossipEnable=true"
    echo "gossipNodeId=$NODE_ID"
    echo "gossipPeers=$peers"
    echo "gossipPeerKeys=$keys"
    echo "gossipSecretKeyFile=/keys/node$NODE_ID.key"
    echo "gossipStatePath=/data/gossip.state"
  } >> "$tmp"
fi
mv "$tmp" "$conf"
