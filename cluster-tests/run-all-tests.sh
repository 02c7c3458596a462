#!/usr/bin/env bash
# Installs what the tests need (Debian 12), builds nsrvd four times (optimised; ASan+UBSan
# with clang; ThreadSanitizer with clang; libFuzzer+ASan+UBSan with clang) and runs every
# test stage. Each stage is
# counted test by test and compared with its committed list of test ids,
# cluster-tests/stages/expected/<stage>.txt (see cluster-tests/stages/stages.py and cluster-tests/README.md):
# a failed, skipped or missing test, or a stage that did not run, is a failure.
# Ends with a table per stage and one line "N passed, M failed". Run from anywhere, as root.
#
# Adding a stage (e.g. the chaos suite): one run_stage line below and an expected list
#   run_stage chaos junit "$res/chaos.xml" ./cluster-tests/chaos/run.sh --junitxml="$res/chaos.xml"
#   python3 cluster-tests/stages/stages.py update chaos junit "$res/chaos.xml"   # writes stages/expected/chaos.txt
set -u
cd "$(dirname "$0")/.."
top=$PWD
jobs=${NSRV_JOBS:-2}
res=$top/build-test/results # every stage's log and result file
soak_seconds=300            # the CI soak; cluster-tests/soak/README.md has the one-hour command

# Weakening knobs (longer waits, fewer repetitions, ignored sanitizer reports) are for a
# developer's machine; with CI=true they are refused before anything runs.
if ! python3 cluster-tests/lib/testenv.py; then
  echo "0 passed, 1 failed"
  exit 1
fi

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
  case $cmd in '' | '#'*) continue ;; esac
  command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg"
done <conf/peer-deps.txt
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $missing >/dev/null || echo "could not install:$missing"
fi
# pytest: Debian's package, or one already on PATH.
python3 -c 'import pytest' 2>/dev/null || { echo "pytest missing"; echo "0 passed, 1 failed"; exit 1; }

rm -rf "$res"
mkdir -p "$res"
summary=$res/summary.txt
ran=$res/stages-ran.txt
: >"$summary"
: >"$ran"
passed=0
failed=0
t_start=$(date +%s)

# run_stage, build, ctest_stage, node_stage: cluster-tests/stages/stages.sh
. "$top/cluster-tests/stages/stages.sh"

# NSRV_FUZZ=OFF is explicit: a reused build directory keeps the replay tests (label fuzz).
if build release "$top/build-test" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSRV_FUZZ=OFF -DNSRV_SANITIZE=; then
  ctest_stage release-ctest "$top/build-test" -LE node
  node_stage release-node "$top/build-test/src/nsrvd"
fi

# The Kubernetes deployment (deploy/helm/nsrvd, deploy/kubernetes): helm lint and template,
# kubeconform on strict schemas of a current Kubernetes, the plain manifests equal to the
# chart's output, and the pods' start script run with the release nsrvd (cluster-tests/k8s/run.sh).
# helm, kubeconform and the schemas come from the Go module proxy, cached in build-test/k8s.
run_stage k8s-manifests tsv "$res/k8s-manifests.tsv" \
  ./cluster-tests/k8s/run.sh --out "$top/build-test/k8s" --tsv "$res/k8s-manifests.tsv" \
  --nsrvd "$top/build-test/src/nsrvd"

# The chart on a real single-node Kubernetes (cluster-tests/kubernetes/run.sh): etcd,
# containerd and the CNI plugins from Debian, the control plane, kubelet and CoreDNS built
# from their Go modules (cached in ~/.cache/nsrvd-k8s; the build is bounded by 30 min), the
# image from docker/Dockerfile; a real 5.3.3 broker, producer and consumer through a rolling
# update and a pod deletion. About 2 minutes once built.
if [ -x "$top/build-test/src/nsrvd" ]; then
  run_stage kubernetes tsv "$res/kubernetes.tsv" env NSRVD_K8S_BUILD_TIMEOUT=1800 \
    ./cluster-tests/kubernetes/run.sh --nsrvd "$top/build-test/src/nsrvd" --out "$top/build-test/kubernetes" \
    --tsv "$res/kubernetes.tsv"
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if build asan "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DNSRV_FUZZ=OFF \
  -DNSRV_SANITIZE=address,undefined; then
  ctest_stage asan-ctest "$top/build-asan" -LE node
  node_stage asan-node "$top/build-asan/src/nsrvd"
