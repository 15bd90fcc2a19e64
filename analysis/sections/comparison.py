"""Comparison with the published numbers: accuracy (with the tolerance verdict), training time, resource use."""

from __future__ import annotations

from analysis.claims import PAPER_DATA, PAPER_PROFILE
from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table, Tag
from analysis.reference import METRIC_COLUMNS, PublishedValue, published_for
from analysis.sections.columns import cell_columns
from analysis.stats import Estimate, format_estimate, ratio
from analysis.summary import CellSummary
from analysis.transfer import ACCURACY_TOLERANCE_PP, WITHIN, accuracy_verdict

_COMPARED = (
    # (dlbench.csv metric, heading, significant digits)
    ("test_accuracy", "Test accuracy (%)", 4),
    ("training_time", "Training time (s)", 3),
)
_RESOURCES = (
    ("cpu_utilization_mean", "CPU util. mean (%)"),
    ("memory_mean", "memory mean (MB)"),
    ("gpu_utilization_mean", "GPU util. mean (%)"),
)


def _published_text(p: PublishedValue | None) -> list[str]:
    if p is None:
        return ["—", "", ""]
    return [p.value_text, p.qualifier, p.source_text]


def measured_text(cell: CellSummary, est: Estimate, digits: int) -> str:
    """A cell's estimate as the report prints it ('98.50 ± 6.4 (n=2)'), or why there is none."""
    if est.n == 0:
        causes = cell.failure_causes()
        return "not measured" if cell.ok_rows or not causes else f"no successful run (failed: {causes})"
    return format_estimate(est, digits)


def comparison_section(ctx: ReportContext) -> list[Block]:
    """Per metric, one row per (cell, published value): published, measured mean ± CI, ratio."""
    keys = cell_columns(ctx.cells)
    blocks: list[Block] = [
        Heading(2, "Comparison with the published numbers"),
        Para("Measured: mean over successful repeats ± half-width of the 95 % Student-t interval (n). "
             "Ratio = measured mean / published value. " + _timing_definition(ctx)),
    ]
    for metric, title, digits in _COMPARED:
        column = METRIC_COLUMNS[metric]
        tolerance = metric == "test_accuracy"
        rows: list[list[Inline]] = []
        for cell in ctx.cells:
            est = cell.estimates[column]
            refs = published_for(cell.key["device"], cell.key["workload"], cell.key["framework"], metric)
            for ref in refs or [None]:
                r = ratio(est.mean, ref.value if ref else None)
                extra: list[Inline] = [_tolerance_cell(cell, est, ref)] if tolerance else []
                rows.append([*(cell.key[k] for k in keys), *_published_text(ref),
                             measured_text(cell, est, digits),
                             "—" if r is None else f"{r:.2f}×", *extra, ctx.run_links(cell.rows)])
        headers = [*keys, "published", "qualifier", "source", "measured", "ratio"]
        if tolerance:
            headers.append(f"within ±{ACCURACY_TOLERANCE_PP:g} pp?")
            blocks += [Heading(3, title),
                       Para(f"Accuracy tolerance: the measured mean is 'within' when it lies no more than "
                            f"{ACCURACY_TOLERANCE_PP:g} percentage points from the published value (analysis."
                            "transfer.ACCURACY_TOLERANCE_PP); the sign gives measured − published."
                            + ("" if _paper_evidence(ctx) else " On this campaign's data or profile the verdicts "
                               "are computed but are not evidence about the paper."))]
        else:
            blocks.append(Heading(3, title))
        blocks.append(Table([*headers, "runs"], rows))
    blocks += [Heading(3, "Resource use (training window)"), _resource_table(ctx, keys)]
    return blocks


def _paper_evidence(ctx: ReportContext) -> bool:
    """True when every run used the paper's data (PAPER_DATA) and profile (verdicts then speak about the paper)."""
    return all(r["data_source"] in PAPER_DATA and r["profile"] == PAPER_PROFILE for r in ctx.campaign.rows)


def _tolerance_cell(cell: CellSummary, est: Estimate, ref: PublishedValue | None) -> Inline:
    if ref is None or est.mean is None:
        return "—"
    text = accuracy_verdict(est.mean, ref.value)
    return Tag(text, "within" if text.startswith(WITHIN) else "outside")


def _timing_definition(ctx: ReportContext) -> str:
    definitions = sorted({r["timing"]["definition"] for r in ctx.campaign.runs.values()
                          if r["timing"]["definition"] != "not measured"})
    text = "Measured training time: " + (" / ".join(definitions) if definitions else "no definition recorded")
    return (text.rstrip(".") + ". The authors' logs' wall times include the test pass after every epoch, "
            "so they are not the same quantity as the measured training time.")


def _resource_table(ctx: ReportContext, keys: list[str]) -> Table:
    rows: list[list[Inline]] = []
    for cell in ctx.cells:
        values: list[Inline] = []
        for metric, _ in _RESOURCES:
            est = cell.estimates[METRIC_COLUMNS[metric]]
            refs = published_for(cell.key["device"], cell.key["workload"], cell.key["framework"], metric)
            text = measured_text(cell, est, 3)
            if refs:
                text += "; published " + ", ".join(f"{p.value_text} ({p.qualifier}, {p.source_text})"
                                                   for p in refs)
            values.append(text)
        peak = cell.estimates["mem_peak_mb"]
        rows.append([*(cell.key[k] for k in keys), *values, measured_text(cell, peak, 3),
                     ctx.run_links(cell.rows)])
    return Table([*keys, *(t for _, t in _RESOURCES), "memory peak (MB)", "runs"], rows)
