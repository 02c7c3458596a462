#!/usr/bin/env bash
# run.sh --docker: the chaos scenarios against the docker-compose cluster
# (docker/docker-compose.yml), when a container engine answers. Without one it says so and
# skips (exit 0, "0 passed, 0 failed").
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
# Not done yet: the scenarios are written against namespaces (netns.py, cluster.py); driving
# them through "$engine kill/stop/pause" and published ports is still to be written.
echo "chaos --docker: $engine answers, but the docker mode of the scenarios is not implemented yet;"
echo "run the namespace mode (run.sh without --docker)."
echo "0 passed, 1 failed"
exit 1
