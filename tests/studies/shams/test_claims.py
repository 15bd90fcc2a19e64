"""Shams et al.'s claims (studies/shams/claims.py): GPUs far faster than the CPU on AlexNet (Shams-2), and the
scale-up over a node's GPUs (Shams-3)."""

from __future__ import annotations

from analysis.claims import NOT_REPRODUCED, REPRODUCED
from studies.shams import claims as shams
from tests.resultrows import row, scale_row
from tests.studies.claimcheck import check

ALEXNET = "alexnet-shams-synthetic"


def _timed(fw: str, device: str, seconds: float, batch: int = 16, runner: str = "local") -> dict:
    """An iterations-protocol AlexNet run (make shams-cpu / shams-gpu): seconds per mini-batch of `batch`."""
    return {**row(fw, ALEXNET, device, batch=batch), "run_id": f"{fw}-{device}-{runner}", "runner": runner,
            "iteration_time_mean_s": seconds}


def test_gpus_far_faster_than_the_cpu_per_sample() -> None:
    # CPU 3.2 s per 16 images, GPU 0.02 s per 16: 160×; a second GPU at 0.1 s per 32: 64×.
    rows = [_timed("pytorch", "cpu", 3.2), _timed("pytorch", "gpu", 0.02), _timed("pytorch", "gpu", 0.1, 32, "b")]
    res = check(shams.shams_gpu_far_faster_than_cpu, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert ("pytorch: cpu [local] 3.200 s per batch of 16, gpu [local] 0.02000 s per batch of 16: 160×"
            in res.evidence)
    assert "gpu [b] 0.1000 s per batch of 32: 64.0×" in res.evidence
    assert res.evidence.endswith("(per sample; reproduced when every pair is at least 10×)")
    slow = rows[:2] + [_timed("pytorch", "gpu", 1.0, 32, "b")]  # 6.4×: not an order of magnitude
    assert check(shams.shams_gpu_far_faster_than_cpu, slow).verdict == NOT_REPRODUCED
    assert check(shams.shams_gpu_far_faster_than_cpu, rows[:1]).evidence.startswith("not in this campaign:")


def test_scale_up_raises_the_throughput_on_gpus() -> None:
    rows = [scale_row("pytorch", ALEXNET, n, rate, device="gpu") for n, rate in ((1, 1.0), (2, 1.8), (4, 3.0))]
    res = check(shams.shams_scale_up_raises_throughput, rows)
    assert res.verdict == REPRODUCED, res.evidence
    assert res.evidence.startswith(f"{ALEXNET} pytorch gpu 4 ranks: 3.00× the 1-rank throughput")
    flat = [scale_row("pytorch", ALEXNET, n, rate, device="gpu") for n, rate in ((1, 1.0), (4, 0.9))]
    assert check(shams.shams_scale_up_raises_throughput, flat).verdict == NOT_REPRODUCED
    cpu = [scale_row("pytorch", "lenet-mnist", n, rate) for n, rate in ((1, 1.0), (2, 1.5))]
    assert check(shams.shams_scale_up_raises_throughput, cpu).evidence.startswith("not in this campaign:")
