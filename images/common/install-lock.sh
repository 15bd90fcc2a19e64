#!/bin/sh
# Install a hash-locked environment into a new virtual environment, inside an image build.
#   install-lock.sh VENV LOCKDIR
# LOCKDIR holds requirements.txt and, when the lock has an sdist built at install time,
# build-requirements.txt (installed first) and pip-install-args (extra options for the lock), the
# same files images/envs.py installs for the local runner.
# Optional build inputs beside this script (images/build.py fills them from the host's settings,
# or leaves the folders empty): certs/*.crt, extra CA certificates that pip trusts beside its own
# bundle (sites behind a TLS-inspecting proxy), and wheels/, a local wheelhouse pip may take pinned
# files from. The hashes in the lock decide what is installed, so neither input can change the
# result, and neither reaches the final image (this runs in a build stage that is thrown away).
set -eu
venv=$1
lock=$2
inputs=$(dirname "$0")
python3 -m venv "$venv"
pip="$venv/bin/python -m pip"
set -- --require-hashes --no-deps --no-input --disable-pip-version-check --no-cache-dir
if ls "$inputs"/certs/*.crt >/dev/null 2>&1; then
  # pip's --cert replaces its bundle: keep the public roots and add the extra certificates.
  public_roots=$("$venv/bin/python" -m pip._vendor.certifi)
  cat "$public_roots" "$inputs"/certs/*.crt > /tmp/ca-bundle.pem
  set -- "$@" --cert /tmp/ca-bundle.pem
fi
if ls "$inputs"/wheels/*.whl >/dev/null 2>&1; then
  set -- "$@" --find-links "$inputs/wheels"
fi
if [ -s "$lock/build-requirements.txt" ]; then
  $pip install "$@" -r "$lock/build-requirements.txt"
fi
extra=""
if [ -f "$lock/pip-install-args" ]; then
  extra=$(grep -v '^[[:space:]]*#' "$lock/pip-install-args" | tr '\n' ' ')
fi
# shellcheck disable=SC2086  # extra holds whole pip options, split on purpose
$pip install "$@" $extra -r "$lock/requirements.txt"
# The lock must satisfy its own dependency metadata: a broken lock fails the build, not a run.
$pip check
