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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
