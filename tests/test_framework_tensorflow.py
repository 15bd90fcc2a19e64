"""The TensorFlow module, run for real inside its hash-locked environment (slow: builds it once).

bench.frameworks._probe trains cnn-mnist, lstm-imdb and cnn-cifar10 (smoke sizes) with one
thread; a second script checks, in the same environment, that the CPU LSTM (TensorFlow's fused
BlockLSTM kernel) and the GPU formulation (tf.keras.layers.LSTM with a right-padded mask, run here
by TensorFlow's loop) are the same computation, and counts the parameters of the larger CNNs.
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
FRAMEWORK = "tensorflow"
WORKLOADS = ("cnn-mnist", "lstm-imdb", "cnn-cifar10")
# versions() key -> the package pinned for it in the lock.
PINNED = {"tensorflow": "tensorflow-cpu", "keras": "keras", "numpy": "numpy"}
# Trainable parameters, Keras' convention (the LSTM has one bias vector per gate set, as Keras).
EXPECTED_PARAMS = {
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    "cnn-mnist": 320 + 18_496 + 1_179_776 + 1_290,
    # embedding 5000x32, LSTM 4*(32*100 + 100*100 + 100), dense 100+1
    "lstm-imdb": 5000 * 32 + 4 * (32 * 100 + 100 * 100 + 100) + 101,
    # conv 3x3: 3->32, 32->32, 32->64, 64->64; dense 6*6*64*512+512, 512*10+10
    "cnn-cifar10": 896 + 9_248 + 18_496 + 36_928 + 1_180_160 + 5_130,
    # conv 5x5: 3->48, 48->64, 64->128, 128->160, 160->192, 3 x 192->192; dense 2*2*192*3072+3072, 3072*10+10
    "cnn-svhn": 3_648 + 76_864 + 204_928 + 512_160 + 768_192 + 3 * 921_792 + 2_362_368 + 30_730,
    # conv 3x3: 3->128, 128->128, 128->256, 256->256, 256->512, 512->512; dense 4*4*512*1024+1024, 1024*100+100
    "cnn-cifar100": 3_584 + 147_584 + 295_168 + 590_080 + 1_180_160 + 2_359_808 + 8_389_632 + 102_500,
}

# Runs inside the tensorflow environment: the two LSTM paths on one set of weights, and the
# parameter counts of the CNN specs the probe does not train.
LSTM_AND_COUNTS = r"""
import json, sys
import numpy as np
import tensorflow as tf
from bench import spec as specs
from bench.frameworks import tensorflow as tfw
from bench.frameworks._probe import probe_data

out = {"lstm": {}, "param_count": {}}
rng = np.random.default_rng(0)
batch, steps, features, units = 6, 12, 5, 7
lengths = np.array([12, 1, 5, 9, 3, 12], dtype=np.int32)
x = rng.standard_normal((batch, steps, features)).astype(np.float32)
x[np.arange(steps)[None, :] >= lengths[:, None]] = 0.0
x, lengths = tf.constant(x), tf.constant(lengths)
for return_sequences in (False, True):
    layer = tfw._LSTM(units, use_lengths=True, return_sequences=return_sequences, fused_cpu=True)
    layer(x, lengths)  # builds the weights
    weights = layer.trainable_variables
    for w in weights:  # away from Keras' initial values, so every gate block matters
        w.assign(rng.standard_normal(tuple(w.shape)).astype(np.float32) * 0.4)
    results = []
    for path in (layer.fused, lambda a, b: layer.masked(a, b, training=True)):
        with tf.GradientTape() as tape:
            y = path(x, lengths)
            loss = tf.reduce_sum(y * tf.cos(tf.range(tf.size(y), dtype=y.dtype)[: y.shape[-1]]))
        grads = tape.gradient(loss, weights)
        results.append([y.numpy()] + [g.numpy() for g in grads])
    out["lstm"][f"return_sequences={return_sequences}"] = {
        "output": float(np.abs(results[0][0] - results[1][0]).max()),
        "grads": float(max(np.abs(a - b).max() for a, b in zip(results[0][1:], results[1][1:]))),
        "grad_scale": float(max(np.abs(b).max() for b in results[1][1:])),
    }
for name in sys.argv[1].split(","):
    wl = specs.load(name, "smoke")
    out["param_count"][name] = tfw.make_trainer(wl, probe_data(wl), "cpu", 0).param_count()
