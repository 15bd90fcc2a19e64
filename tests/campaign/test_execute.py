"""Running a campaign: skip what is done, publish only complete runs, record failures with their cause."""

import pytest

from bench import request, schema
from campaign import execute
from tests.campaign.scriptrunner import ScriptRunner, planned


def test_completed_runs_are_skipped_and_untouched(tmp_path):
    runner = ScriptRunner("ok")
    runs = planned(tmp_path, runner)
    cdir = tmp_path / "results" / "t"
    assert execute.execute(runs, runner, cdir, 10) == {"ok": 2, "failed": 0, "skipped": 0}
    before = {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file() and p.name != ".lock"}
    again = ScriptRunner("ok")
    assert execute.execute(runs, again, cdir, 10) == {"ok": 0, "failed": 0, "skipped": 2}
    assert again.launched == []
    assert before == {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file() and p.name != ".lock"}


def test_each_run_folder_keeps_its_request(tmp_path):
    runner = ScriptRunner("ok")
    runs = planned(tmp_path, runner, repeats=1)
    execute.execute(runs, runner, tmp_path / "results" / "t", 10)
    folder = tmp_path / "results" / "t" / runs[0].run_id
    assert request.read(folder / request.REQUEST_FILE) == runs[0].request


def test_leftover_partial_is_redone(tmp_path):
    runner = ScriptRunner("ok")
    runs = planned(tmp_path, runner, repeats=1)
    partial = tmp_path / "results" / "t" / f"{runs[0].run_id}.partial"
    partial.mkdir(parents=True)
    (partial / "junk.txt").write_text("from an interrupted attempt")
    execute.execute(runs, runner, tmp_path / "results" / "t", 10)
    final = partial.with_name(runs[0].run_id)
    assert not partial.exists() and not (final / "junk.txt").exists()
    assert schema.read_run(final)["status"] == "ok"


@pytest.mark.parametrize("behaviour, cause, text", [
    ("crash", "crash", "exit code 3"),
    ("sleep", "timeout", "time limit"),
    ("kill", "killed", "SIGKILL"),
])
def test_failures_are_recorded_with_their_cause(tmp_path, behaviour, cause, text):
    runner = ScriptRunner(behaviour)
    runs = planned(tmp_path, runner, repeats=1)
    counts = execute.execute(runs, runner, tmp_path / "results" / "t", timeout_s=1.5)
    assert counts["failed"] == 1
    rec = schema.read_run(tmp_path / "results" / "t" / runs[0].run_id)
    assert rec["failure"]["cause"] == cause and text in rec["failure"]["message"]
    # The host's record is made from the run's request, like the entrypoint's.
    assert rec["run_id"] == runs[0].run_id and rec["spec"] == runs[0].request["spec"]
    assert rec["config"]["era"] == "current" and rec["config"]["threads"] == 1
    # A failed run is a result: not redone unless asked.
    assert execute.execute(runs, ScriptRunner("ok"), tmp_path / "results" / "t", 10)["skipped"] == 1
    retry = ScriptRunner("ok")
    assert execute.execute(runs, retry, tmp_path / "results" / "t", 10, retry_failed=True)["ok"] == 1
    assert list((tmp_path / "results" / "t").glob(".retried-*")), "the failed attempt must be kept"
