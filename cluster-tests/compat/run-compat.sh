#!/usr/bin/env bash
# The real-peer compatibility suite in one command: resolves the real Apache RocketMQ peers once
# (Java NameServer, broker and mqadmin 5.3.3 and 4.9.7 from Maven Central; rocketmq-client-go
# v2.1.2 and v2.1.1 through the Go module proxy; ali-ons 3.12.0 from npm) into a cache, builds
# the test programs, runs the scenarios against nsrvd and against the Java NameServer of the
# same version, and prints a table scenario x peer x {nsrvd, Java NameServer}, then
# "N passed, M failed". Exit status 0 only if nothing failed.
#
# Usage: run-compat.sh [--peers java533,java497,go,go211,node,proxy540] [--targets nsrvd,java]
#                      [--nsrvd PATH] [--workers N] [SCENARIO ...]      (scenarios 1-11; default all)
# Environment: NSRVD_BIN (nsrvd binary; default build/src/nsrvd, then build-test/src/nsrvd),
#   NSRVD_COMPAT_CACHE (peer cache, default ~/.cache/nsrvd-peers), COMPAT_LOG_DIR (logs and
#   evidence, default /tmp/nsrvd-compat-<time>), COMPAT_TIMEOUT (whole run, default 3000 s).
# Every process it starts listens on 127.0.0.1 (the 4.9.7 NameServer and the brokers bind all
# addresses: they have no bind-address setting) and is stopped when the run ends or is interrupted.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

peers=java533,java497,go,go211,node,proxy540
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --peers) peers=${args[$((i + 1))]:-$peers} ;;
    --peers=*) peers=${args[$i]#--peers=} ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  esac
done

fail_setup() { echo "compat suite set-up failed: $*"; echo "0 passed, 1 failed"; exit 1; }
for tool in java mvn python3; do
  command -v "$tool" >/dev/null || fail_setup "$tool not found"
done
[[ ",$peers," == *",go"* ]] && { command -v go >/dev/null || fail_setup "go not found"; }
[[ ",$peers," == *",node,"* || ",$peers," == *",proxy540,"* ]] && \
  { command -v npm >/dev/null || fail_setup "npm not found"; }

nsrvd=${NSRVD_BIN:-}
if [ -z "$nsrvd" ]; then
  for cand in "$top/build/src/nsrvd" "$top/build-test/src/nsrvd"; do
    [ -x "$cand" ] && { nsrvd=$cand; break; }
  done
fi

echo "=== resolving and building the peers (cached in ${NSRVD_COMPAT_CACHE:-$HOME/.cache/nsrvd-peers})"
"$here/prepare-peers.sh" "$peers" || fail_setup "peer resolution or build failed (see above)"

echo "=== running the scenarios"
export PYTHONDONTWRITEBYTECODE=1
exec timeout --signal=TERM --kill-after=60 "${COMPAT_TIMEOUT:-3000}" \
  python3 "$here/harness/compat.py" --nsrvd "${nsrvd:-$top/build/src/nsrvd}" "$@"
