#!/usr/bin/env bash
# The smoke's own failure path: a broken image build must end cluster-tests/docker-smoke.sh at
# once, non-zero, with the engine's error, never with a wait for brokers that were not built.
# Two broken builds of the broker image, each through the compose file's MAVEN_MIRROR build
# argument (no file is changed):
#   1. MAVEN_MIRROR=not-a-url: the Dockerfile refuses it ('MAVEN_MIRROR must be an http(s) URL');
#   2. MAVEN_MIRROR=http://127.0.0.1:9/ (nothing listens there): Maven fails to resolve.
# Needs a container engine, like the smoke; run it after one smoke run, so the images' earlier
# layers are cached and each case takes seconds (limit: DOCKER_SMOKE_SELFTEST_LIMIT, 180 s).
# Ends with "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
limit=${DOCKER_SMOKE_SELFTEST_LIMIT:-180}
passed=0
failed=0
out=$(mktemp "${TMPDIR:-/tmp}/docker-smoke-selftest.XXXXXX")
trap 'rm -f "$out"' EXIT
# check NAME MIRROR EXPECTED-REGEX: the smoke fails within the limit, its output matches
check() {
  local name=$1 mirror=$2 want=$3 t0 rc secs
  t0=$(date +%s)
  MAVEN_MIRROR=$mirror timeout $((limit + 60)) cluster-tests/docker-smoke.sh >"$out" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  if [ $rc -ne 0 ] && [ $secs -le "$limit" ] && grep -q 'image build failed: nsrvd-rocketmq-broker' "$out" &&
    grep -Eq "$want" "$out" && grep -q '^0 passed, 1 failed$' "$out"; then
    echo "ok: $name: the smoke failed in $secs s with the build's error: $(grep -Em1 "$want" "$out")"
    passed=$((passed + 1))
  else
    echo "FAILED: $name: exit $rc after $secs s (limit $limit s); its output:"
    tail -30 "$out"
    failed=$((failed + 1))
  fi
}
check "MAVEN_MIRROR not a URL" not-a-url "MAVEN_MIRROR must be an http\(s\) URL or \"none\", not 'not-a-url'"
check "MAVEN_MIRROR unreachable" http://127.0.0.1:9/ "127\.0\.0\.1:9.*(refused|failed)|(refused|failed).*127\.0\.0\.1:9"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
