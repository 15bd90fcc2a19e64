"""The paper-era Keras module (Keras 2.2.4: bench/frameworks/keras/paper.py) on TensorFlow 1.11, DLBench's
configuration, trained in its paper image through the docker runner (harness.py): every DLBench workload's
smoke spec, three epochs, one thread; a cnn-mnist run at an absurd learning rate that must fail as 'nan';
inimage.py's padding check, two evaluations of the same weights, and the decoupled weight decay against its
rule. The shared tests (harness.SHARED_TESTS) are collected here with this file's `paper` fixture.

Beyond DLBench: the other studies' cases (experiments.py, its shared tests collected here with the `cases`
fixture), and what Keras' own records say of them (kernels of ResNet-56 under step(), the GRU, ResNet-50's
features under infer())."""

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

FRAMEWORK = "keras"
paper = harness.paper_fixture(FRAMEWORK, __name__, weight=90)
checks = harness.checks_fixture(FRAMEWORK, __name__, weight=5, evaluations=True,
                                extra=("keras_weight_decay", "mnist_layers"))
cases = experiments.cases_fixture(FRAMEWORK, __name__, weight=200)
RESNET56, GRU, FEATURES = (("shi-cpu", "resnet56-cifar10"), ("ilkarman-train-cpu", "gru-imdb"),
                            ("ilkarman-features-cpu", "resnet50-features-synthetic"))

# The authors' cnn-mnist (issue 32; docs/notebook-parity.md section 1): DataSystemsGroupUT/DLBench,
# "CPU Experiment/Source Code/Keras_MNIST_CIFAR10_CIFAR100_SVHC_CNN.ipynb" (commit df5a5d1e), cell 2, model_MNIST: a
# Sequential over 28x28x1 images (channels_last), no padding given anywhere ('valid'). Per layer, as
# harness.assert_authors_model compares it (shapes channels first, activations folded into their layer):
AUTHORS_MNIST = [
    # Conv2D, 32 kernels of 3x3, ReLU, on 28x28x1: 3*3*1*32 + 32 = 320 -> 26x26x32
    {"kind": "conv", "out": [32, 26, 26], "params": 320, "act": "relu", "kernel": [3, 3]},
    # Conv2D, 64 kernels of 3x3, ReLU: 3*3*32*64 + 64 = 18,496 -> 24x24x64
    {"kind": "conv", "out": [64, 24, 24], "params": 18_496, "act": "relu", "kernel": [3, 3]},
    # MaxPooling2D, pool 2x2 (stride = pool): -> 12x12x64
    {"kind": "maxpool", "out": [64, 12, 12], "params": 0, "pool": [2, 2]},
    # Dropout 0.25
    {"kind": "dropout", "out": [64, 12, 12], "params": 0, "rate": 0.25},
    # Flatten: 12*12*64 = 9,216
    {"kind": "flatten", "out": [9216], "params": 0},
    # Dense 128, ReLU: 9,216*128 + 128 = 1,179,776
    {"kind": "dense", "out": [128], "params": 1_179_776, "act": "relu"},
    # Dropout 0.5
    {"kind": "dropout", "out": [128], "params": 0, "rate": 0.5},
    # Dense 10 (pnumClasses) with softmax: 128*10 + 10 = 1,290. The notebook's softmax is in this layer, the kit's in
    # its loss (logits here, bench/modelplan.py): the same function of the input, so the test expects "linear".
    {"kind": "dense", "out": [10], "params": 1_290, "act": "linear"},
]
AUTHORS_MNIST_PARAMS = 1_199_882  # 320 + 18,496 + 1,179,776 + 1,290


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in harness.SHARED_TESTS + experiments.SHARED_TESTS)


def test_parameter_counts_equal_keras(paper):
    check.assert_keras_counts({w: paper.record(w)["model"]["trainable_params"] for w in harness.WORKLOADS})


