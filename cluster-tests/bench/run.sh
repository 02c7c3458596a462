#!/usr/bin/env bash
# Side-by-side NameServer benchmark: builds what it needs, then runs every profile against
# nsrvd, the ceiling server, the Java NameServer 5.3.3 and rocketmq-rust's NameServer, one
# server at a time (server on CPU 1, load on CPU 0). See cluster-tests/bench/README.md.
#
#   cluster-tests/bench/run.sh [--java] [--rust] [--out DIR] [bench.py options...]
#     --java   resolve the Java NameServer 5.3.3 from Maven Central (cluster-tests/compat/prepare-peers.sh,
#              cached) and measure it
#     --rust   build rocketmq-rust's rocketmq-namesrv 1.0.0 with cargo (cached) and measure it
#     --repeat N  rounds of the throughput profiles (P1, P1b, P2, GROW-*, GROWB-*), nsrvd and the ceiling
#              run in turn in each (bench.py --repeat); default 5, 1 with --smoke
#     --smoke  a few seconds per server: checks the harness, not timings (CI); nsrvd and the
#              ceiling only, unless --java / --rust are given too (so the stage's test ids never
#              depend on what another stage happened to cache)
# Results: DIR/results.md, results.csv, results.json (default DIR: build-bench/results).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${NSRVD_COMPAT_CACHE:-$HOME/.cache/nsrvd-peers}
rust_root=${NSRVD_BENCH_RUST:-$HOME/.cache/nsrvd-bench/rust}
rust_version=1.0.0
build=${NSRV_BENCH_BUILD:-$top/build-bench}
out=$build/results
java=0 rust=0 smoke=0 repeat=5
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --java) java=1 ;;
    --rust) rust=1 ;;
    --smoke) smoke=1; args+=("$1") ;;
    --out) out=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSRV_FUZZ=OFF -DNSRV_SANITIZE= >/dev/null
nice cmake --build "$build" -j"${NSRV_JOBS:-2}" --target nsrvd nsrv-bench nsrv-brokersim nsrv-ceiling nsrv-fleet \
  nsrv-tls-bench nsrv-tls-ceiling >/dev/null

java_cp=$cache/5.3.3/namesrv.cp
if [ "$java" = 1 ] && [ ! -f "$java_cp" ]; then
  "$top/cluster-tests/compat/prepare-peers.sh" java533
fi
[ "$java" = 1 ] || java_cp=""
[ -n "$java_cp" ] && [ -f "$java_cp" ] || java_cp=""

rust_bin=$rust_root/bin/rocketmq-namesrv-rust
rust_why="not requested (run.sh --rust)"
if [ "$rust" = 1 ] && [ ! -x "$rust_bin" ]; then
  echo "building rocketmq-namesrv $rust_version with cargo (once; cached in $rust_root; log: $rust_root/install.log)"
  mkdir -p "$rust_root"
  # The build directory is kept (CARGO_TARGET_DIR) so an interrupted build resumes where it
  # stopped; cargo's lock on it makes a second run wait for a build already under way.
  # On 2 cores the build takes well over an hour: -j1 under nice leaves the other core usable.
  if ! CARGO_TARGET_DIR="$rust_root/target" nice -n 19 cargo install --locked --root "$rust_root" \
    --version "$rust_version" rocketmq-namesrv -j "${NSRV_CARGO_JOBS:-1}" >>"$rust_root/install.log" 2>&1; then
    rust_why="cargo install rocketmq-namesrv $rust_version failed (see $rust_root/install.log)"
  fi
fi
if [ -x "$rust_bin" ] && [ "$rust" = 1 ]; then
  rust_why=""
else
  rust_bin=""
  [ "$rust" = 1 ] && [ "$rust_why" = "not requested (run.sh --rust)" ] && rust_why="not built"
fi

exec python3 "$top/cluster-tests/bench/bench.py" --build "$build" --out "$out" \
  ${java_cp:+--java-cp "$java_cp"} ${rust_bin:+--rust-bin "$rust_bin"} --rust-why "$rust_why" \
  --repeat "$([ "$smoke" = 1 ] && echo 1 || echo "$repeat")" "${args[@]}"
