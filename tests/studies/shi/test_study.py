"""Shi et al.'s study file (studies/shi/study.toml) and its FCN-R workload (fcn-r-mnist): the experiments
time mini-batches of one network on CPU (a thread sweep) and GPU, and every current-era framework builds the
same 784-2048-4096-1024-10 network, trained at the smoke sizes through `python -m campaign run` (the local
runner's environments, DLREPRO_VENV_ROOT) on synthetic MNIST."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import modelplan, prepared
from bench.errors import UsageError
from campaign import requests, specs, study
from data import ptb
from data.npz import write_npz
from data.prepare import prepare
from tests.smokecampaign import smoke_runs

REPO = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# Weights + biases of each dense layer of FCN-R (784 inputs, 2048-4096-1024 hidden, 10 classes).
FCN_R_PARAMS = (784 * 2048 + 2048) + (2048 * 4096 + 4096) + (4096 * 1024 + 1024) + (1024 * 10 + 10)
# Shi et al.'s real-data networks beside FCN-R, in every experiment of the study.
SHI_REAL = ("alexnet-r-cifar10", "lstm32-ptb")


def test_shi_experiments_time_fcn_r_on_cpu_threads_and_gpu():
    shi = study.load_study("shi")
    assert (shi.title, shi.claims) == ("Shi et al. (CCBD 2016)", "Shi et al.")
    for name in shi.reference:
        assert (REPO / "studies" / "shi" / "reference" / name).is_file(), name
    cpu, gpu = shi.experiments["shi-cpu"], shi.experiments["shi-gpu"]
    assert (cpu.device, gpu.device) == ("cpu", "gpu")
    assert cpu.workloads == gpu.workloads and "fcn-r-mnist" in cpu.workloads
    assert cpu.measurement == gpu.measurement
    assert cpu.measurement["protocol"] == "iterations" and cpu.measurement["warmup_epochs"] == 1
    assert cpu.points(physical_cores=2) == [{"threads": 1}, {"threads": 2}, {"threads": 4}]
    assert gpu.points() == [{}]


def test_fcn_r_is_shis_network_at_table_7s_batch():
    spec = specs.load("fcn-r-mnist")
    dense = [layer for layer in spec["model"]["layers"] if layer["type"] == "dense"]
    assert [layer["units"] for layer in dense] == [2048, 4096, 1024, 10]
    assert [layer["activation"] for layer in dense] == ["sigmoid"] * 3 + ["softmax"]
    assert spec["training"]["batch_size"] == 1024
    # The quick profile's warm-up epoch is a few mini-batches of the paper's size.
    quick = specs.load("fcn-r-mnist", "quick")
    assert quick["training"]["batch_size"] == 1024 and quick["data"]["train_subset"] // 1024 <= 4


@pytest.mark.slow
def test_every_framework_builds_fcn_r_with_the_hand_counted_parameters(tmp_path):
    runs = {fw: run for (_, fw), run in smoke_runs(tmp_path, FRAMEWORKS, ["fcn-r-mnist"], datasets=["mnist"]).items()}
    assert sorted(runs) == sorted(FRAMEWORKS)
    for framework, run in runs.items():
        assert run["status"] == "ok", (framework, run["failure"])
    counts = {framework: run["model"]["trainable_params"] for framework, run in runs.items()}
    assert counts == dict.fromkeys(FRAMEWORKS, FCN_R_PARAMS)


def test_shi_experiments_time_alexnet_r_and_the_lstm_too():
    shi = study.load_study("shi")
    for name in ("shi-cpu", "shi-gpu"):
        assert set(SHI_REAL) <= set(shi.experiments[name].workloads), name
    for name in SHI_REAL:
        assert specs.load(name)["study"] == "shi"


def test_alexnet_r_is_the_study_scripts_cifar_net_at_table_7s_batch():
    spec = specs.load("alexnet-r-cifar10")
    model = modelplan.plan(spec)
    # conv 5x5 'same' 32, 32, 64 (ReLU); pools 3/2 unpadded, floor: max 32 -> 15, max -> 7, average -> 3.
    assert [(layer.type, layer.output.dims) for layer in model.layers] == [
        ("conv2d", (32, 32, 32)), ("maxpool2d", (15, 15, 32)), ("conv2d", (15, 15, 32)), ("maxpool2d", (7, 7, 32)),
        ("conv2d", (7, 7, 64)), ("avgpool2d", (3, 3, 64)), ("flatten", (576,)), ("dense", (10,))]
    assert [layer["kernel"] for layer in model.layers if layer.type == "conv2d"] == [5, 5, 5]
    assert all(layer["activation"] == "relu" for layer in model.layers if layer.type == "conv2d")
    assert all((layer["pool"], layer["stride"]) == (3, 2) for layer in model.layers if layer.type in modelplan.POOLS)
    assert spec["training"]["batch_size"] == 1024  # Table 7's, CPU and GPU
    assert spec["training"]["optimizer"] == {"name": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-5}
    quick = specs.load("alexnet-r-cifar10", "quick")
    assert quick["training"]["batch_size"] == 1024 and quick["data"]["train_subset"] // 1024 <= 4


def test_lstm32_is_two_256_unit_layers_over_32_token_windows():
    spec = specs.load("lstm32-ptb")
    model = modelplan.plan(spec)
    assert [(layer.type, layer.output.features) for layer in model.layers] == [
        ("embedding", 256), ("lstm", 256), ("lstm", 256), ("dense", 10_000)]
    assert model.kind == "sequence" and spec["model"]["vocab_size"] == 10_000
    # The model's unroll length is the window the run cuts from the PTB token streams.
    assert spec["model"]["maxlen"] == spec["data"]["window"] == 32
    assert spec["training"]["batch_size"] == 256  # the study's CPU batch (its GPU table: 128)
    assert spec["training"]["optimizer"] == {"name": "sgd", "lr": 0.1, "momentum": 0.0, "weight_decay": 1e-5}
    quick = specs.load("lstm32-ptb", "quick")
    assert quick["training"]["batch_size"] == 256 and quick["data"]["train_subset"] // 256 <= 4
    # lstm-ptb keeps reading the prepared 35-token windows: no window of its own.
    assert "window" not in specs.load("lstm-ptb")["data"]


@pytest.fixture(scope="module")
def tiny_ptb(tmp_path_factory) -> requests.Dataset:
    """A small synthetic PTB prepared as the kit prepares it (35-token windows and the token streams)."""
    root = tmp_path_factory.mktemp("ptb")
    ptb.write_ptb(root / "raw", 300, 60)
    folder = prepare("ptb", root / "raw", root / "prepared", source="synthetic", progress=False)
    meta = prepared.read_meta(folder)
    return requests.Dataset("ptb", "synthetic", folder, meta["arrays_sha256"], prepared.split_sizes(folder))


def test_a_window_of_its_own_is_cut_from_the_token_streams(tiny_ptb):
    whole = prepared.load(tiny_ptb.folder)
    assert whole.x_train.shape[1] == ptb.PTB_NUM_STEPS  # what lstm-ptb reads, unchanged
    sizes = prepared.split_sizes(tiny_ptb.folder, 32)
    for split in ("train", "test"):
        stream = getattr(whole, "tokens_" + split)
        assert sizes[split] == (len(stream) - 1) // 32 > getattr(whole, "y_" + split).shape[0]
    cut = prepared.load(tiny_ptb.folder, [0, 3, sizes["train"] - 1], None, window=32)
    stream = whole.tokens_train
    assert cut.x_train.shape == cut.y_train.shape == (3, 32)
    for row, start in enumerate((0, 3 * 32, (sizes["train"] - 1) * 32)):
        assert cut.x_train[row].tolist() == stream[start:start + 32].tolist()
        assert cut.y_train[row].tolist() == stream[start + 1:start + 33].tolist()
    assert cut.x_test.shape == (sizes["test"], 32)
    assert cut.meta["arrays_sha256"] == tiny_ptb.arrays_sha256


def test_a_window_needs_token_streams(tmp_path):
    write_npz(tmp_path / prepared.ARRAYS_FILE, {"x_train": np.zeros((2, 3)), "y_train": np.zeros(2),
                                                "x_test": np.zeros((1, 3)), "y_test": np.zeros(1)})
    with pytest.raises(UsageError, match="has no token stream 'tokens_train'"):
        prepared.split_sizes(tmp_path, 32)


def test_the_host_draws_subsets_from_the_windows_the_run_cuts(tiny_ptb):
    def request(workload: str) -> dict:
        return requests.resolve(
            framework="pytorch", era="current", workload=workload, profile="smoke", spec=specs.load(workload, "smoke"),
            dataset=tiny_ptb, device="cpu", threads=1, seed=0, repeat=0, campaign="t", runner="local",
            environment=requests.Environment("env"))

    sizes = prepared.split_sizes(tiny_ptb.folder, 32)
    shi = request("lstm32-ptb")["data"]
    assert shi["train_indices"] == requests.subset_indices(sizes["train"], 48)
    assert shi["test_indices"] == requests.subset_indices(sizes["test"], 24)
    # lstm-ptb's rows are still drawn from the prepared 35-token windows.
    dlbench = request("lstm-ptb")["data"]
    assert dlbench["train_indices"] == requests.subset_indices(tiny_ptb.sizes["train"], 48)
