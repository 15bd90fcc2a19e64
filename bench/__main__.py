"""Command line: `python -m bench run|campaign|datasets|check-gpu ...`.

`run` is the entrypoint inside an environment or image; the others run on the host.
Bad input ends with one line `error: <problem>; <fix>` and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.errors import UsageError


def _names(text: str) -> list[str]:
    return [n for n in text.replace(",", " ").split() if n]


def _campaign_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench campaign")
    ap.add_argument("--target", help="a campaign of bench/campaigns.toml (cpu-cnn, gpu-lstm, demo, ...)")
    ap.add_argument("--workloads", default="", help="instead of --target: workload names")
    ap.add_argument("--device", default=None)
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--repeats", default="5")
    ap.add_argument("--runner", default="local", help="local, docker, or auto (docker where an engine answers)")
    ap.add_argument("--data", dest="data_source", default="real", help="real or synthetic")
    ap.add_argument("--data-root", type=Path, default=Path("data"))
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--campaign", default=None, help="name of the results folder (default: the target)")
    ap.add_argument("--threads", default="", help="CPU threads per run (default: all usable cores)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run (default 24 h)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retry-failed", action="store_true")
    return ap.parse_args(argv)


def _target(name: str | None) -> dict:
    from bench.spec import load_campaigns

    campaigns = load_campaigns()
    if name is None:
        return {}
    if name not in campaigns:
        raise UsageError(f"unknown campaign target '{name}'", f"choose from: {', '.join(sorted(campaigns))}")
    return campaigns[name]


def _threads(text: str) -> int:
    if not text:
        return len(os.sched_getaffinity(0))
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"THREADS must be a positive whole number, got '{text}'", "set e.g. THREADS=2")
    return int(text)


def cmd_campaign(argv: list[str]) -> int:
    """Expand the matrix, prepare environments, run what is missing."""
    from bench import campaign, runners
    from bench.gpu import probe

    a = _campaign_args(argv)
    target = _target(a.target)
    workloads = _names(a.workloads) or target.get("workloads", [])
    device = a.device or target.get("device", "cpu")
    matrix = campaign.build_matrix(_names(a.frameworks), workloads, device, a.profile, a.repeats,
                                   a.data_source, a.seed)
    if device == "gpu":
        require_gpu(a.target or "this campaign")
    name = a.campaign or a.target or "adhoc"
    threads = _threads(a.threads)
    runner = runners.get(a.runner, device)
    print(f"campaign '{name}': {len(matrix.frameworks)} frameworks x {len(matrix.workloads)} workloads x "
          f"{matrix.repeats} repeats on {device} ({matrix.profile} profile, {matrix.data_source} data, "
          f"{runner.name} runner, {threads} threads)", flush=True)
    if device == "cpu" and probe().available:
        print("note: an NVIDIA GPU is present but this is a CPU campaign; frameworks are kept off it",
              flush=True)
    campaign_dir = a.results / name
    runs = campaign.plan(matrix, runner, name, campaign_dir, a.data_root, threads)
    counts = campaign.execute(runs, runner, campaign_dir, a.timeout or campaign.DEFAULT_TIMEOUT_S,
                              a.retry_failed)
    print(f"campaign '{name}': {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} done "
          f"earlier; results in {campaign_dir}", flush=True)
    return 0


def require_gpu(what: str) -> None:
    """Stop with a clear message when no NVIDIA GPU answers."""
    from bench.gpu import probe

    status = probe()
    if not status.available:
        cpu = what.replace("gpu-", "cpu-") if what.startswith("gpu-") else "the cpu-* variant"
        raise UsageError(
            f"{what} needs an NVIDIA GPU, but none is available on this machine ({status.reason})",
            f"run the CPU variant instead: make {cpu}" if what.startswith("gpu-") else f"run {cpu}",
        )


def cmd_check_gpu(argv: list[str]) -> int:
    """`check-gpu TARGET`: exit 0 with the GPUs found, or the clear no-GPU error."""
    from bench.gpu import probe

    what = argv[0] if argv else "this campaign"
    require_gpu(what)
    status = probe()
    for d in status.devices:
        print(f"GPU {d['index']}: {d['name']} (compute capability {d['compute_capability']}, "
              f"{d['memory_total_mb']} MB), driver {status.driver}, CUDA {status.cuda_driver_version}")
    return 0


def cmd_datasets(argv: list[str]) -> int:
    """`datasets --target T` or `datasets --workloads W`: print the datasets they need."""
    from bench.campaign import datasets_needed

    ap = argparse.ArgumentParser(prog="python -m bench datasets")
    ap.add_argument("--target")
    ap.add_argument("--workloads", default="")
    a = ap.parse_args(argv)
    workloads = _names(a.workloads) or _target(a.target).get("workloads", [])
    print(" ".join(datasets_needed(workloads)))
    return 0


def cmd_images(argv: list[str]) -> int:
    """`images build|push|pull|tags --frameworks ... --era ... --variant ...`: the framework images."""
    from bench import images

    ap = argparse.ArgumentParser(prog="python -m bench images")
    ap.add_argument("action", choices=("build", "push", "pull", "tags"))
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--era", default="current")
    ap.add_argument("--variant", default="cpu")
    ap.add_argument("--registry", default="")
    ap.add_argument("--base-image", default=os.environ.get(images.BASE_IMAGE_VAR, ""))
    a = ap.parse_args(argv)
    if a.action in ("push", "pull") and not a.registry:
        raise UsageError(f"'{a.action}' needs a registry", f"make {a.action} REGISTRY=registry.example.org/team")
    specs = [images.ImageSpec(fw, a.era, a.variant) for fw in _names(a.frameworks)]
    for spec in specs:
        spec.check()
    if a.action == "tags":
        base = a.base_image or None
        for spec in specs:  # names only (the base's digest is resolved at build time)
            print(images.tag(spec, base if base and images.is_pinned(base) else None))
        return 0
    client = images.client()
    base = images.resolve_base(client, a.base_image or None)
    for spec in specs:
        name = images.tag(spec, base)
        if a.action == "build":
            image = images.build(client, spec, base)
            print(f"{name} {images.digest(image)}")
        elif a.action == "push":
            print(f"{name} pushed as {images.push(client, name, a.registry)}")
        else:
            print(f"{name} {images.digest(images.pull(client, name, a.registry))}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; turn UsageError into one line and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"campaign": cmd_campaign, "check-gpu": cmd_check_gpu, "datasets": cmd_datasets,
                "images": cmd_images}
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m bench {run,campaign,datasets,check-gpu,images} ...")
        return 0
    try:
        if argv[0] == "run":
            from bench import threads

            threads.pin_from_argv(argv)  # before bench.run imports NumPy and the framework
            from bench.run import main as run_main

            return run_main(argv[1:])
        if argv[0] not in commands:
            raise UsageError(f"unknown command '{argv[0]}'", "use one of: run, campaign, datasets, check-gpu, images")
        return commands[argv[0]](argv[1:])
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to resume (finished runs are kept)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
