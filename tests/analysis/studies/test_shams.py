"""Shams et al.'s claim (analysis.studies.shams)."""

from __future__ import annotations

from analysis.studies import shams
from tests.analysis.studies.claimcheck import assert_not_in_campaign


def test_multi_gpu_scaling_is_not_in_this_campaign() -> None:
    assert_not_in_campaign(shams.shams_multi_gpu_scaling)
