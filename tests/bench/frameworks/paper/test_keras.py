"""The paper-era Keras module (Keras 2.2.4: bench/frameworks/paper/keras.py), trained for real.

Keras 2.2.4 runs on TensorFlow 1.11 in the paper image; neither CPython 3.6 nor TensorFlow 1.11 can
be had here, so the same module runs on Keras 2.2.4's Theano 1.0.2 backend (KERAS_BACKEND=theano),
in the hash-locked Python 3.11 test environment of locks/keras/. As in test_theano.py: all seven
DLBench workloads once through the kit's own entrypoint and monitor, then a cnn-mnist run with an
absurd learning rate that must fail with cause 'nan', and the same shared tests (imported from
test_theano.py: pytest collects them here with this file's `paper` fixture). The runs share the
Theano runs' compile cache (test_theano.theano_flags(): the two locks pin the same Theano, NumPy and
SciPy files).
"""

from __future__ import annotations

import json

import pytest

from tests import background
from tests.bench.frameworks.paper import harness
from tests.bench.frameworks.paper import test_theano as shared
from tests.bench.frameworks.paper.test_theano import (  # noqa: F401  (the shared tests, collected here)
    test_info_records_threads_and_kernels,
    test_loss_falls,
    test_monitor_sampled_the_run,
    test_non_finite_loss_raises,
    test_parameter_counts_equal_keras,
    test_run_is_a_valid_paper_era_run,
)

pytestmark = pytest.mark.slow

FRAMEWORK = "keras"
# Runs in the test environment (stdin: {"env": variables to set first}): three steps of a Dense layer
# with Keras 2.2.4's SGD (momentum) and Adam, decoupled weight decay through the module's constraint
# hook, against the rule in NumPy (float64): w = w (1 - lr wd) + the optimizer's step from the gradient at w.
WEIGHT_DECAY_SCRIPT = """
import json, os, sys
os.environ.update(json.load(sys.stdin)["env"])
import numpy as np
from bench.frameworks.paper import keras as km
x = np.array([[1.0, 2.0], [0.5, -1.0], [-1.5, 0.25]], dtype="float32")
y = np.array([[1.0], [0.0], [2.0]], dtype="float32")
out = {}
for opt in ({"name": "sgd", "lr": 0.1, "momentum": 0.5, "weight_decay": 0.05},
            {"name": "adam", "lr": 0.1, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.05}):
    model = km.keras.models.Sequential([km.keras.layers.Dense(1, input_shape=(2,), kernel_initializer="ones")])
    km._add_weight_decay(model, opt["lr"], opt["weight_decay"])
    model.compile(optimizer=km.make_optimizer(opt), loss="mse")
    w, b = np.ones((2, 1)), np.zeros(1)
    slots = [np.zeros_like(w), np.zeros_like(b), np.zeros_like(w), np.zeros_like(b)]
    for t in range(1, 4):
        model.train_on_batch(x, y)
        err = x @ w + b - y
        grads = [2 * x.T @ err / len(x), 2 * err.mean(axis=0)]
        params = []
        for i, (p, g) in enumerate(zip((w, b), grads)):
            if opt["name"] == "sgd":
                slots[i] = opt["momentum"] * slots[i] - opt["lr"] * g
                step = slots[i]
            else:
                slots[i] = 0.9 * slots[i] + 0.1 * g
                slots[i + 2] = 0.999 * slots[i + 2] + 0.001 * g ** 2
                lr_t = opt["lr"] * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
                step = -lr_t * slots[i] / (np.sqrt(slots[i + 2]) + opt["epsilon"])
            params.append(p * (1 - opt["lr"] * opt["weight_decay"]) + step)
        w, b = params
    out[opt["name"]] = {"keras": [v.ravel().tolist() for v in model.get_weights()],
                        "rule": [w.ravel().tolist(), b.ravel().tolist()]}
print(json.dumps(out))
"""


