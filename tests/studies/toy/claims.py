"""Toy et al.'s one claim: the toy workload trains no slower than the made-up published time."""

from __future__ import annotations

import csv
from pathlib import Path

from analysis.claims import Claim, ClaimResult, ResultsTable, insufficient, verdict_for

STUDY = "Toy et al."
PUBLISHED = Path(__file__).parent / "reference" / "toy.csv"


def published_seconds() -> float:
    """The made-up published training time (reference/toy.csv)."""
    with open(PUBLISHED, newline="", encoding="utf-8") as fh:
        return float(next(csv.DictReader(fh))["training_time_s"])


def faster_than_published(t: ResultsTable) -> ClaimResult:
    """Reproduced when every successful run of toy-mlp-synthetic trains in no more time than reference/toy.csv's."""
    runs = [r for r in t.ok_rows if r["workload"] == "toy-mlp-synthetic"]
    if not runs:
        return insufficient("no run of toy-mlp-synthetic")
    limit = published_seconds()
    return ClaimResult(verdict_for(all(r["training_time_s"] <= limit for r in runs)),
                       f"{len(runs)} runs against the published {limit:g} s", tuple(r["run_id"] for r in runs))


CLAIMS = [Claim("Toy-1", STUDY, "The toy network trains no slower than published.", faster_than_published,
                decided_by=("toy-cpu",))]
