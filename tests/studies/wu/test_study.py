"""Wu et al.'s study file (studies/wu/study.toml) and its workloads, each framework's published default:
TensorFlow's "Deep MNIST for experts" tutorial (wu-tf-mnist), Theano's LeNet tutorial (wu-theano-lenet) and the
third-party Theano CIFAR-10 tutorial (wu-theano-cifar10); TensorFlow's CIFAR-10 tutorial (wu-tf-cifar10) has its own
file (test_wu_cifar10.py). The experiments train the defaults (epoch protocol) on CPU and GPU and sweep one factor at
a time (batch size, learning rate, threads); the model plan gives the tutorials' shapes and the hand-counted
parameters, and every current-era framework builds each of the study's networks with one count, trained at the smoke
sizes through `python -m campaign run --target wu-cpu-defaults` (the local runner's environments, DLREPRO_VENV_ROOT) on
synthetic data."""

from __future__ import annotations

from pathlib import Path

import pytest

import studies
from bench.modelplan import plan
from campaign import specs, study
from tests.plancount import trainable
from tests.smokecampaign import smoke_runs
from tests.studies.wu.test_cifar10 import PARAMS as WU_TF_CIFAR10_PARAMS

REPO = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# Weights + biases, by hand. TensorFlow's tutorial: conv 5x5x1x32, conv 5x5x32x64, dense 7*7*64 -> 1024, 1024 -> 10.
TF_MNIST_PARAMS = (5 * 5 * 1 * 32 + 32) + (5 * 5 * 32 * 64 + 64) + (7 * 7 * 64 * 1024 + 1024) + (1024 * 10 + 10)
# Theano's LeNet: conv 5x5x1x20, conv 5x5x20x50, dense 4*4*50 -> 500, logistic regression 500 -> 10.
THEANO_LENET_PARAMS = (5 * 5 * 1 * 20 + 20) + (5 * 5 * 20 * 50 + 50) + (800 * 500 + 500) + (500 * 10 + 10)
# The Theano CIFAR-10 tutorial: conv 3x3x3x4, conv 3x3x4x8, dense 4*4*8 -> 100, 100 -> 10.
THEANO_CIFAR_PARAMS = (3 * 3 * 3 * 4 + 4) + (3 * 3 * 4 * 8 + 8) + (4 * 4 * 8 * 100 + 100) + (100 * 10 + 10)
PARAMS = {"wu-tf-mnist": TF_MNIST_PARAMS, "wu-theano-lenet": THEANO_LENET_PARAMS,
          "wu-theano-cifar10": THEANO_CIFAR_PARAMS, "wu-tf-cifar10": WU_TF_CIFAR10_PARAMS}
assert PARAMS == {"wu-tf-mnist": 3_274_634, "wu-theano-lenet": 431_080, "wu-theano-cifar10": 14_318,
                  "wu-tf-cifar10": 1_756_426}
# Every Wu workload, in the study file's order; TensorFlow's CIFAR-10 tutorial (with LRN) has its hand count and
# plan tests in tests/studies/wu/test_cifar10.py, its training in every framework here.
WU_WORKLOADS = ("wu-tf-mnist", "wu-tf-cifar10", "wu-theano-lenet", "wu-theano-cifar10")


def planned_params(workload: str, profile: str = "paper") -> int:
    """Trainable parameters of a workload's planned layers (tests/plancount.py)."""
    return trainable(plan(specs.load(workload, profile)).layers)


def test_wu_is_a_study_whose_claims_the_kit_ships():
    wu = study.load_study("wu")
    assert (wu.title, wu.claims, wu.reference) == ("Wu et al. (IEEE TSC 2019)", "Wu et al.", ("wu2019.csv",))
    assert (REPO / "studies" / "wu" / "reference" / "wu2019.csv").is_file()
    assert {c.id for c in studies.claims() if c.study == wu.claims} == {f"Wu-{n}" for n in range(1, 14)}
    # A workload's `study` is the name of its study file: the report scopes the study's claims to these runs.
    assert "wu" in study.known_studies()
    assert {w for w in specs.known_workloads() if specs.load(w)["study"] == "wu"} == set(WU_WORKLOADS)


