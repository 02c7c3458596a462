#!/usr/bin/env bash
# The Kubernetes deployment's checks (stage k8s-manifests): helm lint and helm template of
# deploy/helm/nsrvd with the default values and with every optional part on
# (ci/all-optional-values.yaml), each output and deploy/kubernetes/ validated by kubeconform
# against strict schemas of Kubernetes $k8s_version, and deploy/kubernetes/ compared with
# the chart's output. Two self-tests prove the checks can fail: a misspelt field must fail
# kubeconform and an edited manifest must fail the comparison.
#
#   cluster-tests/k8s/run.sh [--out DIR] [--tsv FILE] [--nsrvd NSRVD]
#
# With --nsrvd (as root) it also runs the chart's rendered pod start script with that binary
# (pod-start.sh): the properties it writes, the node's probes and address service, SIGTERM.
#
# helm and kubeconform are built with `go install` at the versions below, the schemas made
# by openapi2jsonschema.py from the OpenAPI documents of the k8s.io/kubernetes Go module (and
# the ServiceMonitor from the prometheus-operator module's CRD): everything comes through the
# Go module proxy, nothing from a schema site. All of it is cached under DIR (default
# build-test/k8s), so a second run builds nothing. Writes one "passed|failed<TAB>k8s/<check>"
# line per check; exit status 0 when every check passed.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
helm_version=v4.3.2
kubeconform_version=v0.8.0
k8s_version=v1.34.2
prom_operator_version=v0.85.0
out=$top/build-test/k8s
tsv=""
nsrvd=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    --nsrvd) nsrvd=$2; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--tsv FILE] [--nsrvd NSRVD]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out/bin" "$out/render"
out=$(cd "$out" && pwd)
tsv=${tsv:-$out/results.tsv}
: >"$tsv"
chart=$top/deploy/helm/nsrvd
render=$out/render
fails=0

# result STATUS ID [DETAIL]
result() {
  printf '%s\tk8s/%s\t%s\n' "$1" "$2" "${3:-}" >>"$tsv"
  printf '%-6s k8s/%s %s\n' "$1" "$2" "${3:-}"
  [ "$1" = passed ] || fails=$((fails + 1))
}

# check ID COMMAND...: passed when COMMAND exits 0; its output goes to $render/ID.log.
check() {
  local id=$1
  shift
  if "$@" >"$render/$id.log" 2>&1; then
    result passed "$id"
  else
    result failed "$id" "$(tail -5 "$render/$id.log" | tr '\t\n' '  ')"
  fi
}

# --- tools: go install at pinned versions into $out/bin, once ---------------------------
export GOBIN=$out/bin
export GOFLAGS="${GOFLAGS:-} -modcacherw"
tools() {
  command -v go >/dev/null || { echo "go not found (conf/peer-deps.txt)"; return 1; }
  # Go 1.21 or later fetches the toolchain the modules ask for (GOTOOLCHAIN) from the proxy.
  local minor
  minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  [ "${minor:-0}" -ge 21 ] || { echo "go 1.21 or later needed, found $(go env GOVERSION)"; return 1; }
  local want="helm $helm_version kubeconform $kubeconform_version"
  [ "$(cat "$out/bin/versions" 2>/dev/null)" = "$want" ] && [ -x "$out/bin/helm" ] &&
    [ -x "$out/bin/kubeconform" ] && return 0
  rm -f "$out/bin/versions"
  nice go install "github.com/yannh/kubeconform/cmd/kubeconform@$kubeconform_version" &&
    nice go install "helm.sh/helm/v4/cmd/helm@$helm_version" &&
    echo "$want" >"$out/bin/versions"
}
check tools tools
helm=$out/bin/helm
kubeconform=$out/bin/kubeconform

