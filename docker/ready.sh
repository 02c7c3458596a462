#!/bin/bash
# nsrvd-ready [HOST:PORT]: exits 0 when the nsrvd node whose status endpoint is HOST:PORT
# (default 127.0.0.1:9877) answers GET /ready with 200: serving, not draining, and either
# gossip off, one pull from a peer done, or its start-up window (30 s) over. The rule is the
# node's own; otherwise this prints the node's reason ("not ready: ...") and exits 1.
# With MIN_DIRECT=N it also wants N brokers whose liveness the node heard directly
# ("source":"direct" in /status).
# Used by the nsrvd image's HEALTHCHECK, the compose healthcheck and the other images'
# wait-ready. Bash's /dev/tcp: the slim image needs no HTTP client.
set -u
target=${1:-127.0.0.1:9877}
host=${target%:*}
port=${target##*:}
host=${host#[}
host=${host%]}

# GET $1: sets code and body; 1 if the node cannot be reached.
get() {
  code=0
  body=
  exec 3<>"/dev/tcp/$host/$port" || return 1
  printf 'GET %s HTTP/1.0\r\n\r\n' "$1" >&3
  local line
  IFS= read -r -t 3 line <&3 || { exec 3<&-; return 1; }
  code=${line#* }
  code=${code%% *}
  while IFS= read -r -t 3 line <&3 && [ -n "${line%$'\r'}" ]; do :; done
  body=$(timeout 3 cat <&3)
  exec 3<&-
}

get /ready 2>/dev/null || { echo "nsrvd-ready: cannot reach $target" >&2; exit 1; }
if [ "$code" != 200 ]; then
  printf '%s\n' "${body:-HTTP $code}" >&2
  exit 1
fi
if [ "${MIN_DIRECT:-0}" -gt 0 ]; then
  get /status 2>/dev/null || exit 1
  direct=$(printf '%s' "$body" | grep -o '"source":"direct"' | wc -l)
  [ "$direct" -ge "$MIN_DIRECT" ] || { echo "not ready: $direct of $MIN_DIRECT brokers direct" >&2; exit 1; }
fi
exit 0
