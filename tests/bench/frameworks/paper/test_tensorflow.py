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
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=5, evaluations=True)
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=150)


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
