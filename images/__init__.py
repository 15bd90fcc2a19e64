"""Host tooling that makes the environments runs execute in, beside the Dockerfiles it builds.

build (the build context, tags, labels; build, push, pull), envs (the local runner's virtual
environments from the same locks), lockfile (versions.lock: write and verify), compat (the
payload's CPython 3.6 gate). Command line: `python -m images` (build|push|pull|tags) and
`python -m images.lockfile`, `python -m images.compat`. Nothing here enters an image.
"""
