"""ilkarman/DeepLearningFrameworks' claim (other-studies.md): cuDNN autotuning speeds up training."""

from __future__ import annotations

from analysis.claims import Claim, ClaimResult, ResultsTable, not_in_campaign

STUDY = "ilkarman/DLF"


def ilkarman_cudnn_autotune_helps(t: ResultsTable) -> ClaimResult:
    """Needs GPU runs of one workload and framework with cuDNN autotuning on and off; campaigns run one
    setting, so this is insufficient data (not in this campaign)."""
    return not_in_campaign("GPU runs with cuDNN autotuning on and off")


CLAIMS: list[Claim] = [
    Claim("ilkarman-1", STUDY, "Enabling cuDNN autotuning speeds up training.",
          ilkarman_cudnn_autotune_helps, load_sensitive=True),
]
