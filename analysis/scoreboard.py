"""The scoreboard: how far each measured cell is from the published numbers, in accuracy and in time.

One ScoreRow per summary cell (workload x framework x device, and era, runner, profile or data source
where a campaign holds several): the cell's mean test accuracy and training time over its successful
repeats (with n), the published number each is set against, and measured − published (accuracy, in
percentage points) and measured / published (time). The published number is the paper's where it
prints one, else the authors' logs' (run 1), as analysis.reference.published_for orders them; the
'Comparison with the published numbers' section lists every published number with its source.
The report opens with these rows as a figure (analysis.figures.scoreboard_figure) and a table
(analysis.sections.scoreboard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.reference import METRIC_COLUMNS, ORIGIN_PAPER, PublishedValue, published_for
from analysis.stats import Estimate
from analysis.summary import CellSummary

# The two metrics on the scoreboard, as dlbench.csv names them.
ACCURACY, TIME = "test_accuracy", "training_time"
SCORED_METRICS: tuple[str, ...] = (ACCURACY, TIME)

# Published qualifiers that make a number a bound or an approximation (dlbench.csv's qualifier column).
_LOWER_BOUND = "lower bound"
_APPROX = "approx"


@dataclass(frozen=True)
class Score:
    """One metric of one cell: the measured estimate and the published number it is set against."""

    measured: Estimate
    published: PublishedValue | None

    @property
    def lower_bound(self) -> bool:
        """True when the published number is a lower bound ('more than 24 h'): the true value is larger."""
        return self.published is not None and self.published.qualifier.startswith(_LOWER_BOUND)

    @property
    def difference(self) -> float | None:
        """measured mean − published value (None when either is missing)."""
        if self.measured.mean is None or self.published is None:
            return None
        return self.measured.mean - self.published.value

    @property
    def ratio(self) -> float | None:
        """measured mean / published value (None when either is missing or the published value is 0); with
        a lower-bound published value the true ratio is at most this."""
        if self.measured.mean is None or self.published is None or self.published.value == 0:
            return None
        return self.measured.mean / self.published.value

    def interval(self, relative: bool) -> tuple[float, float] | None:
        """The 95 % interval of the measured mean as a difference (relative=False) or a ratio (True) to the
        published value; None without an interval or a published value."""
        est, ref = self.measured, self.published
        if est.ci_low is None or est.ci_high is None or ref is None or (relative and ref.value == 0):
            return None
        if relative:
            return est.ci_low / ref.value, est.ci_high / ref.value
        return est.ci_low - ref.value, est.ci_high - ref.value


@dataclass(frozen=True)
class ScoreRow:
    """One cell of the campaign with its accuracy and time scores."""

    cell: CellSummary
    accuracy: Score
    time: Score

    @property
    def key(self) -> dict[str, str]:
        """The cell's key as shown (analysis.summary.SHOWN_KEYS)."""
        return self.cell.key

    def score(self, metric: str) -> Score:
        """The Score of ACCURACY or TIME."""
        return {ACCURACY: self.accuracy, TIME: self.time}[metric]


def published_value(device: str, workload: str, framework: str, metric: str) -> PublishedValue | None:
    """The published number a cell is scored against: the paper's, else the authors' logs' (None if neither
    has one)."""
    refs = published_for(device, workload, framework, metric)
    return refs[0] if refs else None


def score_rows(cells: Sequence[CellSummary]) -> list[ScoreRow]:
    """One ScoreRow per cell, in the cells' order (analysis.summary: sorted by workload, framework, ...)."""
    rows = []
    for cell in cells:
        k = cell.key
        scores = [Score(cell.estimates[METRIC_COLUMNS[m]],
                        published_value(k["device"], k["workload"], k["framework"], m)) for m in SCORED_METRICS]
        rows.append(ScoreRow(cell, *scores))
    return rows


def published_text(p: PublishedValue | None) -> str:
    """A published number as the scoreboard prints it: '≈98 (paper)', '>86,400 (paper)', '98.28 (log)';
    '—' where there is none."""
    if p is None:
        return "—"
    mark = ">" if p.qualifier.startswith(_LOWER_BOUND) else "≈" if p.qualifier.startswith(_APPROX) else ""
    return f"{mark}{p.value:,.6g} ({'paper' if p.origin == ORIGIN_PAPER else 'log'})"
