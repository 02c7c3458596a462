#!/usr/bin/env bash
# Resolves and builds every real peer of the compatibility suite into a cache directory
# ($NSRVD_COMPAT_CACHE, default ~/.cache/nsrvd-peers), once: later runs only check that what is
# there still matches the committed inputs (a stamp per part holds a hash of them).
#
#   <cache>/<v>/{namesrv,broker,tools}.cp   class paths of the Java NameServer, broker, mqadmin
#                                           (jars from Maven Central, kept in the local Maven repo)
#   <cache>/<v>/java-client/                CompatClient + AdminBatch built against rocketmq-client <v>
#   <cache>/go/compat-go-v212, -v211        the Go program against rocketmq-client-go v2.1.2 / v2.1.1
#   <cache>/node/                           the ali-ons program and its node_modules (npm ci)
#   <cache>/proxy540/{proxy,broker,namesrv}.cp  the RocketMQ 5.4.0 Proxy, the 5.4.0 broker behind
#                                           it and the 5.4.0 Java NameServer (its oracle)
#   <cache>/proxy540/grpc-client/           GrpcClient built against rocketmq-client-java (gRPC)
#
# Usage: prepare-peers.sh [java533,java497,go,go211,node,proxy540]   (default: all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${NSRVD_COMPAT_CACHE:-$HOME/.cache/nsrvd-peers}
want=${1:-java533,java497,go,go211,node,proxy540}
mkdir -p "$cache"
mvn_q=(mvn -q -B)
[ -n "${COMPAT_MAVEN_OFFLINE:-}" ] && mvn_q+=(-o)

# hash of files -> stamp content
stamp_of() { cat "$@" | sha256sum | cut -c1-16; }
fresh() { # stampfile expected
  [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}
# every entry of a class path must still exist (the local Maven repo may have been pruned)
cp_ok() { local f; IFS=: read -ra parts <<<"$(cat "$1")"; for f in "${parts[@]}"; do [ -e "$f" ] || return 1; done; }

need_java() { [[ ",$want," == *",java533,"* || ",$want," == *",java497,"* || ",$want," == *",go,"* || \
                 ",$want," == *",go211,"* || ",$want," == *",node,"* ]]; }

java_peer() { # version
  local v=$1 d="$cache/$1" s
  mkdir -p "$d"
  s=$(stamp_of "$here/peers/pom.xml")
  for role in namesrv broker tools; do
    if ! fresh "$d/$role.stamp" "$s" || ! cp_ok "$d/$role.cp"; then
      echo "resolving rocketmq-$role $v from Maven Central"
      "${mvn_q[@]}" -f "$here/peers/pom.xml" -Drmq.role="$role" -Drmq.version="$v" \
        dependency:build-classpath -Dmdep.outputFile="$d/$role.cp" >"$d/$role.mvn.log" 2>&1 \
        || { cat "$d/$role.mvn.log"; exit 1; }
      echo "$s" >"$d/$role.stamp"
    fi
  done
  s=$(stamp_of "$here/java/pom.xml" "$here"/java/src/main/java/nsrvd/compat/*.java)
  if ! fresh "$d/java-client.stamp" "$s" || ! cp_ok "$d/java-client/classpath.txt"; then
    echo "building the Java test programs against rocketmq-client $v"
    rm -rf "$d/java-client"
    "${mvn_q[@]}" -f "$here/java/pom.xml" -Drmq.client.version="$v" -Dcompat.out="$d/java-client" \
      package dependency:build-classpath -Dmdep.outputFile="$d/java-client/classpath.txt" \
      >"$d/java-client.mvn.log" 2>&1 || { cat "$d/java-client.mvn.log"; exit 1; }
    echo "$s" >"$d/java-client.stamp"
  fi
}

# The brokers and NameServers of both versions are used by every scenario, whatever the peers.
if need_java; then
  java_peer 5.3.3
  java_peer 4.9.7
fi

go_peer() { # variant modfile
  local variant=$1 modfile=$2 s
  mkdir -p "$cache/go"
  s=$(stamp_of "$here/go/main.go" "$here/go/$modfile" "$here/go/${modfile%.mod}.sum")
  if ! fresh "$cache/go/compat-go-$variant.stamp" "$s" || [ ! -x "$cache/go/compat-go-$variant" ]; then
    echo "building the Go test program against rocketmq-client-go ($modfile)"
    (cd "$here/go" && go build -mod=readonly -modfile="$modfile" -o "$cache/go/compat-go-$variant" .)
    echo "$s" >"$cache/go/compat-go-$variant.stamp"
  fi
}
[[ ",$want," == *",go,"* ]] && go_peer v212 go.mod
[[ ",$want," == *",go211,"* ]] && go_peer v211 go.v211.mod

if [[ ",$want," == *",node,"* ]]; then
  s=$(stamp_of "$here/node/package.json" "$here/node/package-lock.json")
  mkdir -p "$cache/node"
  cp "$here/node/client.js" "$cache/node/"
  if ! fresh "$cache/node.stamp" "$s" || [ ! -d "$cache/node/node_modules/ali-ons" ]; then
    echo "installing ali-ons from npm"
    cp "$here/node/package.json" "$here/node/package-lock.json" "$cache/node/"
    (cd "$cache/node" && npm ci --no-audit --no-fund --loglevel=error >"$cache/node/npm.log" 2>&1) \
      || { cat "$cache/node/npm.log"; exit 1; }
    echo "$s" >"$cache/node.stamp"
  fi
fi
[[ ",$want," == *",proxy540,"* ]] && . "$here/prepare-proxy.sh"
echo "peers ready in $cache"
