"""Shams et al.'s claim (other-studies.md): multi-GPU and multi-node scaling depend on the interconnect."""

from __future__ import annotations

from analysis.claims import Claim, ClaimResult, ResultsTable, not_in_campaign

STUDY = "Shams et al."


def shams_multi_gpu_scaling(t: ResultsTable) -> ClaimResult:
    """Needs runs on 1-4 GPUs in one node, connected by NVLink and by PCIe, and on several nodes; the kit
    runs one device per run (make shams-gpu: one GPU), so this is insufficient data (not in this campaign)."""
    return not_in_campaign("runs on several GPUs in one node, over NVLink and over PCIe, and on several nodes; "
                           "the kit runs one GPU per run, on one node")


CLAIMS: list[Claim] = [
    Claim("Shams-1", STUDY, "Multi-GPU and multi-node scaling depend on the interconnect (NVLink vs PCIe).",
          shams_multi_gpu_scaling, load_sensitive=True),
]
