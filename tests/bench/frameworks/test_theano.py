"""The Theano framework module, run for real inside its hash-locked environment.

The environment is built with images.envs.ensure_env (about a minute on first use: Theano 1.0.5 is
an sdist, then cached); the probe (probe.py beside this file) trains check.PROBED in it on small
learnable data with one thread, and the same properties are asserted as for every framework (the
shared checks: check.py). Here: Theano's own checks (the lock's pins, the per-environment compile
cache, the hand-written Adadelta, no silent CPU run for 'gpu') and its parameter counts, which
equal Keras' exactly (the hand-written LSTM has one bias per gate). Theano compiles its graphs
with g++ against OpenBLAS (Debian: g++, libopenblas-dev): a cold compile cache costs minutes.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from bench import threads
from bench.frameworks import capabilities, common
from bench.frameworks.theano import flags
from campaign import specs
from images import envs
from tests.bench.frameworks import check
from tests.bench.frameworks.check import *  # noqa: F403  (check.__all__: the shared tests, run here)

FRAMEWORK = "theano"
# versions() key -> the package pinned for it in the lock.
PINNED = {"theano": "theano", "numpy": "numpy", "scipy": "scipy"}
BUILD_TIMEOUT_S = 1800  # a cold compile cache on a busy 2-core machine: minutes of g++
# Runs inside the theano environment: three steps of the module's Adadelta (with decoupled weight
# decay) on loss = sum(c * p^2), against Keras 2's formulas in NumPy (float64).
ADADELTA_SCRIPT = """
import json
import numpy as np
from bench.frameworks.theano import current  # first: it sets THEANO_FLAGS before Theano loads
from bench.frameworks.theano import graph, optimizers
theano = graph.theano
opt = {"name": "adadelta", "lr": 0.5, "rho": 0.9, "epsilon": 1e-7, "weight_decay": 0.01}
p0 = np.array([1.0, -2.0, 0.5, 3.0])
c = np.array([0.5, 1.0, 2.0, 0.25])
p = theano.shared(p0.astype(graph.FLOATX), name="p")
loss = (c.astype(graph.FLOATX) * p ** 2).sum()
step = theano.function([], loss, updates=optimizers.training_updates([p], loss, opt))
w, a, d = p0.copy(), np.zeros(4), np.zeros(4)
for _ in range(3):
    step()
    g = 2 * c * w
    a = opt["rho"] * a + (1 - opt["rho"]) * g ** 2
    update = g * np.sqrt(d + opt["epsilon"]) / np.sqrt(a + opt["epsilon"])
    d = opt["rho"] * d + (1 - opt["rho"]) * update ** 2
    w = w * (1 - opt["lr"] * opt["weight_decay"]) - opt["lr"] * update
print(json.dumps({"theano": p.get_value().tolist(), "keras2": w.tolist()}))
"""
# Runs inside the theano environment: asks for device 'gpu' for the resolved spec given as JSON
# (argv[1]: the host resolves it, nothing in the environment reads TOML); prints the error it gets.
GPU_SCRIPT = """
import json
import sys
from bench.frameworks.theano import current as th
from tests.bench.frameworks import probe
s = json.loads(sys.argv[1])
try:
    th.make_trainer(s, probe.probe_data(s), 'gpu', 0)
    print(json.dumps({"error": None}))
except RuntimeError as exc:
    print(json.dumps({"error": str(exc)}))
