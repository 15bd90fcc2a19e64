"""The paper-era TensorFlow module (TensorFlow 1.11, graph mode: bench/frameworks/tensorflow/paper.py), trained
in its paper image through the docker runner (harness.py): every DLBench workload's smoke spec, three epochs,
one thread; a cnn-mnist run at an absurd learning rate that must fail as 'nan'; inimage.py's padding check
and two evaluations of the same weights. The shared tests (harness.SHARED_TESTS) are collected here with this
file's `paper` fixture."""

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

FRAMEWORK = "tensorflow"
paper = harness.paper_fixture(FRAMEWORK, __name__, weight=75)
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=5, evaluations=True, extra=("mnist_layers",))
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=150)

# The authors' cnn-mnist (issue 32; docs/notebook-parity.md section 1): DataSystemsGroupUT/DLBench,
# "CPU Experiment/Source Code/Tensorflow_MNIST_CIFAR10_CIFAR100_SVHC_CNN.ipynb" (commit 2f2a4bae), cell 2, class
# ModelMNIST: its variables made with tf.get_variable and its forward written in tf.nn / tf.layers ops on NHWC
# images. Per layer, as harness.assert_authors_model compares it (shapes channels first, activations folded):
AUTHORS_MNIST = [
    # conv2d VALID with Wconv1 [3, 3, 1, 32] plus bconv1 [32], then relu: 288 + 32 = 320 -> 26x26x32
    {"kind": "conv", "out": [32, 26, 26], "params": 320, "act": "relu", "kernel": [3, 3]},
    # conv2d VALID with Wconv2 [3, 3, 32, 64] plus bconv2 [64], then relu: 18,432 + 64 = 18,496 -> 24x24x64
    {"kind": "conv", "out": [64, 24, 24], "params": 18_496, "act": "relu", "kernel": [3, 3]},
    # tf.layers.max_pooling2d, pool 2x2, stride 2: -> 12x12x64
    {"kind": "maxpool", "out": [64, 12, 12], "params": 0, "pool": [2, 2]},
    # tf.layers.dropout, rate 0.25 (on while the is_training placeholder is True)
    {"kind": "dropout", "out": [64, 12, 12], "params": 0, "rate": 0.25},
    # tf.reshape to [-1, 9216]: 12*12*64
    {"kind": "flatten", "out": [9216], "params": 0},
    # matmul with W1 [9216, 128] plus b1 [128], then relu: 1,179,648 + 128 = 1,179,776
    {"kind": "dense", "out": [128], "params": 1_179_776, "act": "relu"},
    # tf.layers.dropout, rate 0.5
    {"kind": "dropout", "out": [128], "params": 0, "rate": 0.5},
    # matmul with W2 [128, 10] plus b2 [10]: 1,280 + 10 = 1,290, the logits (the softmax is in the loss, as in the kit)
    {"kind": "dense", "out": [10], "params": 1_290, "act": "linear"},
]
AUTHORS_MNIST_PARAMS = 1_199_882  # the sizes of the notebook's eight variables: 320 + 18,496 + 1,179,776 + 1,290


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in harness.SHARED_TESTS + experiments.SHARED_TESTS)


def test_parameter_counts_equal_keras(paper):
    # LSTMCell keeps one bias per gate, as Keras: every workload's count is Keras' by hand (check.KERAS_COUNTS).
    check.assert_keras_counts({w: paper.record(w)["model"]["trainable_params"] for w in harness.WORKLOADS})


def test_the_build_is_recorded(paper):
    build = paper.record("cnn-mnist")["environment"]["framework_build"]
    assert build["tensorflow"] == "1.11.0" and build["cuda_build"] == "no"


@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_tensorflow_kernels(paper, workload):
    info = paper.record(workload)["device_used"]
    kernels = info["kernels"]
    assert info["threads"] == {"intra_op": 1, "inter_op": 1}  # the session's ConfigProto, from DLREPRO_THREADS
    assert info["device"] == "CPU" and info["weight_decay_rule"].startswith("decoupled")
    if workload.startswith("cnn-"):
        assert kernels["conv2d"] == "tf.layers.conv2d (TensorFlow CPU kernels)"
        assert kernels["maxpool2d"].startswith("tf.layers.max_pooling2d")
    else:
        assert kernels["lstm"].startswith("tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell)")
        assert kernels["lstm"].endswith("(per-step TensorFlow CPU kernels in a tf.while_loop)")
    assert ("lstm_lengths" in kernels) == (workload in harness.PADDED)
    if workload == "seq2seq-manythings":
        assert "decoder initial_state" in kernels["lstm_state"]
    if workload in ("lstm-ptb", "seq2seq-manythings"):
        assert kernels["dense"] == "tf.layers.dense on (N*T, units): one matmul over every step"
        assert info["optimizer_impl"] == {"lstm-ptb": "tf.train.AdadeltaOptimizer",
                                          "seq2seq-manythings": "tf.train.AdamOptimizer"}[workload]
    if workload == "cnn-cifar10":  # SGD, momentum 0.5, weight decay 1e-6 (decoupled, by hand)
        assert info["optimizer"]["weight_decay"] == 1e-6 and info["optimizer_impl"] == "tf.train.MomentumOptimizer"


def test_dropout_is_off_at_test_time(checks):
    first, again = checks["evaluations"]
    assert first == again


def test_cnn_mnist_is_the_authors_model(checks):
    """The cnn-mnist graph as TensorFlow 1.11 itself holds its ops and variables (inimage.py mnist_layers) is the
    authors' model: AUTHORS_MNIST layer by layer, and AUTHORS_MNIST_PARAMS parameters by its own count."""
    harness.assert_authors_model(checks, AUTHORS_MNIST, AUTHORS_MNIST_PARAMS)
