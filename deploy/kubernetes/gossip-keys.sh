#!/bin/sh
# gossip-keys.sh N [SECRET-NAME]: makes a key pair for each of the nodes 1..N with
# `nsrvd keygen` and prints the Secret the StatefulSet mounts on /keys: node<i>.key (node i's
# secret key file) and node<i>.pub (its public key item i:KEYID:PUBLIC). Nothing is written
# to disk but a private temporary directory, removed on exit.
#   deploy/kubernetes/gossip-keys.sh 3 | kubectl apply -n NAMESPACE -f -
# NSRVD names the nsrvd binary (default: nsrvd on PATH). SECRET-NAME defaults to
# nsrvd-gossip-keys, the chart's name for release "nsrvd" (values: gossip.existingSecret).
set -eu
n=${1:?usage: gossip-keys.sh N [SECRET-NAME]}
name=${2:-nsrvd-gossip-keys}
nsrvd=${NSRVD:-nsrvd}
case $n in '' | *[!0-9]*) echo "gossip-keys.sh: N must be a number of nodes" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] && [ "$n" -le 255 ] || { echo "gossip-keys.sh: N must be 1..255" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ntype: Opaque\ndata:\n' "$name"
i=1
while [ "$i" -le "$n" ]; do
  "$nsrvd" keygen -o "$dir/node$i.key" -n "$i" >"$dir/node$i.pub" 2>"$dir/keygen.log" ||
    { cat "$dir/keygen.log" >&2; exit 1; }
  printf '  node%s.key: %s\n' "$i" "$(base64 <"$dir/node$i.key" | tr -d "\n")"
  printf '  node%s.pub: %s\n' "$i" "$(base64 <"$dir/node$i.pub" | tr -d "\n")"
  i=$((i + 1))
done
