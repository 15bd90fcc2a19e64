# The paper era: a study's exact framework versions on CPython 3.6, one image per framework.
# Built by `make images ERA=paper` (images/build.py), the framework a build argument, with the same
# context as images/current.Dockerfile: install-lock.sh, lock/ (resolved for CPython 3.6 /
# manylinux1 x86_64 by images/lockfile.py from the framework's pins.in), the optional build inputs
# and bench/, whose core is CPython 3.6 code (images/compat.py). What the package index does not
# carry (the CUDA runtimes, torch 0.4.1) is recorded in versions.lock.
ARG BASE_IMAGE=python:3.6-slim@sha256:d4ca3c2f9cc4b00fec0a675adaa4166a67f0971d52f9a37bef2a9e6e89fea529

# The base image brings CPython 3.6; only a framework's own Debian packages are added.
FROM ${BASE_IMAGE} AS system
ARG FRAMEWORK_PACKAGES=""
# The lists are word-split on purpose; each package is pinned (name=version) in frameworks.toml.
# hadolint ignore=SC2086,DL3008
RUN if [ -n "${FRAMEWORK_PACKAGES}" ]; then apt-get update \
    && apt-get install -y --no-install-recommends ${FRAMEWORK_PACKAGES} && rm -rf /var/lib/apt/lists/*; fi
# CPython 3.6 reads the C locale as ASCII (PEP 538 came with 3.7): make text I/O UTF-8.
ENV LANG=C.UTF-8 PYTHONIOENCODING=utf-8

FROM system AS install
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
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
