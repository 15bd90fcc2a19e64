# The current era: today's framework releases on Debian 12's CPython 3.11, one image per framework.
# Built by `make images` (images/build.py): the framework is a build argument, its Debian packages
# come from images/frameworks.toml, and the labels are set there too. The build context holds this
# file, install-lock.sh, lock/ (the framework's hash-locked requirements, or requirements-gpu.txt
# for VARIANT=gpu, plus a build lock and pip options where the lock has them), the optional build
# inputs (extra CA certificates, a local wheelhouse; empty folders when absent) and bench/, the
# in-image payload. BASE_IMAGE must be pinned by digest; images/build.py refuses tags.
ARG BASE_IMAGE=debian:bookworm-slim@sha256:7b140f374b289a7c2befc338f42ebe6441b7ea838a042bbd5acbfca6ec875818

FROM ${BASE_IMAGE} AS system
# Python and the shared libraries the wheels load (the era's packages: the same in every image of
# the era, so they share this layer), then the framework's own (Theano's compiler and BLAS). The
# lists are word-split on purpose; each package is pinned (name=version) in frameworks.toml. Every
# RUN after an ARG sees it, so FRAMEWORK_PACKAGES is declared after the era's layer.
ARG ERA_PACKAGES
# hadolint ignore=SC2086,DL3008
RUN apt-get update && apt-get install -y --no-install-recommends ${ERA_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
ARG FRAMEWORK_PACKAGES=""
# hadolint ignore=SC2086,DL3008
RUN if [ -n "${FRAMEWORK_PACKAGES}" ]; then apt-get update \
    && apt-get install -y --no-install-recommends ${FRAMEWORK_PACKAGES} && rm -rf /var/lib/apt/lists/*; fi

# Throw-away stage: the lock installed with --require-hashes into /opt/venv. The build inputs and
# the index settings stay in this stage.
FROM system AS install
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
COPY install-lock.sh build-inputs/ /tmp/build-inputs/
COPY lock/ /tmp/lock/
RUN sh /tmp/build-inputs/install-lock.sh /opt/venv /tmp/lock

FROM system
RUN useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin bench
COPY --from=install /opt/venv /opt/venv
COPY bench/ /opt/dlrepro/bench/
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/opt/dlrepro PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /opt/dlrepro
USER 10001:10001
# What every runner calls: `python -m bench run --request ... --out ...`.
ENTRYPOINT ["/opt/venv/bin/python", "-m", "bench"]
