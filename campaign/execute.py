"""Running a planned campaign: what is missing runs, what is done is skipped, nothing half-done counts.

Completed run folders (a valid run.json, ok or failed) are never touched again. A run is written
into `<id>.partial/` (its request.json first) and renamed to `<id>/` only once its run.json is
written, so an interrupted campaign leaves nothing that looks complete and resumes where it
stopped. A run whose process died without a run.json gets one from the host, made by the same
constructor the entrypoint uses (bench.schema.run_record), with the cause the host observed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

from bench import request, schema
from bench.errors import UsageError
from campaign.plan import PlannedRun
from campaign.runners import Outcome, Runner

DEFAULT_TIMEOUT_S = 24 * 3600  # the study's limit per run


def failure_of(outcome: Outcome, log_tail: str) -> dict:
    """run.json's failure for a run whose process ended without writing one."""
    if outcome.timed_out:
        cause, msg = "timeout", "the run exceeded its time limit and was stopped"
    elif outcome.returncode == -9:
        cause, msg = "killed", "killed by SIGKILL: often the kernel's out-of-memory killer (see dmesg)"
    elif outcome.returncode < 0:
        cause, msg = "killed", f"killed by signal {-outcome.returncode}"
    else:
        cause, msg = "crash", f"exit code {outcome.returncode} without a run.json; log ends: {log_tail}"
    return {"cause": cause, "message": msg[:2000]}


def _log_tail(run_dir: Path, chars: int = 400) -> str:
    try:
        return (run_dir / schema.LOG_FILE).read_text(errors="replace")[-chars:].replace("\n", " | ")
    except OSError:
        return ""


def execute_one(run: PlannedRun, runner: Runner, campaign_dir: Path, timeout_s: float | None) -> dict:
    """Launch a run into its .partial folder, make sure it has a valid run.json, then publish it."""
    partial = (campaign_dir / f"{run.run_id}.partial").resolve()  # runners mount or chdir: absolute
    if partial.exists():
        shutil.rmtree(partial)  # left by an interrupted attempt: never counted as done
    partial.mkdir(parents=True)
    request.write(partial, run.request)
    outcome = runner.launch(run.request, partial, timeout_s)
    try:
        record = schema.read_run(partial)
    except (OSError, schema.SchemaError):
        record = schema.run_record(run.request)
        schema.write_run(partial, schema.finish(record, failure_of(outcome, _log_tail(partial))))
    os.rename(partial, campaign_dir / run.run_id)
    return record


def _lock(campaign_dir: Path):
    fh = open(campaign_dir / ".lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise UsageError(
            f"campaign folder {campaign_dir} is in use by another campaign process",
            "wait for it to finish, or choose another CAMPAIGN name",
        ) from None
    return fh


def _describe(record: dict) -> str:
    if record["status"] == "ok":
        acc = record["results"]["test_accuracy"]
        return (f"ok: test_accuracy {acc:.4f}, training {record['timing']['training_time_s']:.1f} s"
                if acc is not None else "ok")
    return f"failed ({record['failure']['cause']}): {record['failure']['message'][:160]}"


def execute(runs: list[PlannedRun], runner: Runner, campaign_dir: Path, timeout_s: float | None,
            retry_failed: bool = False) -> dict[str, int]:
    """Run what is missing, skip what is done; return counts of ok, failed and skipped runs."""
    campaign_dir.mkdir(parents=True, exist_ok=True)
    lock = _lock(campaign_dir)
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    try:
        for i, run in enumerate(runs, 1):
            final = campaign_dir / run.run_id
            head = f"[{i}/{len(runs)}] {run.label} ({run.run_id})"
            if (final / schema.RUN_FILE).exists():
                try:
                    done = schema.read_run(final)
                except schema.SchemaError as exc:
                    raise UsageError(f"completed run folder {final} is unreadable ({exc})",
                                     "move that folder out of the campaign to redo the run") from None
                if done["status"] == "ok" or not retry_failed:
                    print(f"{head}: done earlier ({done['status']}), skipped", flush=True)
                    counts["skipped"] += 1
                    continue
                shutil.move(final, campaign_dir / f".retried-{run.run_id}-{int(time.time())}")
            print(f"{head}: running", flush=True)
            t0 = time.monotonic()
            record = execute_one(run, runner, campaign_dir, timeout_s)
            counts[record["status"]] += 1
            print(f"{head}: {_describe(record)} [{time.monotonic() - t0:.0f} s]", flush=True)
    finally:
        lock.close()
    return counts
