"""The iterations protocol: warm-up steps are recorded but never timed into the results; every step
is in iterations.csv; the measurement table is checked once, with one-line errors."""

import time

import numpy as np
import pytest

from bench import iterations, measurement, schema
from bench.errors import UsageError
from bench.frameworks import NonFiniteLoss
from tests import csvcases
from tests.runrecord import minimal_request

SLOW_S = 0.05  # a warm-up step (graph building, autotuning) is this slow ...
FAST_S = 0.001  # ... a warmed-up one this fast
SPEC = {"name": "cnn-mnist", "dataset": "mnist",
        "measurement": {"protocol": "iterations", "warmup": 3, "iterations": 20}}


class SlowWarmup:
    """A Trainer whose first `slow` steps sleep SLOW_S and later ones FAST_S; step n's loss is 1/n,
    or NaN at step `nan_at`. It counts the synchronize() calls the runner makes."""

    def __init__(self, slow: int, nan_at: int = 0) -> None:
        self.slow, self.nan_at = slow, nan_at
        self.steps = self.synced = 0

    def step(self) -> float:
        self.steps += 1
        time.sleep(SLOW_S if self.steps <= self.slow else FAST_S)
        return float("nan") if self.steps == self.nan_at else 1.0 / self.steps

    def synchronize(self) -> None:
        self.synced += 1

    def evaluate(self) -> float:
        return 0.75


def _record(spec: dict = SPEC) -> dict:
    return schema.run_record(minimal_request(spec=spec))


def test_warm_up_steps_are_in_the_file_but_not_in_the_statistics(tmp_path, capsys):
    record, trainer = _record(), SlowWarmup(slow=3)
    iterations.run(trainer, 3, 20, tmp_path, record, "pytorch", "current")

    rows = schema.read_iterations(tmp_path)
    assert [r["iteration"] for r in rows] == list(range(1, 24))
    assert [r["phase"] for r in rows] == ["warmup"] * 3 + ["measured"] * 20
    assert all(r["time_s"] >= SLOW_S for r in rows[:3])
    assert [r["loss"] for r in rows] == [1.0 / n for n in range(1, 24)]  # written exactly, read back exactly
    timing = record["timing"]
    stats = timing["iteration_time_s"]
    # The slow warm-up is excluded: the mean and median are near the fast step, far from the slow one.
    assert FAST_S <= stats["median"] < SLOW_S / 2 and FAST_S <= stats["mean"] < SLOW_S / 2
    measured = np.array([r["time_s"] for r in rows[3:]])
    assert stats["mean"] == pytest.approx(measured.mean()) and stats["std"] == pytest.approx(measured.std(ddof=1))
    for name, q in (("median", 50), ("p5", 5), ("p95", 95)):
        assert stats[name] == pytest.approx(np.percentile(measured, q)), name
    assert (stats["min"], stats["max"]) == (measured.min(), measured.max())
    assert timing["training_time_s"] == pytest.approx(measured.sum())
    assert timing["warmup_time_s"] >= 3 * SLOW_S
    assert (timing["protocol"], timing["warmup_iterations"], timing["measured_iterations"]) == ("iterations", 3, 20)
    # The measured window: it opens after the warm-up, so it is shorter than all the steps together.
    window = timing["train_end_unix"] - timing["train_start_unix"]
    assert measured.sum() <= window < measured.sum() + 3 * SLOW_S
    assert timing["definition"] == schema.ITERATION_TIMING_DEFINITION and timing["eval_time_s"] >= 0
    assert record["results"] == {"test_accuracy": 0.75, "final_loss": 1.0 / 23, "epochs_completed": 0}
    assert trainer.synced == 1 + 23 + 1  # before the first clock read, after every step, after the test pass
    out = capsys.readouterr().out
    assert "iteration 3/23 (warmup)" in out and "iteration 23/23 (measured)" in out
    # The record is a valid run.json, and the statistics can be recomputed from the file.
    schema.write_run(tmp_path, schema.finish(record, None))
    assert schema.read_run(tmp_path)["timing"] == {**timing, **schema.summarize_iterations(rows)}


def test_no_warm_up_opens_the_window_at_the_first_step(tmp_path):
    record = _record()
    iterations.run(SlowWarmup(slow=0), 0, 4, tmp_path, record, "pytorch", "current")
    assert [r["phase"] for r in schema.read_iterations(tmp_path)] == ["measured"] * 4
    assert record["timing"]["warmup_time_s"] == 0 and record["timing"]["train_start_unix"] is not None


