"""Shams et al.'s study file (studies/shams/study.toml) and its workloads, Caffe's LeNet on MNIST
(lenet-mnist), Caffe's "quick" ConvNet on CIFAR-10 (convnet-cifar10) and the three ILSVRC'12 networks on
generated inputs (alexnet-shams-synthetic, googlenet-synthetic, vgg19-synthetic): the experiments time
mini-batches 101-1100 on CPU and GPU, the model plan gives Caffe's shapes (Caffe rounds pool outputs up), and
PyTorch and TensorFlow build every network with the hand-counted parameters, trained at the smoke sizes
through `python -m campaign run --target shams-cpu` (the local runner's environments, DLREPRO_VENV_ROOT) on
synthetic data."""

from __future__ import annotations

import pytest

from bench.modelplan import plan
from campaign import specs, study
from tests.plancount import trainable
from tests.smokecampaign import smoke_runs

FRAMEWORKS = ("pytorch", "tensorflow")
# Weights + biases, by hand. LeNet: conv 5x5x1x20, conv 5x5x20x50, dense 4*4*50 -> 500, dense 500 -> 10.
LENET_PARAMS = (5 * 5 * 1 * 20 + 20) + (5 * 5 * 20 * 50 + 50) + (800 * 500 + 500) + (500 * 10 + 10)
# ConvNet: conv 5x5x3x32, conv 5x5x32x32, conv 5x5x32x64, dense 4*4*64 -> 64, dense 64 -> 10.
CONVNET_PARAMS = ((5 * 5 * 3 * 32 + 32) + (5 * 5 * 32 * 32 + 32) + (5 * 5 * 32 * 64 + 64) + (1024 * 64 + 64)
                  + (64 * 10 + 10))
# bvlc_alexnet in one tower (its groups left out): conv 11x11x3x96, 5x5x96x256, 3x3x256x384, 3x3x384x384,
# 3x3x384x256, dense 6*6*256 -> 4096, 4096 -> 4096, 4096 -> 1000.
ALEXNET_PARAMS = ((11 * 11 * 3 * 96 + 96) + (5 * 5 * 96 * 256 + 256) + (3 * 3 * 256 * 384 + 384)
                  + (3 * 3 * 384 * 384 + 384) + (3 * 3 * 384 * 256 + 256)
                  + (9216 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000))
# Caffe's grouped conv2, conv4 and conv5 read half the channels: half their weights.
assert ALEXNET_PARAMS - (5 * 5 * 48 * 256 + 3 * 3 * 192 * 384 + 3 * 3 * 192 * 256) == 60_965_224  # bvlc_alexnet


def _conv(k: int, c: int, f: int) -> int:
    return k * k * c * f + f


def _inception(c: int, a: int, b: int, b3: int, d: int, d5: int, p: int) -> int:
    """An Inception module reading c channels: 1x1 a | 1x1 b -> 3x3 b3 | 1x1 d -> 5x5 d5 | pool -> 1x1 p."""
    return _conv(1, c, a) + _conv(1, c, b) + _conv(3, b, b3) + _conv(1, c, d) + _conv(5, d, d5) + _conv(1, c, p)


# bvlc_googlenet without its auxiliary classifiers: conv1 7x7x3x64, conv2 1x1x64x64 + 3x3x64x192, the nine
# Inception modules (Szegedy et al. 2015, Table 1), dense 1024 -> 1000.
GOOGLENET_PARAMS = (_conv(7, 3, 64) + _conv(1, 64, 64) + _conv(3, 64, 192)
                    + _inception(192, 64, 96, 128, 16, 32, 32) + _inception(256, 128, 128, 192, 32, 96, 64)
                    + _inception(480, 192, 96, 208, 16, 48, 64) + _inception(512, 160, 112, 224, 24, 64, 64)
                    + _inception(512, 128, 128, 256, 24, 64, 64) + _inception(512, 112, 144, 288, 32, 64, 64)
                    + _inception(528, 256, 160, 320, 32, 128, 128) + _inception(832, 256, 160, 320, 32, 128, 128)
                    + _inception(832, 384, 192, 384, 48, 128, 128) + (1024 * 1000 + 1000))
# VGG-19 (configuration E): sixteen 3x3 convs, dense 7*7*512 -> 4096, 4096 -> 4096, 4096 -> 1000.
VGG19_CONVS = [(3, 64), (64, 64), (64, 128), (128, 128), (128, 256)] + [(256, 256)] * 3 + [(256, 512)] + [
    (512, 512)] * 7
VGG19_PARAMS = (sum(_conv(3, c, f) for c, f in VGG19_CONVS)
                + (25088 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000))
PARAMS = {"lenet-mnist": LENET_PARAMS, "convnet-cifar10": CONVNET_PARAMS, "alexnet-shams-synthetic": ALEXNET_PARAMS,
          "googlenet-synthetic": GOOGLENET_PARAMS, "vgg19-synthetic": VGG19_PARAMS}
assert PARAMS == {"lenet-mnist": 431_080, "convnet-cifar10": 145_578,  # Caffe's two examples' counts
                  "alexnet-shams-synthetic": 62_378_344,  # the one-tower AlexNet's
                  "googlenet-synthetic": 6_998_552,  # bvlc_googlenet's less the two auxiliary heads
                  "vgg19-synthetic": 143_667_240}  # Simonyan & Zisserman's 144M
