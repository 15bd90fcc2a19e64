"""The scoreboard, the report's first section after the header: how far each workload x framework x device
(x era) is from the published numbers, in test accuracy and training time, as one figure and one table."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Heading, Image, Inline, Para, Table, Tag
from analysis.figures import SCOREBOARD_FILE
from analysis.scoreboard import Score, published_text, score_rows
from analysis.sections.columns import cell_columns
from analysis.stats import format_number
from analysis.summary import LEARNT_MARGIN_PP, CellSummary, learnt
from analysis.transfer import ACCURACY_TOLERANCE_PP, OUTSIDE, WITHIN

HEADING = "Scoreboard: measured vs published"


def _measured(cell: CellSummary, score: Score, digits: int) -> str:
    """'88.55 (n=2)', or why there is no mean ('no ok run', '—')."""
    est = score.measured
    if est.mean is None:
        return "—" if cell.ok_rows else "no ok run"
    return f"{format_number(est.mean, digits)} (n={est.n})"


def _accuracy(cell: CellSummary, score: Score) -> Inline:
    """The measured accuracy, marked where the mean is no better than always guessing the most frequent label."""
    text = _measured(cell, score, 4)
    floor, mean = cell.majority_accuracy, score.measured.mean
    if floor is None or mean is None or learnt(mean, floor):
        return text
    return Tag(f"{text}, not above guessing ({format_number(floor, 4)})", OUTSIDE)


def _difference(score: Score) -> Inline:
    """measured − published accuracy in pp, tagged within / outside the tolerance; '—' without either."""
    d = score.difference
    if d is None:
        return "—"
    return Tag(f"{d:+.2f} pp", WITHIN if abs(d) <= ACCURACY_TOLERANCE_PP else OUTSIDE)


def _ratio(score: Score) -> str:
    """measured / published time ('0.0512×'; '<0.5×' against a lower bound); '—' without either."""
    r = score.ratio
    if r is None:
        return "—"
    return f"{'<' if score.lower_bound else ''}{format_number(r)}×"


def scoreboard_section(ctx: ReportContext) -> list[Block]:
    """The scoreboard figure (analysis.figures.scoreboard_figure) and table: per cell, mean test accuracy and
    training time with n, the published number each is set against, and their difference / ratio."""
    keys = cell_columns(ctx.cells)
    rows: list[list[Inline]] = []
    for row in score_rows(ctx.cells):
        acc, time = row.accuracy, row.time
        rows.append([*(row.key[k] for k in keys),
                     _accuracy(row.cell, acc), published_text(acc.published), _difference(acc),
                     _measured(row.cell, time, 3), published_text(time.published), _ratio(time)])
    # Figure, then table, then the notes: the figure and the table must both fit on the first screen.
    blocks: list[Block] = [Heading(2, HEADING)]
    figure = next((f for f in ctx.figures if f.path.name == SCOREBOARD_FILE), None)
    if figure is not None:
        blocks.append(Image(figure, ctx.rel(figure.path)))
    else:
        blocks.append(Para("No figure: no cell has both a measured mean and a published number."))
    headers = [*keys, "accuracy % (n)", "published %", "measured − published",
               "training time s (n)", "published s", "measured / published"]
    return blocks + [
        Table(headers, rows, css_class="scoreboard"),
        Para("Mean over the successful repeats (n) against the published number: the paper's, else the authors' "
             f"log (run 1). ≈ approximate, > a lower bound, — none published; green: within ±{ACCURACY_TOLERANCE_PP:g}"
             " pp. 'Not above guessing (x)': the mean accuracy is within "
             f"{LEARNT_MARGIN_PP:g} pp of x, the accuracy of always guessing the test rows' most frequent label: "
             "those runs learnt nothing. Intervals and sources: 'Comparison with the published numbers'."),
    ]
