# Sourced by prepare-peers.sh for the peer "proxy540" (scenario 11): the RocketMQ 5.4.0 Proxy,
# the 5.4.0 broker and Java NameServer it runs with, the Java gRPC test program, a Python
# virtual environment with rocketmq-python-client from PyPI (grpc-python/requirements.txt) and
# rocketmq-client-nodejs from npm (grpc-node/package-lock.json), each resolved or built once into
# <cache>/proxy540/ and stamped with a hash of its inputs.
proxy_peer() {
  local d="$cache/proxy540" s role
  mkdir -p "$d"
  s=$(stamp_of "$here/peers/pom.xml")
  for role in proxy broker namesrv; do
    if ! fresh "$d/$role.stamp" "$s" || ! cp_ok "$d/$role.cp"; then
      echo "resolving rocketmq-$role 5.4.0 from Maven Central"
      "${mvn_q[@]}" -f "$here/peers/pom.xml" -Drmq.role="$role" -Drmq.version=5.4.0 \
        dependency:build-classpath -Dmdep.outputFile="$d/$role.cp" >"$d/$role.mvn.log" 2>&1 \
        || { cat "$d/$role.mvn.log"; exit 1; }
      echo "$s" >"$d/$role.stamp"
    fi
  done
  s=$(stamp_of "$here/grpc/pom.xml" "$here"/grpc/src/main/java/nsrvd/compat/*.java)
  if ! fresh "$d/grpc-client.stamp" "$s" || ! cp_ok "$d/grpc-client/classpath.txt"; then
    echo "building the gRPC test program against rocketmq-client-java"
    rm -rf "$d/grpc-client"
    "${mvn_q[@]}" -f "$here/grpc/pom.xml" -Dcompat.out="$d/grpc-client" \
      package dependency:build-classpath -Dmdep.outputFile="$d/grpc-client/classpath.txt" \
      >"$d/grpc-client.mvn.log" 2>&1 || { cat "$d/grpc-client.mvn.log"; exit 1; }
    echo "$s" >"$d/grpc-client.stamp"
  fi
  s=$(stamp_of "$here/grpc-python/requirements.txt")
  if ! fresh "$d/pyenv.stamp" "$s" || [ ! -x "$d/pyenv/bin/python" ]; then
    echo "installing rocketmq-python-client from PyPI"
    rm -rf "$d/pyenv"
    { python3 -m venv "$d/pyenv" && "$d/pyenv/bin/pip" install -q --disable-pip-version-check \
        -r "$here/grpc-python/requirements.txt"; } >"$d/pyenv.log" 2>&1 || { cat "$d/pyenv.log"; exit 1; }
    echo "$s" >"$d/pyenv.stamp"
  fi
  s=$(stamp_of "$here/grpc-node/package.json" "$here/grpc-node/package-lock.json")
  mkdir -p "$d/node"
  cp "$here/grpc-node/client.js" "$d/node/"
  if ! fresh "$d/node.stamp" "$s" || [ ! -d "$d/node/node_modules/rocketmq-client-nodejs" ]; then
    echo "installing rocketmq-client-nodejs from npm"
    cp "$here/grpc-node/package.json" "$here/grpc-node/package-lock.json" "$d/node/"
    (cd "$d/node" && npm ci --no-audit --no-fund --loglevel=error >"$d/node/npm.log" 2>&1) \
      || { cat "$d/node/npm.log"; exit 1; }
    echo "$s" >"$d/node.stamp"
  fi
}
proxy_peer
