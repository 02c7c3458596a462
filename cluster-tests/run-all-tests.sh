#!/usr/bin/env bash
# Installs what the tests need (Debian 12), builds nsrvd twice (optimised, and
# ASan+UBSan with clang) and runs every test tier with ctest on each build:
# unit (cmocka), fuzz-corpus replays and the node integration suite.
# Ends with one line "N passed, M failed". Run from anywhere, as root.
set -u
cd "$(dirname "$0")/.."
top=$PWD
jobs=${NSRV_JOBS:-2}

need_install=0
for p in $(cat conf/build-deps.txt conf/test-deps.txt); do
  dpkg -s "$p" >/dev/null 2>&1 || need_install=1
done
if [ "$need_install" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $(cat conf/build-deps.txt conf/test-deps.txt) >/dev/null \
    || { echo "package install failed"; echo "0 passed, 1 failed"; exit 1; }
fi
missing=""
while read -r cmd pkg; do
  case $cmd in ''|'#'*) continue ;; esac
  command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg"
done < conf/peer-deps.txt
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $missing >/dev/null || echo "could not install:$missing"
fi
# pytest: Debian's package, or one already on PATH.
python3 -c 'import pytest' 2>/dev/null || { echo "pytest missing"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
run_suite() { # name build-dir cmake-args...
  local name=$1 dir=$2; shift 2
  echo "=== $name: configure and build in $dir"
  if ! cmake -S "$top" -B "$dir" "$@" >"$dir.configure.log" 2>&1; then
    mkdir -p "$dir"; cat "$dir.configure.log"; failed=$((failed + 1)); return
  fi
  if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log"; failed=$((failed + 1)); return
  fi
  echo "=== $name: ctest"
  (cd "$dir" && ctest --output-on-failure --timeout 900 -j"$jobs") | tee "$dir.ctest.log"
  local p f
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$dir.ctest.log")
  f=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*|Failed|Not Run|Timeout)' "$dir.ctest.log")
  passed=$((passed + p)); failed=$((failed + f))
  [ "$p" -gt 0 ] || failed=$((failed + 1))
}

run_suite "release" "$top/build-test" -DCMAKE_BUILD_TYPE=RelWithDebInfo
NSRV_TEST_TIMEOUT_MULT=4 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite "asan+ubsan" "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang \
    -DNSRV_SANITIZE=address,undefined

# Counts a suite whose log ends with pytest's or our own summary.
count_summary() { # name log
  local line p f e
  line=$(grep -E '([0-9]+ passed|[0-9]+ failed)' "$2" | tail -1)
  p=$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+'); p=${p:-0}
  f=$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+'); f=${f:-0}
  e=$(echo "$line" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+'); e=${e:-0}
  echo "=== $1: $p passed, $((f + e)) failed"
  passed=$((passed + p)); failed=$((failed + f + e))
  [ "$p" -gt 0 ] || failed=$((failed + 1))
}

if [ -x "$top/build-test/src/nsrvd" ]; then
  echo "=== cluster: 3-node gossip suite (release build)"
  ./cluster-tests/cluster/run.sh --nsrvd "$top/build-test/src/nsrvd" 2>&1 | tee "$top/build-test/cluster.log"
  count_summary cluster "$top/build-test/cluster.log"

  echo "=== compat: real-peer compatibility suite (release build)"
  NSRVD_BIN="$top/build-test/src/nsrvd" COMPAT_LOG_DIR="$top/build-test/compat-logs" \
    ./cluster-tests/compat/run-compat.sh 2>&1 | tee "$top/build-test/compat.log"
  count_summary compat "$top/build-test/compat.log"

  # after compat: it fills the peers cache that gives the chaos suite its real broker and clients
  echo "=== chaos: network-namespace chaos suite, --short (release build)"
  CHAOS_WORK="$top/build-test/chaos" ./cluster-tests/chaos/run.sh --short --nsrvd "$top/build-test/src/nsrvd" \
    2>&1 | tee "$top/build-test/chaos.log"
  count_summary chaos "$top/build-test/chaos.log"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