def test_a_nan_step_fails_the_run_and_keeps_the_steps_before_it(tmp_path):
    record = _record()
    with pytest.raises(NonFiniteLoss, match="loss is nan at iteration 5 \\(measured\\)"):
        iterations.run(SlowWarmup(slow=0, nan_at=5), 2, 10, tmp_path, record, "pytorch", "current")
    assert len(schema.read_iterations(tmp_path)) == 4
    assert record["timing"]["iteration_time_s"] is None
    schema.write_run(tmp_path, schema.finish(record, {"cause": "nan", "message": "x"}))  # a valid failed run
    with pytest.raises(schema.SchemaError, match="an ok iterations run needs timing.iteration_time_s"):
        schema.validate_run(schema.finish(record, None))


def test_a_trainer_without_step_fails_naming_its_framework_and_era(tmp_path):
    class EpochsOnly:
        def synchronize(self):
            pass

    with pytest.raises(UsageError, match="the paper-era theano trainer has no step\\(\\)") as caught:
        iterations.run(EpochsOnly(), 1, 1, tmp_path, _record(), "theano", "paper")
    assert "\n" not in str(caught.value) and "measurement protocol 'epochs'" in str(caught.value)


@pytest.mark.parametrize("table, message", [
    ("iterations", "measurement is a str, not a table"),
    ({"warmup": 1, "iterations": 2}, "protocol None is not one of epochs, iterations"),
    ({"protocol": "steps"}, "protocol 'steps' is not one of"),
    ({"protocol": "epochs", "iterations": 5}, "protocol 'epochs' takes no iterations"),
    ({"protocol": "iterations", "warmup": 1, "iterations": 2, "repeat": 3}, "takes no repeat"),
    ({"protocol": "iterations", "warmup": 1}, "needs iterations"),
    ({"protocol": "iterations", "iterations": 10}, "needs exactly one of warmup and warmup_epochs"),
    ({"protocol": "iterations", "warmup": 1, "warmup_epochs": 1, "iterations": 10}, "exactly one of"),
    ({"protocol": "iterations", "warmup": -1, "iterations": 10}, "warmup is -1; it must be a whole number >= 0"),
    ({"protocol": "iterations", "warmup": 1, "iterations": 0}, "iterations is 0; it must be a whole number >= 1"),
    ({"protocol": "iterations", "warmup": 1, "iterations": 2.5}, "iterations is 2.5"),
    ({"protocol": "iterations", "warmup_epochs": True, "iterations": 2}, "warmup_epochs is True"),
])
def test_a_bad_measurement_table_is_one_line_naming_the_fix(table, message):
    spec = {"name": "cnn-mnist", "dataset": "mnist", "measurement": table}
    with pytest.raises(measurement.MeasurementError) as caught:
        minimal_request(spec=spec)  # the request checks it, on write and on read
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("new request: spec: measurement ")
    assert "write the spec's measurement table as" in str(caught.value)


def test_good_tables_and_the_warm_up_of_warmup_epochs():
    assert measurement.of_spec({"name": "x"}) == {"protocol": "epochs"}
    assert measurement.check({"protocol": "epochs"}) == {"protocol": "epochs"}
    shams = measurement.check({"protocol": "iterations", "warmup": 100, "iterations": 1000})
    assert measurement.warmup_steps(shams, 60_000, 256) == 100
    shi = measurement.check({"protocol": "iterations", "warmup_epochs": 1, "iterations": 50})
    assert measurement.warmup_steps(shi, 512, 128) == 4 and measurement.warmup_steps(shi, 500, 128) == 4
    assert measurement.warmup_steps(dict(shi, warmup_epochs=2), 513, 128) == 10


def test_epoch_runs_keep_their_run_json(tmp_path):
    # No measurement table: the run's record has no iterations fields and its id is what it was.
    plain = minimal_request()
    record = schema.run_record(plain)
    assert set(record["timing"]) == set(schema.RUN_TIMING_FIELDS)
    assert schema.read_iterations(tmp_path) == []
    assert minimal_request(spec=SPEC)["run_id"] != plain["run_id"]  # the protocol is part of what a run is


@pytest.mark.parametrize("text, message", [
    ("iteration,phase,time_s,loss\n1,warmup,0.1,1.0\n3,measured,0.1,1.0\n", "numbered 3"),
    ("iteration,phase,time_s,loss\n1,measured,0.1,1.0\n2,warmup,0.1,1.0\n", "a warm-up step after a measured one"),
    ("iteration,phase,time_s,loss\n1,timed,0.1,1.0\n", "phase 'timed'"),
    ("iteration,phase,time_s,loss\n1,measured,nan,1.0\n", "time_s nan is not a finite number"),
    ("iteration,phase,time_s,loss\n1,measured,-0.5,1.0\n", "time_s -0.5 is negative"),
] + csvcases.parse_errors(schema.ITERATION_COLUMNS, ("1", "measured", "0.1", "1.0")))
def test_a_bad_iterations_file_is_refused(tmp_path, text, message):
    (tmp_path / schema.ITERATIONS_FILE).write_text(text)
    with pytest.raises(schema.SchemaError, match=message):
        schema.read_iterations(tmp_path)


