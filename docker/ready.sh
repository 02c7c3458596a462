#!/bin/sh
# Reads an nsrvd node's /status JSON on stdin; exits 0 when the node is ready: not shutting
# down, and either gossip is off, or one pull from a peer has completed (a starting node pulls
# everything from every peer at once, so it then holds the cluster's view), or the start-up
# window (NSRVD_READY_WINDOW_S, default 30 s) has passed, so that a node whose peers are all
# down still becomes ready and serves its own brokers. With MIN_DIRECT=N it also wants N
# brokers whose liveness the node heard directly ("source":"direct").
# Used by the nsrvd image's HEALTHCHECK and by the other images' wait-ready.
s=$(cat)
num() { printf '%s' "$s" | sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p"; }
case "$s" in *'"uptimeMs":'*) ;; *) exit 1 ;; esac
case "$s" in *'"shuttingDown":true'*) exit 1 ;; esac
if [ "${MIN_DIRECT:-0}" -gt 0 ]; then
  direct=$(printf '%s' "$s" | grep -o '"source":"direct"' | wc -l)
  [ "$direct" -ge "$MIN_DIRECT" ] || exit 1
fi
case "$s" in *'"gossip":{'*) ;; *) exit 0 ;; esac
[ "$(num pullsOk)" -ge 1 ] 2>/dev/null && exit 0
[ "$(num uptimeMs)" -ge $((${NSRVD_READY_WINDOW_S:-30} * 1000)) ] 2>/dev/null && exit 0
exit 1
