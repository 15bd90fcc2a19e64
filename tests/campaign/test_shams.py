"""Shams et al.'s study file (campaign/studies/shams.toml) and its workloads, Caffe's LeNet on MNIST
(lenet-mnist) and Caffe's "quick" ConvNet on CIFAR-10 (convnet-cifar10): the experiments time mini-batches
101-1100 on CPU and GPU, the model plan gives Caffe's shapes (Caffe rounds pool outputs up), and PyTorch and
TensorFlow build both networks with the hand-counted parameters, trained at the smoke sizes through
`python -m campaign run --target shams-cpu` (the local runner's environments, DLREPRO_VENV_ROOT) on
synthetic data."""

from __future__ import annotations

import pytest

from bench.modelplan import plan
from campaign import specs, study
from tests.smokecampaign import smoke_runs

FRAMEWORKS = ("pytorch", "tensorflow")
# Weights + biases, by hand. LeNet: conv 5x5x1x20, conv 5x5x20x50, dense 4*4*50 -> 500, dense 500 -> 10.
LENET_PARAMS = (5 * 5 * 1 * 20 + 20) + (5 * 5 * 20 * 50 + 50) + (800 * 500 + 500) + (500 * 10 + 10)
# ConvNet: conv 5x5x3x32, conv 5x5x32x32, conv 5x5x32x64, dense 4*4*64 -> 64, dense 64 -> 10.
CONVNET_PARAMS = ((5 * 5 * 3 * 32 + 32) + (5 * 5 * 32 * 32 + 32) + (5 * 5 * 32 * 64 + 64) + (1024 * 64 + 64)
                  + (64 * 10 + 10))
PARAMS = {"lenet-mnist": LENET_PARAMS, "convnet-cifar10": CONVNET_PARAMS}
assert PARAMS == {"lenet-mnist": 431_080, "convnet-cifar10": 145_578}  # Caffe's two examples' counts


def planned_params(workload: str) -> int:
    """Trainable parameters of a workload's planned layers (conv2d and dense carry weights and a bias)."""
    total = 0
    for layer in plan(specs.load(workload)).layers:
        if layer.type == "conv2d":
            total += layer["kernel"] ** 2 * layer.input.features * layer["filters"] + layer["filters"]
        elif layer.type == "dense":
            total += layer.input.features * layer["units"] + layer["units"]
    return total


def test_shams_experiments_time_iterations_101_to_1100_on_cpu_and_gpu():
    shams = study.load_study("shams")
    assert (shams.title, shams.claims, shams.reference) == ("Shams et al. (ICDCS 2017)", "Shams et al.", ())
    cpu, gpu = shams.experiments["shams-cpu"], shams.experiments["shams-gpu"]
    assert (cpu.device, gpu.device, gpu.cpu) == ("cpu", "gpu", "shams-cpu")
    assert cpu.workloads == gpu.workloads == ("lenet-mnist", "convnet-cifar10")
    for experiment in (cpu, gpu):
        assert experiment.measurement_for("paper") == {"protocol": "iterations", "warmup": 100, "iterations": 1000}
        assert experiment.measurement_for("quick")["iterations"] < 100
        assert experiment.measurement_for("smoke") == {"protocol": "iterations", "warmup": 2, "iterations": 3}
        assert experiment.points() == [{}]
    assert {specs.load(w)["study"] for w in cpu.workloads} == {"shams"}


def test_lenet_is_caffes_at_its_batch():
    spec = specs.load("lenet-mnist")
    model = plan(spec)
    shapes = [(layer.type, layer.output.dims) for layer in model.layers]
    assert shapes == [("conv2d", (24, 24, 20)), ("maxpool2d", (12, 12, 20)), ("conv2d", (8, 8, 50)),
                      ("maxpool2d", (4, 4, 50)), ("flatten", (800,)), ("dense", (500,)), ("dense", (10,))]
    assert [layer.get("activation") for layer in model.layers if layer.type in ("conv2d", "dense")] == [
        None, None, "relu", None]  # the output's softmax is folded into the loss
    assert spec["training"]["batch_size"] == 64
    assert spec["training"]["optimizer"] == {"name": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 5e-4}
    assert planned_params("lenet-mnist") == LENET_PARAMS


def test_convnet_has_caffes_rounded_up_pool_sizes_at_its_batch():
    # Caffe: ceil((32 - 3) / 2) + 1 = 16, then 8, then 4; 'valid' would give 15, 7, 3.
    spec = specs.load("convnet-cifar10")
    model = plan(spec)
    windows = [(layer.type, layer.output.dims, tuple(layer.pads)) for layer in model.layers if layer.pads]
    assert windows == [
        ("conv2d", (32, 32, 32), (2, 2, 2, 2)), ("maxpool2d", (16, 16, 32), (0, 1, 0, 1)),
        ("conv2d", (16, 16, 32), (2, 2, 2, 2)), ("avgpool2d", (8, 8, 32), (0, 1, 0, 1)),
        ("conv2d", (8, 8, 64), (2, 2, 2, 2)), ("avgpool2d", (4, 4, 64), (0, 1, 0, 1)),
    ]
    assert [layer.get("activation") for layer in model.layers if layer.type in ("conv2d", "dense")] == [
        "relu", "relu", "relu", None, None]  # Caffe's ip1 has no activation
    assert spec["training"]["batch_size"] == 100
    assert spec["training"]["optimizer"] == {"name": "sgd", "lr": 0.001, "momentum": 0.9, "weight_decay": 0.004}
    assert planned_params("convnet-cifar10") == CONVNET_PARAMS


@pytest.mark.slow
def test_pytorch_and_tensorflow_build_both_networks_with_the_hand_counted_parameters(tmp_path):
    runs = {(f, w): run for (w, f), run in smoke_runs(tmp_path, FRAMEWORKS, target="shams-cpu",
                                                      datasets=("mnist", "cifar10")).items()}
    assert sorted(runs) == sorted((f, w) for f in FRAMEWORKS for w in PARAMS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
        assert (run["timing"]["warmup_iterations"], run["timing"]["measured_iterations"]) == (2, 3), key
    assert {key: run["model"]["trainable_params"] for key, run in runs.items()} == {
        (f, w): PARAMS[w] for f in FRAMEWORKS for w in PARAMS}