def test_run_json_iteration_fields_are_all_or_none(tmp_path):
    record = _record()
    iterations.run(SlowWarmup(slow=0), 1, 2, tmp_path, record, "pytorch", "current")
    record = schema.finish(record, None)
    for broken, message in (({"protocol": "epochs"}, "timing.protocol 'epochs' is not 'iterations'"),
                            ({"measured_iterations": 0}, "measured_iterations >= 1"),
                            ({"iteration_time_s": {"mean": 1.0}}, "missing field 'median'")):
        with pytest.raises(schema.SchemaError, match=message):
            schema.validate_run({**record, "timing": {**record["timing"], **broken}})
    timing = dict(record["timing"])
    del timing["warmup_iterations"]
    with pytest.raises(schema.SchemaError, match="missing field 'warmup_iterations'"):
        schema.validate_run({**record, "timing": timing})


@pytest.mark.slow
def test_the_entrypoint_times_iterations_in_each_framework(tmp_path):
    """cnn-mnist smoke on synthetic data, W=3 and N=5, through `python -m bench run` in each current-era
    framework's environment (each has Trainer.step()), then 1 + 2 forward passes under the inference protocol
    (Trainer.infer()); a plain pytorch run keeps the epoch protocol."""
    import copy
    import os
    import subprocess
    import sys
    from pathlib import Path

    from bench import request
    from campaign import plan
    from campaign.runners.local import LocalRunner
    from images import envs

    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets",
                    "mnist"], cwd=repo, check=True, capture_output=True)
    frameworks = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
    matrix = plan.Matrix(frameworks, ("cnn-mnist",), "cpu", "smoke", 1, "synthetic")
    cdir = tmp_path / "results" / "iterations"
    planned = plan.plan(matrix, LocalRunner(), "iterations", cdir, tmp_path / "data", threads=1)
    table = {"protocol": "iterations", "warmup": 3, "iterations": 5}

    def bench_run(framework: str, req: dict) -> tuple[Path, str]:
        folder = cdir / req["run_id"]
        request.write(folder, req)
        proc = subprocess.run([str(envs.ensure_env(framework).python), "-m", "bench", "run", "--request",
                               str(folder / request.REQUEST_FILE), "--out", str(folder), "--data",
                               str(request.data_folder(req["data"], tmp_path / "data"))], cwd=repo, timeout=300,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return folder, proc.stdout

    for run in planned:
        framework = run.request["framework"]
        req = copy.deepcopy(run.request)
        req["spec"]["measurement"] = table
        req["run_id"] = request.run_id(req)
        folder, stdout = bench_run(framework, req)
        record = schema.read_run(folder)
        assert record["status"] == "ok", (framework, record["failure"])
        rows = schema.read_iterations(folder)
        assert [r["phase"] for r in rows] == ["warmup"] * 3 + ["measured"] * 5, framework
        timing = record["timing"]
        assert (timing["warmup_iterations"], timing["measured_iterations"]) == (3, 5)
        for name, value in schema.summarize_iterations(rows).items():  # recomputed from the file
            assert timing[name] == value, (framework, name)
        assert 0 < timing["iteration_time_s"]["min"] <= timing["iteration_time_s"]["max"] < 30
        assert timing["train_start_unix"] < timing["train_end_unix"]
        assert 0 <= record["results"]["test_accuracy"] <= 1 and record["results"]["epochs_completed"] == 0
        assert record["results"]["final_loss"] == rows[-1]["loss"]
        assert not (folder / schema.METRICS_FILE).exists()
        assert "iteration 3/8 (warmup)" in stdout and "iteration 8/8 (measured)" in stdout
        # The inference protocol (bench/inference.py) through the same loop: forward passes of the same network.
        req = copy.deepcopy(run.request)
        req["spec"]["measurement"] = {"protocol": "inference", "warmup": 1, "iterations": 2}
        req["run_id"] = request.run_id(req)
        folder, stdout = bench_run(framework, req)
        record = schema.read_run(folder)
        assert record["status"] == "ok", (framework, record["failure"])
        assert [r["phase"] for r in schema.read_iterations(folder)] == ["warmup", "measured", "measured"], framework
        batch = record["results"]["batch_size"]
        assert record["results"]["s_per_1000_images"] == pytest.approx(
            1000 * record["timing"]["iteration_time_s"]["mean"] / batch), framework
        assert "batch 3/3 (measured)" in stdout, framework

    # The epoch protocol as it was: no iterations file, no iterations fields.
    epochs, _ = bench_run("pytorch", next(r.request for r in planned if r.request["framework"] == "pytorch"))
    record = schema.read_run(epochs)
    assert record["status"] == "ok" and set(record["timing"]) == set(schema.RUN_TIMING_FIELDS)
    assert record["timing"]["definition"] == schema.TIMING_DEFINITION
    assert not (epochs / schema.ITERATIONS_FILE).exists() and len(schema.read_metrics(epochs)) == 1
