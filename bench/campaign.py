"""Campaigns: frameworks x workloads x repeats on one device, expanded into runs with content ids.

A run's id is a hash of (framework, environment identity, resolved workload spec, dataset hash,
device, seed, repeat) in canonical form, so a reordered framework list or a re-run finds the same
ids. Completed run folders (a valid run.json, ok or failed) are never touched again; a run is
written into `<id>.partial/` and renamed to `<id>/` only once its run.json is written, so an
interrupted campaign leaves nothing that looks complete and resumes where it stopped.

A campaign folder holds runs of one profile, data source and thread count (campaign.json records
them on first use): resuming it with others would mix them in one report as if they were repeats.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from bench import atomic, dataset, frameworks, schema, spec
from bench.errors import UsageError
from bench.runners import Launch, Outcome, Runner

DEFAULT_TIMEOUT_S = 24 * 3600  # the study's limit per run
SETTINGS_FILE = "campaign.json"
# campaign.json key -> the make variable that sets it (for the error that names the fix).
SETTING_VARS = {"profile": "PROFILE", "data": "DATA", "threads": "THREADS"}


@dataclass(frozen=True)
class Matrix:
    """What the user asked for, validated."""

    frameworks: tuple[str, ...]
    workloads: tuple[str, ...]
    device: str
    profile: str
    repeats: int
    data_source: str
    seed: int = 0


def parse_repeats(text: str) -> int:
    """REPEATS as a positive integer, or a UsageError."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"REPEATS must be a positive whole number, got '{text}'", "set e.g. REPEATS=5")
    return value


def build_matrix(
    framework_names: list[str], workload_names: list[str], device: str, profile: str,
    repeats: str | int, data_source: str, seed: int = 0,
) -> Matrix:
    """Validate every input before anything runs; order-independent (names are sorted, deduplicated)."""
    if not framework_names:
        raise UsageError("no framework given", f"set FRAMEWORKS to some of: {', '.join(frameworks.known_frameworks())}")
    if not workload_names:
        raise UsageError("no workload given", f"set WORKLOADS to some of: {', '.join(spec.known_workloads())}")
    for name in framework_names:
        frameworks.check_name(name)
    for name in workload_names:
        spec.load(name, profile)  # raises for an unknown workload or profile
    if device not in ("cpu", "gpu"):
        raise UsageError(f"unknown device '{device}'", "choose cpu or gpu (DEVICE=...)")
    dataset.check_source(data_source)
    return Matrix(
        tuple(sorted(set(framework_names))), tuple(sorted(set(workload_names))), device, profile,
        parse_repeats(repeats), data_source, seed,
    )


def datasets_needed(workload_names: list[str]) -> list[str]:
    """The datasets a list of workloads reads."""
    return sorted({spec.load(w)["dataset"] for w in workload_names})


@dataclass(frozen=True)
class PlannedRun:
    """One run of the matrix with its id and where its data lives."""

    launch: Launch
    label: str


def run_id(framework: str, env_id: str, wl: dict, dataset_sha256: str, device: str, seed: int,
           repeat: int) -> str:
    """Content-derived id of a run."""
    return spec.content_hash({
        "framework": framework, "env": env_id, "workload": wl, "dataset": dataset_sha256,
        "device": device, "seed": seed, "repeat": repeat,
    })


def check_settings(campaign_dir: Path, wanted: dict) -> None:
    """Stop when the campaign folder's recorded settings (campaign.json) differ from `wanted`: its
    runs would be reported beside the earlier ones as repeats of one thing. No record: nothing to check."""
    path = campaign_dir / SETTINGS_FILE
    if not path.exists():
        return
    try:
        have = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is unreadable ({exc})", "restore it, or choose another CAMPAIGN name") from None
    differ = [key for key in SETTING_VARS if have.get(key) != wanted[key]]
    if differ:
        was = " ".join(f"{SETTING_VARS[k]}={have.get(k)}" for k in differ)
        now = " ".join(f"{SETTING_VARS[k]}={wanted[k]}" for k in differ)
        raise UsageError(f"campaign folder {campaign_dir} holds runs made with {was}, not {now}",
                         f"resume it with {was}, or choose another CAMPAIGN name")


