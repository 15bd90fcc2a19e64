"""Campaign logic: canonical ids, skip what is done, publish only complete runs, record failures."""

import subprocess
import sys

import pytest

from bench import campaign, schema
from bench.errors import UsageError
from bench.runners import Launch, Outcome
from tests.runrecord import minimal_run


class ScriptRunner:
    """A runner whose 'entrypoint' is a small real process, chosen per test."""

    name = "local"

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.launched: list[str] = []

    def prepare(self, framework: str) -> str:
        return "env-" + framework

    def launch(self, launch: Launch, timeout_s):
        self.launched.append(launch.run_id)
        if self.behaviour == "ok":
            schema.write_run(launch.out_dir, minimal_run(launch.run_id))
            return Outcome(0)
        code = {"crash": "import sys; print('boom'); sys.exit(3)",
                "sleep": "import time; time.sleep(30)",
                "kill": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}[self.behaviour]
        with open(launch.out_dir / schema.LOG_FILE, "w") as log:
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT)
            try:
                return Outcome(proc.wait(timeout=timeout_s))
            except subprocess.TimeoutExpired:
                proc.kill()
                return Outcome(proc.wait(), timed_out=True)


def _runs(tmp_path, runner, repeats=2):
    m = campaign.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", repeats, "real")
    prepared = tmp_path / "data" / "prepared" / "mnist"
    prepared.mkdir(parents=True)
    (prepared / "meta.json").write_text('{"format_version": 1, "arrays_sha256": "abc"}')
    (prepared / "arrays.npz").write_bytes(b"")
    return campaign.plan(m, runner, "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)


def test_run_ids_do_not_depend_on_the_order_of_names():
    a = campaign.build_matrix(["pytorch", "keras"], ["lstm-imdb", "cnn-mnist"], "cpu", "quick", "2", "real")
    b = campaign.build_matrix(["keras", "pytorch", "keras"], ["cnn-mnist", "lstm-imdb"], "cpu", "quick", 2,
                              "real")
    assert a == b


@pytest.mark.parametrize("args, text", [
    ((["tensorflow1"], ["cnn-mnist"], "cpu", "quick", "2", "real"), "unknown framework 'tensorflow1'"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "two", "real"), "REPEATS must be a positive whole number"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "0", "real"), "REPEATS must be a positive whole number"),
    ((["pytorch"], ["cnn-mnist"], "tpu", "quick", "1", "real"), "unknown device 'tpu'"),
    ((["pytorch"], ["cnn-mnist"], "cpu", "quick", "1", "fake"), "unknown data source 'fake'"),
])
def test_bad_matrix_input(args, text):
    with pytest.raises(UsageError, match=text):
        campaign.build_matrix(*args)


def test_missing_data_names_the_download(tmp_path):
    m = campaign.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "real")
    with pytest.raises(UsageError, match="make download DATASETS=mnist"):
        campaign.plan(m, ScriptRunner("ok"), "t", tmp_path / "r", tmp_path / "data", 1)


def test_completed_runs_are_skipped_and_untouched(tmp_path):
    runner = ScriptRunner("ok")
    runs = _runs(tmp_path, runner)
    assert len({r.launch.run_id for r in runs}) == 2
    cdir = tmp_path / "results" / "t"
    assert campaign.execute(runs, runner, cdir, 10) == {"ok": 2, "failed": 0, "skipped": 0}
    before = {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file() and p.name != ".lock"}
    again = ScriptRunner("ok")
    assert campaign.execute(runs, again, cdir, 10) == {"ok": 0, "failed": 0, "skipped": 2}
    assert again.launched == []
    assert before == {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file() and p.name != ".lock"}


def test_leftover_partial_is_redone(tmp_path):
    runner = ScriptRunner("ok")
    runs = _runs(tmp_path, runner, repeats=1)
    partial = runs[0].launch.out_dir
    partial.mkdir(parents=True)
    (partial / "junk.txt").write_text("from an interrupted attempt")
    campaign.execute(runs, runner, tmp_path / "results" / "t", 10)
    final = partial.with_name(runs[0].launch.run_id)
    assert not partial.exists() and not (final / "junk.txt").exists()
    assert schema.read_run(final)["status"] == "ok"


@pytest.mark.parametrize("behaviour, cause, text", [
    ("crash", "crash", "exit code 3"),
    ("sleep", "timeout", "time limit"),
    ("kill", "killed", "SIGKILL"),
])
def test_failures_are_recorded_with_their_cause(tmp_path, behaviour, cause, text):
    runner = ScriptRunner(behaviour)
    runs = _runs(tmp_path, runner, repeats=1)
    counts = campaign.execute(runs, runner, tmp_path / "results" / "t", timeout_s=1.5)
    assert counts["failed"] == 1
    rec = schema.read_run(tmp_path / "results" / "t" / runs[0].launch.run_id)
    assert rec["failure"]["cause"] == cause and text in rec["failure"]["message"]
    # A failed run is a result: not redone unless asked.
    assert campaign.execute(runs, ScriptRunner("ok"), tmp_path / "results" / "t", 10)["skipped"] == 1
    retry = ScriptRunner("ok")
    assert campaign.execute(runs, retry, tmp_path / "results" / "t", 10, retry_failed=True)["ok"] == 1
    assert list((tmp_path / "results" / "t").glob(".retried-*")), "the failed attempt must be kept"


def test_a_campaign_keeps_its_profile_data_and_threads(tmp_path):
    runner = ScriptRunner("ok")
    runs = _runs(tmp_path, runner)
    campaign_dir = tmp_path / "results" / "t"
    assert (campaign_dir / campaign.SETTINGS_FILE).exists()
    campaign.execute(runs, runner, campaign_dir, timeout_s=30)
    done = sorted(p.name for p in campaign_dir.iterdir())
    m = campaign.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 2, "real")
    again = campaign.plan(m, runner, "t", campaign_dir, tmp_path / "data", threads=1)  # same settings: resumes
    assert [r.launch.run_id for r in again] == [r.launch.run_id for r in runs]
    with pytest.raises(UsageError) as caught:
        campaign.plan(m, runner, "t", campaign_dir, tmp_path / "data", threads=2)
    assert str(caught.value) == (f"campaign folder {campaign_dir} holds runs made with THREADS=1, not THREADS=2; "
                                 "resume it with THREADS=1, or choose another CAMPAIGN name")
    quick = campaign.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "quick", 2, "real")
    with pytest.raises(UsageError, match="PROFILE=smoke, not PROFILE=quick"):
        campaign.plan(quick, runner, "t", campaign_dir, tmp_path / "data", threads=1)
    assert sorted(p.name for p in campaign_dir.iterdir()) == done  # nothing written or removed
