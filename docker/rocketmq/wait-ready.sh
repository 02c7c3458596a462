#!/bin/sh
# wait-ready [-b N] [-t SECONDS] HOST:STATUSPORT...
# Polls every node until its GET /ready answers 200 (ready.sh: synced with a peer or start-up
# window passed) and, with -b N, sees N brokers directly; gives up after -t seconds (900: longer
# than the smoke waits for the brokers, 420 s, since a loaded 2-core host has taken 370 s to
# boot them, and a client that gave up first left the smoke nothing to count).
# The broker waits for the nodes before it starts, the clients wait for the broker: start-up
# order follows real readiness, never a sleep of a guessed length.
set -u
min=0; limit=900
while getopts b:t: o; do
  case $o in b) min=$OPTARG ;; t) limit=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
start=$(date +%s)
for node in "$@"; do
  until MIN_DIRECT=$min nsrvd-ready "$node" 2>/dev/null; do
    if [ $(($(date +%s) - start)) -ge "$limit" ]; then
      echo "wait-ready: $node not ready after ${limit}s" >&2
      exit 1
    fi
    sleep 0.5
  done
  if [ "$min" -gt 0 ]; then echo "wait-ready: $node ready, $min brokers direct, after $(($(date +%s) - start))s"
  else echo "wait-ready: $node ready after $(($(date +%s) - start))s"; fi
done
