#!/usr/bin/env bash
# User-space instructions per route query over TLS 1.3 (docs/benchmarks.md, "TLS"), for
# nsrvd or nsrv-tls-ceiling with TLS-P2's shape: 10 brokers x 10,000 shared topics,
# nsrv-tls-bench with 256 connections x 1 in flight. The server runs under valgrind
# --tool=callgrind --instr-atstart=no; counting is switched on once every connection has
# made its handshake, so the count is the steady record work, not handshakes.
# nsrvd runs with tls.server.mode=permissive, so nsrv-brokersim registers the data in
# plaintext while the load speaks TLS (what the load sees is the same as enforcing).
# Counted: the main thread (nsrvd's loop), whose dump is callgrind.out.1-01.
# Requests: calls of nsrv__metrics_reply (nsrvd) or nsrv__canned_append (the ceiling).
#
#   cluster-tests/bench/callgrind_tls.sh [BUILD_DIR] [SECONDS] [nsrvd|ceiling] [REPLY_BYTES]
#     (default: build, 5, nsrvd, 2214: the ceiling's canned reply size, nsrvd's mean P2 reply as
#     bench.py measures it)
# Prints "instructions/request N" and leaves callgrind.out and the annotation in $out.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
secs=${2:-5}
server=${3:-nsrvd}
reply_bytes=${4:-2214}
warm=${NSRV_CALLGRIND_WARM:-25}
out=$(mktemp -d -t nsrv-callgrind-tls.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
case $server in
nsrvd)
  printf 'listenPort=%s\nrocketmqHome=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/nsrvd.properties\ntls.server.mode=permissive\ntls.config.file=\n' \
    "$port" "$out" "$out" "$out" >"$out/nsrvd.properties"
  argv=("$build/src/nsrvd" -c "$out/nsrvd.properties")
  per_request=nsrv__metrics_reply
  ;;
ceiling)
  argv=("$build/src/tools/nsrv-tls-ceiling" -p "$port" --frame-bytes "$reply_bytes")
  per_request=nsrv__canned_append
  ;;
*) echo "unknown server $server (nsrvd or ceiling)" >&2; exit 2 ;;
esac
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes --callgrind-out-file="$out/callgrind.out" \
  "${argv[@]}" >"$out/server.log" 2>&1 &
vg=$!
pids+=("$vg")
for _ in $(seq 300); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null && break
  sleep 0.1
done
if [ "$server" = nsrvd ]; then
  "$build/src/tools/nsrv-brokersim" -n "127.0.0.1:$port" --no-sys-topics -b 10 -t 0 -s 10000 -d 3600 \
    </dev/null >"$out/sim.out" 2>"$out/sim.log" &
  pids+=("$!")
  for _ in $(seq 3000); do grep -q 'ready ok=' "$out/sim.out" 2>/dev/null && break; sleep 0.1; done
  grep -q 'ready ok=.*failed=0' "$out/sim.out" || { echo "registration failed: $(cat "$out/sim.out")" >&2; exit 1; }
fi
"$build/src/tools/nsrv-tls-bench" -a "127.0.0.1:$port" -s $((warm + secs + 30)) -c 256 -d 1 --shared 10000 \
  >"$out/bench.out" 2>&1 &
pids+=("$!")
sleep "$warm"
callgrind_control -i on "$vg" >/dev/null
sleep "$secs"
callgrind_control -i off "$vg" >/dev/null
callgrind_control -d "$vg" >/dev/null
sleep 1
cleanup
trap - EXIT
# The loop thread's dump of the counted seconds: nsrvd's workers decode the brokers'
# periodic registrations, which are not the queries' cost.
f=$out/callgrind.out.1-01
callgrind_annotate --inclusive=yes "$f" >"$out/annotate.txt" 2>/dev/null
total=$(grep -m1 -E '^[0-9,]+ .*PROGRAM TOTALS' "$out/annotate.txt" | awk '{gsub(",","",$1); print $1}')
count_calls() {
  awk -v want="$1" '
    /^c?fn=/ { id = $1; sub(/^c?fn=/, "", id); if (NF > 1) names[id] = $2 }
    /^cfn=/ { tgt = names[id] }
    /^calls=/ { if (tgt == want) { split($1, a, "="); n += a[2] } }
    END { print n + 0 }' "$f"
}
calls=$(count_calls "$per_request")
# A handshake in the counted window would inflate the figure: say so.
handshakes=$(count_calls SSL_do_handshake)
accepts=$(count_calls ossl_statem_accept)
echo "dir $out"
echo "total $total calls $calls (handshake calls in the window: $handshakes + $accepts)"
echo "instructions/request $((total / calls))"
