"""The local runner: one virtual environment per framework, built from its hash-locked requirements
(images/envs.py), running the in-image payload (bench/) from this checkout.

A GPU run sees exactly the one GPU the campaign gave it: CUDA_VISIBLE_DEVICES=<its NVML index>, with
CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs as NVML does (CUDA's default order puts the
fastest first).

A run is an ordinary process of this machine: no bounds are applied (environment.limits all null), and
its data folder (the request's data.path under the runner's data root) is passed as --data."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from pathlib import Path

from bench import request as run_request
from bench import schema
from campaign import preflight
from campaign.requests import Environment
from campaign.runners import NOT_APPLIED, GpuSlot, Outcome, echo_prefix, entrypoint_args, gpus_env, tee_log
from images import envs

REPO = Path(__file__).resolve().parents[2]
_PR_SET_PDEATHSIG = 1
try:
    # Loaded here, not in the forked child: a campaign launches runs from several threads at once,
    # and a dlopen between fork and exec can deadlock on a lock another thread held at the fork.
    _PRCTL = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except OSError:
    _PRCTL = None


def _die_with_parent() -> None:
    # If the campaign process is killed (even with SIGKILL), its run must not live on as an
    # orphan that keeps writing into a folder the resumed campaign is about to redo. (The signal
    # comes when the launching thread ends; it waits for the run, so that is the campaign's end.)
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def gpu_env(gpus: tuple[GpuSlot, ...]) -> dict[str, str]:
    """The environment variables that give a local run exactly `gpus`, rank 0's first (none for a CPU run)."""
    if not gpus:
        return {}
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(g.index) for g in gpus), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            **gpus_env(gpus)}


# Runs in flight (their process groups), for abort(): the local and system runners' launches.
_RUNNING: set[int] = set()
_RUNNING_LOCK = threading.Lock()


def abort_all() -> None:
    """Kill every run this process launched that is still in flight (the campaign was stopped)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for pgid in running:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it ended meanwhile


class LocalRunner:
    """Runs the entrypoint with the framework environment's Python, on this machine."""

    name = "local"

    def __init__(self, era: str = "current", device: str = "cpu", gpus: tuple[GpuSlot, ...] = (),
                 data_root: Path | None = None) -> None:
        self.era, self.device, self.gpus, self.data_root = era, device, tuple(gpus), data_root
        self._python: dict[str, Path] = {}

    def prepare(self, framework: str) -> Environment:
        """Build (first use) or reuse the framework's virtual environment; its identity is the lock
        sha256. A GPU campaign first checks the driver and the GPUs against the framework's GPU build."""
        if self.device == "gpu":
            build = preflight.gpu_build(framework, self.era)
            if build is not None:  # frameworks without a GPU build say so themselves, at plan time
                preflight.check(preflight.host_gpu(None, self.gpus), build.cuda,
                                f"{framework}'s {self.era}-era GPU build", build)
        env = envs.ensure_env(framework, self.era)
        self._python[framework] = env.python
        return Environment(env.lock_sha256, limits=NOT_APPLIED.record())

    def abort(self) -> None:
        """Kill every run in flight (the campaign was stopped)."""
        abort_all()

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None,
               gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
        """Start the entrypoint in its own process group (seeing only `gpus` when given); kill the
        whole group on timeout."""
        framework = request["framework"]
        python = self._python.get(framework) or envs.ensure_env(framework, self.era).python
        # Only the payload on the path: an outer PYTHONPATH must not leak into a locked environment.
        return launch_entrypoint(python, run_dir, timeout_s, pythonpath=str(REPO), gpus=gpus,
                                 data_dir=run_request.data_folder(request["data"], self.data_root))


def launch_entrypoint(python: Path | str, run_dir: Path, timeout_s: float | None, pythonpath: str,
                      gpus: tuple[GpuSlot, ...] = (), data_dir: Path | None = None) -> Outcome:
    """Run `python -m bench run` on run_dir's request with its data at `data_dir` (none: data generated in
    the run) (the local and system runners' launch): see launch_process."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONUNBUFFERED": "1", **gpu_env(gpus)}
    return launch_process([str(python), "-m", "bench", *entrypoint_args(run_dir, data_dir)], run_dir, timeout_s,
                          env, gpus)


def launch_process(argv: list[str], run_dir: Path, timeout_s: float | None, env: dict[str, str],
                   gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
    """Run `argv` (a run's entrypoint, directly or through a container wrapper) in its own process
    group, its output into run_dir/log.txt; kill the whole group on timeout, or when the campaign
    is stopped."""
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, preexec_fn=_die_with_parent,
    )
    with _RUNNING_LOCK:
        _RUNNING.add(proc.pid)
    log = tee_log(proc.stdout, run_dir / schema.LOG_FILE, echo_prefix(gpus))
    try:
        return Outcome(proc.wait(timeout=timeout_s))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return Outcome(proc.wait(), timed_out=True)
    except BaseException:
        # Ctrl-C or an error in the campaign: take the run down with us, then re-raise.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc.pid)
        log.join(timeout=10)
        proc.stdout.close()
