"""The inference protocol (bench/inference.py): forward passes timed one by one after a warm-up that is kept in
iterations.csv but never in the statistics, the throughput in run.json, the features model it times (a ResNet-50
cut after its global average pool), and the planner's one-line refusal of frameworks without the hook."""

import time

import numpy as np
import pytest

from bench import inference, measurement, modelplan, schema
from bench.errors import UsageError
from bench.frameworks import NonFiniteLoss, capabilities
from campaign import plan, specs, study
from tests.declarations import declare
from tests.plancount import trainable
from tests.runrecord import minimal_request

SLOW_S = 0.05  # a warm-up pass (graph building, autotuning) is this slow ...
FAST_S = 0.001  # ... a warmed-up one this fast
BATCH = 4
FEATURES = 8
SPEC = {"name": "resnet50-features-synthetic", "dataset": "generated",
        "measurement": {"protocol": "inference", "warmup": 3, "iterations": 20}}


class SlowWarmup:
    """A trainer whose first `slow` forward passes sleep SLOW_S and later ones FAST_S; pass n returns a
    (BATCH, FEATURES) array of n (NaN at pass `nan_at`). It counts the synchronize() calls the runner makes."""

    def __init__(self, slow: int, nan_at: int = 0) -> None:
        self.slow, self.nan_at = slow, nan_at
        self.passes = self.synced = 0

    def infer(self) -> np.ndarray:
        self.passes += 1
        time.sleep(SLOW_S if self.passes <= self.slow else FAST_S)
        return np.full((BATCH, FEATURES), np.nan if self.passes == self.nan_at else float(self.passes), np.float32)

    def synchronize(self) -> None:
        self.synced += 1


def _record() -> dict:
    return schema.run_record(minimal_request(spec=SPEC))


def test_a_slow_warm_up_is_in_the_file_but_not_in_the_mean(tmp_path, capsys):
    record, trainer = _record(), SlowWarmup(slow=3)
    inference.run(trainer, 3, 20, BATCH, tmp_path, record, "pytorch", "current")

    rows = schema.read_iterations(tmp_path)
    assert [r["phase"] for r in rows] == ["warmup"] * 3 + ["measured"] * 20
    assert all(r["time_s"] >= SLOW_S for r in rows[:3])
    assert [r["loss"] for r in rows] == [float(n) for n in range(1, 24)]  # each batch's mean output
    timing, results = record["timing"], record["results"]
    stats = timing["iteration_time_s"]
    assert FAST_S <= stats["mean"] < SLOW_S / 2  # the planted slow warm-up is left out
    measured = np.array([r["time_s"] for r in rows[3:]])
    assert stats["mean"] == pytest.approx(measured.mean())
    assert (timing["protocol"], timing["warmup_iterations"], timing["measured_iterations"]) == ("inference", 3, 20)
    assert timing["warmup_time_s"] >= 3 * SLOW_S and timing["definition"] == schema.INFERENCE_TIMING_DEFINITION
    assert results["batch_size"] == BATCH
    assert results["images_per_s"] == pytest.approx(BATCH / measured.mean())
    assert results["s_per_1000_images"] == pytest.approx(1000 * measured.mean() / BATCH)
    assert (results["test_accuracy"], results["epochs_completed"]) == (None, 0)  # nothing trained or evaluated
    assert record["model"]["weights"] == inference.WEIGHTS
    assert trainer.synced == 1 + 23  # before the first clock read, after every pass
    assert "s per 1,000 images" in capsys.readouterr().out
    # A valid run.json whose figures can be recomputed from the file.
    schema.write_run(tmp_path, schema.finish(record, None))
    back = schema.read_run(tmp_path)
    assert back["timing"] == {**timing, **schema.summarize_iterations(rows)}
    assert back["results"]["s_per_1000_images"] == schema.summarize_inference(
        schema.summarize_iterations(rows)["iteration_time_s"], BATCH)["s_per_1000_images"]


def test_a_non_finite_output_fails_the_run_and_keeps_the_batches_before_it(tmp_path):
    record = _record()
    with pytest.raises(NonFiniteLoss, match="the outputs' mean is nan at batch 4 \\(measured\\)"):
        inference.run(SlowWarmup(slow=0, nan_at=4), 2, 5, BATCH, tmp_path, record, "pytorch", "current")
    assert len(schema.read_iterations(tmp_path)) == 3
    schema.write_run(tmp_path, schema.finish(record, {"cause": "nan", "message": "x"}))  # a valid failed run


def test_a_trainer_without_infer_is_refused_in_one_line(tmp_path):
    class TrainOnly:
        def synchronize(self):
            pass

    with pytest.raises(UsageError, match="the paper-era theano trainer has no infer\\(\\)") as caught:
        inference.run(TrainOnly(), 1, 1, BATCH, tmp_path, _record(), "theano", "paper")
    assert "\n" not in str(caught.value)


