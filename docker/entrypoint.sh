#!/bin/sh
# Container entry point. NODE_ID and PEERS ("2@nsrvd2:9878,3@nsrvd3:9878", host names allowed)
# switch gossip on. Keys live in the shared volume /keys: each node writes its own key pair once
# and waits until every peer's public key line is there, so the compose file needs no key
# material. The peer list is kept in /data/peers (one id@host:port a line), so that
# `nsrvd-add-peer` can extend it later and a restarted container keeps it; nsrvd-conf writes
# the properties from it.
set -eu
mkdir -p /data /keys
if [ -n "${NODE_ID:-}" ] && [ -n "${PEERS:-}" ]; then
  [ -f "/keys/node$NODE_ID.key" ] || nsrvd keygen -o "/keys/node$NODE_ID.key" -n "$NODE_ID" \
    > "/keys/node$NODE_ID.pub"
  [ -f /data/peers ] || echo "$PEERS" | tr ',' '\n' > /data/peers
fi
nsrvd-conf
exec nsrvd -c /data/nsrvd.properties "$@"
