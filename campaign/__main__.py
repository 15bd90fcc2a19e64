"""Host command line: `python -m campaign run|check|datasets|check-gpu|targets ...`.

`run` plans a campaign (frameworks x workloads x repeats), prepares each framework's environment
with the chosen runner and runs what is missing; `check` takes run's arguments and validates them
all (names, numbers, frameworks, profile, era, workloads) without doing anything, so a make target
stops on a bad setting before it downloads data or builds an environment; `datasets` prints what a
target's workloads read; `check-gpu` stops a GPU target at once on a machine without one (and passes
a CPU target); `targets` writes the make include of the study files' targets (campaign/targets.py). Bad
input ends with one line `error: <problem>; <fix>` and exit code 2. SIGTERM stops a command the way
Ctrl-C does (a campaign's runs in flight killed, containers included).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.errors import UsageError, run_cli
from bench.names import check_plain

if TYPE_CHECKING:
    from campaign.plan import Matrix
    from campaign.runners import Limits
    from campaign.study import Experiment


def _names(text: str) -> list[str]:
    return [n for n in text.replace(",", " ").split() if n]


def _run_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m campaign run")
    ap.add_argument("--target", help="a campaign target: an experiment of studies/*/study.toml (cpu-cnn, demo, ...)")
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
    ap.add_argument("--timeout", default="", help="seconds per run (default 24 h)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retry-failed", nargs="?", const="yes", default="no",
                    help="yes: run failed runs again (runs that failed for their setup always are)")
    ap.add_argument("--gpus", default="all",
                    help="GPU campaigns: 'all' or comma-separated NVML indices (0,2); one run per GPU at a time")
    ap.add_argument("--parallel", default="1", help="CPU campaigns: runs at once (default 1, the studies' protocol)")
    ap.add_argument("--memory", default="", help="each container run's memory limit, e.g. 16g (default: the host's "
                    "memory less a tenth)")
    ap.add_argument("--pids", default="", help="each container run's processes and threads at once (default 4096)")
    ap.add_argument("--executor", default="local", help="local (this process), slurm (a job array) or kubernetes")
    ap.add_argument("--wait", default="yes", help="slurm: yes (follow the job) or no (return once submitted)")
    ap.add_argument("--slurm-partition", default="")
    ap.add_argument("--slurm-account", default="")
    ap.add_argument("--slurm-exclusive", default="no", help="yes: each task alone on its node (--exclusive)")
    ap.add_argument("--slurm-opts", default="", help="more sbatch options, e.g. '--qos=long --constraint=a100'")
    ap.add_argument("--k8s-namespace", default="default")
    ap.add_argument("--k8s-data-claim", default="dlrepro-data", help="PVC holding the data root (mounted read-only)")
    ap.add_argument("--k8s-results-claim", default="dlrepro-results", help="PVC holding the results root")
    return ap.parse_args(argv)


def _yes(text: str, var: str) -> bool:
    if text.strip().lower() not in ("yes", "no", "true", "false", "1", "0", ""):
        raise UsageError(f"{var} must be yes or no, got '{text}'", f"set {var}=yes or {var}=no")
    return text.strip().lower() in ("yes", "true", "1")


def _target(name: str | None) -> Experiment | None:
    """The experiment a campaign target runs (studies/*/study.toml); None without a target."""
    from campaign.study import experiment

    return None if name is None else experiment(name)


def _threads(text: str) -> int:
    if not text:
        return len(os.sched_getaffinity(0))
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"THREADS must be a positive whole number, got '{text}'", "set e.g. THREADS=2")
    return int(text)


def _threads_text(matrix, threads: int) -> str:
    """'2 threads', or the swept counts ('threads 1, 2, 4 (swept)') when the experiment sweeps them."""
    swept = sorted({p["threads"] for p in matrix.points if "threads" in p})
    return f"threads {', '.join(map(str, swept))} (swept)" if swept else f"{threads} threads"


def _parallel(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"PARALLEL must be a positive whole number, got '{text}'", "set e.g. PARALLEL=1")
    return int(text)


def _timeout(text: str) -> float:
    """TIMEOUT in seconds (empty: the study's 24 h); 0, a negative number or nan would make every run a
    'timeout' or none ever one."""
    from campaign.execute import DEFAULT_TIMEOUT_S

    if not text.strip():
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"TIMEOUT must be a positive number of seconds, got '{text}'",
                         "set e.g. TIMEOUT=3600, or leave it empty for the study's 24 h")
    return value


def _gpus(text: str) -> str:
    """GPUS checked for form here (before any work); campaign.runners.gpu_slots checks the indices exist."""
    parts = [p.strip() for p in text.split(",")]
    if text.strip() != "all" and not all(p.isdigit() for p in parts):
        raise UsageError(f"GPUS must be 'all' or comma-separated GPU indices, got '{text}'",
                         "set GPUS=all or e.g. GPUS=0,2")
    return text


def _campaign_name(a: argparse.Namespace) -> str:
    """The campaign's name, a plain name: it becomes results/<name> and reports/<name>."""
    return check_plain(a.campaign or a.target or "adhoc", "CAMPAIGN", "my-campaign")


@dataclass(frozen=True)
class Request:
    """What `run` was asked for, every part validated (check_request) before anything is written or built."""

    target: Experiment | None
    matrix: Matrix
    name: str
    threads: int
    timeout: float
    limits: Limits


def check_request(a: argparse.Namespace) -> Request:
    """Validate all of run's arguments (`python -m campaign check` stops here); nothing is downloaded, built
    or written."""
    from campaign import executors, plan, runners

    executors.check_name(a.executor)
    _yes(a.wait, "WAIT"), _yes(a.slurm_exclusive, "SLURM_EXCLUSIVE"), _yes(a.retry_failed, "RETRY_FAILED")
    name = _campaign_name(a)
    target = _target(a.target)
    workloads = _names(a.workloads) or (list(target.workloads) if target else [])
    device = a.device or (target.device if target else "cpu")
    matrix = plan.build_matrix(_names(a.frameworks), workloads, device, a.profile, a.repeats, a.data_source,
                               a.seed, a.era, target)
    runners.check_name(a.runner)
    _gpus(a.gpus)
    _parallel(a.parallel)
    request = Request(target, matrix, name, _threads(a.threads), _timeout(a.timeout), _limits(a))
    if a.executor == "local":  # this machine runs them (a scheduler's task checks its own node: campaign/task.py)
        _host_preflight(a.runner, matrix)
    return request


def _host_preflight(runner: str, matrix: Matrix) -> None:
    """The host pre-flight (campaign/syslibs.py) of the runs `runner` would run here: before any data is made
    or environment built, so a machine that lacks a library loses no time."""
    from bench import blas_backends
    from campaign import runners, syslibs

    name = runners.choose_auto()[0] if runner == "auto" else runner
    syslibs.check(name, matrix.frameworks, matrix.era, [p.get(blas_backends.AXIS) for p in matrix.points])


def _limits(a: argparse.Namespace):
    """The bounds a container runner puts on each run (MEMORY, PIDS: campaign.runners.container_limits). A
    Kubernetes pod spec has no pids limit (the node's kubelet has): its runs are planned with none."""
    from dataclasses import replace

    from campaign.runners import container_limits

    limits = container_limits(a.memory, a.pids)
    return replace(limits, pids=None) if a.executor == "kubernetes" else limits


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
    print(f"GPUs: {', '.join(s.label() for s in slots)} (one run per GPU at a time, a data-parallel run one GPU "
          "per rank; GPUS=... to choose)",
          flush=True)
    return slots


def cmd_run(argv: list[str]) -> int:
    """Expand the matrix, prepare environments, run what is missing."""
    from bench.gpu import probe
    from campaign import execute, plan, runners

    a = _run_args(argv)
    request = check_request(a)  # bad values stop before any work
    target, matrix, name, threads = request.target, request.matrix, request.name, request.threads
    device = matrix.device
    if a.executor == "slurm":  # before environments are prepared: minutes wasted otherwise
        from campaign.executors import slurm

        slurm.check_commands()
    if device == "gpu":
        require_gpu(a.target or "this campaign", target.cpu if target else None)
    slots = _slots(device, a.gpus, _parallel(a.parallel))
    runner = runners.get(a.runner, device, a.era, tuple(s for s in slots if s is not None), a.data_root, request.limits)
    if (a.memory or a.pids) and runner.name != "docker":
        print(f"note: MEMORY and PIDS bound container runs; the {runner.name} runner applies none (run.json says so)",
              flush=True)
    if a.executor == "kubernetes" and runner.name != "docker":
        raise UsageError(f"EXECUTOR=kubernetes runs the kit images, not the {runner.name} runner's environments",
                         "use RUNNER=docker, with the images pushed (make push REGISTRY=...)")
    print(f"campaign '{name}': {len(matrix.frameworks)} frameworks x {len(matrix.workloads)} workloads x "
          f"{matrix.repeats} repeats on {device} ({matrix.era} era, {matrix.profile} profile, {matrix.data_source} "
          f"data, {runner.name} runner, {_threads_text(matrix, threads)})", flush=True)
    if device == "cpu" and probe().available:
        print("note: an NVIDIA GPU is present but this is a CPU campaign; frameworks are kept off it",
              flush=True)
    campaign_dir = a.results / name
    runs = plan.plan(matrix, runner, name, campaign_dir, a.data_root, threads)
    timeout = request.timeout
    if a.executor == "slurm":
        return _on_slurm(a, runs, runner.name, campaign_dir, name, timeout, threads, device)
    if a.executor == "kubernetes":
        return _on_kubernetes(a, runs, runner.name, campaign_dir, timeout)
    if a.executor != "local":  # a module in campaign/executors/ that is not handed runs here yet
        raise AssertionError(f"executor '{a.executor}' is in campaign/executors/ but cmd_run hands it no runs")
    counts = execute.execute(runs, runner, campaign_dir, timeout, _yes(a.retry_failed, "RETRY_FAILED"), slots)
    elsewhere = f", {counts['elsewhere']} running elsewhere" if counts["elsewhere"] else ""
    unfit = f", {counts['unfit']} left out (more GPUs than GPUS gives)" if counts["unfit"] else ""
    print(f"campaign '{name}': {counts['ok']} ok, {execute.failed_text(counts)}, {counts['skipped']} done "
          f"earlier{elsewhere}{unfit}; results in {campaign_dir}", flush=True)
    execute.check_setup(counts)  # a framework's failure is a result (the report follows); the setup's is not
    return 0


def _on_slurm(a: argparse.Namespace, runs: list, runner: str, campaign_dir: Path, name: str, timeout: float,
              threads: int, device: str) -> int:
    """Hand the planned runs to Slurm as one job array; QUEUED_EXIT when they are not all back."""
    import shlex

    from campaign import execute
    from campaign.executors import QUEUED_EXIT, slurm

    settings = slurm.SlurmSettings(
        runner=runner, timeout_s=timeout, partition=a.slurm_partition, account=a.slurm_account,
        concurrency=_parallel(a.parallel) if device == "cpu" else 0,
        exclusive=_yes(a.slurm_exclusive, "SLURM_EXCLUSIVE"),
        cpus_per_task=threads if device == "cpu" else None,
        extra=tuple(shlex.split(a.slurm_opts)), data_root=str(a.data_root.resolve()))
    retry = _yes(a.retry_failed, "RETRY_FAILED")
    counts = slurm.run_campaign(runs, campaign_dir, settings, _yes(a.wait, "WAIT"), retry)
    print(f"campaign '{name}': {counts['ok']} ok, {execute.failed_text(counts)}, {counts['skipped']} done earlier, "
          f"{counts['queued']} queued in Slurm; results in {campaign_dir}", flush=True)
    if counts["queued"]:
        print("the runs still queued come back by themselves; run the same command again to collect them "
              "and make the report", flush=True)
        return QUEUED_EXIT
    execute.check_setup(counts)
    return 0


def _on_kubernetes(a: argparse.Namespace, runs: list, runner: str, campaign_dir: Path, timeout: float) -> int:
    # (runner is 'docker': cmd_run checked it before anything was prepared)
    """Hand the missing runs to Kubernetes as Indexed Jobs (applied where a cluster answers, else
    written for kubectl apply); QUEUED_EXIT while any are out."""
    from campaign import batch, execute
    from campaign.executors import QUEUED_EXIT, kubernetes

    missing = execute.missing_runs(runs, campaign_dir, _yes(a.retry_failed, "RETRY_FAILED"))
    if not missing:
        print(f"kubernetes: nothing to submit; results in {campaign_dir}", flush=True)
        return 0
    settings = kubernetes.KubernetesSettings(
        results_root=a.results.resolve(), data_root=a.data_root.resolve(), namespace=a.k8s_namespace,
        data_claim=a.k8s_data_claim, results_claim=a.k8s_results_claim, parallelism=_parallel(a.parallel),
        timeout_s=timeout)
    b = batch.write(campaign_dir, "kubernetes", missing, {"runner": runner, "timeout_s": timeout})
    objects = kubernetes.manifests(missing, b.dir, settings)
    kubernetes.validate(objects)
    path = kubernetes.write_manifests(objects, b.dir)
    print(f"kubernetes: {len(missing)} runs in {len(objects) - 1} Indexed Jobs, validated against the "
          f"Kubernetes {kubernetes.KUBERNETES_VERSION} API schema: {path}", flush=True)
    print(kubernetes.apply(objects, path), flush=True)
    return QUEUED_EXIT


def require_gpu(what: str, instead: str | None = None) -> None:
    """Stop with a clear message when no NVIDIA GPU answers; `instead` is the CPU make target to offer."""
    from bench.gpu import probe

    status = probe()
    if not status.available:
        raise UsageError(
            f"{what} needs an NVIDIA GPU, but none is available on this machine ({status.reason})",
            f"run the CPU variant instead: make {instead}" if instead else "run it on the CPU (DEVICE=cpu)",
        )


def cmd_check_gpu(argv: list[str]) -> int:
    """`check-gpu [TARGET] [--instead MAKE_TARGET]`: for a GPU experiment (or no target), exit 0 with the GPUs
    found, or the clear no-GPU error naming the CPU counterpart its study file gives it (`cpu`), or `--instead`
    (a make target running several experiments names its own CPU counterpart); for a CPU experiment, exit 0
    at once."""
    from bench.gpu import probe

    ap = argparse.ArgumentParser(prog="python -m campaign check-gpu")
    ap.add_argument("target", nargs="?")
    ap.add_argument("--instead")
    a = ap.parse_args(argv)
    target = _target(a.target)
    if target is not None and target.device != "gpu":
        return 0
    require_gpu(target.name if target else "this campaign", a.instead or (target.cpu if target else None))
    status = probe()
    for d in status.devices:
        print(f"GPU {d['index']}: {d['name']} (compute capability {d['compute_capability']}, "
              f"{d['memory_total_mb']} MB), driver {status.driver}, CUDA {status.cuda_driver_version}")
    return 0


def cmd_check(argv: list[str]) -> int:
    """`check` with run's arguments: exit 0 when `run` would accept them all, else the one-line error. Without
    --target or --workloads (make analyze) only the campaign name is checked."""
    a = _run_args(argv)
    if a.target or _names(a.workloads):
        check_request(a)
    else:
        _campaign_name(a)
    return 0


def cmd_datasets(argv: list[str]) -> int:
    """`datasets --target T` or `datasets --workloads W`: print the datasets they need."""
    from campaign.plan import datasets_needed

    ap = argparse.ArgumentParser(prog="python -m campaign datasets")
    ap.add_argument("--target")
    ap.add_argument("--workloads", default="")
    a = ap.parse_args(argv)
    target = _target(a.target)
    workloads = _names(a.workloads) or (list(target.workloads) if target else [])
    print(" ".join(datasets_needed(workloads)))
    return 0


def cmd_task(argv: list[str]) -> int:
    """`task --batch DIR --index N`: one scheduler task's run (campaign/task.py)."""
    from campaign import task

    return task.main(argv)


def cmd_targets(argv: list[str]) -> int:
    """`targets [--path] [--out FILE]`: the make targets of the study files (campaign/targets.py)."""
    from campaign import targets

    return targets.main(argv)


COMMANDS = {"run": cmd_run, "check": cmd_check, "check-gpu": cmd_check_gpu, "datasets": cmd_datasets,
            "task": cmd_task, "targets": cmd_targets}


def dispatch(argv: list[str]) -> int:
    """Run the subcommand argv[0] with the rest of argv."""
    if argv[0] not in COMMANDS:
        raise UsageError(f"unknown command '{argv[0]}'", f"use one of: {', '.join(COMMANDS)}")
    return COMMANDS[argv[0]](argv[1:])


def _interrupt(signum: int, frame) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM (kill, a CI or service manager's stop) stop this process the way Ctrl-C does, so what
    cleans up after Ctrl-C runs: without it the process dies at once and its containers keep running.
    A Slurm task installs its own handler over this one (campaign/task.py)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; a UsageError becomes one line and exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m campaign {{{','.join(COMMANDS)}}} ...")
        return 0
    stop_on_sigterm()
    return run_cli(dispatch, argv)


if __name__ == "__main__":
    sys.exit(main())
