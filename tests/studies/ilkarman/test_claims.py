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


def _switch(fw: str, axis: str, value: str, time: float, workload: str = "gru-imdb", device: str = "gpu",
            repeat: int = 1) -> dict[str, Any]:
    base = row(fw, workload, device, repeat, time=time)
    return {**base, "sweep": f"{axis}={value}", f"sweep_{axis}": value, axis: value,
            "run_id": f"{base['run_id']}-{value}"}


def test_the_fused_rnn_kernel_faster_in_every_group() -> None:
    rows = [_switch("pytorch", "rnn_kernel", "fused", 20), _switch("pytorch", "rnn_kernel", "plain", 60),
            _switch("tensorflow", "rnn_kernel", "fused", 30), _switch("tensorflow", "rnn_kernel", "plain", 45)]
    res = check(ilkarman.ilkarman_fused_rnn_kernel_faster, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert res.evidence.startswith("pytorch gru-imdb/gpu: fused 20.0 s, plain 60.0 s, plain/fused 3.00×; ")
    assert res.evidence.endswith("(reproduced when fused is faster in every group)") and len(res.run_ids) == 4
    slower = rows[:2] + [_switch("tensorflow", "rnn_kernel", "fused", 50), rows[3]]
    assert check(ilkarman.ilkarman_fused_rnn_kernel_faster, slower).verdict == NOT_REPRODUCED
    assert check(ilkarman.ilkarman_fused_rnn_kernel_faster, rows[:1]).evidence.startswith(NOT_IN_CAMPAIGN)
    assert_not_in_campaign(ilkarman.ilkarman_fused_rnn_kernel_faster)


def test_the_layout_matters_when_some_framework_changes_by_ten_percent() -> None:
    first, last = "channels_first", "channels_last"
    rows = [_switch("pytorch", "layout", first, 100, CIFAR), _switch("pytorch", "layout", last, 102, CIFAR),
            _switch("tensorflow", "layout", first, 80, CIFAR), _switch("tensorflow", "layout", last, 120, CIFAR)]
    res = check(ilkarman.ilkarman_layout_matters, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert "tensorflow cnn-cifar10-ilkarman/gpu: channels_first 80.0 s, channels_last 120 s; channels_first faster " \
           "by 1.50×" in res.evidence
    assert check(ilkarman.ilkarman_layout_matters, rows[:2]).verdict == NOT_REPRODUCED  # 2 %: does not matter
    assert_not_in_campaign(ilkarman.ilkarman_layout_matters)


def test_cnn_times_close_within_twice_the_fastest() -> None:
    rows = [row("pytorch", CIFAR, "gpu", time=50), row("tensorflow", CIFAR, "gpu", time=90),
            row("mxnet", CIFAR, "gpu", time=60),
            _switch("keras", "layout", "channels_last", 500, CIFAR)]  # a switch sweep's run: not read
    res = check(ilkarman.ilkarman_cnn_times_close, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert res.evidence == ("cnn-cifar10-ilkarman/gpu [local]: 3 frameworks, fastest pytorch 50.0 s, slowest "
                            "tensorflow 90.0 s (1.80×) (reproduced when every spread is at most 2×)")
    far = rows[:2] + [row("mxnet", CIFAR, "gpu", time=120)]
    assert check(ilkarman.ilkarman_cnn_times_close, far).verdict == NOT_REPRODUCED
    assert check(ilkarman.ilkarman_cnn_times_close, rows[:1]).evidence.startswith(NOT_IN_CAMPAIGN)


def test_accuracies_close_within_five_points() -> None:
    rows = [row("pytorch", CIFAR, "gpu", acc=77.0), row("keras", CIFAR, "gpu", acc=75.0),
            row("pytorch", "gru-imdb", "gpu", acc=86.0), row("tensorflow", "gru-imdb", "gpu", acc=85.5)]
    res = check(ilkarman.ilkarman_accuracies_close, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert "cnn-cifar10-ilkarman/gpu [local]: 2 frameworks, keras 75.0 % to pytorch 77.0 % (2.0 pp)" in res.evidence
    low = rows[:3] + [row("tensorflow", "gru-imdb", "gpu", acc=70.0)]
    assert check(ilkarman.ilkarman_accuracies_close, low).verdict == NOT_REPRODUCED
    assert_not_in_campaign(ilkarman.ilkarman_accuracies_close)
