#!/usr/bin/env bash
# User-space instructions per route query (cluster-tests/bench/README.md, "Profiling a server"):
# nsrvd under callgrind with counting off, a profile's data registered and its load started
# (as bench.py sets them up), counting switched on for a few seconds, and the instruction total
# divided by the route queries handled (calls of nsrv__metrics_reply). Deterministic per
# request, unlike times on a shared machine. Profiles:
#   P1: 10 brokers x 100 topics, 16 connections x 1 in flight
#   P2: 10 brokers x 10,000 shared topics (2.1 KB routes), 256 connections x 1 in flight
#
#   cluster-tests/bench/callgrind.sh [BUILD_DIR] [SECONDS] [P1|P2] [HEADER]
#     (default: build, 3, P1, rocketmq; HEADER json sends the queries with JSON headers in
#     fastjson's form, the Java client's default)
# Prints "instructions/request N" and leaves callgrind.out and the annotation in $out (a temp dir).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
secs=${2:-3}
profile=${3:-P1}
header=${4:-rocketmq}
case $profile in
P1) sim_data=(-b 10 -t 100) load=(-c 16 -d 1 --brokers 10 --topics 100) warm=2 ;;
P2) sim_data=(-b 10 -t 0 -s 10000) load=(-c 256 -d 1 --shared 10000) warm=5 ;;
*) echo "unknown profile $profile (P1 or P2)" >&2; exit 2 ;;
esac
out=$(mktemp -d -t nsrv-callgrind.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'listenPort=%s\nrocketmqHome=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/nsrvd.properties\n' \
  "$port" "$out" "$out" "$out" >"$out/nsrvd.properties"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out" \
  "$build/src/nsrvd" -c "$out/nsrvd.properties" >"$out/nsrvd.log" 2>&1 &
vg=$!
pids+=("$vg")
for _ in $(seq 200); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null && break
  sleep 0.1
done
"$build/src/tools/nsrv-brokersim" -n "127.0.0.1:$port" --no-sys-topics "${sim_data[@]}" -d 3600 \
  </dev/null >"$out/sim.out" 2>"$out/sim.log" &
pids+=("$!")
for _ in $(seq 3000); do grep -q 'ready ok=' "$out/sim.out" 2>/dev/null && break; sleep 0.1; done
grep -q 'ready ok=.*failed=0' "$out/sim.out" || { echo "registration failed: $(cat "$out/sim.out")" >&2; exit 1; }
"$build/src/tools/nsrv-bench" -a "127.0.0.1:$port" -s $((secs + 30)) "${load[@]}" --header "$header" \
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
f=$out/callgrind.out.1 # the dump of the counted seconds (callgrind.out is the exit's, empty)
callgrind_annotate --inclusive=yes "$f" >"$out/annotate.txt" 2>/dev/null
total=$(grep -m1 -E '^[0-9,]+ .*PROGRAM TOTALS' "$out/annotate.txt" | awk '{gsub(",","",$1); print $1}')
# Requests: the calls of nsrv__metrics_reply, which records every request's reply once, on the
# generic path and the route query's fast path alike (the load sends nothing else; link-time
# optimisation inlines the handler and the fast path, not this function of another file). The
# "calls=" lines under each cfn= naming it (callgrind compresses a repeated name to its "(id)").
calls=$(awk '
  /^c?fn=/ { id = $1; sub(/^c?fn=/, "", id); if (NF > 1) names[id] = $2 }
  /^cfn=/ { tgt = names[id] }
  /^calls=/ { if (tgt == "nsrv__metrics_reply") { split($1, a, "="); n += a[2] } }
  END { print n + 0 }' "$f")
echo "dir $out"
echo "total $total calls $calls"
echo "instructions/request $((total / calls))"
