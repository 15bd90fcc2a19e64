"""The paper-era Chainer module (Chainer 4.5.0: bench/frameworks/chainer/paper.py, the era adapter of layers.py and
trainer.py), trained in its paper image through the docker runner (harness.py): every DLBench workload's smoke
spec, three epochs, one thread; a cnn-mnist run at an absurd learning rate that must fail as 'nan'; inimage.py's
padding check. The shared tests (harness.SHARED_TESTS) are collected here with this file's `paper` fixture."""

from __future__ import annotations

import re

import pytest

from bench import schema
from campaign import specs
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

FRAMEWORK = "chainer"
LSTMS = tuple(w for w in harness.WORKLOADS if specs.load(w)["family"] == "lstm")
paper = harness.paper_fixture(FRAMEWORK, __name__, weight=115)
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=5, extra=("mnist_layers",))
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=250)

# The authors' cnn-mnist (issue 32; docs/notebook-parity.md section 1): DataSystemsGroupUT/DLBench,
# "CPU Experiment/Source Code/Chainer_MNIST_CIFAR10_CIFAR100_SVHC_CNN.ipynb" (commit 2f2a4bae), cell 2, class
# modelMNIST: links declared in its init_scope, the forward in chainer.functions on 1x28x28 images. Per layer, as
# harness.assert_authors_model compares it (activations folded into their layer):
AUTHORS_MNIST = [
    # Convolution2D(1, 32, ksize 3), no pad, then F.relu: 32*1*3*3 + 32 = 320 -> 32x26x26
    {"kind": "conv", "out": [32, 26, 26], "params": 320, "act": "relu", "kernel": [3, 3]},
    # Convolution2D(32, 64, ksize 3), then F.relu: 64*32*3*3 + 64 = 18,496 -> 64x24x24
    {"kind": "conv", "out": [64, 24, 24], "params": 18_496, "act": "relu", "kernel": [3, 3]},
    # F.max_pooling_2d, ksize 2 (stride = ksize; cover_all left True, the kit's False: 24 -> 12 both ways)
    {"kind": "maxpool", "out": [64, 12, 12], "params": 0, "pool": [2, 2]},
    # F.dropout 0.25
    {"kind": "dropout", "out": [64, 12, 12], "params": 0, "rate": 0.25},
    # F.flatten, then a reshape to (-1, 9216): two reshapes in the notebook's graph, one flatten to 64*12*12 = 9,216
    # in the kit's; the list has one entry for the pair
    {"kind": "flatten", "out": [9216], "params": 0},
    # Linear(None, 128), then F.relu: 9,216*128 + 128 = 1,179,776
    {"kind": "dense", "out": [128], "params": 1_179_776, "act": "relu"},
    # F.dropout 0.5
    {"kind": "dropout", "out": [128], "params": 0, "rate": 0.5},
    # Linear(128, 10): 128*10 + 10 = 1,290; in training mode (never left: docs/notebook-parity.md note 4) the
    # notebook returns these logits to F.softmax_cross_entropy, as the kit does
    {"kind": "dense", "out": [10], "params": 1_290, "act": "linear"},
]
AUTHORS_MNIST_PARAMS = 1_199_882  # 320 + 18,496 + 1,179,776 + 1,290


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in harness.SHARED_TESTS + experiments.SHARED_TESTS)


@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_kernels_and_threads_recorded(paper, workload):
    run = paper.record(workload)
    assert run["environment"]["framework_build"]["chainer"] == "4.5.0"
    assert run["environment"]["framework_build"]["numpy"] == harness.pinned(FRAMEWORK, "numpy")
    info = run["device_used"]
    assert info["threads"]["blas_threads_set_by"].startswith("openblas_set_num_threads")  # one OpenBLAS thread
    assert info["weight_decay_rule"].startswith("decoupled")
    if workload in LSTMS:
        assert "links.NStepLSTM" in info["kernels"]["lstm"]  # the version: framework_build, above
        assert "variable-length" in info["kernels"]["lstm_lengths"]
    else:
        assert "cover_all=False" in info["kernels"]["maxpool2d"]
    if info["optimizer"]["name"] == "adadelta":
        assert "no learning rate" in info["optimizer_impl"]


def test_every_cnn_has_the_keras_count(paper):
    check.assert_every_cnn_spec_counted({w: paper.record(w)["model"]["trainable_params"] for w in check.CNN_SPECS})


@pytest.mark.parametrize("workload", LSTMS)
def test_lstm_count_differs_by_the_second_bias(paper, workload):
    """links.NStepLSTM keeps two bias vectors per gate (b_ih and b_hh), Keras one."""
    check.assert_lstm_second_bias(paper.record(workload)["model"]["trainable_params"], workload)


def test_the_nan_is_the_modules_own_check(paper):
    # Per step, not the entrypoint's after the epoch.
    message = schema.read_run(paper.nan)["failure"]["message"]
    assert re.match(r"NonFiniteLoss: loss became (nan|inf|-inf) at step \d+ of epoch 1$", message), message


def test_cnn_mnist_is_the_authors_model(checks):
    """The cnn-mnist chain as Chainer 4.5.0's computational graph shows it (inimage.py mnist_layers) is the
    authors' model: AUTHORS_MNIST layer by layer, and AUTHORS_MNIST_PARAMS parameters by its own count."""
    harness.assert_authors_model(checks, AUTHORS_MNIST, AUTHORS_MNIST_PARAMS)