# --- schemas: generated from the modules' OpenAPI documents, cached per version -----------
converter=$top/cluster-tests/k8s/openapi2jsonschema.py
schemas=$out/schemas/$k8s_version-po$prom_operator_version-$(sha256sum "$converter" | cut -c1-12)
make_schemas() {
  [ -f "$schemas/done" ] && return 0
  local k8s_dir po_dir
  k8s_dir=$(go mod download -json "k8s.io/kubernetes@$k8s_version" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') || return 1
  po_dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$prom_operator_version" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') || return 1
  rm -rf "$schemas"
  python3 "$converter" "$schemas" --openapi-v3 "$k8s_dir/api/openapi-spec/v3" \
    --crd "$po_dir/jsonnet/prometheus-operator/servicemonitors-crd.json" && touch "$schemas/done"
}
check schemas make_schemas

# validate FILE...: strict, every kind must have a schema (none skipped), nothing fetched.
validate() {
  "$kubeconform" -strict -summary -kubernetes-version "${k8s_version#v}" \
    -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}

# --- the chart -----------------------------------------------------------------------------
all_optional=$chart/ci/all-optional-values.yaml
check lint-default "$helm" lint --strict "$chart"
check lint-all-optional "$helm" lint --strict "$chart" -f "$all_optional"
template() { # template OUT [helm template args...]
  local o=$1
  shift
  "$helm" template nsrvd "$chart" "$@" >"$o"
}
check template-default template "$render/default.yaml"
check template-all-optional template "$render/all-optional.yaml" -f "$all_optional"
check kubeconform-default validate "$render/default.yaml"
check kubeconform-all-optional validate "$render/all-optional.yaml"
# Every optional kind is really in the second rendering (an optional part that renders
# nothing would pass kubeconform vacuously).
has_kinds() {
  local k
  for k in StatefulSet Service ConfigMap PodDisruptionBudget NetworkPolicy ServiceMonitor; do
    grep -q "^kind: $k$" "$1" || { echo "no $k in $1"; return 1; }
  done
}
check all-optional-has-every-kind has_kinds "$render/all-optional.yaml"
# A key the chart sets itself is refused, not silently overridden.
refuses_reserved() {
  local out
  if out=$(template "$render/reserved.yaml" --set config.listenPort=1 2>&1); then
    echo "helm template accepted config.listenPort"
    return 1
  fi
  echo "$out"
  echo "$out" | grep -q 'config.listenPort: set by the chart itself'
}
check template-refuses-reserved-key refuses_reserved

# --- the plain manifests: validated, and the chart's output exactly --------------------------
check kubeconform-plain validate "$top"/deploy/kubernetes/*.yaml
plain_dir=$render/plain
plain_diff() { # plain_diff RENDERED-DIR: the generated manifests of deploy/kubernetes/ equal it
  diff -ru --exclude='*.sh' --exclude='*.md' "$1" "$top/deploy/kubernetes"
}
check plain-manifests-render sh -c '"$0" --helm "$1" --out "$2"' \
  "$top/deploy/kubernetes/render.sh" "$helm" "$plain_dir"
check plain-manifests-equal-chart-output plain_diff "$plain_dir"

# --- the pods' start script, run with a real nsrvd ------------------------------------------
if [ -n "$nsrvd" ] && [ ! -x "$nsrvd" ]; then
  result failed pod-start-script "no nsrvd binary at $nsrvd (did the release build fail?)"
elif [ -n "$nsrvd" ]; then
  check pod-start-script "$top/cluster-tests/k8s/pod-start.sh" "$render/all-optional.yaml" "$nsrvd"
fi

# --- self-tests: the checks above can fail ---------------------------------------------------
selftest_misspelt() {
  sed 's/^\(  *\)serviceName:/\1serviceNmae:/' "$render/default.yaml" >"$render/misspelt.yaml"
  grep -q serviceNmae "$render/misspelt.yaml" || { echo "the misspelt field was not planted"; return 1; }
  local out
  if out=$(validate "$render/misspelt.yaml" 2>&1); then
    echo "kubeconform accepted a StatefulSet with spec.serviceNmae"
    return 1
  fi
  echo "$out"
  echo "$out" | grep -q "additional properties 'serviceNmae' not allowed"
}
check selftest-kubeconform-rejects-misspelt-field selftest_misspelt
selftest_drift() {
  rm -rf "$render/drift"
  cp -r "$plain_dir" "$render/drift"
  sed -i 's/maxUnavailable: 1$/maxUnavailable: 2/' "$render/drift/nsrvd.yaml"
  grep -q 'maxUnavailable: 2' "$render/drift/nsrvd.yaml" || { echo "the drift was not planted"; return 1; }
  if plain_diff "$render/drift"; then
    echo "a changed PodDisruptionBudget went unnoticed"
    return 1
  fi
}
check selftest-drift-detected selftest_drift

echo "k8s checks: $fails failed"
[ "$fails" -eq 0 ]
