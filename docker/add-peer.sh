#!/bin/sh
# nsrvd-add-peer ID@HOST:PORT...: adds gossip peers to this running node without a restart:
# appends them to /data/peers, rewrites the properties (nsrvd-conf resolves the new host and
# waits for its public key in /keys) and sends nsrvd (PID 1) SIGHUP, which reloads the peers
# and their keys. docker/README.md "A fourth node" uses it. Without arguments it only
# re-resolves the peers it has (a peer container that came back on a new address).
set -eu
for p in "$@"; do
  grep -qx "$p" /data/peers 2>/dev/null || echo "$p" >> /data/peers
done
nsrvd-conf
kill -HUP 1
echo "peers now: $(paste -sd, /data/peers); SIGHUP sent"