fi

# The three kinds of threads (the event loop; libuv's pool decoding big frames and resolving
# peer names; the durable writer) under ThreadSanitizer: the node tests that make them meet
# (big frames and compressed registrations on the pool, KV writes on the writer, replies
# held for both, shutdown with work in flight, TLS), and the cluster test of peers named by
# host name (uv_getaddrinfo on the pool). Any report stops nsrvd (halt_on_error, exit 66),
# which fails its test; the harness also fails a test on a report in a node's output.
export TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1
if build tsan "$top/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DNSRV_FUZZ=OFF \
  -DNSRV_SANITIZE=thread -- nsrvd nsrv-brokersim; then
  tsan_launcher
  node_stage tsan-node "$top/build-tsan/src/nsrvd" test_big_frames.py test_bounded_registration.py \
    test_persist.py test_kv.py test_interleaved_replies.py test_shutdown.py test_tls.py
  run_stage tsan-cluster junit "$res/tsan-cluster.xml" ${stage_launcher[@]+"${stage_launcher[@]}"} \
    ./cluster-tests/cluster/run.sh --nsrvd "$top/build-tsan/src/nsrvd" --junitxml="$res/tsan-cluster.xml" \
    test_peer_names.py
  stage_launcher=()
fi

# libFuzzer, bounded: every target fuzzes for NSRV_FUZZ_SECONDS from its corpus (see
# cluster-tests/README.md for the longer command and what to do with a crash).
fuzz_targets=$(cd "$top" && cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DNSRV_FUZZ=ON \
  -DNSRV_SANITIZE=address,undefined >/dev/null 2>&1 && cd build-fuzz && ctest -N -L libfuzzer |
  sed -n 's/^ *Test *#[0-9]*: \(.*\)_libfuzzer$/\1/p')
if build fuzz "$top/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DNSRV_FUZZ=ON \
  -DNSRV_SANITIZE=address,undefined -DNSRV_FUZZ_SECONDS=10 -- $fuzz_targets; then
  ctest_stage libfuzzer "$top/build-fuzz" -L libfuzzer
fi

if [ -x "$top/build-test/src/nsrvd" ]; then
  run_stage cluster junit "$res/cluster.xml" \
    ./cluster-tests/cluster/run.sh --nsrvd "$top/build-test/src/nsrvd" --junitxml="$res/cluster.xml"
fi
# The gossip networking (UDP receive, TCP pull, state file, SIGHUP reload) under ASan+UBSan.
# Not the rate measurements (bandwidth, loss tail) nor the wall-clock skew test: libfaketime's
# constructor deadlocks with the ASan allocator (its dlsym mallocs, ASan's allocator reads the
# clock through libfaketime's clock_gettime, which is still initialising); a two-line ASan
# program hangs the same way under it. The release cluster stage runs all three.
if [ -x "$top/build-asan/src/nsrvd" ]; then
  run_stage cluster-asan junit "$res/cluster-asan.xml" \
    ./cluster-tests/cluster/run.sh --nsrvd "$top/build-asan/src/nsrvd" --junitxml="$res/cluster-asan.xml" \
    -k "not bandwidth and not loss_tail and not wall_clock"
fi

if [ -x "$top/build-test/src/nsrvd" ]; then
  run_stage soak tsv "$res/soak.tsv" \
    python3 ./cluster-tests/soak/soak.py --nsrvd "$top/build-test/src/nsrvd" --seconds "$soak_seconds" \
    --results "$res/soak.tsv" --workdir "$res/soak"
