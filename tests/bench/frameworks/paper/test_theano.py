"""The paper-era Theano module (Theano 1.0.2: bench/frameworks/theano/paper.py over the era-neutral graph.py,
optimizers.py and trainer.py), trained in its paper image through the docker runner (harness.py): every DLBench
workload's smoke spec, three epochs, one thread; a cnn-mnist run at an absurd learning rate that must fail as
'nan'; inimage.py's padding check and a strided 'same' convolution's gradient. The shared tests
(harness.SHARED_TESTS) are collected here with this file's `paper` fixture.

Each run is a fresh container whose compile cache is its own /tmp (HOME=/tmp on a read-only root), so every
run pays Theano's cold g++ compiles in its setup time, as every run of a campaign in the image does."""

from __future__ import annotations

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

FRAMEWORK = "theano"
paper = harness.paper_fixture(FRAMEWORK, __name__, weight=430)
# Cold g++ compiles of the padding check's trainers: minutes, in the other lane.
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=145, extra=("theano_strided_same", "mnist_layers"))
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=500)

# The authors' cnn-mnist (issue 32; docs/notebook-parity.md section 1): DataSystemsGroupUT/DLBench,
# "CPU Experiment/Source Code/Theano_MNIST_CIFAR10_CIFAR100_SVHC_CNN.ipynb" (commit df5a5d1), cell 2, modelMNIST: a
# Lasagne stack on an InputLayer of (None, 1, 28, 28) (NCHW). Per layer, as harness.assert_authors_model compares it
# (activations folded into their layer). Where the list can see the notebook differ from the kit: Lasagne's
# DenseLayer flattens a 4-D input itself, so the notebook's flatten to 9,216 happens inside dense 128, and the kit
# has it as a layer of its own just before; the list puts it there (same shape, no parameters), and leaves out the
# notebook's FlattenLayer after dense 128, which maps (N, 128) to (N, 128) and so is no layer at all.
AUTHORS_MNIST = [
    # Conv2DLayer, 32 filters of 3x3, rectify, no pad: 32*1*3*3 + 32 = 320 -> 32x26x26
    {"kind": "conv", "out": [32, 26, 26], "params": 320, "act": "relu", "kernel": [3, 3]},
    # Conv2DLayer, 64 filters of 3x3, rectify: 64*32*3*3 + 64 = 18,496 -> 64x24x24
    {"kind": "conv", "out": [64, 24, 24], "params": 18_496, "act": "relu", "kernel": [3, 3]},
    # MaxPool2DLayer, pool 2x2 (stride = pool): -> 64x12x12
    {"kind": "maxpool", "out": [64, 12, 12], "params": 0, "pool": [2, 2]},
    # dropout p=.25 around the next layer's input
    {"kind": "dropout", "out": [64, 12, 12], "params": 0, "rate": 0.25},
    # inside DenseLayer 128 (see above): 64*12*12 = 9,216
    {"kind": "flatten", "out": [9216], "params": 0},
    # DenseLayer 128, rectify: 9,216*128 + 128 = 1,179,776
    {"kind": "dense", "out": [128], "params": 1_179_776, "act": "relu"},
    # (FlattenLayer on (N, 128): a no-op, left out) then dropout p=.5 around the last layer's input
    {"kind": "dropout", "out": [128], "params": 0, "rate": 0.5},
    # DenseLayer 10 with the softmax nonlinearity: 128*10 + 10 = 1,290. The kit's last dense gives logits and its
    # loss applies the softmax (the same function of the input), so the test expects "linear".
    {"kind": "dense", "out": [10], "params": 1_290, "act": "linear"},
]
AUTHORS_MNIST_PARAMS = 1_199_882  # 320 + 18,496 + 1,179,776 + 1,290: every W and b of the notebook's network


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in harness.SHARED_TESTS + experiments.SHARED_TESTS)


def test_parameter_counts_equal_keras(paper):
    # One LSTM bias per gate, as Keras: every workload's count is Keras' exactly (check.KERAS_COUNTS).
    check.assert_keras_counts({w: paper.record(w)["model"]["trainable_params"] for w in harness.WORKLOADS})


@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_theano_config_and_kernels(paper, workload):
    run = paper.record(workload)
    env = run["environment"]
    assert env["packages"]["theano"] == env["framework_build"]["theano"] == harness.pinned(FRAMEWORK, "theano")
    info = run["device_used"]
    config = info["theano_config"]
    assert config["floatX"] == "float32" and "openblas" in config["blas.ldflags"]
    # The container's own compile cache: under its HOME (/tmp, a tmpfs), never in the read-only image.
    assert config["compiledir"].startswith("/tmp/")
    assert info["compile_seconds"] >= 0
    kernels = info["kernels"]
    if workload.startswith("cnn-"):
        assert "CorrMM" in kernels["conv2d"] and "Pool" in kernels["maxpool2d"]  # C ops, not a Python fallback
    else:
        assert "scan" in kernels["lstm"] and "one bias per gate" in kernels["lstm"]
        # CPython 3.6 builds scan's Cython loop (scan_perform_ext), which Python 3.11 could not.
        assert "Cython loop (scan_perform_ext)" in kernels["lstm"]
    if workload in ("lstm-imdb", "lstm-ptb"):  # lstm-ptb has no padding: no mask
        assert ("lstm_lengths" in kernels) == (workload == "lstm-imdb")
    if workload in ("lstm-ptb", "seq2seq-manythings"):
        assert {k: info["optimizer"][k] for k in check.LSTM_OPTIMIZERS[workload]} == check.LSTM_OPTIMIZERS[workload]
        # The per-step dense is BLAS gemm over (N*T, units), not a loop of small products.
        assert "(N*T, units)" in kernels["dense"] and "Dot22" in kernels["dense"]


def test_theano_versions_and_weight_decay(paper):
    infos = {w: paper.record(w)["device_used"] for w in harness.WORKLOADS}
    assert infos["cnn-mnist"]["versions"] == {
        "theano": "1.0.2", "numpy": harness.pinned(FRAMEWORK, "numpy"), "scipy": harness.pinned(FRAMEWORK, "scipy"),
        "python": harness.PYTHON}
    assert infos["cnn-mnist"]["threads"]["openblas"] == 1
    assert "encoder" in infos["seq2seq-manythings"]["kernels"]["lstm_initial_state"]
    # Decoupled weight decay on the CNNs (SGD, momentum 0.5, weight decay 1e-6), by hand.
    assert infos["cnn-cifar10"]["optimizer"]["weight_decay"] == 1e-6
    assert infos["cnn-cifar10"]["weight_decay_rule"].startswith("decoupled")


def test_a_strided_same_conv_with_uneven_padding_has_a_gradient(checks):
    out = checks["theano_strided_same"]
    assert out["pads"] == [0, 1, 0, 1]  # top, bottom, left, right: the odd pixel after, as TensorFlow
    # 8 -> 4 x 4 x 4 = 64 features; the conv's kernel and bias, the dense's weights and bias.
    assert out["shapes"] == [[2, 4], [4, 3, 3, 3], [4], [64, 4], [4]]


def test_cnn_mnist_is_the_authors_model(checks):
    """The cnn-mnist training graph as Theano 1.0.2's own graph shows it (inimage.py mnist_layers) is the
    authors' model: AUTHORS_MNIST layer by layer, and AUTHORS_MNIST_PARAMS parameters by its own count."""
    harness.assert_authors_model(checks, AUTHORS_MNIST, AUTHORS_MNIST_PARAMS)
