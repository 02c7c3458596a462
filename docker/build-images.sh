#!/usr/bin/env bash
# docker/build-images.sh [COMPOSE_FILE...]: builds the compose cluster's images, one at a time,
# with `docker compose` when a Docker engine answers, else podman-compose, and exits non-zero at
# the first failed build with the engine's own error (podman-compose 1.0.3's own `build` exits
# 0 when a build fails). Default file: docker/docker-compose.yml; from the repository root.
set -u
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
cd "$(dirname "$0")/.."
. docker/compose-lib.sh
[ ${#files[@]} -gt 0 ] || files=(docker/docker-compose.yml)
compose_init "${files[@]}" || exit 1
compose_build