"""


# -- the lock (fast) -------------------------------------------------------------------------------
def test_lock_pins_the_versions_theano_needs():
    """numpy < 1.24 (np.complex), scipy < 1.11, Theano 1.0.5: what the FACTS say works on 3.11."""
    lock = envs.lock_path(FRAMEWORK).read_text()
    pins = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)", lock, re.MULTILINE))
    assert pins["theano"] == "1.0.5"
    assert pins["numpy"] == "1.23.5"
    assert tuple(int(p) for p in pins["scipy"].split(".")[:2]) < (1, 11)
    assert pins["psutil"] == "7.2.2"
    assert pins["nvidia-ml-py"].startswith("13.")


# -- the package's declaration and its THEANO_FLAGS (fast: no Theano is imported) ---------------------------------
def test_the_paper_era_serves_what_the_current_one_does_but_the_blas_choice():
    """One era-neutral graph and trainer: Theano 1.0.2 gets every protocol and layer type 1.0.5 has; only the
    current environment can switch its BLAS (the paper image links OpenBLAS alone)."""
    current, paper = capabilities.era_of(FRAMEWORK, "current"), capabilities.era_of(FRAMEWORK, "paper")
    assert paper == current._replace(blas={})
    assert current.blas and paper.protocols == capabilities.ALL_PROTOCOLS


def test_flags_fill_in_the_kits_and_keep_the_users(monkeypatch):
    for var in (*threads.THREAD_VARS, *threads.UNSET_VARS):
        monkeypatch.setenv(var, "")  # restored after the test: configure() pins (or unsets) them
    monkeypatch.setenv("THEANO_FLAGS", "floatX=float64, optimizer=fast_compile")
    monkeypatch.setenv(common.THREADS_VAR, "3")
    ours = flags.configure("bench.frameworks.theano.current")
    assert set(ours) == {"device", "blas.ldflags", "base_compiledir"}  # floatX was the user's
    assert os.environ["THEANO_FLAGS"].split(",")[:2] == ["floatX=float64", "optimizer=fast_compile"]
    assert f"base_compiledir={flags.compiledir()}" in os.environ["THEANO_FLAGS"]
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


def test_flags_refuse_a_theano_imported_before_them(monkeypatch):
    monkeypatch.setitem(sys.modules, "theano", object())
    with pytest.raises(RuntimeError, match="import bench.frameworks.theano.paper first"):
        flags.configure("bench.frameworks.theano.paper")


# -- the probe in the theano environment (slow) ----------------------------------------------------
# An empty compile cache (a new environment) costs minutes of g++ before the first step.
probe = check.probe_fixture(FRAMEWORK, check.PROBED, __name__, weight=340, timeout=2400)


@pytest.mark.slow
@pytest.mark.parametrize("workload", check.PROBED)
def test_parameter_counts_equal_keras(probe, workload):
    # Every probed workload, LSTMs included: one bias per gate, so no second_bias() on top.
    check.assert_keras_counts({workload: probe["workloads"][workload]["param_count"]})


@pytest.mark.slow
def test_cnn_mnist_count_by_hand(probe):
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert probe["workloads"]["cnn-mnist"]["param_count"] == 320 + 18_496 + 1_179_776 + 1_290


@pytest.mark.slow
def test_lstm_parameter_count_has_one_bias_per_gate(probe):
    """The hand-written LSTM keeps one bias vector per gate, as Keras: no +4*units of PyTorch/cuDNN."""
    units = check.lstm_units()
    keras_count = 5000 * 32 + 4 * (32 * units + units * units + units) + (units + 1)
    assert probe["workloads"]["lstm-imdb"]["param_count"] == keras_count == 213_301
    for workload in ("lstm-ptb", "seq2seq-manythings"):
        count = probe["workloads"][workload]["param_count"]
        assert check.second_bias(workload) > 0
        assert count == check.KERAS_COUNTS[workload], (workload, count - check.KERAS_COUNTS[workload])


@pytest.mark.slow
def test_info_records_what_was_used(probe):
    for workload, info in check.checked_infos(probe, check.PROBED).items():  # threads: OpenBLAS' pool
        for key in ("input_pipeline", "loss", "weight_decay_rule"):
            assert info[key], key
        config = info["theano_config"]
        assert config["floatX"] == "float32"
        assert "openblas" in config["blas.ldflags"]
        # The compile cache belongs to the environment, never the shared ~/.theano.
        assert "theano-compiledir" in config["compiledir"] or "dlrepro" in config["compiledir"], workload
        assert info["compile_seconds"] >= 0
    workloads = {w: probe["workloads"][w]["info"] for w in check.PROBED}
    # Convolutions ran as CorrMM (im2col + BLAS in C), not a Python fallback.
    assert "CorrMM" in workloads["cnn-mnist"]["kernels"]["conv2d"]
    assert workloads["lstm-imdb"]["optimizer"]["epsilon"] == 1e-7
    for workload in ("lstm-ptb", "seq2seq-manythings"):
        info = workloads[workload]
        assert info["data_layout"] == "ids (N, T)"
        assert {k: info["optimizer"][k] for k in check.LSTM_OPTIMIZERS[workload]} == check.LSTM_OPTIMIZERS[workload]
        assert "scan" in info["kernels"]["lstm"] and "one bias per gate" in info["kernels"]["lstm"]
        # The per-step dense is BLAS gemm over (N*T, units), not a loop of small products.
        assert "(N*T, units)" in info["kernels"]["dense"] and "Dot22" in info["kernels"]["dense"]
    assert "lstm_lengths" not in workloads["lstm-ptb"]["kernels"]  # no padding: no mask
    assert "encoder" in workloads["seq2seq-manythings"]["kernels"]["lstm_initial_state"]


@pytest.mark.slow
def test_compile_cost_is_reported(probe):
    """Theano's graph optimization and g++ run at setup; each workload's info records the seconds."""
    sys.stderr.write(
        "theano compile seconds: "
        + ", ".join(f"{w}={r['info']['compile_seconds']} of {r['seconds']}" for w, r in probe["workloads"].items())
        + "\n"
    )
    for result in probe["workloads"].values():
        assert 0 <= result["info"]["compile_seconds"] <= result["seconds"]


@pytest.mark.slow
def test_adadelta_is_keras2s():
    """The hand-written Adadelta (with decoupled weight decay) follows Keras 2's formulas step by step."""
    out = check.run_in_env(FRAMEWORK, ["-c", ADADELTA_SCRIPT], "Adadelta steps", BUILD_TIMEOUT_S)
    assert out["theano"] == pytest.approx(out["keras2"], rel=1e-5, abs=1e-6)
    assert out["theano"] != pytest.approx([1.0, -2.0, 0.5, 3.0])  # it moved


@pytest.mark.slow
def test_gpu_request_fails_clearly():
    """No pygpu on PyPI: device 'gpu' must be a clear RuntimeError, never a silent CPU run."""
    smoke = json.dumps(specs.load("cnn-mnist", "smoke"))
    out = check.run_in_env(FRAMEWORK, ["-c", GPU_SCRIPT, smoke], "gpu request", 300)
    assert out["error"] and "pygpu" in out["error"], out


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    check.assert_versions_match_lock(FRAMEWORK, probe["versions"], PINNED)
