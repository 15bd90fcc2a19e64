"""The Theano framework module, run for real inside its hash-locked environment.

The environment is built with bench.envs.ensure_env (about a minute on first use: Theano 1.0.5 is
an sdist, then cached); bench.frameworks._probe trains cnn-mnist, lstm-imdb and cnn-cifar10 in it
on small learnable data with one thread, and the same properties are asserted as for PyTorch and
Keras in tests/test_frameworks.py. Theano compiles its graphs with g++ against OpenBLAS (Debian:
g++, libopenblas-dev): a cold compile cache costs minutes, hence the long timeouts.
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
FRAMEWORK = "theano"
WORKLOADS = ("cnn-mnist", "lstm-imdb", "cnn-cifar10")
# versions() key -> the package pinned for it in the lock.
PINNED = {"theano": "theano", "numpy": "numpy", "scipy": "scipy"}
# Trainable parameters in Keras' convention (one LSTM bias per gate), counted with keras 3.15.
# The Theano LSTM is written like Keras' (one bias per gate), so every count is equal.
KERAS_COUNTS = {
    "cnn-mnist": 1_199_882,
    "cnn-cifar10": 1_250_858,
    "cnn-cifar100": 13_068_516,
    "cnn-svhn": 6_724_266,
    "lstm-imdb": 213_301,
}
PROBE_TIMEOUT_S = 1800  # a cold compile cache on a busy 2-core machine: ~5 min of g++ alone


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1"}


def test_lock_pins_the_versions_theano_needs():
    """numpy < 1.24 (np.complex), scipy < 1.11, Theano 1.0.5: what the FACTS say works on 3.11."""
    lock = envs.lock_path(FRAMEWORK).read_text()
    pins = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)", lock, re.MULTILINE))
    assert pins["theano"] == "1.0.5"
    assert pins["numpy"] == "1.23.5"
    assert tuple(int(p) for p in pins["scipy"].split(".")[:2]) < (1, 11)
    assert pins["psutil"] == "7.2.2"
    assert pins["nvidia-ml-py"].startswith("13.")


@pytest.fixture(scope="module")
def python() -> Path:
    return envs.ensure_env(FRAMEWORK).python


@pytest.fixture(scope="module")
def probe(python) -> dict:
    """Probe output: {"workloads": {name: {...}}, "versions", "nan_raised", "nan_message"}."""
    proc = subprocess.run(
        [str(python), "-m", "bench.frameworks._probe", FRAMEWORK, "--workloads", ",".join(WORKLOADS)],
        cwd=REPO, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=PROBE_TIMEOUT_S,
    )
    assert proc.returncode == 0, f"theano probe failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    sys.stderr.write(
        "probe seconds: "
        + ", ".join(
            f"theano/{w}={r['seconds']} (compile {r['info']['compile_seconds']})" for w, r in out["workloads"].items()
        )
        + "\n"
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls_and_accuracy_is_sane(probe, workload):
    result = probe["workloads"][workload]
    losses = result["losses"]
    assert all(0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"theano {workload}: loss did not fall: {losses}"
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert all(0.0 <= acc <= 1.0 for acc in result["train_accuracy"])
    # Dropout is off at test time, so two evaluations of the same weights agree exactly.
    assert result["test_accuracy"] == result["test_accuracy_again"]
    if workload == "cnn-mnist":
        chance = 1 / spec.load(workload)["model"]["num_classes"]
        assert result["test_accuracy"] > chance + 0.05, result["test_accuracy"]


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_parameter_counts_equal_keras(probe, workload):
    assert probe["workloads"][workload]["param_count"] == KERAS_COUNTS[workload]


@pytest.mark.slow
def test_cnn_mnist_count_by_hand(probe):
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert probe["workloads"]["cnn-mnist"]["param_count"] == 320 + 18_496 + 1_179_776 + 1_290


@pytest.mark.slow
def test_lstm_parameter_count_has_one_bias_per_gate(probe):
    """The hand-written LSTM keeps one bias vector per gate, as Keras: no +4*units of PyTorch/cuDNN."""
    layers = spec.load("lstm-imdb")["model"]["layers"]
    units = next(layer["units"] for layer in layers if layer["type"] == "lstm")
    keras_count = 5000 * 32 + 4 * (32 * units + units * units + units) + (units + 1)
    assert probe["workloads"]["lstm-imdb"]["param_count"] == keras_count == 213_301


@pytest.mark.slow
def test_every_cnn_spec_builds_with_the_keras_count(python):
    """cnn-cifar100 and cnn-svhn ('same' pools with stride 1) are only built and run forward."""
    code = (
        "import json\n"
        "import numpy as np\n"
        "from bench import spec\n"
        "from bench.frameworks import _common, theano as th  # sets THEANO_FLAGS, then imports theano\n"
        "theano = th.theano\n"
        "out = {}\n"
        "for w in ('cnn-mnist', 'cnn-cifar10', 'cnn-cifar100', 'cnn-svhn'):\n"
        "    model = _common.model_layers(spec.load(w, 'smoke'))\n"
        "    net = th.SpecNet(model, 0)\n"
        "    x = theano.tensor.tensor4(dtype=th.FLOATX)\n"
        "    h, w_, c = model.input_shape\n"
        "    y = theano.function([x], net.forward(x, None, deterministic=True))(np.zeros((2, c, h, w_), th.FLOATX))\n"
        "    out[w] = [sum(int(p.get_value().size) for p in net.params), list(y.shape)]\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([str(python), "-c", code], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    for workload, (count, shape) in built.items():
        assert count == KERAS_COUNTS[workload], workload
        assert shape == [2, spec.load(workload)["model"]["num_classes"]], workload


@pytest.mark.slow
def test_lstm_reads_the_last_real_step(probe):
    # Outputs must not change when the post-padding is cut off: the mask keeps the last real state.
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
        assert info["threads"]["intra_op"] == 1  # DLREPRO_THREADS=1 reached OpenBLAS
        assert info["data_layout"]
        assert info["optimizer"]["name"] == spec.load(workload)["training"]["optimizer"]["name"]
        expected_kernel = "conv2d" if workload.startswith("cnn") else "lstm"
        assert expected_kernel in info["kernels"]
        for key in ("input_pipeline", "loss", "weight_decay_rule"):
            assert info[key], key
        config = info["theano_config"]
        assert config["floatX"] == "float32"
        assert "openblas" in config["blas.ldflags"]
        # The compile cache belongs to the environment, never the shared ~/.theano.
        assert "theano-compiledir" in config["compiledir"] or "dlrepro" in config["compiledir"]
    # Convolutions ran as CorrMM (im2col + BLAS in C), not a Python fallback.
    assert "CorrMM" in probe["workloads"]["cnn-mnist"]["info"]["kernels"]["conv2d"]
    assert probe["workloads"]["lstm-imdb"]["info"]["optimizer"]["epsilon"] == 1e-7


@pytest.mark.slow
def test_gpu_request_fails_clearly(python):
    """No pygpu on PyPI: device 'gpu' must be a clear RuntimeError, never a silent CPU run."""
    code = (
        "from bench import spec\n"
        "from bench.frameworks import _probe, theano as th\n"
        "s = spec.load('cnn-mnist', 'smoke')\n"
        "try:\n"
        "    th.make_trainer(s, _probe.probe_data(s), 'gpu', 0)\n"
        "except RuntimeError as exc:\n"
        "    print('RuntimeError:', exc)\n"
    )
    proc = subprocess.run([str(python), "-c", code], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "RuntimeError:" in proc.stdout and "pygpu" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    lock = envs.ensure_env(FRAMEWORK).lock_path.read_text()
    versions = probe["versions"]
    for key, package in PINNED.items():
        pinned = re.search(rf"^{re.escape(package)}==(\S+)", lock, re.MULTILINE)
        assert pinned, f"{package} is not pinned in the theano lock"
        assert versions[key] == pinned.group(1), f"theano env imported {key} {versions[key]}"
