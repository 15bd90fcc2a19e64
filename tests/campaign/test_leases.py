"""Lease files: one holder per run id, stale leases broken, two campaign processes never run a run twice."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import schema
from campaign import leases
from tests.campaign.scriptrunner import ScriptRunner, planned

REPO = Path(__file__).resolve().parents[2]


def test_a_live_lease_excludes_others_until_released(tmp_path):
    first = leases.take(tmp_path, "r1", "slurm", "12_3")
    assert first is not None and first.still_ours()
    assert leases.take(tmp_path, "r1") is None
    info = leases.read(tmp_path, "r1")
    assert info["executor_id"] == "12_3" and "12_3" in leases.describe(info)
    first.release()
    assert leases.read(tmp_path, "r1") is None
    second = leases.take(tmp_path, "r1")
    assert second is not None
    second.release()


def test_a_dead_holders_lease_is_broken_and_kept_aside(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = leases.lease_path(tmp_path, "r1")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"token": "old", "host": os.uname().nodename, "pid": int(dead.stdout)}))
    lease = leases.take(tmp_path, "r1")
    assert lease is not None and lease.still_ours()
    assert [p.name for p in path.parent.glob(".stale-r1-*")]  # the broken lease is kept for inspection
    lease.release()


def test_a_silent_lease_from_another_host_goes_stale(tmp_path, monkeypatch):
    path = leases.lease_path(tmp_path, "r1")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"token": "old", "host": "elsewhere", "pid": 1}))
    assert leases.take(tmp_path, "r1") is None  # fresh heartbeat: alive as far as we can tell
    old = time.time() - leases.STALE_S - 5
    os.utime(path, (old, old))
    lease = leases.take(tmp_path, "r1")
    assert lease is not None
    lease.release()


CHILD = """
import json, sys
from pathlib import Path
from campaign import execute
from campaign.plan import PlannedRun
from tests.campaign.scriptrunner import ScriptRunner
runs = [PlannedRun(r["request"], r["label"]) for r in json.loads(Path(sys.argv[1]).read_text())]
runner = ScriptRunner("nap", nap_s=0.7)
counts = execute.execute(runs, runner, Path(sys.argv[2]), 30)
Path(sys.argv[3]).write_text(json.dumps({"launched": runner.launched, "counts": counts}))
"""


def test_two_campaign_processes_on_one_folder_never_run_a_run_twice(tmp_path):
    runs = planned(tmp_path, ScriptRunner("ok"), repeats=6)
    plan_file = tmp_path / "runs.json"
    plan_file.write_text(json.dumps([{"request": r.request, "label": r.label} for r in runs]))
    cdir = tmp_path / "results" / "t"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(plan_file), str(cdir), str(tmp_path / f"out{i}.json")],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL) for i in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    outs = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]
    launched = outs[0]["launched"] + outs[1]["launched"]
    assert sorted(launched) == sorted(r.run_id for r in runs)  # each run exactly once, by one of them
    assert all(schema.read_run(cdir / r.run_id)["status"] == "ok" for r in runs)
    assert not list((cdir / leases.LEASES_DIR).iterdir())  # every lease released
    # What one process ran, the other skipped (done) or left to it (in flight): never both ran it.
    for mine, theirs in (outs, outs[::-1]):
        assert mine["counts"]["ok"] == len(mine["launched"])
        assert mine["counts"]["skipped"] + mine["counts"]["elsewhere"] == len(theirs["launched"])
