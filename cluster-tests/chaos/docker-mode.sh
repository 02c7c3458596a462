#!/usr/bin/env bash
# run.sh --docker: the chaos scenarios against the docker-compose cluster
# (docker/docker-compose.yml), when a container engine answers (docker_chaos.py: kill -9,
# SIGTERM restart, pause, cuts from peers / brokers / both, with the namespace mode's route,
# liveness, convergence and message checks). Without an engine it says so and skips (exit 0,
# "0 passed, 0 failed"). Options: --short, --only NAME,..., --keep (leave the cluster up).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
engine=
for e in docker podman; do
  if command -v $e >/dev/null 2>&1 && timeout 10 $e info >/dev/null 2>&1; then engine=$e; break; fi
done
if [ -z "$engine" ]; then
  echo "chaos --docker: no container engine answers ('docker info' / 'podman info' failed): docker mode skipped."
  echo "The namespace mode (run.sh without --docker) runs the same scenarios without one."
  echo "0 passed, 0 failed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "chaos --docker: needs root (nsenter + nft in the node containers)"; exit 2; }
for tool in nsenter nft python3; do
  command -v $tool >/dev/null || { echo "chaos --docker: missing $tool"; exit 2; }
done
if [ "$engine" = docker ] && ! docker compose version >/dev/null 2>&1; then
  echo "chaos --docker: docker answers but has no compose plugin"; exit 2
fi
if [ "$engine" = podman ] && ! command -v podman-compose >/dev/null; then
  echo "chaos --docker: podman answers but podman-compose is missing (docker/README.md)"; exit 2
fi
mirror=
if [ -z "${MAVEN_MIRROR:-}" ] && command -v mvn >/dev/null; then
  # Maven Central through the host's own Maven (docker/maven-mirror.sh)
  MAVEN_MIRROR=$("$root/docker/maven-mirror.sh" start | sed -n 's/^MAVEN_MIRROR=//p') || exit 1
  export MAVEN_MIRROR
  mirror=1
fi
# images first, one at a time: a failed build ends the run at once with the engine's error
# (podman-compose 1.0.3's `up --build` would go on without the image)
if ! "$root/docker/build-images.sh" "$root/docker/docker-compose.yml"; then
  [ -n "$mirror" ] && "$root/docker/maven-mirror.sh" stop
  echo "0 passed, 1 failed"
  exit 1
fi
work=${CHAOS_WORK:-$(mktemp -d /tmp/nsrvd-chaos-docker.XXXXXX)}
# bounded like the namespace mode; the image build of a first run is included
timeout --foreground -s TERM -k 60 "${CHAOS_TIMEOUT:-2400}" python3 "$here/docker_chaos.py" \
  --engine "$engine" --compose-file "$root/docker/docker-compose.yml" --work "$work" "$@"
rc=$?
[ -n "$mirror" ] && "$root/docker/maven-mirror.sh" stop
echo "chaos --docker: logs in $work"
exit $rc