fi

# The Debian package: built by cpack from the release build, installed into a clean Debian 12
# root (debootstrap), started there as the nsrvd user, upgraded, removed and purged.
if [ -x "$top/build-test/src/nsrvd" ]; then
  run_stage package tsv "$res/package.tsv" \
    sh -c 'rm -f "$0"/nsrvd_*.deb && (cd "$0" && cpack -G DEB >"$2.cpack.log" 2>&1) &&
      "$1" --deb "$(ls "$0"/nsrvd_*.deb | head -1)"; rc=$?
      if [ $rc -eq 0 ]; then r=passed; else r=failed; fi
      printf "%s\tpackage/install-start-upgrade-remove-purge\n" "$r" >"$2"; exit $rc' \
    "$top/build-test" ./cluster-tests/package/run.sh "$res/package.tsv"
fi

# Real peers: cells against nsrvd and against the Java NameServer are separate stages.
if [ -x "$top/build-test/src/nsrvd" ]; then
  rm -rf "$res/compat-logs"
  NSRVD_BIN="$top/build-test/src/nsrvd" COMPAT_LOG_DIR="$res/compat-logs" \
    ./cluster-tests/compat/run-compat.sh 2>&1 | tee "$res/compat.log"
  for target in nsrvd java; do
    grep -P "^[a-z]+\t$target/" "$res/compat-logs/results.tsv" >"$res/compat-$target.tsv" 2>/dev/null
    run_stage "compat-$target" tsv "$res/compat-$target.tsv" true
  done
fi

# The chaos suite, --short (needs root; after compat: it fills the peers cache that gives the
# chaos suite its real broker and clients). One result per scenario from its table.
if [ -x "$top/build-test/src/nsrvd" ]; then
  rm -rf "$res/chaos"
  CHAOS_WORK="$res/chaos" run_stage chaos tsv "$res/chaos.tsv" \
    sh -c '"$0" --short --nsrvd "$1"; rc=$?; if [ -f "$2/results.tsv" ]; then cp "$2/results.tsv" "$3"
      else awk '"'"'NR > 2 && ($2 == "PASS" || $2 == "FAIL") {
      print ($2 == "PASS" ? "passed" : "failed") "\tchaos/" $1 }'"'"' "$2/table.txt" >"$3"; fi; exit $rc' \
    ./cluster-tests/chaos/run.sh "$top/build-test/src/nsrvd" "$res/chaos" "$res/chaos.tsv"
fi

# The benchmark harness, --smoke (cluster-tests/bench/README.md): a second or so of each
# profile against nsrvd and the ceiling server (Java and rust only with --java/--rust, so the
# stage's ids are fixed). It checks that the harness runs, not timings.
if [ -x "$top/build-test/src/nsrvd" ]; then
  NSRV_BENCH_BUILD="$top/build-test" run_stage bench-smoke tsv "$res/bench-smoke.tsv" \
    ./cluster-tests/bench/run.sh --smoke --out "$res/bench" --tsv "$res/bench-smoke.tsv"
fi

# A stage with an expected list that did not run (its build failed, it was removed) fails.
gone=0
python3 "$top/cluster-tests/stages/stages.py" missing-stages "$ran" || gone=$?
failed=$((failed + gone))

echo
# Why each failure failed (stages.py), next to the table: CI's log keeps only its end.
if [ -s "$res/failures.txt" ]; then
  echo "failures:"
  head -c 12000 "$res/failures.txt"
  echo
fi
echo "stage            passed  failed  expected  new  xfail"
while read -r s p f e n x; do
  printf '%-16s %6s  %6s  %8s  %3s  %5s\n' "$s" "$p" "$f" "$e" "$n" "$x"
done <"$summary"
echo "total time: $((($(date +%s) - t_start) / 60)) min"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
