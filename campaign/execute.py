"""Running a planned campaign: what is missing runs, what is done is skipped, nothing half-done counts.

Completed run folders (a valid run.json, ok or failed) are never touched again, but for a run that failed
for its setup (bench/schema/runfields.py SETUP_CAUSES: a cancelled task, a missing library, bad data, a refused
setting), which is not a result: the next run of the campaign moves it aside (kept) and runs it again, as
--retry-failed does for every failed run. A run is written
into `<id>.partial/` (its request.json first) and renamed to `<id>/` only once its run.json is
written, so an interrupted campaign leaves nothing that looks complete and resumes where it
stopped. A run whose process died without a run.json gets one from the host, made by the same
constructor the entrypoint uses (bench.schema.run_record), with the cause the host observed.

Each run's lease is taken before it starts (campaign/leases.py: a lease file per run id, which holds on
NFS and Lustre too), so two campaign processes or executors on one folder, on one host or several,
never run the same run id at once: a run whose lease a live holder elsewhere has is left to it.

Runs go one at a time by default (the studies' protocol on CPU). Given several slots (a GPU
campaign: one GpuSlot per GPU; a CPU campaign asked for --parallel N: N empty slots), up to one run
per slot is in flight at once, each on its own thread (runners block in a subprocess or a container
wait), each given its slot's GPU. A GPU run over k ranks (PlannedRun.gpus) takes k slots at once: only
the campaign's thread takes slots and the runs' threads only give them back, so it waits for k to be
free and cannot deadlock; a run needing more GPUs than the campaign has is left out, said in one line.
Stopped with Ctrl-C, the runs in flight are killed (the runner's abort()) and left as .partial folders,
to be run again when the campaign resumes.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import sys
import threading
import time
from pathlib import Path

from bench import atomic, failures, request, schema
from bench.errors import UsageError
from campaign import leases
from campaign.plan import PlannedRun
from campaign.runners import GpuSlot, Outcome, Runner, gpus_label

DEFAULT_TIMEOUT_S = 24 * 3600  # the study's limit per run
# The counts' key of the runs that failed with a cause (execute(): "failed:crash", "failed:bad-data", ...).
FAILED_PREFIX = "failed:"


class Cancellation:
    """Set when the executor was told to stop a run (a Slurm task sent SIGTERM by scancel, its time
    limit or preemption): the run is killed and recorded as failed with this cause."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.failure: dict = {}

    def cancel(self, message: str) -> None:
        """Record why, then set the event (the launching thread reads `failure` after it)."""
        self.failure = {"cause": "cancelled", "message": message[:2000]}
        self.event.set()


def failure_of(outcome: Outcome, log_tail: str) -> dict:
    """run.json's failure for a run whose process ended without writing one (bench.failures)."""
    return failures.failure(outcome.timed_out, outcome.returncode, log_tail, failures.OOM_HINT_HOST)


