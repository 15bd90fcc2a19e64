"""The report's figures and links to the tables it was built from."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Image, Link, Para
from analysis.figures import SCOREBOARD_FILE


def figures_section(ctx: ReportContext) -> list[Block]:
    """Every figure with its caption (the scoreboard's is shown at the top, not again), or a line saying why
    there are none."""
    blocks: list[Block] = [Heading(2, "Figures")]
    if not ctx.figures:
        return blocks + [Para("No figures: no run finished successfully, so there is nothing to plot.")]
    return blocks + [Image(f, ctx.rel(f.path)) for f in ctx.figures if f.path.name != SCOREBOARD_FILE]


def files_section(ctx: ReportContext) -> list[Block]:
    """Links to the tables the report was built from."""
    tables = ctx.out_dir / "tables"
    return [Heading(2, "Tables"),
            Bullets([Link("tables/runs.csv", ctx.rel(tables / "runs.csv")),
                     Link("tables/summary.csv", ctx.rel(tables / "summary.csv"))])]
