"""Host command line: `python -m images build|push|pull|tags --frameworks ... --era ... --variant ...`.

Builds (or reuses) the framework images, pushes them to a registry or pulls them from one, or
prints their tags. Bad input ends with one line `error: <problem>; <fix>` and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.errors import UsageError, run_cli
from images import build


def run(argv: list[str]) -> int:
    """Parse the arguments and do the action for every framework named."""
    ap = argparse.ArgumentParser(prog="python -m images")
    ap.add_argument("action", choices=("build", "push", "pull", "tags"))
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--era", default="current")
    ap.add_argument("--variant", default="cpu")
    ap.add_argument("--registry", default="")
    ap.add_argument("--base-image", default=os.environ.get(build.BASE_IMAGE_VAR, ""))
    a = ap.parse_args(argv)
    if a.action in ("push", "pull") and not a.registry:
        raise UsageError(f"'{a.action}' needs a registry", f"make {a.action} REGISTRY=registry.example.org/team")
    specs = [build.ImageSpec(fw, a.era, a.variant) for fw in a.frameworks.replace(",", " ").split()]
    for spec in specs:
        spec.check()
    if a.action == "tags":
        base = a.base_image or None
        for spec in specs:  # names only (a base given by tag is resolved to its digest at build time)
            print(build.tag(spec, base if base and build.is_pinned(base) else None))
        return 0
    client = build.client()
    base = build.resolve_base(client, a.base_image or None)
    for spec in specs:
        name = build.tag(spec, base)
        if a.action == "build":
            print(f"{name} {build.digest(build.build(client, spec, base))}")
        elif a.action == "push":
            print(f"{name} pushed as {build.push(client, name, a.registry)}")
        else:
            print(f"{name} {build.digest(build.pull(client, name, a.registry))}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run; a UsageError becomes one line on stderr and exit code 2."""
    return run_cli(run, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
