"""The paper-era MXNet module (MXNet 1.3.0: bench/frameworks/mxnet/paper.py over the era-neutral blocks.py and
trainer.py), trained in its paper image through the docker runner (harness.py): every DLBench workload's smoke spec,
three epochs, one thread; a cnn-mnist run at an absurd learning rate that must fail as 'nan'; inimage.py's padding
check and two evaluations of the same weights; the other studies' cases (experiments.py: step(), infer(), a residual
network, concat, lrn, a GRU). The shared tests (harness.SHARED_TESTS, experiments.SHARED_TESTS) are collected here
with this file's `paper` and `cases` fixtures."""

from __future__ import annotations

import sys

import pytest

from tests.bench.frameworks import check
from tests.bench.frameworks.paper import experiments, harness
from tests.bench.frameworks.paper.experiments import (  # noqa: F401  (the shared tests, collected here)
    test_each_case_is_planned_and_run_or_refused_in_one_line,
    test_planned_cases_ran_their_protocol,
)
from tests.bench.frameworks.paper.harness import (  # noqa: F401  (the shared tests, collected here)
    test_info_records_threads_and_kernels,
    test_loss_falls,
    test_lstm_reads_the_last_real_step,
    test_monitor_sampled_the_run,
    test_non_finite_loss_fails_the_run_as_nan,
    test_run_is_a_valid_paper_era_run,
    test_versions_in_the_image_are_the_locks,
)

pytestmark = [pytest.mark.slow, pytest.mark.paper_image]

FRAMEWORK = "mxnet"
CNNS = tuple(w for w in harness.WORKLOADS if w.startswith("cnn-"))
SEQUENCES = tuple(w for w in harness.WORKLOADS if w not in CNNS)
paper = harness.paper_fixture(FRAMEWORK, __name__, weight=95)
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=5, evaluations=True, extra=("mnist_layers",))
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=150)

# The authors' cnn-mnist (issue 32; docs/notebook-parity.md section 1): DataSystemsGroupUT/DLBench,
# "CPU Experiment/Source Code/MXNet_MNIST_CIFAR10_CIFAR100_SVHC_CNN.ipynb" (commit 2f2a4ba), cell 2, modelMNIST: a
# gluon.nn.Sequential over NCHW images, every layer's input size left for Gluon to infer. Per layer, as
# harness.assert_authors_model compares it (activations folded into their layer):
AUTHORS_MNIST = [
    # Conv2D, 32 channels, kernel 3, ReLU, no padding, on 1x28x28: 32*1*3*3 + 32 = 320 -> 32x26x26
    {"kind": "conv", "out": [32, 26, 26], "params": 320, "act": "relu", "kernel": [3, 3]},
    # Conv2D, 64 channels, kernel 3, ReLU: 64*32*3*3 + 64 = 18,496 -> 64x24x24
    {"kind": "conv", "out": [64, 24, 24], "params": 18_496, "act": "relu", "kernel": [3, 3]},
    # MaxPool2D, pool 2, stride 2: -> 64x12x12
    {"kind": "maxpool", "out": [64, 12, 12], "params": 0, "pool": [2, 2]},
    # Dropout 0.25
    {"kind": "dropout", "out": [64, 12, 12], "params": 0, "rate": 0.25},
    # Flatten: 64*12*12 = 9,216
    {"kind": "flatten", "out": [9216], "params": 0},
    # Dense 128, ReLU: 9,216*128 + 128 = 1,179,776
    {"kind": "dense", "out": [128], "params": 1_179_776, "act": "relu"},
    # Dropout 0.5
    {"kind": "dropout", "out": [128], "params": 0, "rate": 0.5},
    # Dense 10 (pnumClasses), no activation: 128*10 + 10 = 1,290, logits for SoftmaxCrossEntropyLoss, as in the kit
    {"kind": "dense", "out": [10], "params": 1_290, "act": "linear"},
]
AUTHORS_MNIST_PARAMS = 1_199_882  # 320 + 18,496 + 1,179,776 + 1,290


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in harness.SHARED_TESTS + experiments.SHARED_TESTS)


@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_device_used_records_the_kernels(paper, workload):
    run = paper.record(workload)
    assert run["environment"]["framework_build"]["numpy"] == harness.pinned(FRAMEWORK, "numpy")
    info = run["device_used"]
    assert info["versions"]["mxnet"] == "1.3.0"
    kernels = info["kernels"]
    if workload in CNNS:
        assert kernels["conv2d"].startswith("gluon.nn.Conv2D NCHW (CPU")
    else:
        assert kernels["lstm"] == "gluon.rnn.LSTM, TNC (fused RNN operator, CPU)"
    if workload == "lstm-imdb":  # 1.3.0's fused LSTM reads no lengths: the whole padded batch
        assert "SequenceLast" in kernels["lstm_lengths"]
    if workload == "seq2seq-manythings":  # no lengths in 1.3.0's fused LSTM: the encoder's cell is stepped
        assert "F.contrib.foreach" in kernels["lstm_encoder_state"]
        assert info["hybridize"] == "static_alloc=True, static_shape=False (cached graph)"
    if workload in ("lstm-ptb", "seq2seq-manythings"):
        assert "Dense(flatten=False)" in kernels["dense"]
        assert info["optimizer"] == check.LSTM_OPTIMIZERS[workload]


def test_parameter_counts(paper):
    counts = {w: paper.record(w)["model"]["trainable_params"] for w in harness.WORKLOADS}
    sys.stderr.write(f"paper-era mxnet parameter counts: {counts}\n")
    check.assert_keras_counts({w: counts[w] for w in CNNS})
    for workload in SEQUENCES:  # gluon.rnn.LSTM keeps two biases per gate (i2h, h2h), Keras one
        assert counts[workload] - check.KERAS_COUNTS[workload] == check.second_bias(workload), workload


def test_dropout_is_off_at_test_time(checks):
    first, again = checks["evaluations"]
    assert first == again


def test_the_cpu_build_is_reported(checks):
    versions = checks["versions"]
    assert versions["mxnet_distribution"] == "mxnet" and versions["mxnet_cuda"] == "no"


def test_two_threads_train_on_one_engine_worker(tmp_path):
    # Two OpenMP threads and two engine workers hung MXNet 1.3.0 for good inside its bundled OpenBLAS (two
    # callers in exec_blas at once: bench/threads.py UNSET_VARS); a hang fails the run at the timeout.
    runs = harness.run_paper(FRAMEWORK, tmp_path, ("cnn-cifar100",), nan=False, threads=2, timeout_s=300)
    record = runs.record("cnn-cifar100")
    assert record["device_used"]["threads"] == {"intra_op": 2, "inter_op": 1}
    assert record["config"]["threads"] == 2


def test_a_residual_network_is_built_of_gluon_batchnorm(cases):
    # resnet56-cifar10 (experiments.py): residual blocks, batchnorm and bias-free convolutions through 1.3.0's Gluon.
    assert "BatchNorm" in cases.record(("shi-cpu", "resnet56-cifar10"))["device_used"]["kernels"]["batchnorm"]


def test_cnn_mnist_is_the_authors_model(checks):
    """The cnn-mnist network as MXNet 1.3.0's own symbol reports it (inimage.py mnist_layers) is the
    authors' model: AUTHORS_MNIST layer by layer, and AUTHORS_MNIST_PARAMS parameters by its own count."""
    harness.assert_authors_model(checks, AUTHORS_MNIST, AUTHORS_MNIST_PARAMS)