def test_wu_experiments_are_the_defaults_and_one_factor_sweeps():
    experiments = study.load_study("wu").experiments
    assert list(experiments) == ["wu-cpu-defaults", "wu-gpu-defaults", "wu-cpu-batch", "wu-cpu-lr", "wu-gpu-lr",
                                 "wu-cpu-threads", "wu-cpu-blas"]
    for name, experiment in experiments.items():
        # Every experiment trains every Wu workload through the epoch protocol, as the study timed whole trainings.
        assert (experiment.workloads, experiment.measurement, experiment.batch_sizes) == (WU_WORKLOADS, None, {}), name
    points = {name: e.points(physical_cores=2) for name, e in experiments.items()}
    assert points == {
        "wu-cpu-defaults": [{}], "wu-gpu-defaults": [{}],
        "wu-cpu-batch": [{"batch_size": 50}, {"batch_size": 500}, {"batch_size": 5000}],
        "wu-cpu-lr": [{"learning_rate": 1e-4}, {"learning_rate": 1e-3}, {"learning_rate": 1e-2}],
        "wu-gpu-lr": [{"learning_rate": 1e-4}, {"learning_rate": 1e-3}, {"learning_rate": 1e-2}],
        "wu-cpu-threads": [{"threads": 1}, {"threads": 2}, {"threads": 4}],
        "wu-cpu-blas": [{"blas": b} for b in ("onednn", "eigen", "openblas", "reference")]}
    assert {n: (e.device, e.cpu) for n, e in experiments.items() if e.device == "gpu"} == {
        "wu-gpu-defaults": ("gpu", "wu-cpu-defaults"), "wu-gpu-lr": ("gpu", "wu-cpu-lr")}


@pytest.mark.parametrize("learning_rate", [1e-4, 1e-3, 1e-2])
def test_a_learning_rate_point_enters_the_resolved_spec(learning_rate):
    for workload in PARAMS:
        spec = specs.load(workload, "quick")
        out = study.apply_point(spec, {"learning_rate": learning_rate}, None)
        assert out["training"]["optimizer"] == {**spec["training"]["optimizer"], "lr": learning_rate}
        assert out["training"]["batch_size"] == spec["training"]["batch_size"]


def test_tf_mnist_is_the_deep_mnist_tutorial():
    spec = specs.load("wu-tf-mnist")
    model = plan(spec)
    assert [(layer.type, layer.output.dims) for layer in model.layers] == [
        ("conv2d", (28, 28, 32)), ("maxpool2d", (14, 14, 32)), ("conv2d", (14, 14, 64)), ("maxpool2d", (7, 7, 64)),
        ("flatten", (3136,)), ("dense", (1024,)), ("dropout", (1024,)), ("dense", (10,))]
    assert [tuple(layer.pads) for layer in model.layers if layer.type == "conv2d"] == [(2, 2, 2, 2)] * 2
    assert [layer.get("activation") for layer in model.layers if layer.type in ("conv2d", "dense")] == [
        "relu", "relu", "relu", None]  # the output's softmax is folded into the loss
    training = spec["training"]
    assert training["optimizer"] == {"name": "adam", "lr": 1e-4, "epsilon": 1e-8}
    # 20,000 iterations of 50 over the 55,000 training images (5,000 held out) are 18.18 epochs: 18 here.
    assert (training["batch_size"], training["epochs"], spec["data"]["train_subset"]) == (50, 18, 55_000)
    assert 20_000 * 50 / 55_000 == pytest.approx(18.18, abs=0.005)
    assert planned_params("wu-tf-mnist") == TF_MNIST_PARAMS


