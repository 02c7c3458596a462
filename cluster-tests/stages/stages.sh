# Stage helpers for cluster-tests/run-all-tests.sh (sourced; needs $top, $res, $jobs,
# $summary, $ran, and the counters $passed and $failed).

# run_stage NAME KIND RESULTS COMMAND...: runs COMMAND (output to the terminal and to
# $res/NAME.log), then counts RESULTS (KIND junit or tsv, see stages.py) against
# cluster-tests/stages/expected/NAME.txt. The command's exit status is not trusted on its own:
# only the counted results are; a command that fails without a failed result is one failure.
run_stage() {
  local name=$1 kind=$2 results=$3
  shift 3
  local t0 rc p f line
  t0=$(date +%s)
  echo "=== $name: $*"
  echo "$name" >>"$ran"
  "$@" 2>&1 | tee "$res/$name.log"
  rc=${PIPESTATUS[0]}
  line=$(python3 "$top/cluster-tests/stages/stages.py" check "$name" "$kind" "$results" --summary "$summary" | tee -a "$res/$name.log" | tail -1)
  grep -E '^  \[' "$res/$name.log" | tail -40
  echo "$line (exit $rc, $(($(date +%s) - t0)) s)"
  p=$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')
  f=$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')
  p=${p:-0}
  f=${f:-1}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "=== $name: command exited $rc but no test failed: counted as one failure"
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

# build NAME DIR CMAKE-ARGS... [-- TARGETS...]: configure and build; a failure is counted.
build() {
  local name=$1 dir=$2
  shift 2
  local args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift && targets=("$@")
  echo "=== $name: configure and build in $dir"
  mkdir -p "$dir"
  if ! cmake -S "$top" -B "$dir" "${args[@]}" >"$res/$name.configure.log" 2>&1; then
    cat "$res/$name.configure.log"; failed=$((failed + 1)); return 1
  fi
  local t=()
  for x in ${targets[@]+"${targets[@]}"}; do t+=(--target "$x"); done
  if ! nice cmake --build "$dir" -j"$jobs" ${t[@]+"${t[@]}"} >"$res/$name.build.log" 2>&1; then
    tail -50 "$res/$name.build.log"; failed=$((failed + 1)); return 1
  fi
}

# ctest_stage NAME DIR CTEST-ARGS...: ctest's per-test results (and each cmocka case).
ctest_stage() {
  local name=$1 dir=$2
  shift 2
  run_stage "$name" junit "$res/$name.xml" \
    sh -c 'cd "$0" && exec ctest --output-on-failure --timeout 900 --test-output-size-passed 1000000 "$@"' \
    "$dir" -j"$jobs" --output-junit "$res/$name.xml" "$@"
}

# node_stage NAME NSRVD [FILE...]: the single-node suite, or only the named files of it
# (e.g. test_kv.py), one result per pytest test. $stage_launcher (an array, may be empty)
# goes in front of pytest, e.g. to start it without address-space randomisation.
node_stage() {
  local name=$1 bin=$2
  shift 2
  local paths=() f
  for f in "$@"; do paths+=("$top/cluster-tests/node/$f"); done
  [ ${#paths[@]} -gt 0 ] || paths=("$top/cluster-tests/node")
  run_stage "$name" junit "$res/$name.xml" ${stage_launcher[@]+"${stage_launcher[@]}"} \
    python3 -m pytest -q -rfEs "${paths[@]}" --nsrvd="$bin" --junitxml="$res/$name.xml"
}

# tsan_launcher: sets $stage_launcher for ThreadSanitizer binaries. TSan's shadow memory sits
# at fixed addresses; with more than 28 bits of mmap randomisation (vm.mmap_rnd_bits, 32 on
# some hosts) clang 14's runtime finds a library mapped there and dies at start ("unexpected
# memory mapping"). There the stage runs without randomisation (setarch -R, inherited by
# every nsrvd the tests start); elsewhere, or where setarch -R is not permitted, as is.
tsan_launcher() {
  stage_launcher=()
  local bits
  bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)
  if [ "$bits" -gt 28 ] && setarch "$(uname -m)" -R true 2>/dev/null; then
    stage_launcher=(setarch "$(uname -m)" -R)
  fi
}

