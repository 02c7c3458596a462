#!/usr/bin/env bash
# The chaos suite: a 3-node nsrvd cluster, brokers and clients, each in its own network
# namespace on one bridge, through kills, pauses, partitions, loss, delay, clock skew and
# forged packets. See README.md here.
#
#   cluster-tests/chaos/run.sh [--short] [--only NAME,...] [--no-java] [--nsrvd PATH]
#   cluster-tests/chaos/run.sh --docker      # the same scenarios against docker/docker-compose.yml
#
# Needs root, iproute2, nftables, conntrack, faketime, python3 (+ cryptography). Bounded by
# $CHAOS_TIMEOUT seconds (default 900 short, 2400 full); every namespace, nft table and process
# it made is removed on exit, failure or Ctrl-C.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
nsrvd=${NSRVD_BIN:-}
short=0
docker=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nsrvd) nsrvd=$2; shift 2 ;;
    --short) short=1; args+=(--short); shift ;;
    --docker) docker=1; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "$docker" = 1 ]; then
  exec "$here/docker-mode.sh" "${args[@]}"
fi
[ -n "$nsrvd" ] || for c in "$root/build/src/nsrvd" "$root/build-test/src/nsrvd"; do
  [ -x "$c" ] && { nsrvd=$c; break; }
done
[ -x "${nsrvd:-}" ] || { echo "chaos: no nsrvd binary (build it, or --nsrvd PATH)"; exit 2; }
nsrvd=$(cd "$(dirname "$nsrvd")" && pwd)/$(basename "$nsrvd")
brokersim=${NSRV_BROKERSIM_BIN:-$(dirname "$nsrvd")/tools/nsrv-brokersim}
[ -x "$brokersim" ] || { echo "chaos: no nsrv-brokersim next to $nsrvd"; exit 2; }
[ "$(id -u)" = 0 ] || { echo "chaos: needs root (network namespaces, nftables)"; exit 2; }
for tool in ip nft conntrack faketime python3; do
  command -v $tool >/dev/null || { echo "chaos: missing $tool (Debian: iproute2 nftables conntrack faketime python3)"; exit 2; }
done
if [ "$short" = 1 ]; then limit=${CHAOS_TIMEOUT:-900}; else limit=${CHAOS_TIMEOUT:-2400}; fi
work=${CHAOS_WORK:-$(mktemp -d /tmp/nsrvd-chaos.XXXXXX)}
mkdir -p "$work"
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  # whatever a killed runner left behind: its namespaces (and with them nft tables, veths, processes)
  python3 -c "import sys; sys.path.insert(0, '$here'); import netns; [print('chaos: removed leftover namespace', n) for n in netns.cleanup_prefix('chaos$$-')]"
}
trap 'cleanup; exit 130' INT TERM
timeout --foreground -s TERM -k 30 "$limit" python3 "$here/chaos.py" --nsrvd "$nsrvd" --brokersim "$brokersim" \
  --work "$work" --prefix "chaos$$" "${args[@]}" &
pid=$!
wait $pid
rc=$?
cleanup
trap - INT TERM
echo "chaos: logs in $work"
exit $rc