def _paper(tmp_path_factory) -> dict:
    """Every workload and the NaN run, through the entrypoint, Keras 2.2.4 on its Theano backend."""
    root = tmp_path_factory.mktemp("keras-paper")
    extra_env = {**shared.theano_flags(FRAMEWORK), "KERAS_BACKEND": "theano",
                 "KERAS_HOME": str(root / "keras-home")}  # Keras writes keras.json there, not in ~/.keras
    return shared.run_paper(FRAMEWORK, root, extra_env)


# Run in the background beside the other frameworks' slow fixtures (tests/background.py).
paper = background.fixture("paper keras runs", _paper, weight=470, module=__name__, fixture_name="paper",
                           shares=shared.COMPILE_CACHE)


def test_every_shared_test_is_collected_here():
    assert all(name in globals() for name in shared.SHARED_TESTS)


def test_theano_and_keras_share_one_compile_cache():
    # The same Theano, NumPy and SciPy files: compiled modules made by either run serve both.
    assert shared.theano_flags(FRAMEWORK) == shared.theano_flags(shared.FRAMEWORK)


def test_the_backend_really_used_is_recorded(paper):
    for workload in shared.WORKLOADS:
        run = shared.finished(paper, workload)
        info = run["device_used"]
        assert info["backend"] == "theano" == info["versions"]["keras_backend"]
        assert run["environment"]["framework_build"]["keras_backend"] == "theano"
        assert info["versions"]["keras"] == "2.2.4" and info["versions"]["theano"] == "1.0.2"
        assert info["keras_config"] == {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
        assert info["optimizer_impl"].startswith("keras.optimizers.")
        assert run["environment"]["packages"]["keras-applications"] == shared.pinned(FRAMEWORK, "keras-applications")


def test_keras_kernels(paper):
    infos = {w: shared.finished(paper, w)["device_used"] for w in shared.WORKLOADS}
    assert "CorrMM" in infos["cnn-mnist"]["kernels"]["conv2d"]
    assert "maxpool2d_same" in infos["cnn-svhn"]["kernels"]  # the Theano backend's 'same' pooling, said
    assert "maxpool2d_same" not in infos["cnn-mnist"]["kernels"]
    for workload in ("lstm-imdb", "lstm-ptb", "seq2seq-manythings"):
        assert "recurrent_activation='sigmoid'" in infos[workload]["kernels"]["lstm"]
    assert "mask_zero=True" in infos["lstm-imdb"]["kernels"]["lstm_lengths"]
    assert "initial_state" in infos["seq2seq-manythings"]["kernels"]["lstm_state"]
    assert "sample weight 0 past y_len" in infos["seq2seq-manythings"]["loss"]
    assert "sample weight" not in infos["lstm-ptb"]["loss"]
    # Keras 2.2.4's optimizers have no weight decay: the decoupled rule goes through the constraint hook.
    assert infos["cnn-cifar10"]["optimizer"]["weight_decay"] == 1e-6
    assert "constraint" in infos["cnn-cifar10"]["weight_decay_impl"]
    assert infos["lstm-imdb"]["weight_decay_impl"].startswith("none")


def test_decoupled_weight_decay_is_the_rule(tmp_path):
    """Keras 2.2.4's optimizers have no weight decay; the constraint hook gives common.WEIGHT_DECAY_RULE exactly."""
    env = {**shared.theano_flags(FRAMEWORK), "KERAS_BACKEND": "theano", "KERAS_HOME": str(tmp_path)}
    with shared.compile_cache_held(FRAMEWORK):
        out = harness.run_json(FRAMEWORK, WEIGHT_DECAY_SCRIPT, stdin=json.dumps({"env": env}), timeout=600)
    for name, result in out.items():
        for got, want in zip(result["keras"], result["rule"]):
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6), name
    assert out["sgd"]["keras"][0] != pytest.approx([1.0, 1.0])  # it moved
