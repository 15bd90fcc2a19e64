"""Host command line: `python -m campaign run|datasets|check-gpu ...`.

`run` plans a campaign (frameworks x workloads x repeats), prepares each framework's environment
with the chosen runner and runs what is missing; `datasets` prints what a target's workloads read;
`check-gpu` stops a GPU target at once on a machine without one.
Bad input ends with one line `error: <problem>; <fix>` and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.errors import UsageError, run_cli


def _names(text: str) -> list[str]:
    return [n for n in text.replace(",", " ").split() if n]


def _run_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m campaign run")
    ap.add_argument("--target", help="a campaign target of campaign/targets.toml (cpu-cnn, gpu-lstm, demo, ...)")
    ap.add_argument("--workloads", default="", help="instead of --target: workload names")
    ap.add_argument("--device", default=None)
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--era", default="current", help="current (today's releases) or paper (the study's versions)")
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--repeats", default="5")
    ap.add_argument("--runner", default="local",
                    help="local, docker, system (this Python as it is), or auto (docker where an engine answers)")
    ap.add_argument("--data", dest="data_source", default="real", help="real or synthetic")
    ap.add_argument("--data-root", type=Path, default=Path("data"))
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--campaign", default=None, help="name of the results folder (default: the target)")
    ap.add_argument("--threads", default="", help="CPU threads per run (default: all usable cores)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run (default 24 h)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retry-failed", action="store_true")
    ap.add_argument("--gpus", default="all",
                    help="GPU campaigns: 'all' or comma-separated NVML indices (0,2); one run per GPU at a time")
    ap.add_argument("--parallel", default="1", help="CPU campaigns: runs at once (default 1, the studies' protocol)")
    return ap.parse_args(argv)


def _target(name: str | None) -> dict:
    from campaign.specs import load_targets

    targets = load_targets()
    if name is None:
        return {}
    if name not in targets:
        raise UsageError(f"unknown campaign target '{name}'", f"choose from: {', '.join(sorted(targets))}")
    return targets[name]


def _threads(text: str) -> int:
    if not text:
        return len(os.sched_getaffinity(0))
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"THREADS must be a positive whole number, got '{text}'", "set e.g. THREADS=2")
    return int(text)


def _parallel(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"PARALLEL must be a positive whole number, got '{text}'", "set e.g. PARALLEL=1")
    return int(text)


def _slots(device: str, gpus: str, parallel: int) -> list:
    """What execute() runs on: one GpuSlot per GPU of a GPU campaign (GPUS), else `parallel` CPU slots."""
    from bench.gpu import probe
    from campaign.runners import gpu_slots

    if device != "gpu":
        if parallel > 1:
            print(f"note: {parallel} runs at once (PARALLEL={parallel}): their timings share this machine's cores",
                  flush=True)
        return [None] * parallel
    slots = gpu_slots(probe().devices, gpus)
    if not slots:
        raise UsageError("NVML lists no GPU to run on", "check nvidia-smi, or run the cpu-* target")
    print(f"GPUs: {', '.join(s.label() for s in slots)} (one run per GPU at a time; GPUS=... to choose)",
          flush=True)
    return slots


def cmd_run(argv: list[str]) -> int:
    """Expand the matrix, prepare environments, run what is missing."""
    from bench.gpu import probe
    from campaign import execute, plan, runners

    a = _run_args(argv)
    target = _target(a.target)
    workloads = _names(a.workloads) or target.get("workloads", [])
    device = a.device or target.get("device", "cpu")
    matrix = plan.build_matrix(_names(a.frameworks), workloads, device, a.profile, a.repeats, a.data_source,
                               a.seed, a.era)
    if device == "gpu":
        require_gpu(a.target or "this campaign")
    name = a.campaign or a.target or "adhoc"
    threads = _threads(a.threads)
    slots = _slots(device, a.gpus, _parallel(a.parallel))
    runner = runners.get(a.runner, device, a.era, tuple(s for s in slots if s is not None))
    print(f"campaign '{name}': {len(matrix.frameworks)} frameworks x {len(matrix.workloads)} workloads x "
          f"{matrix.repeats} repeats on {device} ({matrix.era} era, {matrix.profile} profile, {matrix.data_source} "
          f"data, {runner.name} runner, {threads} threads)", flush=True)
    if device == "cpu" and probe().available:
        print("note: an NVIDIA GPU is present but this is a CPU campaign; frameworks are kept off it",
              flush=True)
    campaign_dir = a.results / name
    runs = plan.plan(matrix, runner, name, campaign_dir, a.data_root, threads)
    counts = execute.execute(runs, runner, campaign_dir, a.timeout or execute.DEFAULT_TIMEOUT_S, a.retry_failed,
                             slots)
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
    from campaign.plan import datasets_needed

    ap = argparse.ArgumentParser(prog="python -m campaign datasets")
    ap.add_argument("--target")
    ap.add_argument("--workloads", default="")
    a = ap.parse_args(argv)
    workloads = _names(a.workloads) or _target(a.target).get("workloads", [])
    print(" ".join(datasets_needed(workloads)))
    return 0


COMMANDS = {"run": cmd_run, "check-gpu": cmd_check_gpu, "datasets": cmd_datasets}


def dispatch(argv: list[str]) -> int:
    """Run the subcommand argv[0] with the rest of argv."""
    if argv[0] not in COMMANDS:
        raise UsageError(f"unknown command '{argv[0]}'", f"use one of: {', '.join(COMMANDS)}")
    return COMMANDS[argv[0]](argv[1:])


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; a UsageError becomes one line and exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m campaign {{{','.join(COMMANDS)}}} ...")
        return 0
    return run_cli(dispatch, argv)


if __name__ == "__main__":
    sys.exit(main())
