"""The Slurm executor: its job script, and (slow, on a real cluster) a campaign whose array task is
cancelled mid-run: recorded as failed with its cause, the other runs intact, and only it resubmitted."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import schema
from campaign import batch as batches
from campaign.executors import QUEUED_EXIT, slurm
from tests.campaign.scriptrunner import ScriptRunner, planned

REPO = Path(__file__).resolve().parents[2]


def test_the_job_script_is_one_array_task_per_run(tmp_path):
    runs = planned(tmp_path, ScriptRunner("ok"), repeats=3)
    b = batches.write(tmp_path / "results" / "t", "slurm", runs, {"runner": "local"})
    settings = slurm.SlurmSettings(runner="local", timeout_s=3600, partition="gpu", account="proj", concurrency=2,
                                   exclusive=True, gpus_per_task=1, extra=("--qos=long",))
    text = slurm.script(b, settings, python="/venv/bin/python")
    for line in ("#SBATCH --array=1-3%2", "#SBATCH --gres=gpu:1", "#SBATCH --partition=gpu",
                 "#SBATCH --account=proj", "#SBATCH --qos=long", f"#SBATCH --output={b.dir}/task-%a.out",
                 "#SBATCH --time=76"):
        assert line in text.splitlines()
    assert "--exclusive" in text and 'exec env PYTHONPATH=' in text and '--index "$SLURM_ARRAY_TASK_ID"' in text
    # Task i runs line i of runs.txt, whose request the batch keeps.
    assert [b.planned(i).run_id for i in (1, 2, 3)] == [r.run_id for r in runs]
    assert json.loads(b.request_path(runs[0].run_id).read_text()) == runs[0].request


def test_runs_needing_different_gpu_counts_go_in_one_array_each(tmp_path):
    from campaign.plan import PlannedRun
    from tests.runrecord import minimal_request

    runs = [PlannedRun(minimal_request(seed, device="gpu", sweep={"ranks": ranks}), f"run {seed}")
            for seed, ranks in enumerate((2, 1, 4, 2))]
    groups = slurm.by_gpus(runs)
    assert {k: [r.run_id for r in v] for k, v in groups.items()} == {
        1: [runs[1].run_id], 2: [runs[0].run_id, runs[3].run_id], 4: [runs[2].run_id]}
    b = batches.write(tmp_path / "results" / "t", "slurm", groups[4], {"runner": "local"})
    text = slurm.script(b, slurm.SlurmSettings(runner="local", timeout_s=60, gpus_per_task=4))
    assert "#SBATCH --gres=gpu:4" in text.splitlines() and "#SBATCH --ntasks=1" in text.splitlines()
    cpu = [PlannedRun(minimal_request(0), "cpu run")]
    assert list(slurm.by_gpus(cpu)) == [0]


def _cluster_up() -> bool:
    try:
        done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "UP" in done.stdout


@pytest.fixture(scope="module")
def cluster():
    if not _cluster_up():
        if os.environ.get("CI") == "true":
            pytest.fail("CI starts a one-node Slurm cluster (make slurm-up) before the tests; none answers")
        pytest.skip("no Slurm cluster answers (make slurm-up starts a one-node one)")


def _campaign(tmp_path, wait: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "campaign", "run", "--workloads", "lstm-imdb", "--frameworks", "pytorch",
           "--profile", "quick", "--repeats", "2", "--runner", "local", "--data", "synthetic",
           "--data-root", str(tmp_path / "data"), "--results", str(tmp_path / "results"), "--campaign", "c",
           "--executor", "slurm", "--wait", wait]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_cancelled_array_task_is_recorded_and_only_it_resubmitted(tmp_path, cluster):
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets", "imdb",
                    "-q"], cwd=REPO, check=True)
    first = _campaign(tmp_path, "no")
    assert first.returncode == QUEUED_EXIT, first.stdout + first.stderr
    cdir = tmp_path / "results" / "c"
    [b] = batches.all_batches(cdir, "slurm")
    job = slurm.job_id_of(b)
    victim, other = b.run_ids
    # Cancel task 1 once its run is training (an epoch line in its log), as a user's scancel would.
    log = cdir / f"{victim}.partial" / schema.LOG_FILE
    _wait_for(lambda: log.exists() and "epoch " in log.read_text(errors="replace"), 600, "task 1 to train")
    subprocess.run(["scancel", f"{job}_1"], check=True)
    _wait_for(lambda: not slurm.queued(job), 600, "the job array to end")

    cancelled = schema.read_run(cdir / victim)
    assert cancelled["status"] == "failed" and cancelled["failure"]["cause"] == "cancelled"
    assert "SIGTERM" in cancelled["failure"]["message"] and f"{job}_1" in cancelled["failure"]["message"]
    intact = schema.read_run(cdir / other)
    assert intact["status"] == "ok"
    assert json.loads((cdir / other / "executor.json").read_text())["executor_id"] == f"{job}_2"

    again = _campaign(tmp_path, "yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "submitted job" in again.stdout and "1 array tasks" in again.stdout, again.stdout
    later = [x for x in batches.all_batches(cdir, "slurm") if x.dir != b.dir]
    assert [x.run_ids for x in later] == [(victim,)]
    assert schema.read_run(cdir / victim)["status"] == "ok"
    assert schema.read_run(cdir / other)["started_at"] == intact["started_at"]  # untouched
    assert list(cdir.glob(f".retried-{victim}-*"))  # the cancelled record is kept aside

    third = _campaign(tmp_path, "yes")
    assert third.returncode == 0 and "nothing to submit" in third.stdout, third.stdout
