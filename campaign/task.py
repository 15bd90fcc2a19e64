"""One scheduler task: run one run of a batch, publishing it exactly as a local campaign does.

`python -m campaign task --batch DIR --index N` is what each Slurm array task executes (N =
$SLURM_ARRAY_TASK_ID). It takes the run's lease (campaign/leases.py), prepares the batch's runner on this
node (checking the environment is the one the host planned with), runs it into `<id>.partial/` and
renames it into place when run.json is written (campaign/execute.py). Told to stop (SIGTERM from
scancel, the task's time limit or preemption; SIGINT), it kills the run and publishes it as failed,
cause 'cancelled', which a resumed campaign runs again. A node that lacks a library or tool the run
needs (campaign/syslibs.py) stops the task before it takes the run's lease, with the one line naming the
package: nothing is recorded, and the campaign submits the run again when it is run again.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
from pathlib import Path

from bench import blas_backends
from bench.errors import UsageError
from campaign import batch as batches
from campaign import execute, runners, syslibs
from campaign.runners import GpuSlot

EXECUTOR_FILE = "executor.json"


def slurm_task_id() -> str:
    """'12_3' for array task 3 of job 12 (empty outside Slurm)."""
    job, task = os.environ.get("SLURM_ARRAY_JOB_ID", ""), os.environ.get("SLURM_ARRAY_TASK_ID", "")
    return f"{job}_{task}" if job and task else os.environ.get("SLURM_JOB_ID", "")


def slurm_gpus(devices: list[dict] | None = None) -> tuple[GpuSlot, ...]:
    """The GPUs Slurm allocated to this task (SLURM_JOB_GPUS holds their indices on the node, which with
    gres AutoDetect=nvml are NVML's), named by NVML (`devices`: bench.gpu.probe().devices, probed when
    not given); none when the task has no GPU."""
    given = os.environ.get("SLURM_STEP_GPUS") or os.environ.get("SLURM_JOB_GPUS") or ""
    wanted = [i.strip() for i in given.split(",")]
    if not all(i.isdigit() for i in wanted):
        return ()
    if devices is None:
        from bench.gpu import probe

        devices = probe().devices
    # An index NVML does not list still names a GPU Slurm gave: a slot without uuid and name.
    named = runners.slots_by_index(devices)
    return tuple(named.get(int(i), GpuSlot(int(i))) for i in wanted)


def run_task(batch_dir: Path, index: int) -> int:
    """Run array task `index` of the batch in `batch_dir`; 0 when it ran (ok or failed) or was
    not this task's to run (done already, or leased to a live holder elsewhere)."""
    batch = batches.load(batch_dir)
    run = batch.planned(index)
    settings = batch.settings
    executor_id = slurm_task_id()
    head = f"[task {index}/{len(batch.run_ids)}] {run.label} ({run.run_id})"
    syslibs.check(settings["runner"], [run.request["framework"]], run.request["era"],
                  [blas_backends.requested(run.request)])  # this node's libraries, before any lease is taken
    lease = execute.lease_missing(run, batch.campaign_dir, False, head, batch.executor, executor_id)
    if isinstance(lease, str):
        return 0
    try:
        gpus = slurm_gpus() if run.request["device"] == "gpu" else ()
        data_root = Path(settings["data_root"]) if settings.get("data_root") else None
        runner = runners.get(settings["runner"], run.request["device"], run.request["era"], gpus, data_root)
        environment = runner.prepare(run.request["framework"])
        planned = run.request["environment"]["env_id"]
        if environment.env_id != planned:
            raise UsageError(f"{run.request['framework']}'s environment on {socket.gethostname()} is "
                             f"{environment.env_id}, not the {planned} the campaign was planned with",
                             "build the same environment on every node (make envs or make images, one checkout)")
        cancelled = execute.Cancellation()

        def stop(signum: int, _frame) -> None:
            cancelled.cancel(f"the {batch.executor} task {executor_id or '?'} was sent {signal.Signals(signum).name} "
                             "(scancel, its time limit or preemption); the run was stopped")
            kill = getattr(runner, "abort", None)
            if kill is not None:
                kill()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            signal.signal(sig, stop)
        sidecar = {"executor": batch.executor, "executor_id": executor_id, "batch": batch.name, "task_index": index,
                   "node": socket.gethostname(), "runner": settings["runner"]}
        print(f"{head}: running on {socket.gethostname()}" + (f" ({runners.gpus_label(gpus)})" if gpus else ""),
              flush=True)
        record = execute.execute_one(run, runner, batch.campaign_dir, settings.get("timeout_s"), gpus,
                                     cancelled=cancelled, sidecar={EXECUTOR_FILE: sidecar})
        print(f"{head}: {execute.describe(record)}", flush=True)
    finally:
        lease.release()
    return 0


def main(argv: list[str]) -> int:
    """`task --batch DIR --index N`."""
    ap = argparse.ArgumentParser(prog="python -m campaign task")
    ap.add_argument("--batch", type=Path, required=True)
    ap.add_argument("--index", type=int, default=int(os.environ.get("SLURM_ARRAY_TASK_ID", "0") or 0))
    a = ap.parse_args(argv)
    return run_task(a.batch, a.index)
