#!/bin/sh
# Container entry point. NODE_ID and PEERS ("2@nsrvd2:9878,3@nsrvd3:9878", host names allowed:
# they are resolved here because nsrvd takes literal addresses) switch gossip on. Keys live in
# the shared volume /keys: each node writes its own key pair once and waits until every peer's
# public key line is there, so the compose file needs no key material.
set -eu
conf=/data/nsrvd.properties
mkdir -p /data /keys
{
  echo "listenPort=9876"
  echo "kvConfigPath=/data/kvConfig.json"
  echo "statusAddress=0.0.0.0"
  echo "statusPort=9877"
} > "$conf"
if [ -n "${NODE_ID:-}" ] && [ -n "${PEERS:-}" ]; then
  [ -f "/keys/node$NODE_ID.key" ] || nsrvd keygen -o "/keys/node$NODE_ID.key" -n "$NODE_ID" \
    | sed 's/^gossipPeerKeys=//' > "/keys/node$NODE_ID.pub"
  peers=""
  need=""
  for p in $(echo "$PEERS" | tr ',' ' '); do
    id=${p%%@*}; hostport=${p#*@}; host=${hostport%:*}; port=${hostport##*:}
    ip=""
    for _ in $(seq 1 60); do
      ip=$(getent hosts "$host" | awk '{print $1; exit}') && [ -n "$ip" ] && break
      sleep 1
    done
    [ -n "$ip" ] || { echo "cannot resolve $host" >&2; exit 1; }
    peers="$peers${peers:+,}$id@$ip:$port"
    need="$need $id"
  done
  for id in $need; do
    for _ in $(seq 1 60); do [ -s "/keys/node$id.pub" ] && break; sleep 1; done
    [ -s "/keys/node$id.pub" ] || { echo "no public key from node $id" >&2; exit 1; }
  done
  {
    echo "gossipEnable=true"
    echo "gossipNodeId=$NODE_ID"
    echo "gossipPeers=$peers"
    echo "gossipPeerKeys=$(cat /keys/node*.pub | paste -sd, -)"
    echo "gossipSecretKeyFile=/keys/node$NODE_ID.key"
    echo "gossipStatePath=/data/gossip.state"
  } >> "$conf"
fi
exec nsrvd -c "$conf" "$@"
