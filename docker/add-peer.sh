#!/bin/sh
# nsrvd-add-peer ID@HOST:PORT...: adds gossip peers to this running node without a restart:
# appends them to /data/peers, rewrites the properties (nsrvd-conf waits for the new peer's
# public key in /keys) and sends nsrvd (PID 1) SIGHUP, which reloads the peers and their keys
# and resolves their names. docker/README.md "A fourth node" uses it.
set -eu
for p in "$@"; do
  grep -qx "$p" /data/peers 2>/dev/null || echo "$p" >> /data/peers
done
nsrvd-conf
kill -HUP 1
echo "peers now: $(paste -sd, /data/peers); SIGHUP sent"
