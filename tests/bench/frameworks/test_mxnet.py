"""The MXNet (Gluon) framework module, run for real inside its hash-locked environment.

The environment is built with images.envs.ensure_env (seconds to minutes on first use, then
cached); the probe (probe.py beside this file) trains every DLBench CNN and LSTM workload (check.PROBED)
in it on small learnable data with one thread, and the same properties are asserted as for
PyTorch and Keras in test_pytorch_keras.py (the shared checks: check.py).
"""

from __future__ import annotations

import pytest

from bench import inference, iterations
from bench.frameworks import capabilities
from campaign import specs
from tests.bench.frameworks import check
from tests.bench.frameworks.check import *  # noqa: F403  (check.__all__: the shared tests, run here)

FRAMEWORK = "mxnet"


probe = check.probe_fixture(FRAMEWORK, check.PROBED, __name__, weight=60)


def test_the_paper_era_serves_what_the_current_era_does():
    """One Gluon model and trainer (blocks.py, trainer.py) serve both eras: MXNet 1.3.0 has every API they use, so
    the planner refuses no MXNet paper-era run the current era would plan."""
    paper, current = (capabilities.era_of(FRAMEWORK, era) for era in ("paper", "current"))
    assert paper[:4] == current[:4]  # protocols, layer types, bias-free conv, switches
    assert iterations.refusal(FRAMEWORK, "paper") is None and inference.refusal(FRAMEWORK, "paper") is None
    models = {w: specs.load(w, "smoke") for w in specs.known_workloads() if "smoke" in specs.known_profiles(w)}
    refused = {w: capabilities.layer_refusal(FRAMEWORK, "paper", spec) for w, spec in models.items() if "model" in spec}
    assert not any(refused.values()), refused


@pytest.mark.slow
def test_cnn_mnist_count_by_hand(probe):
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert probe["workloads"]["cnn-mnist"]["param_count"] == 320 + 18_496 + 1_179_776 + 1_290


@pytest.mark.slow
@pytest.mark.parametrize("workload", ("lstm-imdb", "lstm-ptb", "seq2seq-manythings"))
def test_lstm_parameter_count_has_the_second_bias(probe, workload):
    """gluon.rnn.LSTM keeps two bias vectors per gate (i2h and h2h, as cuDNN does), Keras one."""
    assert 4 * check.lstm_units() == 400
    check.assert_lstm_second_bias(probe["workloads"][workload]["param_count"], workload)


@pytest.mark.slow
def test_info_records_what_was_used(probe):
    for info in check.checked_infos(probe, check.PROBED).values():
        for key in ("input_pipeline", "loss", "weight_decay_rule"):
            assert info[key], key
    assert probe["workloads"]["lstm-imdb"]["info"]["optimizer"]["epsilon"] == 1e-7
    for workload in ("lstm-ptb", "seq2seq-manythings"):
        info = probe["workloads"][workload]["info"]
        assert info["data_layout"].startswith("ids (N, T)")
        assert "Dense(flatten=False)" in info["kernels"]["dense"]
        assert info["optimizer"] == check.LSTM_OPTIMIZERS[workload]
    assert "AdaDelta" in probe["workloads"]["lstm-ptb"]["info"]["optimizer_impl"]
    assert probe["workloads"]["seq2seq-manythings"]["info"]["optimizer_impl"].endswith("mx.optimizer 'adam'")
    # The CPU kernel cannot stop at each source's end: the encoder's cell is stepped instead.
    assert "SequenceLast" in probe["workloads"]["seq2seq-manythings"]["info"]["kernels"]["lstm_encoder_state"]


@pytest.mark.slow
def test_reported_versions_match_the_lock(probe):
    # versions() key -> the package pinned for it in the lock
    pinned = {"mxnet": "mxnet", "numpy": "numpy"}
    check.assert_versions_match_lock(FRAMEWORK, probe["versions"], pinned)
