#!/bin/sh
# nsrvd-conf: writes /data/nsrvd.properties: the ports of the image, and with NODE_ID set the
# gossip keys of the node and of the peers in /data/peers, waiting up to 60 s for each peer's
# public key in /keys. Peers stay host names (compose service names): nsrvd resolves them
# itself, at start, on SIGHUP, periodically and at once when a restarted peer's gossip comes
# from a new address (proto/gossip.md §8.2), so nothing here has to follow addresses.
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
  keys=$(cat "/keys/node$NODE_ID.pub")
  for p in $(cat /data/peers); do
    id=${p%%@*}
    for _ in $(seq 1 120); do [ -s "/keys/node$id.pub" ] && break; sleep 0.5; done
    [ -s "/keys/node$id.pub" ] || { echo "no public key from node $id" >&2; exit 1; }
    keys="$keys,$(cat "/keys/node$id.pub")"
  done
  {
    echo "gossipEnable=true"
    echo "gossipNodeId=$NODE_ID"
    echo "gossipPeers=$(paste -sd, /data/peers)"
    echo "gossipPeerKeys=$keys"
    echo "gossipSecretKeyFile=/keys/node$NODE_ID.key"
    echo "gossipStatePath=/data/gossip.state"
  } >> "$tmp"
fi
mv "$tmp" "$conf"