def execute_one(run: PlannedRun, runner: Runner, campaign_dir: Path, timeout_s: float | None,
                gpus: tuple[GpuSlot, ...] = (), stopped: threading.Event | None = None,
                cancelled: Cancellation | None = None, sidecar: dict | None = None) -> dict | None:
    """Launch a run into its .partial folder (given `gpus`), make sure it has a valid run.json, then
    publish it. None, and nothing published, when `stopped` was set meanwhile (the campaign was
    stopped and the run killed: not a result). A run `cancelled` meanwhile is published as failed
    with the cancellation's cause. `sidecar` ({file name: JSON object}) is written into the run
    folder before it is published (an executor's record of where it ran). The caller holds the
    run's lease."""
    if stopped is not None and stopped.is_set():
        return None  # stopped before this thread got to launch it
    partial = (campaign_dir / f"{run.run_id}.partial").resolve()  # runners mount or chdir: absolute
    if partial.exists():
        shutil.rmtree(partial)  # left by an interrupted attempt: never counted as done
    partial.mkdir(parents=True)
    request.write(partial, run.request)
    # The GPUs are a launch argument only, never part of the request (a run is the same on any GPU).
    outcome = (runner.launch(run.request, partial, timeout_s, gpus=gpus) if gpus
               else runner.launch(run.request, partial, timeout_s))
    if stopped is not None and stopped.is_set():
        return None
    try:
        record = schema.read_run(partial)
        if cancelled is not None and cancelled.event.is_set() and record["status"] == "ok":
            cancelled = None  # it finished before the signal reached it: a result like any other
    except (OSError, schema.SchemaError):
        record = None
    if record is None or (cancelled is not None and cancelled.event.is_set()):
        record = schema.run_record(run.request)
        given = [{"index": g.index, "uuid": g.uuid, "name": g.name} for g in gpus]
        if given:
            record["device_used"]["gpu"] = given[0]
        if len(given) > 1:
            record["device_used"]["gpus"] = given
        failure = (cancelled.failure if cancelled is not None and cancelled.event.is_set()
                   else failure_of(outcome, failures.log_tail(partial)))
        schema.write_run(partial, schema.finish(record, failure))
    for name, content in (sidecar or {}).items():
        atomic.write_text(partial / name, json.dumps(content, indent=2, sort_keys=True) + "\n")
    os.rename(partial, campaign_dir / run.run_id)
    return record


def describe(record: dict) -> str:
    """How a published run ended, in one line."""
    if record["status"] == "ok":
        acc = record["results"]["test_accuracy"]
        return (f"ok: test_accuracy {acc:.4f}, training {record['timing']['training_time_s']:.1f} s"
                if acc is not None else "ok")
    return f"failed ({record['failure']['cause']}): {record['failure']['message'][:160]}"


SAY_LOCK = threading.Lock()


def say(line: str) -> None:
    """Print a progress line (whole, even with several runs in flight)."""
    # One write per line under a lock: runs in flight at once never interleave within a line.
    with SAY_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def is_done(run: PlannedRun, campaign_dir: Path, retry_failed: bool, head: str) -> bool:
    """Whether the run is done (ok, or failed and not to be retried): skip it. A failed run to
    retry (asked for, or failed for its setup: schema.SETUP_CAUSES) is moved aside (kept) first."""
    final = campaign_dir / run.run_id
    if not (final / schema.RUN_FILE).exists():
        return False
    try:
        done = schema.read_run(final)
    except schema.SchemaError as exc:
        raise UsageError(f"completed run folder {final} is unreadable ({exc})",
                         "move that folder out of the campaign to redo the run") from None
    setup = schema.failure_kind(done["failure"]) == schema.SETUP
    if done["status"] == "ok" or not (retry_failed or setup):
        say(f"{head}: done earlier ({done['status']}), skipped")
        return True
    if setup:
        say(f"{head}: failed earlier for its setup ({done['failure']['cause']}), not a result: run again")
    shutil.move(final, campaign_dir / f".retried-{run.run_id}-{int(time.time())}")
    return False


def tally(counts: dict[str, int], record: dict) -> None:
    """Count a published run in `counts`: its status, and a failed run's cause under FAILED_PREFIX."""
    counts[record["status"]] = counts.get(record["status"], 0) + 1
    if record["status"] == "failed":
        key = FAILED_PREFIX + record["failure"]["cause"]
        counts[key] = counts.get(key, 0) + 1


def failed_causes(counts: dict[str, int]) -> dict[str, int]:
    """{cause: runs} of the failed runs counted in `counts` (tally())."""
    return {key[len(FAILED_PREFIX):]: n for key, n in counts.items() if key.startswith(FAILED_PREFIX)}


def failed_text(counts: dict[str, int]) -> str:
    """'3 failed', with the causes when any failed: '3 failed (1 crash, 1 timeout, 1 setup: bad-data)'."""
    causes = sorted(failed_causes(counts).items())
    parts = ", ".join([f"{n} {cause}" for cause, n in causes if cause not in schema.SETUP_CAUSES]
                      + [f"{n} setup: {cause}" for cause, n in causes if cause in schema.SETUP_CAUSES])
    return f"{counts.get('failed', 0)} failed" + (f" ({parts})" if parts else "")