@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_the_backend_really_used_is_tensorflow(paper, workload):
    run = paper.record(workload)
    info = run["device_used"]
    assert info["backend"] == "tensorflow" == info["versions"]["keras_backend"]
    assert run["environment"]["framework_build"]["keras_backend"] == "tensorflow"
    assert info["versions"]["keras"] == "2.2.4" and info["versions"]["tensorflow"] == "1.11.0"
    assert info["versions"]["tensorflow"] == harness.pinned(FRAMEWORK, "tensorflow")
    assert info["versions"]["tensorflow_cuda_build"] == "False"
    assert info["keras_config"] == {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
    assert info["optimizer_impl"].startswith("keras.optimizers.")
    assert info["threads"] == {"intra_op": 1, "inter_op": 1}
    assert run["environment"]["packages"]["keras-applications"] == harness.pinned(FRAMEWORK, "keras-applications")


def test_keras_kernels(paper):
    infos = {w: paper.record(w)["device_used"] for w in harness.WORKLOADS}
    assert "Conv2D" in infos["cnn-mnist"]["kernels"]["conv2d"] and "TensorFlow 1.11.0 CPU" in infos["cnn-mnist"][
        "kernels"]["conv2d"]
    assert "MaxPool" in infos["cnn-svhn"]["kernels"]["maxpool2d"]
    for workload in ("lstm-imdb", "lstm-ptb", "seq2seq-manythings"):
        assert "recurrent_activation='sigmoid'" in infos[workload]["kernels"]["lstm"]
        assert "tf.while_loop" in infos[workload]["kernels"]["lstm"]
    assert "mask_zero=True" in infos["lstm-imdb"]["kernels"]["lstm_lengths"]
    assert "initial_state" in infos["seq2seq-manythings"]["kernels"]["lstm_state"]
    assert "sample weight 0 past y_len" in infos["seq2seq-manythings"]["loss"]
    assert "sample weight" not in infos["lstm-ptb"]["loss"]
    # Keras 2.2.4's optimizers have no weight decay: the decoupled rule goes through the constraint hook.
    assert infos["cnn-cifar10"]["optimizer"]["weight_decay"] == 1e-6
    assert "constraint" in infos["cnn-cifar10"]["weight_decay_impl"]
    assert infos["lstm-imdb"]["weight_decay_impl"].startswith("none")


def test_dropout_is_off_at_test_time(checks):
    first, again = checks["evaluations"]
    assert first == again


def test_decoupled_weight_decay_is_the_rule(checks):
    """Keras 2.2.4's optimizers have no weight decay; the constraint hook gives common.WEIGHT_DECAY_RULE exactly
    (on a tf.Variable, whose constraint is a read-only property: the module sets _constraint)."""
    out = checks["keras_weight_decay"]
    assert set(out) == {"sgd", "adam"}
    for name, result in out.items():
        for got, want in zip(result["keras"], result["rule"]):
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6), name
    assert out["sgd"]["keras"][0] != pytest.approx([1.0, 1.0])  # it moved


def test_step_trains_a_resnet_of_bias_free_convolutions_and_batchnorm(cases):
    run = cases.record(RESNET56)
    kernels = run["device_used"]["kernels"]
    assert "FusedBatchNorm" in kernels["batchnorm"] and "Add()" in kernels["residual"]
    assert "use_bias=False" in kernels["residual"]


def test_the_gru_is_cudnns_form_on_keras_loop(cases):
    run = cases.record(GRU)
    assert "reset_after=True" in run["device_used"]["kernels"]["gru"]
    assert "CuDNNGRU is GPU-only" in run["device_used"]["kernels"]["gru"]
    assert run["timing"]["training_time_s"] > 0


def test_infer_extracts_resnet50_features(cases):
    run = cases.record(FEATURES)
    assert run["device_used"]["loss"].startswith("none: a features model")
    assert run["device_used"]["optimizer_impl"].startswith("none")


def test_cnn_mnist_is_the_authors_model(checks):
    """The cnn-mnist model as Keras 2.2.4's own model.layers report it (inimage.py mnist_layers) is the
    authors' model: AUTHORS_MNIST layer by layer, and AUTHORS_MNIST_PARAMS parameters by its own count."""
    harness.assert_authors_model(checks, AUTHORS_MNIST, AUTHORS_MNIST_PARAMS)
