"""Running a campaign: skip what is done, publish only complete runs, record failures with their cause."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from bench import request, schema
from bench.errors import UsageError
from campaign import execute, leases, plan
from campaign.runners import Outcome, gpu_slots
from tests.campaign.scriptrunner import ScriptRunner, planned, prepared_mnist


def test_completed_runs_are_skipped_and_untouched(tmp_path):
    runner = ScriptRunner("ok")
    runs = planned(tmp_path, runner)
    cdir = tmp_path / "results" / "t"
    assert execute.execute(runs, runner, cdir, 10) == {"ok": 2, "failed": 0, "skipped": 0, "elsewhere": 0, "unfit": 0}
    before = {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file()}
    again = ScriptRunner("ok")
    assert execute.execute(runs, again, cdir, 10) == {"ok": 0, "failed": 0, "skipped": 2, "elsewhere": 0, "unfit": 0}
    assert again.launched == []
    assert before == {p: p.stat().st_mtime_ns for p in cdir.rglob("*") if p.is_file()}


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


# --- Several runs at once: one per GPU on a GPU campaign; one at a time on CPU ----------------------

# What NVML would list on a host with four GPUs (bench.gpu.probe().devices): there is no GPU here.
FOUR_GPUS = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{i}a2b3c4d-0000-1111-2222-33334444555{i}",
              "memory_total_mb": 81559, "compute_capability": "9.0"} for i in range(4)]


def most_in_flight(spans) -> int:
    """The most launches whose processes ran at one instant (from their measured start and end)."""
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_four_gpus_run_four_runs_at_once_each_given_exactly_its_own_gpu(tmp_path, capsys):
    runner = ScriptRunner("nap", nap_s=3.0)
    runs = planned(tmp_path, runner, repeats=4, device="gpu")
    cdir = tmp_path / "results" / "t"
    slots = gpu_slots(FOUR_GPUS, "all")
    counts = execute.execute(runs, runner, cdir, 60, slots=slots)
    assert counts == {"ok": 4, "failed": 0, "skipped": 0, "elsewhere": 0, "unfit": 0}
    assert most_in_flight(runner.spans) == 4
    uuids = sorted(g["uuid"] for g in FOUR_GPUS)
    # Docker: each container asks for exactly one GPU, by its id, each a different one.
    asked = []
    for cfg in runner.configs:
        (device_request,) = cfg["device_requests"]
        assert device_request["Count"] == 0 and device_request["Capabilities"] == [["gpu", "compute", "utility"]]
        asked += device_request["DeviceIDs"]
        assert cfg["environment"]["DLREPRO_GPU_UUID"] == device_request["DeviceIDs"][0]
    assert sorted(asked) == uuids
    # Local: each launch's environment shows its own GPU, in NVML's order; the processes saw it.
    assert sorted(e["CUDA_VISIBLE_DEVICES"] for e in runner.envs) == ["0", "1", "2", "3"]
    assert {e["CUDA_DEVICE_ORDER"] for e in runner.envs} == {"PCI_BUS_ID"}
    seen = sorted((cdir / run.run_id / "log.txt").read_text().split() for run in runs)
    assert seen == [[f"CUDA_VISIBLE_DEVICES={g['index']}", f"DLREPRO_GPU_UUID={g['uuid']}"] for g in FOUR_GPUS]
    out = capsys.readouterr().out
    running = [line.split(": running on ")[-1] for line in out.splitlines() if ": running on " in line]
    assert sorted(running) == [f"GPU {i} (NVIDIA H100 80GB HBM3)" for i in range(4)]
    # The GPU a run got is not part of the run: the requests (and so the run ids) do not mention it.
    assert all("gpu" not in request.read(cdir / run.run_id / request.REQUEST_FILE) for run in runs)
    assert [r.run_id for r in planned(tmp_path / "again", ScriptRunner("ok"), repeats=4, device="gpu")] == \
        [r.run_id for r in runs]


def test_gpus_picks_which_gpus_and_so_how_many_runs_at_once(tmp_path):
    runner = ScriptRunner("nap", nap_s=2.0)
    runs = planned(tmp_path, runner, repeats=4, device="gpu")
    slots = gpu_slots(FOUR_GPUS, "0,2")
    assert execute.execute(runs, runner, tmp_path / "results" / "t", 60, slots=slots)["ok"] == 4
    assert most_in_flight(runner.spans) == 2
    assert {g.index for gpus in runner.gpus for g in gpus} == {0, 2} and {len(g) for g in runner.gpus} == {1}


def _scaleup_runs(tmp_path, runner) -> list:
    """lenet-mnist (smoke) x pytorch at 1, 2 and 4 data-parallel ranks on GPUs (shams-scaleup-gpu)."""
    from campaign import plan
    from campaign.study import experiment
    from tests.campaign.scriptrunner import prepared_mnist

    prepared_mnist(tmp_path / "data")
    m = plan.Matrix(("pytorch",), ("lenet-mnist",), "gpu", "smoke", 1, "real",
                    experiment=experiment("shams-scaleup-gpu"))
    return plan.plan(m, runner, "t", tmp_path / "results" / "t", tmp_path / "data", 1)


def test_a_run_over_k_ranks_takes_k_gpus_at_once_and_none_is_shared(tmp_path, capsys):
    runner = ScriptRunner("nap", nap_s=1.5)
    runs = _scaleup_runs(tmp_path, runner)
    runs = [runs[1], runs[1 - 1], runs[2], runs[1]]  # 2 ranks, 1 rank, 4 ranks, the 2-rank run again (done)
    cdir = tmp_path / "results" / "t"
    counts = execute.execute(runs, runner, cdir, 60, slots=gpu_slots(FOUR_GPUS, "all"))
    assert counts == {"ok": 3, "failed": 0, "skipped": 1, "elsewhere": 0, "unfit": 0}
    given = dict(zip(runner.launched, runner.gpus))
    assert [len(given[r.run_id]) for r in runs[:3]] == [2, 1, 4]
    # The 2- and 1-rank runs overlap on 3 different GPUs; the 4-rank run waited for all four.
    spans = dict(zip(runner.launched, runner.spans))
    assert spans[runs[2].run_id][0] >= max(spans[runs[0].run_id][1], spans[runs[1].run_id][1])
    assert len({g.index for r in runs[:2] for g in given[r.run_id]}) == 3
    # Each process saw exactly its own GPUs, rank 0's first; docker would ask for exactly those by id.
    two = given[runs[0].run_id]
    assert (cdir / runs[0].run_id / "log.txt").read_text().split() == [
        f"CUDA_VISIBLE_DEVICES={two[0].index},{two[1].index}", f"DLREPRO_GPU_UUID={two[0].uuid},{two[1].uuid}"]
    config = runner.configs[runner.launched.index(runs[2].run_id)]
    assert sorted(config["device_requests"][0]["DeviceIDs"]) == sorted(g["uuid"] for g in FOUR_GPUS)
    assert "on GPUs " in capsys.readouterr().out


def test_a_run_needing_more_gpus_than_the_campaign_has_is_left_out_in_one_line(tmp_path, capsys):
    runner = ScriptRunner("ok")
    runs = _scaleup_runs(tmp_path, runner)
    counts = execute.execute(runs, runner, tmp_path / "results" / "t", 60, slots=gpu_slots(FOUR_GPUS, "1,3"))
    assert counts == {"ok": 2, "failed": 0, "skipped": 0, "elsewhere": 0, "unfit": 1}
    assert runner.launched == [runs[0].run_id, runs[1].run_id]
    out = capsys.readouterr().out
    assert f"({runs[2].run_id}): needs 4 GPUs, this campaign has 2 (GPUS=...); left out" in out
    assert not (tmp_path / "results" / "t" / runs[2].run_id).exists()
    assert not list((tmp_path / "results" / "t").glob(f"*{runs[2].run_id}*"))  # not even leased


def test_a_cpu_campaign_still_runs_one_at_a_time(tmp_path):
    runner = ScriptRunner("nap", nap_s=0.5)
    runs = planned(tmp_path, runner, repeats=3)
    assert execute.execute(runs, runner, tmp_path / "results" / "t", 60)["ok"] == 3
    assert most_in_flight(runner.spans) == 1
    assert runner.envs == [{}, {}, {}] and all("device_requests" not in c for c in runner.configs)
    # ... unless asked (PARALLEL=3): three CPU runs at once, none given a GPU.
    more = ScriptRunner("nap", nap_s=2.0)
    runs = planned(tmp_path / "more", more, repeats=3)
    assert execute.execute(runs, more, tmp_path / "more" / "results" / "t", 60, slots=[None] * 3)["ok"] == 3
    assert most_in_flight(more.spans) == 3 and more.gpus == [(), (), ()]


def test_stopping_a_campaign_with_runs_in_flight_kills_them_and_publishes_none(tmp_path, capsys):
    runner = ScriptRunner("nap", nap_s=60.0)
    runs = planned(tmp_path, runner, repeats=2, device="gpu")
    cdir = tmp_path / "results" / "t"
    # Ctrl-C, delivered to the campaign's own thread once both runs' processes sleep (not on a
    # fixed delay: on a loaded machine the launches take their time).
    def interrupt_when_both_run() -> None:
        deadline = time.monotonic() + 60
        while len(runner._procs) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Thread(target=interrupt_when_both_run)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        execute.execute(runs, runner, cdir, 120, slots=gpu_slots(FOUR_GPUS[:2]))
    timer.join()
    assert len(runner.spans) == 2 and all(end - start < 30 for start, end in runner.spans), "the runs were killed"
    assert not any((cdir / run.run_id).exists() for run in runs), "a killed run is not a result"
    assert all((cdir / f"{run.run_id}.partial").is_dir() for run in runs)
    assert capsys.readouterr().out.count("it runs again when the campaign resumes") == 2
    # Resumed, both run.
    assert execute.execute(runs, ScriptRunner("ok"), cdir, 60, slots=gpu_slots(FOUR_GPUS[:2]))["ok"] == 2


# --- What is left out: done, or leased to a live holder (the same for a campaign and a scheduler) --

def test_a_campaign_and_a_scheduler_leave_out_the_same_runs_and_say_why(tmp_path, capsys):
    runs = planned(tmp_path, ScriptRunner("ok"), repeats=4)
    cdir = tmp_path / "results" / "t"
    execute.execute(runs[:1], ScriptRunner("ok"), cdir, 10)  # run 0: done
    capsys.readouterr()
    live = leases.take(cdir, runs[1].run_id, "slurm", "12_3")  # run 1: in flight elsewhere
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = leases.lease_path(cdir, runs[2].run_id)  # run 2: its holder died; run 3: never leased
    stale.write_text(json.dumps({"token": "old", "host": socket.gethostname(), "pid": int(dead.stdout)}))
    try:
        assert execute.missing_runs(runs, cdir, False) == runs[2:]
        looked = capsys.readouterr().out
        assert execute.missing_runs(runs, cdir, False, waiting={runs[3].run_id}) == runs[2:3]
        capsys.readouterr()
        got = [execute.lease_missing(run, cdir, False, f"[{i}/4] {run.label} ({run.run_id})")
               for i, run in enumerate(runs, 1)]
        took = capsys.readouterr().out
        assert got[:2] == ["done", "elsewhere"] and all(isinstance(c, leases.Lease) for c in got[2:])
        assert stale.exists() and got[2].still_ours()  # the dead holder's lease was broken and taken over
        for out in (looked, took):
            assert f"({runs[0].run_id}): done earlier (ok), skipped" in out
            assert f"({runs[1].run_id}): running elsewhere (host {socket.gethostname()} pid {os.getpid()} " \
                   "(slurm 12_3)), left to it" in out
            assert runs[2].run_id not in out and runs[3].run_id not in out
        for lease in got[2:]:
            lease.release()
    finally:
        live.release()


# --- Failures of the setup are not results: redone by the next run of the campaign ----------------------

REFUSAL = "the request asks for BLAS backend 'mkl' but this environment lacks it; plan the run again"


class RefusingRunner(ScriptRunner):
    """Its entrypoint is refused by the kit the way `python -m bench` ends a UsageError (bench.errors.run_cli):
    its one line last in the log, exit status 2, no run.json."""

    def launch(self, request, run_dir, timeout_s, gpus=()):
        self.launched.append(request["run_id"])
        (run_dir / schema.LOG_FILE).write_text(f"starting\nerror: {REFUSAL}\n")
        return Outcome(2)


def _verified_runs(tmp_path, runner) -> list:
    """One smoke run of cnn-mnist on a prepared MNIST whose meta.json records its arrays' real digest."""
    prepared_mnist(tmp_path / "data")
    folder = tmp_path / "data" / "prepared" / "mnist"
    meta = json.loads((folder / "meta.json").read_text())
    meta["arrays_sha256"] = hashlib.sha256((folder / "arrays.npz").read_bytes()).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))
    m = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "real")
    return plan.plan(m, runner, "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)


def test_a_run_the_kit_refused_is_a_setup_failure_redone_without_retry_failed(tmp_path, capsys):
    runs = _verified_runs(tmp_path, ScriptRunner("ok"))
    cdir = tmp_path / "results" / "t"
    counts = execute.execute(runs, RefusingRunner("ok"), cdir, 10)
    assert counts == {"ok": 0, "failed": 1, "skipped": 0, "elsewhere": 0, "unfit": 0, "failed:invalid-setting": 1}
    assert schema.read_run(cdir / runs[0].run_id)["failure"] == {"cause": "invalid-setting", "message": REFUSAL}
    assert execute.failed_text(counts) == "1 failed (1 setup: invalid-setting)"
    with pytest.raises(UsageError) as refused:
        execute.check_setup(counts)
    assert str(refused.value) == (
        "1 run failed for its setup (invalid-setting), not for its framework: that is not a result; fix what the "
        "failure message above names, then run the same command again: runs that failed for their setup run "
        "again, the others stay done")
    capsys.readouterr()
    # Fixed: the same call, without retry_failed, runs it again and keeps the refused attempt aside.
    again = ScriptRunner("ok")
    assert execute.execute(runs, again, cdir, 10)["ok"] == 1 and again.launched == [runs[0].run_id]
    assert f"{runs[0].run_id}): failed earlier for its setup (invalid-setting), not a result: run again" in \
        capsys.readouterr().out
    assert schema.read_run(cdir / runs[0].run_id)["status"] == "ok"
    assert len(list(cdir.glob(f".retried-{runs[0].run_id}-*"))) == 1


def test_the_summary_counts_failures_by_kind_and_only_the_setups_stop_the_campaign():
    counts = {"ok": 3, "failed": 4, "failed:crash": 1, "failed:timeout": 1, "failed:bad-data": 1,
              "failed:missing-library": 1}
    assert execute.failed_text(counts) == "4 failed (1 crash, 1 timeout, 1 setup: bad-data, 1 setup: missing-library)"
    with pytest.raises(UsageError, match=r"^2 runs failed for their setup \(bad-data, missing-library\), not for "
                                         r"their framework: those are not results; "):
        execute.check_setup(counts)
    # Failures of the framework are results: the campaign goes on to its report.
    assert execute.check_setup({"ok": 1, "failed": 2, "failed:nan": 1, "failed:timeout": 1}) is None
    assert execute.failed_text({"ok": 1, "failed": 0}) == "0 failed"
