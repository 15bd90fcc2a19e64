"""The Slurm executor: a campaign's missing runs as a job array, one run per array task (one array per
GPU count: a data-parallel GPU run over k ranks asks for k GPUs).

The host plans the campaign as for a local one, then writes a batch (campaign/batch.py) and a
readable sbatch script beside it (`<campaign>/batches/slurm-.../job.sbatch`), and submits it: task
i runs `python -m campaign task` on line i of runs.txt (campaign/task.py), which leases, runs and
publishes the run exactly as a local campaign does, on the shared filesystem. The host then waits
(printing progress and each run's outcome as it lands) or returns at once; either way the same
command run again collects what ended and submits only what is missing: runs still pending or
running in the queue are left to it, and a task that ended without publishing its run (killed
before it could write one: SIGKILL, node failure) gets a failed run.json with the cause Slurm
reports for it (scontrol's JobState).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench import atomic, schema
from bench.errors import UsageError
from campaign import batch as batches
from campaign import execute, leases
from campaign.plan import PlannedRun

SCRIPT_FILE = "job.sbatch"
JOB_FILE = "job.json"
REPO = Path(__file__).resolve().parents[2]
# JobState of a task that ended without publishing its run -> the run's failure cause.
CAUSES = {"CANCELLED": "cancelled", "PREEMPTED": "cancelled", "NODE_FAIL": "cancelled", "BOOT_FAIL": "cancelled",
          "TIMEOUT": "timeout", "DEADLINE": "timeout", "OUT_OF_MEMORY": "oom"}
IN_QUEUE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STAGE_OUT")
POLL_S = 5.0
# Beyond a run's own time limit, what a task may take to prepare its environment and publish.
SETUP_MARGIN_S = 15 * 60


@dataclass(frozen=True)
class SlurmSettings:
    """How the job array is submitted (make variables SLURM_PARTITION, SLURM_ACCOUNT, SLURM_TIME,
    SLURM_EXCLUSIVE, SLURM_OPTS; PARALLEL is the array's %K; a GPU run gets --gres=gpu:k, one per rank)."""

    runner: str
    timeout_s: float
    partition: str = ""
    account: str = ""
    concurrency: int = 0  # %K: tasks running at once (0: as many as Slurm will)
    exclusive: bool = False
    gpus_per_task: int = 0
    cpus_per_task: int | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)
    data_root: str = ""  # where the tasks' runners find the requests' data (relative data.path); "": the default

    def time_limit(self) -> str:
        """--time for one task: the run's limit plus setup, in whole minutes."""
        return str(int((self.timeout_s + SETUP_MARGIN_S) // 60) + 1)


def check_commands() -> None:
    """Stop with the fix when Slurm's client commands are not on PATH."""
    for tool in ("sbatch", "squeue", "scontrol"):
        if shutil.which(tool) is None:
            raise UsageError(f"EXECUTOR=slurm needs Slurm's {tool}, which is not on PATH",
                             "run on a Slurm login node, or start a one-node cluster: make slurm-up")


def script(batch: batches.Batch, settings: SlurmSettings, python: str = sys.executable) -> str:
    """The sbatch script of a batch: readable, kept beside it, resubmittable by hand."""
    n = len(batch.run_ids)
    array = f"1-{n}" + (f"%{settings.concurrency}" if settings.concurrency else "")
    name = batch.campaign_dir.name
    lines = [
        "#!/bin/bash",
        f"# dlrepro campaign '{name}': {n} runs, one per array task (line N of runs.txt for task N).",
        "# Written by `python -m campaign run --executor slurm`; the same make command resubmits what is missing.",
        f"#SBATCH --job-name=dlrepro-{name}",
        f"#SBATCH --array={array}",
        f"#SBATCH --output={batch.dir}/task-%a.out",
        f"#SBATCH --time={settings.time_limit()}",
        "#SBATCH --ntasks=1",
    ]
    if settings.cpus_per_task:
        lines.append(f"#SBATCH --cpus-per-task={settings.cpus_per_task}")
    if settings.gpus_per_task:
        lines.append(f"#SBATCH --gres=gpu:{settings.gpus_per_task}")
    if settings.exclusive:
        lines.append("#SBATCH --exclusive  # no neighbours on the node to distort the timings")
    if settings.partition:
        lines.append(f"#SBATCH --partition={settings.partition}")
    if settings.account:
        lines.append(f"#SBATCH --account={settings.account}")
    lines += [f"#SBATCH {opt}" for opt in settings.extra]
    lines += [
        "set -euo pipefail",
        f"cd {shlex.quote(str(REPO))}",
        "# exec: the task's signals (scancel, time limit) reach the process that records the run as cancelled.",
        f"exec env PYTHONPATH={shlex.quote(str(REPO))} {shlex.quote(python)} -m campaign task "
        f"--batch {shlex.quote(str(batch.dir))} --index \"$SLURM_ARRAY_TASK_ID\"",
    ]
    return "\n".join(lines) + "\n"


def submit(batch: batches.Batch, settings: SlurmSettings) -> str:
    """Write the batch's script and sbatch it; the job id (also kept in the batch's job.json)."""
    path = batch.dir / SCRIPT_FILE
    atomic.write_text(path, script(batch, settings))
    done = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise UsageError(f"sbatch refused the campaign's job array: {done.stderr.strip()[:300]}",
                         f"fix SLURM_PARTITION, SLURM_ACCOUNT or SLURM_OPTS and run again (script: {path})")
    job_id = done.stdout.strip().split(";")[0]
    atomic.write_text(batch.dir / JOB_FILE, json.dumps({"job_id": job_id, "settings": asdict(settings)}) + "\n")
    return job_id


def job_id_of(b: batches.Batch) -> str | None:
    """The Slurm job id a batch was submitted as (None: never submitted)."""
    try:
        return json.loads((b.dir / JOB_FILE).read_text())["job_id"]
    except (OSError, ValueError, KeyError):
        return None


def queued(job_id: str) -> dict[int, str]:
    """{array index: state} of the job's tasks still in Slurm's queue (pending or running)."""
    done = subprocess.run(["squeue", "-h", "-r", "-j", job_id, "-o", "%i %T"], capture_output=True, text=True)
    if done.returncode != 0 and "invalid job id" not in done.stderr.lower():
        # Not "gone from the queue" but "the queue did not answer": its tasks must not be taken for lost.
        raise UsageError(f"squeue could not list job {job_id}: {done.stderr.strip()[:300]}",
                         "check that the Slurm controller answers (scontrol ping), then run the same command again")
    tasks = {}
    for line in done.stdout.splitlines():
        ident, _, state = line.strip().partition(" ")
        _, _, index = ident.partition("_")
        if index.isdigit() and state in IN_QUEUE:
            tasks[int(index)] = state
    return tasks


def task_state(job_id: str, index: int) -> str | None:
    """JobState of an array task that left the queue (scontrol remembers it for MinJobAge), or None."""
    done = subprocess.run(["scontrol", "-o", "show", "job", f"{job_id}_{index}"], capture_output=True, text=True)
    for word in done.stdout.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return None


def _tail(path: Path, chars: int = 400) -> str:
    try:
        return path.read_text(errors="replace")[-chars:].replace("\n", " | ")
    except OSError:
        return ""


def record_lost(b: batches.Batch, index: int, state: str | None) -> dict | None:
    """Publish a failed run.json for array task `index`, which ended without publishing its run
    (its lease is taken first: nobody else may be running it). None when there is nothing to record."""
    run = b.planned(index)
    cdir = b.campaign_dir
    if (cdir / run.run_id / schema.RUN_FILE).exists():
        return None
    lease = leases.take(cdir, run.run_id, "slurm-collector")
    if lease is None:
        return None
    try:
        partial = cdir / f"{run.run_id}.partial"
        log = _tail(partial / schema.LOG_FILE) or _tail(b.dir / f"task-{index}.out")
        cause = CAUSES.get(state or "", "crash")
        task = f"Slurm task {job_id_of(b)}_{index}"
        message = (f"{task} ended {state or 'in a state Slurm no longer remembers'} without publishing its run"
                   + (f"; log ends: {log}" if log else ""))
        partial.mkdir(parents=True, exist_ok=True)
        if not (partial / "request.json").exists():
            from bench import request
            request.write(partial, run.request)
        record = schema.finish(schema.run_record(run.request), {"cause": cause, "message": message[:2000]})
        schema.write_run(partial, record)
        partial.rename(cdir / run.run_id)
        return record
    finally:
        lease.release()


def collect(campaign_dir: Path) -> set[str]:
    """Record every run whose task ended without publishing it; return the run ids still queued
    (pending or running in Slurm) for this campaign."""
    latest: dict[str, tuple[batches.Batch, int]] = {}
    for b in batches.all_batches(campaign_dir, "slurm"):
        for i, run_id in enumerate(b.run_ids, 1):
            latest[run_id] = (b, i)  # a run resubmitted later belongs to its latest batch
    waiting: set[str] = set()
    states: dict[str, dict[int, str]] = {}
    for run_id, (b, index) in latest.items():
        job = job_id_of(b)
        if job is None or (campaign_dir / run_id / schema.RUN_FILE).exists():
            continue
        if job not in states:
            states[job] = queued(job)
        if index in states[job]:
            waiting.add(run_id)
            continue
        info = leases.read(campaign_dir, run_id)
        if info is not None and not leases.is_stale(info):
            waiting.add(run_id)  # its task is winding down (publishing) right now
            continue
        record = record_lost(b, index, task_state(job, index))
        if record is not None:
            execute.say(f"slurm task {job}_{index} ({run_id}): {execute.describe(record)}")
    return waiting


def _progress(job: str, runs: list[PlannedRun], campaign_dir: Path) -> None:
    """Wait for the job to leave the queue, printing its tasks' states when they change and each
    run's outcome as it is published."""
    last = None
    seen = {run.run_id for run in runs if (campaign_dir / run.run_id / schema.RUN_FILE).exists()}
    by_id = {run.run_id: i for i, run in enumerate(runs, 1)}
    while True:
        tasks = queued(job)
        for run in runs:
            if run.run_id not in seen and (campaign_dir / run.run_id / schema.RUN_FILE).exists():
                seen.add(run.run_id)
                record = schema.read_run(campaign_dir / run.run_id)
                execute.say(f"[{by_id[run.run_id]}/{len(runs)}] {run.label} ({run.run_id}): {execute.describe(record)}")
        counts = {state: list(tasks.values()).count(state) for state in sorted(set(tasks.values()))}
        now = ", ".join(f"{n} {state.lower()}" for state, n in counts.items()) or "none left in the queue"
        if now != last:
            execute.say(f"slurm job {job}: {now}")
            last = now
        if not tasks:
            return
        time.sleep(POLL_S)


def by_gpus(runs: list[PlannedRun]) -> dict[int, list[PlannedRun]]:
    """The runs grouped by the GPUs each needs at once (PlannedRun.gpus; 0 on a CPU), in order."""
    groups: dict[int, list[PlannedRun]] = {}
    for run in runs:
        groups.setdefault(run.gpus, []).append(run)
    return dict(sorted(groups.items()))


def run_campaign(runs: list[PlannedRun], campaign_dir: Path, settings: SlurmSettings, wait: bool,
                 retry_failed: bool = False) -> dict[str, int]:
    """Collect, submit what is missing as job arrays (one per GPU count: settings.gpus_per_task is
    set per array), and (wait) follow them to the end.
    Counts: ok, failed (and each failed run's cause: execute.tally), skipped (done earlier), queued (still in
    Slurm when returning)."""
    check_commands()
    campaign_dir.mkdir(parents=True, exist_ok=True)
    waiting = collect(campaign_dir)
    if waiting:
        execute.say(f"slurm: {len(waiting)} runs of this campaign are still queued or running; not submitted again")
    missing = execute.missing_runs(runs, campaign_dir, retry_failed, waiting)
    jobs = sorted({job for b in batches.all_batches(campaign_dir, "slurm") if (job := job_id_of(b))
                   and set(b.run_ids) & waiting})
    for gpus, group in by_gpus(missing).items():  # one array per GPU count: --gres holds for every task
        own = replace(settings, gpus_per_task=gpus)
        b = batches.write(campaign_dir, "slurm", group, asdict(own))
        job = submit(b, own)
        jobs.append(job)
        at_once = f"{own.concurrency} at once" if own.concurrency else "as many at once as Slurm allows"
        each = f", {gpus} GPU{'s' if gpus > 1 else ''} each" if gpus else ""
        execute.say(f"slurm: submitted job {job}, {len(group)} array tasks ({at_once}{each}); "
                    f"script {b.dir / SCRIPT_FILE}")
    if not missing:
        execute.say("slurm: nothing to submit")
    if wait:
        try:
            for job in jobs:
                _progress(job, runs, campaign_dir)
        except KeyboardInterrupt:
            # Stopping the host's follow-up stops nothing in Slurm: say how to do either.
            execute.say(f"slurm: no longer following job(s) {', '.join(jobs)}, which go on in Slurm "
                        f"(scancel {' '.join(jobs)} stops them); the same command collects them later")
    waiting = collect(campaign_dir)  # what is (still) in the queue now, the new submission included
    submitted = {run.run_id for run in missing}
    counts = {"ok": 0, "failed": 0, "skipped": 0, "queued": len(waiting)}
    for run in runs:
        final = campaign_dir / run.run_id / schema.RUN_FILE
        if run.run_id in waiting or not final.exists():
            continue
        if run.run_id in submitted:
            execute.tally(counts, schema.read_run(final.parent))  # its status, and a failed run's cause
        else:
            counts["skipped"] += 1
    return counts
