"""The MXNet (Gluon) framework module, run for real inside its hash-locked environment.

The environment is built with bench.envs.ensure_env (seconds to minutes on first use, then
cached); bench.frameworks._probe trains cnn-mnist, lstm-imdb and cnn-cifar10 in it on small
learnable data with one thread, and the same properties are asserted as for PyTorch and Keras
in tests/test_frameworks.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import envs, spec

REPO = Path(__file__).resolve().parents[1]
FRAMEWORK = "mxnet"
WORKLOADS = ("cnn-mnist", "lstm-imdb", "cnn-cifar10")
# versions() key -> the package pinned for it in the lock.
PINNED = {"mxnet": "mxnet", "numpy": "numpy"}
# Trainable parameters in Keras' convention (one LSTM bias per gate), counted with keras 3.15.
KERAS_COUNTS = {
    "cnn-mnist": 1_199_882,
    "cnn-cifar10": 1_250_858,
    "cnn-cifar100": 13_068_516,
    "cnn-svhn": 6_724_266,
    "lstm-imdb": 213_301,
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1"}


@pytest.fixture(scope="module")
def python() -> Path:
    return envs.ensure_env(FRAMEWORK).python


@pytest.fixture(scope="module")
def probe(python) -> dict:
    """Probe output: {"workloads": {name: {...}}, "versions", "nan_raised", "nan_message"}."""
    proc = subprocess.run(
        [str(python), "-m", "bench.frameworks._probe", FRAMEWORK, "--workloads", ",".join(WORKLOADS)],
        cwd=REPO, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, f"mxnet probe failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    sys.stderr.write(
        "probe seconds: " + ", ".join(f"mxnet/{w}={r['seconds']}" for w, r in out["workloads"].items()) + "\n"
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls_and_accuracy_is_sane(probe, workload):
    result = probe["workloads"][workload]
    losses = result["losses"]
    assert all(0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"mxnet {workload}: loss did not fall: {losses}"
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert all(0.0 <= acc <= 1.0 for acc in result["train_accuracy"])
    # Dropout is off at test time, so two evaluations of the same weights agree exactly.
    assert result["test_accuracy"] == result["test_accuracy_again"]
    if workload == "cnn-mnist":
        chance = 1 / spec.load(workload)["model"]["num_classes"]
        assert result["test_accuracy"] > chance + 0.05, result["test_accuracy"]


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["cnn-mnist", "cnn-cifar10"])
def test_cnn_parameter_counts_equal_keras(probe, workload):
    assert probe["workloads"][workload]["param_count"] == KERAS_COUNTS[workload]


@pytest.mark.slow
def test_cnn_mnist_count_by_hand(probe):
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert probe["workloads"]["cnn-mnist"]["param_count"] == 320 + 18_496 + 1_179_776 + 1_290


@pytest.mark.slow
def test_lstm_parameter_count_has_the_second_bias(probe):
    """gluon.rnn.LSTM keeps two bias vectors per gate (i2h and h2h, as cuDNN does), Keras one.

    Same computation (the two biases only ever appear as their sum), 4 gates x units more numbers.
    """
    layers = spec.load("lstm-imdb")["model"]["layers"]
    units = next(layer["units"] for layer in layers if layer["type"] == "lstm")
    keras_count = 5000 * 32 + 4 * (32 * units + units * units + units) + (units + 1)
    assert keras_count == KERAS_COUNTS["lstm-imdb"]
    assert probe["workloads"]["lstm-imdb"]["param_count"] - keras_count == 4 * units == 400


@pytest.mark.slow
def test_every_cnn_spec_builds_with_the_keras_count(python):
    """cnn-cifar100 and cnn-svhn ('same' pools with stride 1) are only built, not trained."""
    code = (
        "import json, numpy as np, mxnet as mx\n"
        "from bench import spec\n"
        "from bench.frameworks import _common, mxnet as m\n"
        "out = {}\n"
        "for w in ('cnn-mnist', 'cnn-cifar10', 'cnn-cifar100', 'cnn-svhn'):\n"
        "    model = _common.model_layers(spec.load(w, 'smoke'))\n"
        "    net = m.build_model(model, False)\n"
        "    net.initialize(mx.init.Xavier())\n"
        "    h, w_, c = model.input_shape\n"
        "    shape = net(mx.nd.zeros((2, c, h, w_))).shape\n"
        "    count = sum(int(np.prod(p.shape)) for p in net.collect_params().values() if p.grad_req != 'null')\n"
        "    out[w] = [count, list(shape)]\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([str(python), "-c", code], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    for workload, (count, shape) in built.items():
        assert count == KERAS_COUNTS[workload], workload
        assert shape == [2, spec.load(workload)["model"]["num_classes"]], workload


@pytest.mark.slow
def test_lstm_reads_the_last_real_step(probe):
    # Outputs must not change when the post-padding is cut off: the padding is never read.
    assert probe["workloads"]["lstm-imdb"]["padding_max_abs_diff"] < 1e-5


@pytest.mark.slow
def test_non_finite_loss_raises(probe):
    assert probe["nan_raised"], probe["nan_message"]
    assert re.search(r"(nan|inf)", probe["nan_message"])


@pytest.mark.slow
def test_info_records_what_was_used(probe):
    for workload in WORKLOADS:
        info = probe["workloads"][workload]["info"]
        assert info["device_name"]
        assert info["threads"]["intra_op"] == 1  # DLREPRO_THREADS=1 was obeyed
        assert info["data_layout"]
        assert info["optimizer"]["name"] == spec.load(workload)["training"]["optimizer"]["name"]
        expected_kernel = "conv2d" if workload.startswith("cnn") else "lstm"
        assert expected_kernel in info["kernels"]
        for key in ("input_pipeline", "loss", "weight_decay_rule"):
            assert info[key], key
    assert probe["workloads"]["lstm-imdb"]["info"]["optimizer"]["epsilon"] == 1e-7


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    lock = envs.ensure_env(FRAMEWORK).lock_path.read_text()
    versions = probe["versions"]
    for key, package in PINNED.items():
        pinned = re.search(rf"^{re.escape(package)}==(\S+)", lock, re.MULTILINE)
        assert pinned, f"{package} is not pinned in the mxnet lock"
        assert versions[key] == pinned.group(1), f"mxnet env imported {key} {versions[key]}"
