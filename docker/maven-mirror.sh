#!/usr/bin/env bash
# docker/maven-mirror.sh start|stop: for hosts whose containers cannot reach Maven Central
# themselves (this project's build hosts: their egress is a TLS-intercepting proxy that the
# host trusts and the images do not). `start` resolves, with the host's own Maven, everything
# the rocketmq image build needs into build/docker-m2 (the download cache stays under the build
# dir), serves that directory over HTTP (port 18081, $MAVEN_MIRROR_PORT) and prints, with the
# container engine's bridge gateway (the host, as the build containers see it),
#   MAVEN_MIRROR=http://GATEWAY:PORT/
# for `MAVEN_MIRROR=... docker/build-images.sh` (docker-compose.yml passes it on as a build
# argument). `stop` ends the server. cluster-tests/compose/docker-smoke.sh does both when mvn exists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
repo=$root/build/docker-m2
pidfile=$root/build/docker-m2.pid
port=${MAVEN_MIRROR_PORT:-18081}
engine=podman
docker info >/dev/null 2>&1 && engine=docker
case "${1:-}" in
  start)
    mkdir -p "$repo"
    v=5.3.3
    dep=org.apache.maven.plugins:maven-dependency-plugin:3.6.0
    # resolved once per change of the inputs (Maven takes a minute even with nothing to fetch)
    v5=5.4.0 # the Proxy and mqadmin of the RocketMQ 5 path (rocketmq/Dockerfile, PROXY_VERSION)
    stamp=$( (cat "$root/cluster-tests/compat/peers/pom.xml" "$root/cluster-tests/compat/java/pom.xml" \
      "$root"/cluster-tests/compat/java/src/main/java/nsrvd/compat/*.java "$root/docker/rocketmq/grpc/pom.xml" \
      "$root"/docker/rocketmq/grpc/src/main/java/nsrvd/demo/*.java; echo $v $v5) | sha256sum | cut -c1-16)
    if [ "$(cat "$repo.stamp" 2>/dev/null)" != "$stamp" ]; then
      mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$repo" -f "$root/cluster-tests/compat/peers/pom.xml" -Drmq.role=broker \
        -Drmq.version=$v $dep:copy-dependencies -DoutputDirectory="$root/build/docker-m2-out/broker" >&2
      mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$repo" -f "$root/cluster-tests/compat/java/pom.xml" -Drmq.client.version=$v \
        -Dcompat.out="$root/build/docker-m2-out/client" package $dep:copy-dependencies \
        -DoutputDirectory="$root/build/docker-m2-out/client/lib" >&2
      for role in proxy tools; do
        mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$repo" -f "$root/cluster-tests/compat/peers/pom.xml" -Drmq.role=$role \
          -Drmq.version=$v5 $dep:copy-dependencies -DoutputDirectory="$root/build/docker-m2-out/$role" >&2
      done
      mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$repo" -f "$root/docker/rocketmq/grpc/pom.xml" \
        -Dgrpc.out="$root/build/docker-m2-out/grpc" package $dep:copy-dependencies \
        -DoutputDirectory="$root/build/docker-m2-out/grpc/lib" >&2
      echo "$stamp" > "$repo.stamp"
    fi
    # A remote repository answers version ranges ([1.53.0] in grpc's poms) from
    # maven-metadata.xml, which a local repository does not keep: write one per artifact
    # from the versions present.
    python3 - "$repo" <<'PY'
import os, sys
for d, subdirs, _ in os.walk(sys.argv[1]):
    vers = sorted(v for v in subdirs if any(f.endswith(".pom") for f in os.listdir(os.path.join(d, v))))
    if not vers:
        continue
    rel = os.path.relpath(d, sys.argv[1]).split(os.sep)
    xml = ("<metadata><groupId>%s</groupId><artifactId>%s</artifactId><versioning><versions>%s"
           "</versions></versioning></metadata>\n") % (".".join(rel[:-1]), rel[-1],
                                                   "".join("<version>%s</version>" % v for v in vers))
    with open(os.path.join(d, "maven-metadata.xml"), "w") as f:
        f.write(xml)
PY
    if [ "$engine" = docker ]; then gw=$(docker network inspect bridge -f '{{(index .IPAM.Config 0).Gateway}}')
    else gw=$(podman network inspect podman -f '{{range .Subnets}}{{.Gateway}}{{end}}'); fi
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    # Its own session: it outlives the shell that started it, until `stop`. On every address:
    # the engine's bridge (and so the gateway address) may exist only while a build runs.
    # What it serves is public Maven Central artifacts.
    setsid python3 -m http.server "$port" --directory "$repo" </dev/null >/dev/null 2>&1 &
    echo $! > "$pidfile"
    for _ in $(seq 1 50); do
      curl -fsS -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break
      sleep 0.1
    done
    echo "MAVEN_MIRROR=http://$gw:$port/"
    ;;
  stop)
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