def test_theano_lenet_is_the_lenet_tutorial():
    spec = specs.load("wu-theano-lenet")
    model = plan(spec)
    assert [(layer.type, layer.output.dims) for layer in model.layers] == [
        ("conv2d", (24, 24, 20)), ("maxpool2d", (12, 12, 20)), ("conv2d", (8, 8, 50)), ("maxpool2d", (4, 4, 50)),
        ("flatten", (800,)), ("dense", (500,)), ("dense", (10,))]
    assert [layer.get("activation") for layer in model.layers if layer.type in ("conv2d", "dense")] == [
        "tanh", "tanh", "tanh", None]
    training = spec["training"]
    assert training["optimizer"] == {"name": "sgd", "lr": 0.1}
    assert (training["batch_size"], training["epochs"], spec["data"]["train_subset"]) == (500, 200, 50_000)
    assert planned_params("wu-theano-lenet") == THEANO_LENET_PARAMS


def test_theano_cifar10_flattens_to_the_studys_4_by_4_by_8():
    spec = specs.load("wu-theano-cifar10")
    model = plan(spec)
    # 'valid' 3x3 convolutions and pools that round down: 32 -> 30 -> 10 -> 8 -> 4.
    assert [(layer.type, layer.output.dims) for layer in model.layers] == [
        ("conv2d", (30, 30, 4)), ("maxpool2d", (10, 10, 4)), ("conv2d", (8, 8, 8)), ("maxpool2d", (4, 4, 8)),
        ("flatten", (4 * 4 * 8,)), ("dense", (100,)), ("dense", (10,))]
    training = spec["training"]
    assert training["optimizer"] == {"name": "sgd", "lr": 0.01}
    assert (training["batch_size"], training["epochs"], spec["data"]["train_subset"]) == (50, 50, None)
    assert planned_params("wu-theano-cifar10") == THEANO_CIFAR_PARAMS


@pytest.mark.parametrize("workload", PARAMS)
def test_the_short_profiles_train_the_same_network_without_departing(workload):
    for profile in ("quick", "smoke"):
        small = specs.load(workload, profile)
        assert small["model"] == specs.load(workload)["model"] and planned_params(workload, profile) == PARAMS[workload]
        assert small["training"]["epochs"] <= 2 and small["data"]["train_subset"] <= 6000
    assert specs.departing_profiles(workload) == {}
    choices = specs.load(workload)["choices"]
    assert f"{PARAMS[workload]:,} trainable" in choices["parameters"]


def test_the_departures_from_the_tutorials_are_named():
    departures = {w: sorted(k for k, v in specs.load(w)["choices"].items() if v.startswith("departure: "))
                  for w in PARAMS}
    assert departures == {"wu-tf-mnist": ["iterations", "validation"],
                          "wu-theano-lenet": ["early_stopping", "validation"], "wu-theano-cifar10": [],
                          "wu-tf-cifar10": ["augmentation", "evaluation", "input_scaling", "input_size",
                                            "learning_rate_decay", "weight_decay"]}
    # The study names no activation for the CIFAR-10 tutorial: the spec says which it chose.
    assert "names none" in specs.load("wu-theano-cifar10")["choices"]["activation"]


@pytest.mark.slow
def test_every_framework_builds_the_wu_networks_with_the_hand_counted_parameters(tmp_path):
    runs = smoke_runs(tmp_path, FRAMEWORKS, target="wu-cpu-defaults", datasets=("mnist", "cifar10"))
    assert sorted(runs) == sorted((w, f) for w in WU_WORKLOADS for f in FRAMEWORKS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
        assert run["results"]["epochs_completed"] == 1, key
    counts = {key: run["model"]["trainable_params"] for key, run in runs.items()}
    # Every framework builds each network with one count: the hand count where this file has one.
    assert all(len({counts[w, f] for f in FRAMEWORKS}) == 1 for w in WU_WORKLOADS), counts
    assert {key: n for key, n in counts.items() if key[0] in PARAMS} == {
        (w, f): PARAMS[w] for w in PARAMS for f in FRAMEWORKS}
    for framework in FRAMEWORKS:  # each module says how it ran the LRN (bench/modelplan.py's lrn layer)
        assert runs["wu-tf-cifar10", framework]["device_used"]["kernels"]["lrn"], framework
