"""Shi et al.'s claims (analysis.studies.shi) on small hand-made result tables."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT, NOT_REPRODUCED, REPRODUCED
from analysis.studies import shi
from tests.analysis.studies.claimcheck import assert_not_in_campaign, check
from tests.resultrows import row


def test_shi_speedup_and_no_winner() -> None:
    big = [row("pytorch", "cnn-mnist", time=200), row("pytorch", "cnn-mnist", "gpu", time=10),
           row("keras", "cnn-mnist", time=500), row("keras", "cnn-mnist", "gpu", time=10)]
    res = check(shi.shi_gpu_one_to_two_orders_faster, big)
    assert res.verdict == REPRODUCED and res.evidence.startswith("median speedup 35.0× over 2 pairs")
    small = [row("pytorch", "cnn-mnist", time=20), row("pytorch", "cnn-mnist", "gpu", time=10)]
    assert check(shi.shi_gpu_one_to_two_orders_faster, small).verdict == NOT_REPRODUCED
    assert check(shi.shi_gpu_one_to_two_orders_faster, small[:1]).verdict == INSUFFICIENT
    res = check(shi.shi_no_tool_fastest_everywhere, big)
    assert res.verdict == NOT_REPRODUCED and "pytorch best in every group" in res.evidence
    mixed = [row("pytorch", "cnn-mnist", time=200), row("keras", "cnn-mnist", time=100),
             row("pytorch", "lstm-imdb", time=100), row("keras", "lstm-imdb", time=300)]
    assert check(shi.shi_no_tool_fastest_everywhere, mixed).verdict == REPRODUCED
    assert check(shi.shi_no_tool_fastest_everywhere, mixed[:2]).verdict == INSUFFICIENT


def test_shi_cpu_scaling_is_not_in_this_campaign() -> None:
    assert_not_in_campaign(shi.shi_cpu_scaling_past_cores)
