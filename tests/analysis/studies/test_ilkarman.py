"""ilkarman/DeepLearningFrameworks' claim (analysis.studies.ilkarman)."""

from __future__ import annotations

from analysis.studies import ilkarman
from tests.analysis.studies.claimcheck import assert_not_in_campaign


def test_cudnn_autotuning_is_not_in_this_campaign() -> None:
    assert_not_in_campaign(ilkarman.ilkarman_cudnn_autotune_helps)
