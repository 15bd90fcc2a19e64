#!/usr/bin/env bash
# Make a Debian 12 (bookworm) base image without any container registry: debootstrap a minimal
# root file system from a Debian mirror and `docker import` it. For CI and air-gapped sites;
# elsewhere the Dockerfiles' default base (debian:bookworm-slim pinned by digest) is used.
#   images/base/make-base.sh TAG
# The mirror is $DEBIAN_MIRROR, else the first Debian mirror this host's apt uses. An image that
# already has TAG is kept (delete it to make a new one). Prints the image id. Current-era builds use
# dlrepro/base:bookworm when it exists (images/build.py base_image; BASE_IMAGE=TAG names another) and
# pin it by that id; its label org.dlrepro.base-era keeps it out of the paper era's builds.
set -euo pipefail
tag=${1:?usage: make-base.sh TAG}
if docker image inspect "$tag" >/dev/null 2>&1; then
  docker image inspect -f '{{.Id}}' "$tag"
  exit 0
fi
mirror=${DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
  mirror=$(grep -hoE '^(URIs:|deb) +[^ ]*' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
    | awk '{print $2}' | grep -v security | head -n 1 || true)
fi
[[ -n $mirror ]] || { echo "error: no Debian mirror found; set DEBIAN_MIRROR" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "error: debootstrap is missing; apt-get install debootstrap" >&2; exit 2; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "debootstrap bookworm from $mirror ..." >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" --numeric-owner -c . | docker import --change 'CMD ["bash"]' --change 'LABEL org.dlrepro.base-era=current' - "$tag" >/dev/null
docker image inspect -f '{{.Id}}' "$tag"