IMAGENET = ("alexnet-shams-synthetic", "googlenet-synthetic", "vgg19-synthetic")


def planned_params(workload: str) -> int:
    """Trainable parameters of a workload's planned layers (tests/plancount.py: concat branches included)."""
    return trainable(plan(specs.load(workload)).layers)


def test_shams_experiments_time_iterations_101_to_1100_on_cpu_and_gpu():
    shams = study.load_study("shams")
    assert (shams.title, shams.claims, shams.reference) == ("Shams et al. (ICDCS 2017)", "Shams et al.",
                                                            ("shams2017.csv",))
    cpu, gpu = shams.experiments["shams-cpu"], shams.experiments["shams-gpu"]
    assert (cpu.device, gpu.device, gpu.cpu) == ("cpu", "gpu", "shams-cpu")
    assert cpu.workloads == gpu.workloads == ("lenet-mnist", "convnet-cifar10", *IMAGENET)
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


@pytest.mark.parametrize(("workload", "batch", "quick_batch", "smoke_batch"), [
    ("alexnet-shams-synthetic", 256, 16, 2), ("googlenet-synthetic", 128, 8, 2), ("vgg19-synthetic", 128, 2, 1)])
def test_imagenet_networks_have_the_hand_counts_at_the_studys_batch(workload, batch, quick_batch, smoke_batch):
    spec = specs.load(workload)
    assert (spec["study"], spec["dataset"], spec["training"]["batch_size"]) == ("shams", "generated", batch)
    assert spec["model"]["num_classes"] == 1000 and planned_params(workload) == PARAMS[workload]
    # The quick and smoke profiles shrink the mini-batch only: the same network, the same count, no departure.
    for profile, profile_batch in (("quick", quick_batch), ("smoke", smoke_batch)):
        small = specs.load(workload, profile)
        assert small["training"]["batch_size"] == profile_batch and small["model"] == spec["model"]
        assert trainable(plan(small).layers) == PARAMS[workload]
    assert specs.departing_profiles(workload) == {}
    # Every departure from the study's Caffe model is named in [choices].
    named = {"alexnet-shams-synthetic": ("groups", "local_response_normalization"),
             "googlenet-synthetic": ("auxiliary_classifiers", "local_response_normalization"), "vgg19-synthetic": ()}
    assert all(spec["choices"][key].startswith("departure: ") for key in named[workload])
    assert f"{PARAMS[workload]:,} trainable" in spec["choices"]["parameters"]


def test_googlenet_is_bvlc_googlenet_with_caffes_rounded_up_pools():
    model = plan(specs.load("googlenet-synthetic"))
    shapes = [(layer.type, layer.output.dims) for layer in model.layers]
    assert shapes == [
        ("conv2d", (112, 112, 64)), ("maxpool2d", (56, 56, 64)), ("conv2d", (56, 56, 64)), ("conv2d", (56, 56, 192)),
        ("maxpool2d", (28, 28, 192)), ("concat", (28, 28, 256)), ("concat", (28, 28, 480)),
        ("maxpool2d", (14, 14, 480)),
        ("concat", (14, 14, 512)), ("concat", (14, 14, 512)), ("concat", (14, 14, 512)), ("concat", (14, 14, 528)),
        ("concat", (14, 14, 832)), ("maxpool2d", (7, 7, 832)), ("concat", (7, 7, 832)), ("concat", (7, 7, 1024)),
        ("global_avgpool", (1024,)), ("dropout", (1024,)), ("dense", (1000,))]
    # 3/2 max pools: 'same' pads one row and column after, giving Caffe's ceil((n - 3) / 2) + 1.
    assert {layer.pads for layer in model.layers if layer.type == "maxpool2d"} == {(0, 1, 0, 1)}
    for block in (layer for layer in model.layers if layer.type == "concat"):
        assert [[sub.type for sub in branch] for branch in block.branches] == [
            ["conv2d"], ["conv2d", "conv2d"], ["conv2d", "conv2d"], ["maxpool2d", "conv2d"]]
        assert all(sub.get("activation") == "relu" for branch in block.branches for sub in branch
                   if sub.type == "conv2d")


@pytest.mark.slow
def test_pytorch_and_tensorflow_build_every_network_with_the_hand_counted_parameters(tmp_path):
    # The ImageNet networks at smoke size: mini-batches of 2 (VGG-19: 1) of their full 224/227 inputs, so the
    # trainable parameters each framework's real build reports are the paper profile's.
    runs = {(f, w): run for (w, f), run in smoke_runs(tmp_path, FRAMEWORKS, target="shams-cpu",
                                                      datasets=("mnist", "cifar10")).items()}
    assert sorted(runs) == sorted((f, w) for f in FRAMEWORKS for w in PARAMS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
        assert (run["timing"]["warmup_iterations"], run["timing"]["measured_iterations"]) == (2, 3), key
    assert {key: run["model"]["trainable_params"] for key, run in runs.items()} == {
        (f, w): PARAMS[w] for f in FRAMEWORKS for w in PARAMS}
