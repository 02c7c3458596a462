#!/bin/sh
# Writes the plain manifests of this directory from the chart deploy/helm/nsrvd, so that
# they are the chart's output exactly (the CI stage k8s-manifests compares them):
#   nsrvd.yaml           helm template with the default values (release name nsrvd)
#   networkpolicy.yaml   the optional NetworkPolicy
#   servicemonitor.yaml  the optional ServiceMonitor (Prometheus Operator)
# Usage: deploy/kubernetes/render.sh [--helm HELM] [--out DIR]   (default: this directory)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
chart=$here/../helm/nsrvd
helm=helm
out=$here
while [ $# -gt 0 ]; do
  case $1 in
    --helm) helm=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--helm HELM] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
"$helm" template nsrvd "$chart" >"$out/nsrvd.yaml"
"$helm" template nsrvd "$chart" --set networkPolicy.enabled=true \
  --show-only templates/networkpolicy.yaml >"$out/networkpolicy.yaml"
"$helm" template nsrvd "$chart" --set metrics.serviceMonitor.enabled=true \
  --show-only templates/servicemonitor.yaml >"$out/servicemonitor.yaml"