def check_setup(counts: dict[str, int]) -> None:
    """Raise a UsageError naming the fix when runs counted in `counts` (this invocation's) failed for
    their setup: they are not results, and the same command runs them again once it is fixed."""
    setup = {cause: n for cause, n in failed_causes(counts).items() if cause in schema.SETUP_CAUSES}
    n = sum(setup.values())
    if not n:
        return
    causes = ", ".join(sorted(setup))
    problem = (f"1 run failed for its setup ({causes}), not for its framework: that is not a result" if n == 1 else
               f"{n} runs failed for their setup ({causes}), not for their framework: those are not results")
    raise UsageError(problem, "fix what the failure message above names, then run the same command again: "
                              "runs that failed for their setup run again, the others stay done")


class _Campaign:
    """One execute() call: the runner, the folder, the counts, and the runs in flight."""

    def __init__(self, runner: Runner, campaign_dir: Path, timeout_s: float | None, slots: list) -> None:
        self.runner, self.campaign_dir, self.timeout_s = runner, campaign_dir, timeout_s
        # ok, failed (and each failed run's cause: tally()), skipped, elsewhere, unfit
        self.counts = {"ok": 0, "failed": 0, "skipped": 0, "elsewhere": 0, "unfit": 0}
        self.free: queue.Queue = queue.Queue()
        self.slots = len(slots)
        for slot in slots:
            self.free.put(slot)
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self.stopped = threading.Event()
        self._counts_lock = threading.Lock()

    def run(self, head: str, run: PlannedRun, gpus: tuple[GpuSlot, ...], lease: leases.Lease) -> None:
        """Run one (its lease held) on `gpus` (none: a CPU run), saying where it runs and how it ended;
        release the lease."""
        where = f" on {gpus_label(gpus)}" if gpus else ""
        say(f"{head}: running{where}")
        t0 = time.monotonic()
        try:
            record = execute_one(run, self.runner, self.campaign_dir, self.timeout_s, gpus, self.stopped)
        finally:
            lease.release()
        if record is None:
            say(f"{head}: stopped{where}; it runs again when the campaign resumes")
            return
        with self._counts_lock:
            tally(self.counts, record)
        say(f"{head}: {describe(record)} [{time.monotonic() - t0:.0f} s]{where}")

    def start(self, head: str, run: PlannedRun, lease: leases.Lease, need: int = 1) -> bool:
        """Start the run (its lease held) on a thread once `need` slots are free (blocks until they
        are); False, the lease released and nothing started, once a run in flight has raised."""
        taken = [self.free.get() for _ in range(need)]  # this thread alone takes: no two runs hold halves
        if self.errors:
            for slot in taken:
                self.free.put(slot)
            lease.release()
            return False
        gpus = tuple(slot for slot in taken if slot is not None)

        def work() -> None:
            # Registered by the thread itself, before it can launch anything: abort() sets `stopped`
            # before it reads the list, so a thread it does not see never launches (execute_one).
            with self._counts_lock:
                self.threads.append(threading.current_thread())
            try:
                self.run(head, run, gpus, lease)
            except BaseException as exc:  # re-raised in the campaign's thread by wait()
                self.errors.append(exc)
            finally:
                for slot in taken:
                    self.free.put(slot)

        thread = threading.Thread(target=work, name=f"run-{run.run_id}", daemon=True)
        thread.start()
        return True

    def wait(self) -> None:
        """Wait for every run in flight; re-raise the first error one of them raised."""
        for _ in range(self.slots):  # each run gives its slot back as its last act
            self.free.get()
        if self.errors:
            raise self.errors[0]

    def abort(self, grace_s: float = 30.0) -> None:
        """The campaign was stopped: publish nothing more, kill what is in flight, let it wind down."""
        self.stopped.set()
        kill = getattr(self.runner, "abort", None)
        if kill is not None:
            kill()
        deadline = time.monotonic() + grace_s
        with self._counts_lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


