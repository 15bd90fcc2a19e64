#!/usr/bin/env bash
# Make the paper era's base image without any container registry: CPython 3.6.15 built from source in
# a Debian 11 (bullseye) root, copied into a minimal bullseye runtime root, `docker import`ed. Where a
# registry answers, paper.Dockerfile's python:3.6.15-slim-buster stays the default; this is the route
# for CI and air-gapped sites (make base ERA=paper). Bullseye, not buster: buster is gone from Debian's
# main mirror, and CPython 3.6's ssl needs bullseye's OpenSSL 1.1.1 (it does not build against 3.x).
#   PYTHON_SOURCE=<python.org file> | PYTHON_STANDIN=<other copy> images/base/make-paper-base.sh
# The source is resolved by images/pythonsource.py (python.org's digests, or a stand-in trusted on
# first use in versions.local.lock). The image is tagged dlrepro/base:paper-<12 hex of the inputs: this
# script, the source's sha256, the Debian release, PGO> and dlrepro/base:paper (what images/build.py
# looks for); an image that already has the first tag is reused, so the base is built once per inputs.
# Its labels and /etc/dlrepro/base.json say what it is and how it departs from the registry image.
# Environment: DEBIAN_MIRROR (default: the first Debian mirror this host's apt uses), PGO=yes (profile-
# guided optimisation with a short profile task: ~4 min more on 2 cores; default no), HOSTPY (the host
# tools' Python; default .venv/host/bin/python). Prints the image id on stdout, progress on stderr.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
script=$repo/images/base/make-paper-base.sh
hostpy=${HOSTPY:-$repo/.venv/host/bin/python}
# The host tools run from anywhere, so a relative PYTHON_SOURCE or PYTHON_STANDIN keeps its meaning.
pysource() { PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$hostpy" -m images.pythonsource "$@"; }
release=bullseye
repository=dlrepro/base
pgo=${PGO:-no}
[[ $pgo == yes || $pgo == no ]] || { echo "error: PGO=$pgo is not yes or no; set PGO=yes or leave it out" >&2; exit 2; }
start=$SECONDS
step() { echo "[$((SECONDS - start)) s] $*" >&2; }

docker version >/dev/null 2>&1 || { echo "error: no Docker engine answers ('docker version' fails); start it, or run as a user allowed to use it" >&2; exit 2; }
resolved=$(pysource resolve) || exit $?
IFS=$'\t' read -r src_sha src_kind src_name src_path <<<"$resolved"
inputs=$( { sha256sum "$script" | cut -d' ' -f1; echo "$src_sha"; echo "$release"; echo "pgo=$pgo"; } \
  | sha256sum | cut -c1-12)
tag=$repository:paper-$inputs
if docker image inspect "$tag" >/dev/null 2>&1; then
  docker tag "$tag" "$repository:paper"
  echo "reusing $tag (same inputs: this script, source sha256 $src_sha, $release, pgo=$pgo); tagged $repository:paper" >&2
  docker image inspect -f '{{.Id}}' "$tag"
  exit 0
fi

mirror=${DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
  mirror=$(grep -hoE '^(URIs:|deb) +[^ ]*' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
    | awk '{print $2}' | grep -v security | head -n 1 || true)
fi
[[ -n $mirror ]] || { echo "error: no Debian mirror found; set DEBIAN_MIRROR" >&2; exit 2; }
mirror=${mirror%/}
command -v debootstrap >/dev/null || { echo "error: debootstrap is missing; apt-get install debootstrap" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "error: debootstrap and chroot need root; run make base ERA=paper as root" >&2; exit 2; }

work=$(mktemp -d)
build=$work/build
runtime=$work/runtime
cleanup() {
  # Unmount before removing: rm must never walk into a mounted /proc.
  if mountpoint -q "$build/proc"; then umount "$build/proc"; fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

step "debootstrap $release build root from $mirror ..."
debootstrap --variant=minbase \
  --include=build-essential,libssl-dev,zlib1g-dev,libbz2-dev,libffi-dev,libsqlite3-dev,liblzma-dev,libreadline-dev,libncursesw5-dev,libgdbm-dev,uuid-dev,libexpat1-dev,xz-utils \
  "$release" "$build" "$mirror" >"$work/debootstrap-build.log" 2>&1 \
  || { tail -n 20 "$work/debootstrap-build.log" >&2; echo "error: debootstrap of the build root failed (log above); check DEBIAN_MIRROR=$mirror" >&2; exit 1; }

step "building CPython 3.6.15 from $src_name ($src_kind, sha256 $src_sha), pgo=$pgo ..."
mkdir -p "$build/usr/src/python"
tar -xf "$src_path" -C "$build/usr/src/python" --strip-components=1 \
  || { echo "error: cannot unpack $src_path; give a CPython 3.6.15 source tarball (.tar.xz or .tgz)" >&2; exit 1; }
configure=(--build="$(chroot "$build" gcc -dumpmachine)" --prefix=/usr/local --enable-loadable-sqlite-extensions
           --enable-option-checking=fatal --enable-shared --with-system-expat --with-system-ffi)
profile_task=
if [[ $pgo == yes ]]; then
  configure+=(--enable-optimizations)
  # The default profile task (most of the test suite) takes far too long on a few cores.
  profile_task="-m test.regrtest --pgo test_array test_json test_re test_unicode test_set test_dict"
fi
configure+=(LDFLAGS=-Wl,-rpath,/usr/local/lib)
mount -t proc proc "$build/proc"
chroot "$build" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PROFILE_TASK="$profile_task" \
  /bin/bash -euo pipefail -c '
  cd /usr/src/python
  ./configure "$@" >/tmp/configure.log 2>&1 || { tail -n 30 /tmp/configure.log; exit 1; }
  make -j"$(nproc)" ${PROFILE_TASK:+PROFILE_TASK="$PROFILE_TASK"} >/tmp/make.log 2>&1 || { tail -n 30 /tmp/make.log; exit 1; }
  make install >/tmp/install.log 2>&1 || { tail -n 30 /tmp/install.log; exit 1; }
  grep -A3 "necessary bits to build these" /tmp/make.log || true  # _dbm (no Berkeley DB) and _tkinter, expected
  # What the registry image leaves out too: tests, byte code, static libraries; and debug symbols.
  find /usr/local -depth \( \( -type d -a \( -name test -o -name tests -o -name idle_test \) \) \
    -o \( -type f -a \( -name "*.pyc" -o -name "*.pyo" -o -name "*.a" \) \) \) -exec rm -rf {} +
  find /usr/local -type f \( -name "*.so" -o -name "*.so.*" \) -exec strip --strip-unneeded {} +
  strip --strip-unneeded /usr/local/bin/python3.6
  cd /usr/local/bin && ln -sf idle3 idle && ln -sf pydoc3 pydoc && ln -sf python3 python && ln -sf python3-config python-config
' configure "${configure[@]}" >&2 \
  || { echo "error: building CPython 3.6.15 from $src_path failed (the log's end above); check that it is a CPython 3.6.15 source tree" >&2; exit 1; }
umount "$build/proc"
cc=$(chroot "$build" gcc --version | head -n 1)
step "CPython built with $cc"

step "debootstrap $release runtime root ..."
debootstrap --variant=minbase \
  --include=libssl1.1,libffi7,libsqlite3-0,libexpat1,libbz2-1.0,liblzma5,libreadline8,libncursesw6,libgdbm6,libuuid1,zlib1g,libtirpc3,libnsl2,ca-certificates,netbase,tzdata \
  "$release" "$runtime" "$mirror" >"$work/debootstrap-runtime.log" 2>&1 \
  || { tail -n 20 "$work/debootstrap-runtime.log" >&2; echo "error: debootstrap of the runtime root failed (log above); check DEBIAN_MIRROR=$mirror" >&2; exit 1; }
cp -a "$build/usr/local/." "$runtime/usr/local/"
chroot "$runtime" ldconfig
# The paper images install their framework's Debian packages from the base's own sources.
security=${mirror%/debian}/debian-security
{ echo "deb $mirror $release main"; echo "deb $mirror $release-updates main"
  if [[ $security != "$mirror/debian-security" ]]; then echo "deb $security $release-security main"; fi; } \
  >"$runtime/etc/apt/sources.list"
rm -rf "$runtime"/var/cache/apt/archives/*.deb "$runtime"/var/lib/apt/lists/*
version=$(chroot "$runtime" /usr/local/bin/python3.6 -c 'import platform; print(platform.python_version())')
[[ $version == 3.6.15 ]] || { echo "error: the python built from $src_path reports $version, not 3.6.15; give a CPython 3.6.15 source" >&2; exit 1; }

debian_version=$(cat "$runtime/etc/debian_version")
mkdir -p "$runtime/etc/dlrepro"
pysource record "$runtime/etc/dlrepro/base.json" debian_release="$release" \
  debian_version="$debian_version" source="$src_name" source_sha256="$src_sha" source_kind="$src_kind" \
  configure="${configure[*]}" pgo="$pgo" cc="$cc"
changes=()
while IFS= read -r label; do changes+=(--change "$label"); done \
  < <(pysource labels "$runtime/etc/dlrepro/base.json")
changes+=(--change "LABEL org.dlrepro.base-inputs=$inputs" --change 'ENV LANG=C.UTF-8'
          --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin'
          --change 'CMD ["python3"]')

step "docker import $tag ($(du -sh "$runtime" | cut -f1) root) ..."
tar -C "$runtime" --numeric-owner -c . | docker import "${changes[@]}" - "$tag" >/dev/null
docker tag "$tag" "$repository:paper"
step "made $tag and $repository:paper (Debian $debian_version, CPython $version, pgo=$pgo)"
docker image inspect -f '{{.Id}}' "$tag"
