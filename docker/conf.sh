#!/bin/sh
# nsrvd-conf: writes /data/nsrvd.properties: the ports of the image, and with NODE_ID set the
# gossip keys of the node and of the peers in /data/peers. Peer host names are resolved here
# (nsrvd takes literal addresses and checks that gossip packets come from the peer's address),
# waiting up to 60 s for each name and each peer's public key in /keys.
set -eu
conf=/data/nsrvd.properties
tmp=$conf.new
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
    for _ in $(seq 1 120); do
      ip=$(getent hosts "$host" | awk '{print $1; exit}') && [ -n "$ip" ] && break
      sleep 0.5
    done
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
