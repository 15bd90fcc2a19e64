# The paper era: a study's exact framework versions on CPython 3.6, one image per framework.
# Built by `make images ERA=paper` (images/build.py), the framework a build argument, with the same
# context as images/current.Dockerfile: install-lock.sh, lock/ (resolved for CPython 3.6 on manylinux1 /
# manylinux2010 x86_64 by images/lockfile.py from the framework's pins.in or pins-gpu.in, with
# build-requirements.txt: pip 21.3.1, the first thing installed, so manylinux2010 wheels install), the
# optional build inputs (torch 0.4.1 from PyTorch's own archive goes in there, trusted on first use:
# images/external.py) and bench/, whose core is CPython 3.6 code (images/compat.py). versions.lock
# records where this base digest was seen and what the package index does not carry.
ARG BASE_IMAGE=python:3.6.15-slim-buster@sha256:e10aa83604948c6d8d9f72a9a20193d84bb2dbe550b725eb5208387117fde065

FROM ${BASE_IMAGE} AS system
# CPython 3.6 reads the C locale as ASCII (PEP 538 came with 3.7): make text I/O UTF-8.
ENV LANG=C.UTF-8 PYTHONIOENCODING=utf-8
# A framework's own Debian packages (frameworks.toml: Theano's compiler and OpenBLAS, MXNet's libgomp),
# pinned name=version to the versions of the base's Debian release, DEBIAN_RELEASE (images/build.py reads
# it from the base: its label org.dlrepro.debian-release, else its /etc/os-release). bullseye (Debian 11,
# the base `make base ERA=paper` makes) is still on Debian's mirrors: apt reads the base's own sources.
# buster (Debian 10, the default base) is retired, so apt reads Debian's archive of retired releases:
# DEBIAN_ARCHIVE when given (a base URL holding debian/ and debian-security/; images/build.py passes
# DLREPRO_DEBIAN_ARCHIVE), else the archive host beside the mirror the base image's own sources.list
# names (its first name label swapped for "archive"). The archive's Release files are past their
# Valid-Until date: that check is off for these two sources only.
ARG DEBIAN_RELEASE=buster
ARG DEBIAN_ARCHIVE=""
ARG FRAMEWORK_PACKAGES=""
# hadolint ignore=SC2086,DL3008
RUN if [ -n "${FRAMEWORK_PACKAGES}" ]; then \
      if [ "${DEBIAN_RELEASE}" = buster ]; then \
        mirror=$(sed -n -E 's#^deb (https?://[^/ ]+)/debian buster main.*#\1#p' /etc/apt/sources.list) \
        && archive="${DEBIAN_ARCHIVE:-${mirror%%//*}//archive.${mirror#*//*.}}" \
        && case "${archive}" in http://?*.?*|https://?*.?*) ;; \
             *) echo "no Debian archive URL: set DLREPRO_DEBIAN_ARCHIVE" >&2; exit 1 ;; esac \
        && printf 'deb [check-valid-until=no] %s/%s buster%s main\n' \
             "${archive}" debian "" "${archive}" debian-security /updates > /etc/apt/sources.list; \
      fi \
      && apt-get update && apt-get install -y --no-install-recommends ${FRAMEWORK_PACKAGES} \
      && rm -rf /var/lib/apt/lists/*; \
    fi

# Throw-away stage: pip 21.3.1 and the sdist build tools first, then the lock, all --require-hashes.
FROM system AS install
ARG PIP_EXTRA_INDEX_URL
ARG PIP_INDEX_URL
COPY lock/ /tmp/lock/
COPY install-lock.sh build-inputs/ /tmp/build-inputs/
RUN sh /tmp/build-inputs/install-lock.sh /opt/venv /tmp/lock

FROM system
COPY --from=install /opt/venv /opt/venv
RUN useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin bench
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/opt/dlrepro PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY bench/ /opt/dlrepro/bench/
USER 10001:10001
WORKDIR /opt/dlrepro
ENTRYPOINT ["/opt/venv/bin/python", "-m", "bench"]