def test_run_json_inference_fields_are_checked(tmp_path):
    record = _record()
    inference.run(SlowWarmup(slow=0), 1, 2, BATCH, tmp_path, record, "pytorch", "current")
    record = schema.finish(record, None)
    results = record["results"]
    for broken, message in (({"s_per_1000_images": 1.0}, "is not 1000 / images_per_s"),
                            ({"images_per_s": -1.0, "s_per_1000_images": -1000.0}, "both positive"),
                            ({"batch_size": 0}, "batch_size >= 1"),
                            ({"images_per_s": None, "s_per_1000_images": None}, "an ok inference run needs")):
        with pytest.raises(schema.SchemaError, match=message):
            schema.validate_run({**record, "results": {**results, **broken}})
    partial = {k: v for k, v in results.items() if k != "images_per_s"}
    with pytest.raises(schema.SchemaError, match="missing field 'images_per_s'"):
        schema.validate_run({**record, "results": partial})
    bare = {k: v for k, v in results.items() if k not in schema.RUN_INFERENCE_FIELDS}
    with pytest.raises(schema.SchemaError, match="an ok inference run needs results.batch_size"):
        schema.validate_run({**record, "results": bare})
    # Only inference runs carry them; an iterations run that does is refused.
    iterations = {**record, "timing": {**record["timing"], "protocol": measurement.ITERATIONS}}
    with pytest.raises(schema.SchemaError, match="only for inference-protocol runs"):
        schema.validate_run(iterations)
    schema.validate_run({**iterations, "results": bare})  # older runs, without the fields, still read


@pytest.mark.parametrize("table, message", [
    ({"protocol": "inference", "iterations": 5}, "protocol 'inference' needs warmup"),
    ({"protocol": "inference", "warmup": 1}, "protocol 'inference' needs iterations"),
    ({"protocol": "inference", "warmup_epochs": 1, "iterations": 5}, "protocol 'inference' takes no warmup_epochs"),
])
def test_a_bad_inference_table_is_one_line(table, message):
    with pytest.raises(measurement.MeasurementError, match=message) as caught:
        measurement.check(table)
    assert "\n" not in str(caught.value)


def _features_spec(**measure) -> dict:
    spec = specs.load("resnet50-features-synthetic")
    if measure:
        spec["measurement"] = measure
    return spec


def test_the_features_workload_is_resnet50_without_its_head():
    features = modelplan.plan(_features_spec())
    full = modelplan.plan(specs.load("resnet50-synthetic"))
    assert features.kind == modelplan.FEATURES and modelplan.output_values(features) == 2048
    assert features.layers[-1].type == "global_avgpool"
    # torchvision's resnet50 25,557,032 minus the 2048 x 1000 + 1000 head
    assert trainable(features.layers) == 23_508_032 == trainable(full.layers) - (2048 * 1000 + 1000)
    assert [layer.output for layer in features.layers] == [layer.output for layer in full.layers[:-1]]


def test_a_features_model_runs_only_under_the_inference_protocol():
    with pytest.raises(modelplan.SpecError, match="measurement protocol is 'iterations'"):
        modelplan.plan(_features_spec(protocol="iterations", warmup=1, iterations=2))
    spec = _features_spec()
    del spec["measurement"]
    with pytest.raises(modelplan.SpecError, match="measurement protocol is 'epochs'"):
        modelplan.plan(spec)


def test_a_features_model_must_end_with_a_vector_and_name_a_known_output():
    spec = _features_spec()
    spec["model"] = {**spec["model"], "layers": spec["model"]["layers"][:-1]}  # no global average pool
    with pytest.raises(modelplan.SpecError, match="must end with a vector"):
        modelplan.plan(spec)
    spec["model"] = {**spec["model"], "output": "logits"}
    with pytest.raises(modelplan.SpecError, match="model.output 'logits' is not one of classes, features"):
        modelplan.plan(spec)


def test_the_planner_refuses_frameworks_without_the_hook_in_one_line(monkeypatch):
    spec = study.apply_point(_features_spec(), {}, study.experiment("ilkarman-features-cpu").measurement_for("paper"))
    assert inference.is_inference(spec)
    for framework in inference.SUPPORT.frameworks("current"):
        assert plan.refusal(framework, "current", spec, {}) is None
    assert inference.refusal("pytorch", "paper") is None  # PyTorch 0.4.1's module has infer()
    declare(monkeypatch, "pytorch", "paper")  # a 2018 module without it
    why = inference.refusal("pytorch", "paper")
    assert why.startswith("the inference protocol's forward-pass hook is written for the current era, not paper")
    real = inference.SUPPORT
    only_pytorch = capabilities.Feature(lambda framework, can: framework == "pytorch" and real.has(framework, can),
                                        real.lacks, real.written, real.runs)
    monkeypatch.setattr(inference, "SUPPORT", only_pytorch)
    monkeypatch.setitem(plan.PROTOCOL_HOOKS, measurement.INFERENCE, only_pytorch)
    why = plan.refusal("theano", "current", spec, {})
    assert why == ("theano has no forward-pass hook (Trainer.infer: bench/inference.py); inference runs go with "
                   "FRAMEWORKS=pytorch and ERA=current")
    assert plan.refusal("theano", "current", specs.load("resnet50-synthetic"), {}) is None  # training: no refusal


def test_the_study_experiments_time_the_features_workload():
    for target, device in (("ilkarman-features-cpu", "cpu"), ("ilkarman-features-gpu", "gpu")):
        experiment = study.experiment(target)
        assert experiment.device == device and experiment.workloads == ("resnet50-features-synthetic",)
        assert experiment.measurement["protocol"] == measurement.INFERENCE
    assert specs.load("resnet50-features-synthetic")["study"] == "ilkarman"
    assert specs.load("resnet50-features-synthetic")["training"]["batch_size"] == 64  # ilkarman's BATCH_SIZE