def _lease_or_skip(run: PlannedRun, campaign_dir: Path, retry_failed: bool, head: str,
                   holder: tuple[str, str] | None) -> leases.Lease | str:
    """Whether the run is to be run now: 'done' (done earlier: skipped) or 'elsewhere' (a live holder
    has its lease: said so), else its lease taken for `holder` (executor, executor id), or 'missing' when
    no holder is given (the caller only looks: a scheduler's task takes the lease when it runs)."""
    if is_done(run, campaign_dir, retry_failed, head):
        return "done"
    if holder is None:
        lease, info = None, leases.read(campaign_dir, run.run_id)
        live = info is not None and not leases.is_stale(info)
    else:
        lease = leases.take(campaign_dir, run.run_id, *holder)
        info = leases.read(campaign_dir, run.run_id) if lease is None else None
        live = lease is None  # take() refused: a live holder has it
    if live:
        say(f"{head}: running elsewhere ({leases.describe(info or {})}), left to it")
        return "elsewhere"
    # Published by its last holder between the check above and the lease: done, not to be redone.
    if lease is not None and (campaign_dir / run.run_id / schema.RUN_FILE).exists() \
            and is_done(run, campaign_dir, retry_failed, head):
        lease.release()
        return "done"
    return lease if lease is not None else "missing"


def lease_missing(run: PlannedRun, campaign_dir: Path, retry_failed: bool, head: str,
                  executor: str = "local", executor_id: str = "") -> leases.Lease | str:
    """The run's lease when it is to be run here now; else why not: 'done' (skipped) or 'elsewhere'
    (a live holder has it)."""
    return _lease_or_skip(run, campaign_dir, retry_failed, head, (executor, executor_id))


def missing_runs(runs: list[PlannedRun], campaign_dir: Path, retry_failed: bool,
                 waiting: set[str] | frozenset = frozenset()) -> list[PlannedRun]:
    """The runs to hand to a scheduler: not done, not `waiting` in its queue, not leased to a live
    holder (saying so for each left out)."""
    missing = []
    for i, run in enumerate(runs, 1):
        if run.run_id in waiting:
            continue
        head = f"[{i}/{len(runs)}] {run.label} ({run.run_id})"
        if _lease_or_skip(run, campaign_dir, retry_failed, head, None) == "missing":
            missing.append(run)
    return missing


def execute(runs: list[PlannedRun], runner: Runner, campaign_dir: Path, timeout_s: float | None,
            retry_failed: bool = False, slots: list[GpuSlot | None] | tuple = (None,)) -> dict[str, int]:
    """Run what is missing, skip what is done or leased elsewhere; return counts of ok, failed (and
    of each failed run's cause, FAILED_PREFIX + cause), skipped (done earlier), elsewhere (in flight
    in another process) and unfit (needing more GPUs than `slots` holds) runs.

    Up to len(slots) runs are in flight at once, each given slots of its own: GpuSlots (a GPU
    campaign: one per rank of the run, PlannedRun.gpus) or one None (a CPU run). One slot (the
    default) runs them one at a time in this thread, as the studies did."""
    slots = list(slots) or [None]
    on_gpus = any(slot is not None for slot in slots)
    campaign_dir.mkdir(parents=True, exist_ok=True)
    campaign = _Campaign(runner, campaign_dir, timeout_s, slots)
    try:
        for i, run in enumerate(runs, 1):
            head = f"[{i}/{len(runs)}] {run.label} ({run.run_id})"
            need = run.gpus if on_gpus else 1
            if need > len(slots):
                say(f"{head}: needs {need} GPUs, this campaign has {len(slots)} (GPUS=...); left out")
                campaign.counts["unfit"] += 1
                continue
            lease = lease_missing(run, campaign_dir, retry_failed, head)
            if lease == "done":
                campaign.counts["skipped"] += 1
            elif lease == "elsewhere":
                campaign.counts["elsewhere"] += 1
            elif len(slots) == 1:
                campaign.run(head, run, tuple(s for s in slots if s is not None), lease)
            elif not campaign.start(head, run, lease, need):
                break
        campaign.wait()
    except BaseException:
        campaign.abort()
        raise
    return campaign.counts
