"""Host command line: `python -m images build|push|pull|tags --frameworks ... --era ... --variant ...`.

Builds (or reuses) the framework images, pushes them to a registry or pulls them from one, or
prints their tags. Bad input ends with one line `error: <problem>; <fix>` and exit code 2.

`build` of several frameworks skips an image whose file from outside the package index cannot be
had (torch 0.4.1 for the paper-era PyTorch image, images/external.py: its archive unreachable), with
one line `skipped: ...` saying why and how to supply it, and builds the others: the exit code is 0
when every other image built. Asked for alone, that image fails as any build does (exit code 2), and
a campaign that needs it fails the same way.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.errors import UsageError, run_cli
from images import build, external


def run(argv: list[str]) -> int:
    """Parse the arguments and do the action for every framework named."""
    ap = argparse.ArgumentParser(prog="python -m images")
    ap.add_argument("action", choices=("build", "push", "pull", "tags"))
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--era", default="current")
    ap.add_argument("--variant", default="cpu")
    ap.add_argument("--registry", default="")
    ap.add_argument("--base-image", default="", help="default: the era's base (images.build.base_image)")
    a = ap.parse_args(argv)
    if a.action in ("push", "pull") and not a.registry:
        raise UsageError(f"'{a.action}' needs a registry", f"make {a.action} REGISTRY=registry.example.org/team")
    specs = [build.ImageSpec(fw, a.era, a.variant) for fw in a.frameworks.replace(",", " ").split()]
    for spec in specs:
        spec.check()
    if a.action == "tags":
        # Names only, without an engine: a base given by tag (or the era's local base) is resolved to its
        # digest, and its Debian release read, at build time.
        base = a.base_image or os.environ.get(build.BASE_IMAGE_VAR, "").strip() or None
        for spec in specs:
            print(build.tag(spec, base if base and build.is_pinned(base) else None))
        return 0
    client = build.client()
    base = a.base_image or build.base_image(client, a.era)
    if a.action == "build":
        return build_all(client, specs, base)
    for spec in specs:
        name = build.plan(client, spec, base).tag
        if a.action == "push":
            print(f"{name} pushed as {build.push(client, name, a.registry)}")
        else:
            print(f"{name} {build.digest(build.pull(client, name, a.registry))}")
    return 0


def build_all(client, specs: list[build.ImageSpec], base: str | None) -> int:
    """Build (or reuse) each image in turn, printing `<tag> <digest>`; an image whose external file cannot be
    had is skipped in one line when others were asked for beside it (exit code 0 if they all built)."""
    for spec in specs:
        planned = build.plan(client, spec, base)
        try:
            image = build.build_planned(client, spec, planned)
        except external.ArchiveUnreachable as exc:
            if len(specs) == 1:
                raise
            print(f"skipped: the {spec.framework} image ({spec.era}, {spec.variant}): {exc.problem}; {exc.fix}, "
                  f"then build it with FRAMEWORKS={spec.framework}", file=sys.stderr, flush=True)
            continue
        print(f"{planned.tag} {build.digest(image)}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run; a UsageError becomes one line on stderr and exit code 2."""
    return run_cli(run, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
