"""The TensorFlow module, run for real inside its hash-locked environment (slow: builds it once).

The probe (probe.py beside this file) trains every DLBench CNN and LSTM workload (check.PROBED, smoke sizes) with one
thread; a second script checks, in the same environment, that the CPU LSTMs (TensorFlow's fused
BlockLSTM kernel and the split recurrence with its own gradient) and the GPU formulation
(tf.keras.layers.LSTM with a right-padded mask, run here by TensorFlow's loop) are the same
computation.
The checks every framework shares are in check.py beside this file.
"""

from __future__ import annotations

import pytest

from bench import inference, iterations
from bench.frameworks import capabilities
from campaign import specs
from tests.bench.frameworks import check
from tests.bench.frameworks.check import *  # noqa: F403  (check.__all__: the shared tests, run here)

FRAMEWORK = "tensorflow"

# Runs inside the tensorflow environment: the three LSTM paths on one set of weights.
LSTM_PATHS = r"""
import json
import numpy as np
import tensorflow as tf
from bench.frameworks.tensorflow.current_lstm import LSTM

out = {"lstm": {}}
rng = np.random.default_rng(0)
batch, steps, features, units = 6, 12, 5, 7
lengths = np.array([12, 1, 5, 9, 3, 12], dtype=np.int32)
x = rng.standard_normal((batch, steps, features)).astype(np.float32)
x[np.arange(steps)[None, :] >= lengths[:, None]] = 0.0
x, lengths = tf.constant(x), tf.constant(lengths)
state0 = [tf.constant(rng.standard_normal((batch, units)).astype(np.float32) * 0.5) for _ in range(2)]
# (return_sequences, return_state, lengths, initial state): a padded encoder handing its state on
# (seq2seq-manythings' encoder), a decoder starting from a given state, plain stacked layers.
cases = {
    "return_sequences=False": (False, False, lengths, None),
    "return_sequences=True": (True, False, lengths, None),
    "return_state, lengths": (False, True, lengths, None),
    "return_sequences, initial_state": (True, False, None, state0),
}
for case, (return_sequences, return_state, lens, init) in cases.items():
    layer = LSTM(units, use_lengths=lens is not None, return_sequences=return_sequences, fused_cpu=True,
                 return_state=return_state)
    layer(x, lens)  # builds the weights
    weights = layer.trainable_variables
    for w in weights:  # away from Keras' initial values, so every gate block matters
        w.assign(rng.standard_normal(tuple(w.shape)).astype(np.float32) * 0.4)
    paths = {
        "fused": lambda: layer.fused(x, lens, init),
        "split": lambda: layer.split(x, lens, init),
        "masked": lambda: layer.masked(x, lens, training=True, initial_state=init),
    }
    results = {}
    for path, run in paths.items():
        with tf.GradientTape() as tape:
            tape.watch([x, *(init or [])])
            ys = run()
            ys = ys if isinstance(ys, list) else [ys]
            loss = sum(tf.reduce_sum(y * tf.cos(tf.range(y.shape[-1], dtype=y.dtype) + k)) for k, y in enumerate(ys))
        grads = tape.gradient(loss, [*weights, x, *(init or [])])
        results[path] = ([y.numpy() for y in ys], [g.numpy() for g in grads])
    ref_out, ref_grads = results["masked"]
    for path in ("fused", "split"):
        outs, grads = results[path]
        out["lstm"][f"{path} vs masked, {case}"] = {
            "output": float(max(np.abs(a - b).max() for a, b in zip(outs, ref_out))),
            "grads": float(max(np.abs(a - b).max() for a, b in zip(grads, ref_grads))),
            "grad_scale": float(max(np.abs(b).max() for b in ref_grads)),
        }
print(json.dumps(out))
"""


probe = check.probe_fixture(FRAMEWORK, check.PROBED, __name__, weight=70)


def test_the_paper_era_serves_what_the_current_era_does():
    """TensorFlow 1.11's graph (paper.py, paper_layers.py) has step(), infer(), every layer type and the same
    switches, so the planner refuses no TensorFlow paper-era run the current era would plan."""
    paper, current = (capabilities.era_of(FRAMEWORK, era) for era in ("paper", "current"))
    assert paper[:4] == current[:4]  # protocols, layer types, bias-free conv, switches
    assert iterations.refusal(FRAMEWORK, "paper") is None and inference.refusal(FRAMEWORK, "paper") is None
    models = {w: specs.load(w, "smoke") for w in specs.known_workloads() if "smoke" in specs.known_profiles(w)}
    refused = {w: capabilities.layer_refusal(FRAMEWORK, "paper", spec) for w, spec in models.items() if "model" in spec}
    assert not any(refused.values()), refused


@pytest.fixture(scope="module")
def lstm_paths() -> dict:
    return check.run_in_env(FRAMEWORK, ["-c", LSTM_PATHS], "LSTM paths", 600)


@pytest.mark.slow
@pytest.mark.parametrize("workload", check.PROBED)
def test_parameter_counts_follow_keras(probe, workload):
    # Same layers, same counts as the keras module; the LSTM has Keras' single bias (PyTorch: +4*units).
    check.assert_keras_counts({workload: probe["workloads"][workload]["param_count"]})


@pytest.mark.slow
def test_cpu_and_gpu_lstm_formulations_agree(lstm_paths):
    """BlockLSTM and the split recurrence (CPU) and tf.keras.layers.LSTM with a mask (cuDNN on a GPU):
    same values and gradients (weights, inputs, initial state), sequence or last real step, final state.

    Guards the gate reordering, the choice of BlockLSTM over BlockLSTMV2 (whose gradient is wrong in
    TensorFlow 2.21) and the split recurrence's hand-written gradient.
    """
    assert len(lstm_paths["lstm"]) == 8
    for case, diff in lstm_paths["lstm"].items():
        assert diff["output"] < 1e-5, (case, diff)
        assert diff["grads"] < 1e-4 * max(1.0, diff["grad_scale"]), (case, diff)


@pytest.mark.slow
def test_info_records_what_was_used(probe):
    for workload, info in check.checked_infos(probe, check.PROBED).items():
        assert info["framework"] == FRAMEWORK
        assert info["input_pipeline"].startswith("tf.data")
        # The spec's epsilon, else Keras 2's 1e-7 (not TensorFlow's own defaults).
        stated = check.spec.load(workload)["training"]["optimizer"]
        assert info["optimizer"].get("epsilon", 1e-7) == stated.get("epsilon", 1e-7)
    assert "BlockLSTM" in probe["workloads"]["lstm-imdb"]["info"]["kernels"]["lstm"]
    assert "split recurrence" in probe["workloads"]["lstm-ptb"]["info"]["kernels"]["lstm"]  # 1024 units
    assert "lstm_state" in probe["workloads"]["seq2seq-manythings"]["info"]["kernels"]


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    # versions() key -> the package pinned for it in the lock
    pinned = {"tensorflow": "tensorflow-cpu", "keras": "keras", "numpy": "numpy"}
    check.assert_versions_match_lock(FRAMEWORK, probe["versions"], pinned)
