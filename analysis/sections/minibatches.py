"""Seconds per mini-batch of every iteration-protocol cell (bench/iterations.py): the mean, median and spread
of the measured mini-batches, and the warm-up that was left out of them, from each run's run.json (whose
figures iterations.csv recomputes: bench.schema.summarize_iterations)."""

from __future__ import annotations

from statistics import median
from typing import Any

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.sections.columns import cell_columns
from analysis.stats import Estimate, format_number
from analysis.summary import CellSummary
from analysis.sweeps import SECONDS_PER_MINIBATCH

HEADING = "Seconds per mini-batch (iteration protocol)"
# The cell summary's estimates (analysis.summary.SUMMARY_METRICS): the runs' mean seconds and their spread.
MEAN, STD = SECONDS_PER_MINIBATCH, "iteration_time_std_s"


def _measured(cell: CellSummary) -> list[dict[str, Any]]:
    """The cell's ok runs with seconds per mini-batch (iteration protocol)."""
    return [r for r in cell.ok_rows if r.get(MEAN) is not None]


def _values(runs: list[dict[str, Any]], column: str) -> list[float]:
    return [float(r[column]) for r in runs if r.get(column) is not None]


def _mean(estimate: Estimate) -> str:
    return "—" if estimate.mean is None else format_number(estimate.mean, 4)


def _row(ctx: ReportContext, cell: CellSummary, shown: list[str]) -> list[Inline]:
    runs = _measured(cell)
    medians = _values(runs, "iteration_time_median_s")
    p5, p95 = _values(runs, "iteration_time_p5_s"), _values(runs, "iteration_time_p95_s")
    warmups = sum(int(r.get("warmup_iterations") or 0) for r in runs)
    warmup = sum(_values(runs, "warmup_time_s")) / warmups if warmups else None
    measured = sorted({int(r["measured_iterations"]) for r in runs if r.get("measured_iterations") is not None})
    return [*(cell.key[k] for k in shown), str(len(runs)), ", ".join(map(str, measured)) or "—",
            _mean(cell.estimates[MEAN]), format_number(median(medians), 4) if medians else "—",
            _mean(cell.estimates[STD]),
            f"{format_number(min(p5), 4)} – {format_number(max(p95), 4)}" if p5 and p95 else "—",
            "—" if warmup is None else format_number(warmup, 4), ctx.runs_links(runs)]


def minibatches_section(ctx: ReportContext) -> list[Block]:
    """One row per iteration-protocol cell: runs, measured mini-batches per run, the mean of the runs' mean
    seconds, the median of their medians, the mean of their standard deviations, the lowest 5th to the highest
    95th percentile, and the warm-up's seconds per mini-batch (left out of every other figure). Nothing when the
    campaign has no iteration-protocol run."""
    cells = [c for c in ctx.cells if _measured(c)]
    if not cells:
        return []
    shown = cell_columns(cells)
    return [Heading(2, HEADING),
            Para("Each mini-batch (forward, backward, update, device synchronized) timed alone after a warm-up that "
                 "is left out (iterations.csv in each run folder keeps every one, warm-up marked). Mean: the runs' "
                 "mean seconds averaged; median: the median of the runs' medians; std: the runs' sample standard "
                 "deviations averaged; p5 – p95: the lowest 5th to the highest 95th percentile of the runs; "
                 "warm-up: seconds per warm-up mini-batch."),
            Table([*shown, "runs", "measured per run", "mean s", "median s", "std s", "p5 – p95 s",
                   "warm-up s", "run folders"], [_row(ctx, c, shown) for c in cells])]
