"""Wu et al.'s TensorFlow CIFAR-10 default, TensorFlow's CIFAR-10 tutorial (studies/wu/workloads/wu-tf-cifar10.toml):
the tutorial's network with its two local response normalizations (the plan's `lrn`), on the kit's whole 32 x 32
images (the tutorial's 24 x 24 crops are a named departure). The paper-era framework modules do not translate lrn,
so a paper-era campaign skips it in one line per framework; every current-era framework builds it with the hand-counted
parameters, trained at the smoke sizes through `python -m campaign run` (the local runner's environments,
DLREPRO_VENV_ROOT) on synthetic CIFAR-10."""

from __future__ import annotations

import pytest

from bench.modelplan import plan
from campaign import plan as campaign_plan
from campaign import specs
from tests.campaign.scriptrunner import ScriptRunner
from tests.declarations import declare
from tests.plancount import trainable
from tests.studies.shi.test_resnet import _prepared_cifar10

WORKLOAD = "wu-tf-cifar10"
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# Weights + biases, by hand: conv 5x5x3x64, conv 5x5x64x64, dense 8*8*64 -> 384, 384 -> 192, 192 -> 10; the LRNs
# have none.
PARAMS = ((5 * 5 * 3 * 64 + 64) + (5 * 5 * 64 * 64 + 64) + (8 * 8 * 64 * 384 + 384) + (384 * 192 + 192)
          + (192 * 10 + 10))
# The tutorial's own network reads 24 x 24 crops: local3 reads 6*6*64 features.
TUTORIAL_PARAMS = PARAMS - (8 * 8 - 6 * 6) * 64 * 384
assert (PARAMS, TUTORIAL_PARAMS) == (1_756_426, 1_068_298)  # 1,068,298: the tutorial's documented count
LRN = {"depth_radius": 4, "bias": 1.0, "alpha": 0.001 / 9.0, "beta": 0.75}  # tf.nn.lrn(pool1, 4, ...) in cifar10.py


def test_the_tutorials_network_with_its_lrns_on_32_by_32_images():
    spec = specs.load(WORKLOAD)
    model = plan(spec)
    shapes = [(layer.type, layer.output.dims) for layer in model.layers]
    assert shapes == [("conv2d", (32, 32, 64)), ("maxpool2d", (16, 16, 64)), ("lrn", (16, 16, 64)),
                      ("conv2d", (16, 16, 64)), ("lrn", (16, 16, 64)), ("maxpool2d", (8, 8, 64)),
                      ("flatten", (4096,)), ("dense", (384,)), ("dense", (192,)), ("dense", (10,))]
    lrns = [layer for layer in model.layers if layer.type == "lrn"]
    assert [{key: layer[key] for key in LRN} for layer in lrns] == [LRN, LRN]
    assert all(layer["padding"] == "same" for layer in model.layers if layer.pads is not None)
    assert [layer.get("activation") for layer in model.layers if layer.type in ("conv2d", "dense")] == [
        "relu", "relu", "relu", "relu", None]  # the output's softmax is folded into the loss
    assert trainable(model.layers) == PARAMS
    assert f"{PARAMS:,} trainable" in spec["choices"]["parameters"]
    assert f"{TUTORIAL_PARAMS:,}" in spec["choices"]["parameters"]


def test_the_tutorials_training_and_the_departures_named():
    spec = specs.load(WORKLOAD)
    assert (spec["study"], spec["dataset"], spec["family"]) == ("wu", "cifar10", "cnn")
    training = spec["training"]
    assert (training["batch_size"], training["epochs"]) == (128, 2560)  # 1,000,000 x 128 / 50,000
    assert training["optimizer"] == {"name": "sgd", "lr": 0.1, "weight_decay": 0.004}
    for key in ("input_size", "augmentation", "input_scaling", "learning_rate_decay", "weight_decay", "evaluation"):
        assert spec["choices"][key].startswith("departure: "), key
    assert "24 x 24" in spec["choices"]["input_size"] and "8*8*64" in spec["choices"]["input_size"]
    # quick and smoke shrink the data and the epochs only: the same network, no departure of a profile.
    for profile in ("quick", "smoke"):
        small = specs.load(WORKLOAD, profile)
        assert small["model"] == spec["model"] and small["training"]["optimizer"] == training["optimizer"]
        assert small["training"]["epochs"] < 3 and small["data"]["train_subset"] <= 5000
    assert specs.departing_profiles(WORKLOAD) == {}


@pytest.mark.parametrize(("era", "dlbench_layers_only", "planned"), [
    ("paper", True, 0), ("paper", False, 2), ("current", False, 2)])
def test_a_campaign_skips_it_with_one_line_where_a_module_has_no_lrn(tmp_path, capsys, monkeypatch, era,
                                                                     dlbench_layers_only, planned):
    # Today's 2018 modules have lrn (their declarations); one with DLBench's layers only is refused in one line.
    if dlbench_layers_only:
        for fw in ("pytorch", "theano"):
            declare(monkeypatch, fw, era)
    _prepared_cifar10(tmp_path / "data")
    matrix = campaign_plan.build_matrix(["pytorch", "theano"], [WORKLOAD], "cpu", "smoke", 1, "real", era=era)
    runs = campaign_plan.plan(matrix, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data",
                              threads=1)
    assert len(runs) == planned
    skipped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipping")]
    assert skipped == ([] if planned else [
        f"skipping {WORKLOAD} for {fw}: the paper-era {fw} module does not translate lrn (run it with ERA=current)"
        for fw in ("pytorch", "theano")])