def plan(matrix: Matrix, runner: Runner, campaign: str, campaign_dir: Path, data_root: Path,
         threads: int | None) -> list[PlannedRun]:
    """Check the settings and the data, prepare every environment, and list the runs in a stable order."""
    settings = {"profile": matrix.profile, "data": matrix.data_source, "threads": threads}
    check_settings(campaign_dir, settings)
    data = {}
    for name in datasets_needed(list(matrix.workloads)):
        folder = dataset.prepared_dir(data_root, name, matrix.data_source)
        try:
            data[name] = (folder, dataset.read_meta(folder)["arrays_sha256"])
        except UsageError:
            fix = (f"run 'make download DATASETS={name}'" if matrix.data_source == "real"
                   else f"run 'python -m data synthetic --datasets {name}' (make demo does it)")
            raise UsageError(f"dataset '{name}' ({matrix.data_source}) is not prepared in {folder}", fix) from None
    env_ids = {}
    for fw in matrix.frameworks:
        print(f"environment for {fw} ({runner.name} runner) ...", flush=True)
        env_ids[fw] = runner.prepare(fw)
    runs = []
    for wl_name in matrix.workloads:
        wl = spec.load(wl_name, matrix.profile)
        folder, sha = data[wl["dataset"]]
        for fw in matrix.frameworks:
            for repeat in range(1, matrix.repeats + 1):
                seed = matrix.seed + repeat - 1
                rid = run_id(fw, env_ids[fw], wl, sha, matrix.device, seed, repeat)
                launch = Launch(
                    framework=fw, workload=wl_name, profile=matrix.profile, device=matrix.device,
                    seed=seed, repeat=repeat, campaign=campaign, run_id=rid, data_dir=folder.resolve(),
                    out_dir=(campaign_dir / f"{rid}.partial").resolve(), env_id=env_ids[fw],
                    threads=threads,
                )
                runs.append(PlannedRun(launch, f"{fw} {wl_name} {matrix.device} repeat {repeat}"))
    if not (campaign_dir / SETTINGS_FILE).exists():
        atomic.write_text(campaign_dir / SETTINGS_FILE, json.dumps(settings, sort_keys=True) + "\n")
    return runs


def _failure_record(launch: Launch, outcome: Outcome, runner: str, log_tail: str) -> dict:
    """run.json for a run whose process died before it could write its own."""
    if outcome.timed_out:
        cause, msg = "timeout", "the run exceeded its time limit and was stopped"
    elif outcome.returncode == -9:
        cause, msg = "killed", "killed by SIGKILL: often the kernel's out-of-memory killer (see dmesg)"
    elif outcome.returncode < 0:
        cause, msg = "killed", f"killed by signal {-outcome.returncode}"
    else:
        cause, msg = "crash", f"exit code {outcome.returncode} without a run.json; log ends: {log_tail}"
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return {
        "schema_version": schema.SCHEMA_VERSION, "run_id": launch.run_id, "status": "failed",
        "failure": {"cause": cause, "message": msg[:2000]},
        "config": {"framework": launch.framework, "workload": launch.workload, "profile": launch.profile,
                   "device": launch.device, "seed": launch.seed, "repeat": launch.repeat,
                   "campaign": launch.campaign, "runner": runner},
        "spec": spec.load(launch.workload, launch.profile),
        "dataset": {"path": str(launch.data_dir)},
        "environment": {"runner": runner, "env_id": launch.env_id,
                        # the docker runner's environment identity is the image id it ran
                        "image_digest": launch.env_id if runner == "docker" else None},
        "host": {}, "device_used": {},
        "model": {}, "monitor": {},
        "timing": {"training_time_s": None, "eval_time_s": None, "setup_time_s": None,
                   "train_start_unix": None, "train_end_unix": None, "definition": "not measured"},
        "results": {"test_accuracy": None, "final_loss": None, "epochs_completed": 0},
        "started_at": now, "finished_at": now,
    }


def _log_tail(run_dir: Path, chars: int = 400) -> str:
    try:
        return (run_dir / schema.LOG_FILE).read_text(errors="replace")[-chars:].replace("\n", " | ")
    except OSError:
        return ""


def execute_one(run: PlannedRun, runner: Runner, timeout_s: float | None) -> dict:
    """Launch a run into its .partial folder, make sure it has a valid run.json, then publish it."""
    partial = run.launch.out_dir
    final = partial.with_name(run.launch.run_id)
    if partial.exists():
        shutil.rmtree(partial)  # left by an interrupted attempt: never counted as done
    partial.mkdir(parents=True)
    outcome = runner.launch(run.launch, timeout_s)
    try:
        record = schema.read_run(partial)
    except (OSError, schema.SchemaError):
        record = _failure_record(run.launch, outcome, runner.name, _log_tail(partial))
        schema.write_run(partial, record)
    os.rename(partial, final)
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
            final = campaign_dir / run.launch.run_id
            head = f"[{i}/{len(runs)}] {run.label} ({run.launch.run_id})"
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
                shutil.move(final, campaign_dir / f".retried-{run.launch.run_id}-{int(time.time())}")
            print(f"{head}: running", flush=True)
            t0 = time.monotonic()
            record = execute_one(run, runner, timeout_s)
            counts[record["status"]] += 1
            print(f"{head}: {_describe(record)} [{time.monotonic() - t0:.0f} s]", flush=True)
    finally:
        lock.close()
    return counts
