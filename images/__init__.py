"""Host tooling that makes the environments runs execute in, beside the Dockerfiles it builds.

build (the build context, tags, labels; build, push, pull), envs (the local runner's virtual
environments from the same locks), lockfile (versions.lock: write and verify; the paper-era locks
resolved for CPython 3.6), indexcheck (the paper-era locks checked against the package index's own
metadata), external (files no index carries, trusted on first use: torch 0.4.1), compat (the
payload's CPython 3.6 gate). Command line: `python -m images` (build|push|pull|tags),
`python -m images.lockfile`, `python -m images.indexcheck`, `python -m images.compat`. Nothing here
enters an image.
"""
