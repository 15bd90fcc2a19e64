"""Toy et al.'s published number as a run-table row (analysis/published.py), for the invariant test."""

from __future__ import annotations

from typing import Any

from studies.toy.claims import published_seconds

from analysis.published import published_row


def runs() -> list[dict[str, Any]]:
    """The published training time of reference/toy.csv, as a run of the toy workload."""
    return [published_row("toy.csv:1", "pytorch", "toy-mlp-synthetic", "cpu", training_time_s=published_seconds())]
