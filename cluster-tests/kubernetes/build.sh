#!/usr/bin/env bash
# Builds what the single-node cluster runs, once per version, into $NSRVD_K8S_CACHE
# (default ~/.cache/nsrvd-k8s): kube-apiserver, kube-controller-manager, kube-scheduler and
# kubelet from the k8s.io/kubernetes Go module, CoreDNS from its Go module, and the static
# pause program the sandbox image holds. Nothing comes from a release download: the Go
# module proxy serves the sources.
#
#   cluster-tests/kubernetes/build.sh     prints the bin directory on its last line
#
# The k8s.io/kubernetes module zip has no staging/ sources, so its go.mod's replace lines
# (k8s.io/api => ./staging/src/k8s.io/api, ...) are dropped and the published v0.X.Y
# modules of the same release named instead.
set -eu
k8s_version=${K8S_VERSION:-v1.34.2}
coredns_version=${COREDNS_VERSION:-v1.14.7}
cache=${NSRVD_K8S_CACHE:-$HOME/.cache/nsrvd-k8s}
bin=$cache/bin-$k8s_version-coredns-$coredns_version
export GOFLAGS="-modcacherw -buildvcs=false"
export GOWORK=off
mkdir -p "$cache"

want="kube-apiserver kube-controller-manager kube-scheduler kubelet coredns pause"
have_all() {
  local b
  for b in $want; do [ -x "$bin/$b" ] || return 1; done
}
if have_all; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.tmp"

have_k8s() {
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do [ -x "$bin.tmp/$c" ] || return 1; done
}
if ! have_k8s; then
  dir=$(go mod download -json "k8s.io/kubernetes@$k8s_version" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  src=$cache/src-$k8s_version
  if ! [ -f "$src/.patched" ]; then
    rm -rf "$src"
    cp -r "$dir" "$src"
    chmod -R u+w "$src"
    staging=v0.${k8s_version#v1.}
    # Drop the replace lines into staging/ and name the published staging modules.
    python3 - "$src/go.mod" "$staging" <<'PY'
import re, sys
path, staging = sys.argv[1], sys.argv[2]
text = open(path).read()
text = re.sub(r"^\s*k8s\.io/\S+ => \./staging/\S+\n", "", text, flags=re.M)
text = re.sub(r"^(\s*k8s\.io/[\w./-]+) v0\.0\.0$", r"\1 " + staging, text, flags=re.M)
open(path, "w").write(text)
PY
    touch "$src/.patched"
  fi
  # One go build for the four: their shared packages are compiled once.
  echo "building kube-apiserver kube-controller-manager kube-scheduler kubelet $k8s_version" >&2
  (cd "$src" && GOFLAGS="$GOFLAGS -mod=mod" nice go build -o "$bin.tmp/" \
    ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kubelet)
fi

if ! [ -x "$bin.tmp/coredns" ]; then
  echo "building coredns $coredns_version" >&2
  GOBIN=$bin.tmp nice go install "github.com/coredns/coredns@$coredns_version"
fi

if ! [ -x "$bin.tmp/pause" ]; then
  # The pod sandbox's process: sleeps until a signal, exits 0 on SIGTERM/SIGINT.
  cat >"$bin.tmp/pause.c" <<'C'
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
static void leave(int sig) { (void)sig; _exit(0); }
int main(void) {
  signal(SIGTERM, leave);
  signal(SIGINT, leave);
  for (;;) pause();
}
C
  cc -static -O2 -o "$bin.tmp/pause" "$bin.tmp/pause.c"
  rm -f "$bin.tmp/pause.c"
fi
rm -rf "$bin"
mv "$bin.tmp" "$bin"
echo "$bin"
