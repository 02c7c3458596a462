# docker/compose-lib.sh, sourced (bash) by the scripts that run the compose cluster:
# cluster-tests/compose/docker-smoke.sh, cluster-tests/chaos/docker-mode.sh, docker/node4-demo.sh.
#
# compose_init FILE...  picks the engine: `docker compose` when a Docker engine answers
#                       (`docker info`) and has the compose plugin, else podman-compose; sets
#                       COMPOSE_ENGINE (docker|podman) and the files `compose` uses. Returns 1,
#                       saying why, when neither is usable.
# compose ARGS...       the chosen compose command on those files.
# compose_build         builds every image of those files, one image at a time, and stops at
#                       the first build that fails, printing the engine's own error (the last
#                       40 lines of the build's output). Returns 0 only when every build
#                       succeeded and every image exists. podman-compose 1.0.3 (Debian 12's)
#                       exits 0 when a build fails and `up` then starts only the services whose
#                       image exists, so its exit status alone proves nothing: its per-build
#                       "exit code: N" line is checked as well.

COMPOSE_ENGINE=
COMPOSE_FILES=()

compose_init() {
  local f
  COMPOSE_FILES=()
  for f in "$@"; do COMPOSE_FILES+=(-f "$f"); done
  if docker info >/dev/null 2>&1; then
    if ! docker compose version >/dev/null 2>&1; then
      echo "a Docker engine answers but the compose plugin is missing (docker compose version)" >&2
      return 1
    fi
    COMPOSE_ENGINE=docker
  elif command -v podman-compose >/dev/null 2>&1; then
    COMPOSE_ENGINE=podman
  else
    echo "no Docker engine answers (docker info) and podman-compose is not installed" >&2
    return 1
  fi
}

compose() {
  if [ "$COMPOSE_ENGINE" = docker ]; then docker compose "${COMPOSE_FILES[@]}" "$@"
  else podman-compose "${COMPOSE_FILES[@]}" "$@"; fi
}

# compose_missing_containers: the services of those files that have no container (after `up`).
compose_missing_containers() {
  local svc
  for svc in $(compose_images --all | cut -d' ' -f1); do
    [ -n "$("$COMPOSE_ENGINE" ps -a --filter "label=com.docker.compose.service=$svc" --format '{{.Names}}')" ] ||
      printf '%s ' "$svc"
  done
}

# compose_images [--all]: "SERVICE IMAGE" for the first service of each image that has a build, in file
# order (--all: every service). podman: the files' own YAML (PyYAML comes with podman-compose); docker: the merged
# configuration `docker compose config` prints as JSON (a Docker host may lack PyYAML).
compose_images() {
  local files=() i all=
  [ "${1:-}" = --all ] && all=1
  for ((i = 1; i < ${#COMPOSE_FILES[@]}; i += 2)); do files+=("${COMPOSE_FILES[$i]}"); done
  if [ "$COMPOSE_ENGINE" = docker ]; then
    docker compose "${COMPOSE_FILES[@]}" config --format json | ALL=$all python3 -c "$_compose_images_py" -
  else
    ALL=$all python3 -c "$_compose_images_py" "${files[@]}"
  fi
}
_compose_images_py='
import json, os, sys
services = {}
if sys.argv[1:] == ["-"]:
    services = json.load(sys.stdin).get("services") or {}
else:
    import yaml
    for path in sys.argv[1:]:
        with open(path) as f:
            for name, svc in ((yaml.safe_load(f) or {}).get("services") or {}).items():
                services.setdefault(name, {}).update(svc or {})
seen = set()
for name, svc in services.items():
    image = svc.get("image")
    if os.environ.get("ALL"):
        print(name, image or "-")
    elif svc.get("build") and image and image not in seen:
        seen.add(image)
        print(name, image)
'

compose_build() {
  local log rc svc image t0 list
  log=$(mktemp "${TMPDIR:-/tmp}/compose-build.XXXXXX")
  list=$(compose_images) && [ -n "$list" ] || {
    echo "compose_build: no image to build found in ${COMPOSE_FILES[*]}" >&2; rm -f "$log"; return 1; }
  while read -r svc image; do
    [ -n "$svc" ] || continue
    t0=$(date +%s)
    rc=0 # `|| rc=$?`: the failure must reach the report below under set -e too
    compose build "$svc" </dev/null >"$log" 2>&1 || rc=$?
    # podman-compose 1.0.x: "exit code: N" after each podman command it ran, exit status 0
    if [ $rc -eq 0 ] && grep -Eq '^exit code: [1-9]' "$log"; then rc=1; fi
    if [ $rc -eq 0 ] && ! "$COMPOSE_ENGINE" image inspect "$image" >/dev/null 2>&1; then
      echo "image $image missing after its build" >>"$log"
      rc=1
    fi
    if [ $rc -ne 0 ]; then
      tail -40 "$log"
      echo "image build failed: $image (service $svc, $COMPOSE_ENGINE)"
      if [ "$COMPOSE_ENGINE" = podman ] && grep -Eq '(initializing source|short-name|pinging).*debian:bookworm' "$log"; then
        echo "no registry reachable? docker/podman-base-image.sh builds debian:bookworm-slim locally"
      fi
      if grep -Eq 'PKIX path building failed|Could not transfer artifact' "$log"; then
        echo "Maven could not download from inside the build: docker/maven-mirror.sh start serves the" \
          "artifacts from the host (MAVEN_MIRROR=...; docker/README.md, \"Maven Central from inside a build\")"
      fi
      rm -f "$log"
      return 1
    fi
    echo "image $image built in $(($(date +%s) - t0)) s"
  done <<<"$list"
  rm -f "$log"
}
