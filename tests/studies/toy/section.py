"""Toy et al.'s report section: its published time beside the campaign's runs of its workload."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Heading, Para

from .claims import published_seconds


def toy_section(ctx: ReportContext) -> list[Block]:
    """The toy study's published time and how many runs of its workload the campaign holds."""
    runs = [r for r in ctx.campaign.rows if r["workload"] == "toy-mlp-synthetic"]
    if not runs:
        return []
    return [Heading(2, "Toy et al.: the published time beside the kit's"),
            Para(f"Published: {published_seconds():g} s; this campaign holds {len(runs)} runs of toy-mlp-synthetic.")]


SECTIONS = (toy_section,)