print(json.dumps(out))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}


def _run(args: list[str], timeout: int) -> dict:
    proc = subprocess.run(
        [str(envs.ensure_env(FRAMEWORK).python), *args], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, f"{args[:2]} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probe() -> dict:
    """Probe output: {"workloads": {name: {...}}, "versions", "nan_raised", "nan_message"}."""
    out = _run(["-m", "bench.frameworks._probe", FRAMEWORK, "--workloads", ",".join(WORKLOADS)], 900)
    sys.stderr.write("probe seconds: " + ", ".join(f"{w}={r['seconds']}" for w, r in out["workloads"].items()) + "\n")
    return out


@pytest.fixture(scope="module")
def lstm_and_counts() -> dict:
    return _run(["-c", LSTM_AND_COUNTS, "cnn-svhn,cnn-cifar100"], 600)


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls_and_accuracy_is_sane(probe, workload):
    result = probe["workloads"][workload]
    losses = result["losses"]
    assert all(0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"{workload}: loss did not fall: {losses}"
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert all(0.0 <= acc <= 1.0 for acc in result["train_accuracy"])
    # Dropout is off at test time, so two evaluations of the same weights agree exactly.
    assert result["test_accuracy"] == result["test_accuracy_again"]
    if workload == "cnn-mnist":
        chance = 1 / spec.load(workload)["model"]["num_classes"]
        assert result["test_accuracy"] > chance + 0.05, result["test_accuracy"]


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_parameter_counts_follow_keras(probe, workload):
    # Same layers, same counts as the keras module; the LSTM has Keras' single bias (PyTorch: +4*units).
    assert probe["workloads"][workload]["param_count"] == EXPECTED_PARAMS[workload]


@pytest.mark.slow
def test_larger_cnn_parameter_counts(lstm_and_counts):
    for name, count in lstm_and_counts["param_count"].items():
        assert count == EXPECTED_PARAMS[name], name


@pytest.mark.slow
def test_lstm_reads_the_last_real_step(probe):
    # Outputs must not change when the post-padding is cut off: the padding is never read.
    assert probe["workloads"]["lstm-imdb"]["padding_max_abs_diff"] < 1e-5


@pytest.mark.slow
def test_cpu_and_gpu_lstm_formulations_agree(lstm_and_counts):
    """BlockLSTM (CPU) and tf.keras.layers.LSTM with a mask (cuDNN on a GPU): same values, same gradients.

    Guards the gate reordering and the choice of BlockLSTM over BlockLSTMV2 (whose gradient is
    wrong in TensorFlow 2.21).
    """
    for case, diff in lstm_and_counts["lstm"].items():
        assert diff["output"] < 1e-5, (case, diff)
        assert diff["grads"] < 1e-4 * max(1.0, diff["grad_scale"]), (case, diff)


@pytest.mark.slow
def test_non_finite_loss_raises(probe):
    assert probe["nan_raised"], probe["nan_message"]
    assert re.search(r"(nan|inf)", probe["nan_message"])


@pytest.mark.slow
def test_info_records_what_was_used(probe):
    for workload in WORKLOADS:
        info = probe["workloads"][workload]["info"]
        assert info["framework"] == FRAMEWORK
        assert info["device_name"]
        assert info["threads"]["intra_op"] == 1  # DLREPRO_THREADS=1 was obeyed
        assert info["data_layout"]
        assert info["input_pipeline"].startswith("tf.data")
        assert info["optimizer"]["name"] == spec.load(workload)["training"]["optimizer"]["name"]
        assert info["optimizer"].get("epsilon", 1e-7) == 1e-7
        expected_kernel = "conv2d" if workload.startswith("cnn") else "lstm"
        assert expected_kernel in info["kernels"]
    assert "BlockLSTM" in probe["workloads"]["lstm-imdb"]["info"]["kernels"]["lstm"]


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    lock = envs.ensure_env(FRAMEWORK).lock_path.read_text()
    for key, package in PINNED.items():
        pinned = re.search(rf"^{re.escape(package)}==(\S+)", lock, re.MULTILINE)
        assert pinned, f"{package} is not pinned in the {FRAMEWORK} lock"
        assert probe["versions"][key] == pinned.group(1), f"imported {key} {probe['versions'][key]}"
