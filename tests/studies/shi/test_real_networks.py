"""Shi et al.'s real-data networks beside FCN-R: AlexNet-R on CIFAR-10 (studies/shi/workloads/alexnet-r-cifar10.toml)
and the 2 x 256 LSTM over 32-token PTB windows (lstm32-ptb.toml). Every current-era framework builds each with the
hand-counted parameters, trained at the smoke sizes through `python -m campaign run` (the local runner's
environments, DLREPRO_VENV_ROOT) on synthetic CIFAR-10 and PTB; the LSTM's windows are cut in the run from the
prepared token streams (bench/prepared.py), so its runs read 32 steps where lstm-ptb's read 35."""

from __future__ import annotations

import pytest

from tests.smokecampaign import smoke_runs

FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
WORKLOADS = ("alexnet-r-cifar10", "lstm32-ptb")
# AlexNet-R: conv 5x5 3->32, 32->32, 32->64 (weights + biases); pools 3/2 take 32 -> 15 -> 7 -> 3; dense 3*3*64 -> 10.
ALEXNET_R_PARAMS = (5 * 5 * 3 * 32 + 32) + (5 * 5 * 32 * 32 + 32) + (5 * 5 * 32 * 64 + 64) + (576 * 10 + 10)
# The LSTM in Keras' convention (one bias per gate): embedding 10000x256, two LSTMs 256 -> 256, dense 256 -> 10000.
LSTM32_PARAMS = 10_000 * 256 + 2 * 4 * (256 * 256 + 256 * 256 + 256) + (256 * 10_000 + 10_000)
assert (ALEXNET_R_PARAMS, LSTM32_PARAMS) == (85_098, 6_180_624)
# Frameworks whose LSTMs keep two bias vectors per gate (cuDNN style: b_ih and b_hh), 4 x 256 more per layer.
SECOND_BIAS = {"pytorch", "mxnet", "chainer"}
SECOND_BIAS_PARAMS = 2 * 4 * 256


def expected_params(workload: str, framework: str) -> int:
    """The hand count of a workload in a framework."""
    if workload == "alexnet-r-cifar10":
        return ALEXNET_R_PARAMS
    return LSTM32_PARAMS + (SECOND_BIAS_PARAMS if framework in SECOND_BIAS else 0)


@pytest.mark.slow
def test_every_framework_builds_alexnet_r_and_the_lstm_with_the_hand_counted_parameters(tmp_path):
    runs = smoke_runs(tmp_path, FRAMEWORKS, WORKLOADS, datasets=("cifar10", "ptb"))
    assert sorted(runs) == sorted((w, f) for w in WORKLOADS for f in FRAMEWORKS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
    counts = {key: run["model"]["trainable_params"] for key, run in runs.items()}
    assert counts == {(w, f): expected_params(w, f) for w, f in runs}
    # The smoke subsets, read from 32-token windows (the LSTM) and the CIFAR-10 images.
    for (workload, framework), run in runs.items():
        assert (run["dataset"]["train_examples"], run["dataset"]["test_examples"]) == (
            (64, 32) if workload == "alexnet-r-cifar10" else (48, 24)), (workload, framework)
