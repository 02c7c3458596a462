#!/usr/bin/env bash
# docker/podman-base-image.sh [--force]: for podman hosts that reach no container registry
# (this project's build hosts), builds the Dockerfiles' base image debian:bookworm-slim from
# Debian's own package mirror with debootstrap and imports it under that name, so the
# Dockerfiles stay standard (FROM debian:bookworm-slim) and need no registry. Does nothing when
# the image is already there (--force rebuilds it). Needs root, podman and debootstrap
# (apt-get install -y podman podman-compose runc debootstrap). About a minute.
set -euo pipefail
image=debian:bookworm-slim
if [ "${1:-}" != --force ] && podman image exists "$image"; then
  echo "podman-base-image: $image already present"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "podman-base-image: debootstrap missing (apt-get install -y debootstrap)" >&2; exit 1; }
rootfs=$(mktemp -d "${TMPDIR:-/tmp}/nsrvd-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
# minbase: what the slim image holds (essential packages and apt), without docs trimming
debootstrap --variant=minbase bookworm "$rootfs" >"$rootfs.log" 2>&1 || {
  tail -20 "$rootfs.log" >&2; rm -f "$rootfs.log"; echo "podman-base-image: debootstrap failed" >&2; exit 1; }
rm -f "$rootfs.log"
# the apt cache debootstrap leaves behind is not part of a base image
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$image" >/dev/null
echo "podman-base-image: imported $image ($(podman image inspect -f '{{.Size}}' "$image") bytes)"
