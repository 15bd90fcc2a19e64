"""ilkarman/DeepLearningFrameworks' claim (studies/ilkarman/claims.py): cuDNN autotuning on against off, read from
the GPU runs of a cudnn_autotune sweep alone."""

from __future__ import annotations

from typing import Any

from analysis.claims import INSUFFICIENT, NOT_IN_CAMPAIGN, NOT_REPRODUCED, REPRODUCED
from studies.ilkarman import claims as ilkarman
from tests.resultrows import row
from tests.studies.claimcheck import assert_not_in_campaign, check

CIFAR = "cnn-cifar10-ilkarman"


def _autotune(fw: str, value: str, time: float, device: str = "gpu", repeat: int = 1) -> dict[str, Any]:
    base = row(fw, CIFAR, device, repeat, time=time)
    return {**base, "sweep": f"cudnn_autotune={value}", "sweep_cudnn_autotune": value, "cudnn_autotune": value,
            "run_id": f"{base['run_id']}-{value}"}


def test_autotuning_on_faster_in_every_group_reproduces() -> None:
    rows = [_autotune("pytorch", "on", 50), _autotune("pytorch", "on", 70, repeat=2), _autotune("pytorch", "off", 90),
            _autotune("mxnet", "on", 40), _autotune("mxnet", "off", 44),
            row("pytorch", CIFAR, "gpu", time=10)]  # no sweep (make ilkarman-train-gpu): not read
    res = check(ilkarman.ilkarman_cudnn_autotune_helps, rows)
    assert res.verdict == REPRODUCED
    # pytorch: (50 + 70) / 2 = 60 s on, 90 off: 1.50×; mxnet 44 / 40 = 1.10×.
    assert res.evidence == ("mxnet cnn-cifar10-ilkarman/gpu: on 40.0 s, off 44.0 s, off/on 1.10× (1 and 1 runs); "
                            "pytorch cnn-cifar10-ilkarman/gpu: on 60.0 s, off 90.0 s, off/on 1.50× (2 and 1 runs)")
    assert len(res.run_ids) == 5


def test_one_group_slower_with_autotuning_does_not_reproduce() -> None:
    rows = [_autotune("pytorch", "on", 50), _autotune("pytorch", "off", 90),
            _autotune("tensorflow", "on", 60), _autotune("tensorflow", "off", 55)]
    assert check(ilkarman.ilkarman_cudnn_autotune_helps, rows).verdict == NOT_REPRODUCED


def test_without_both_settings_or_a_gpu_it_is_insufficient() -> None:
    res = check(ilkarman.ilkarman_cudnn_autotune_helps, [_autotune("pytorch", "on", 50)])
    assert res.verdict == INSUFFICIENT and not res.evidence.startswith(NOT_IN_CAMPAIGN)
    cpu = [_autotune("pytorch", "on", 50, device="cpu"), _autotune("pytorch", "off", 90, device="cpu")]
    assert check(ilkarman.ilkarman_cudnn_autotune_helps, cpu).evidence.startswith(NOT_IN_CAMPAIGN)
    assert_not_in_campaign(ilkarman.ilkarman_cudnn_autotune_helps)
    assert ilkarman.CLAIMS[0].decided_by == ("ilkarman-autotune-gpu",)
