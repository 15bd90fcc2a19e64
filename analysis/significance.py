"""The statistics the paper ran over repeats and epochs, applied to a campaign.

- Wilcoxon signed-rank test between each pair of frameworks of a group (same workload, device,
  runner, profile, data), repeats paired by repeat index (DLBench: p < 0.05), on training time and accuracy
  and, as DLBench did on CPU use, memory (Sec 5.3) and GPU use (Sec 5.5.3), on the resource means.
- Pearson correlation between epoch number and test accuracy, per run (DLBench Sec 5.5.4).
- Bootstrap 95 % intervals of each cell's mean beside the Student-t ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from analysis.stats import Estimate, StatResult, bootstrap_mean_ci, pearson, wilcoxon_paired
from analysis.summary import CellSummary
from analysis.transfer import GROUP_KEYS, framework_groups

# Run-table columns compared between frameworks, with the words the report uses for them: time and accuracy, and
# the resource means DLBench tested the same way (Sec 5.3 CPU use and memory, Sec 5.5.3 GPU use; CPU use is its
# Eq. 1-2 share of the cores, memory the mean resident set of the training process).
PAIRED_METRICS: dict[str, str] = {
    "training_time_s": "training time (s)", "test_accuracy": "test accuracy (%)",
    "cpu_util_mean_pct": "CPU use (mean %)", "mem_mean_mb": "memory (mean MB)",
    "gpu_util_mean_pct": "GPU use (mean %)",
}

# The metrics given bootstrap intervals: the headline two only. The resource means keep their Student-t interval
# in the summary table; a bootstrap beside each would multiply the table by 2.5 for no new reading.
BOOTSTRAP_METRICS: tuple[str, ...] = ("training_time_s", "test_accuracy")


@dataclass(frozen=True)
class PairedComparison:
    """Wilcoxon signed-rank test of one metric between two frameworks, repeats paired by index."""

    group: dict[str, str]
    metric: str
    framework_a: str
    framework_b: str
    repeats: list[int]
    test: StatResult
    run_ids: list[str]

    def verdict(self) -> str:
        """'differ (p < 0.05)', 'no significant difference', or insufficient data with the reason."""
        significant = self.test.significant()
        if significant is None:
            return self.test.text("W")
        return "differ (p < 0.05)" if significant else "no significant difference (p ≥ 0.05)"


def paired_values(a: CellSummary, b: CellSummary, column: str) -> tuple[list[int], list[float], list[float],
                                                                          list[str]]:
    """Repeat indices where both cells have a successful run with the column measured, their values and runs."""
    def by_repeat(cell: CellSummary) -> dict[int, tuple[float, str]]:
        found = ((r["repeat"], measured_value(r, column), r["run_id"]) for r in cell.ok_rows)
        return {repeat: (value, run_id) for repeat, value, run_id in found if value is not None}

    ra, rb = by_repeat(a), by_repeat(b)
    repeats = sorted(set(ra) & set(rb))
    return (repeats, [ra[i][0] for i in repeats], [rb[i][0] for i in repeats],
            [pair[i][1] for i in repeats for pair in (ra, rb)])


def measured_value(row: dict[str, Any], column: str) -> float | None:
    """The row's value of a run-table column, None where it has none (absent, empty or NaN: not measured)."""
    value = row.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def measures(cells: Sequence[CellSummary], column: str) -> bool:
    """Whether some successful run of these cells carries the column (GPU use on CPU runs: none does)."""
    return any(measured_value(r, column) is not None for cell in cells for r in cell.ok_rows)


def _tested(group: Sequence[CellSummary], a: CellSummary, b: CellSummary, column: str) -> bool:
    # A metric no run of the group measures (GPU use on the CPU) is no comparison; nor is a pair where a cell ran
    # without it (no GPU monitor). A cell whose runs all failed is still paired: its row says why no test ran.
    return measures(group, column) and all(measures([c], column) for c in (a, b) if c.ok_rows)


def framework_pair_tests(cells: Sequence[CellSummary],
                         metrics: Sequence[str] = tuple(PAIRED_METRICS)) -> list[PairedComparison]:
    """Every pair of frameworks within every group, for every metric both measure: a Wilcoxon signed-rank test.

    A metric is skipped for a pair where the group's successful runs never carry it (GPU use on CPU runs) or where
    one of the two cells has successful runs and none carries it; any run-table column may be named."""
    out = []
    for _, members in framework_groups(cells).items():
        group = {k: members[0].key[k] for k in GROUP_KEYS}
        for a, b in combinations(members, 2):
            for column in metrics:
                if not _tested(members, a, b, column):
                    continue
                repeats, xs, ys, ids = paired_values(a, b, column)
                out.append(PairedComparison(group, column, a.key["framework"], b.key["framework"], repeats,
                                            wilcoxon_paired(xs, ys), ids))
    return out


@dataclass(frozen=True)
class EpochCorrelation:
    """Pearson r between epoch number and test accuracy over one run's epochs."""

    row: dict[str, Any]
    test: StatResult


def epoch_accuracy_correlations(rows: Sequence[dict[str, Any]],
                                epochs: dict[str, list[dict[str, Any]]]) -> list[EpochCorrelation]:
    """One Pearson test per successful run over its epochs with a test accuracy (needs >= 3)."""
    out = []
    for row in rows:
        if row["status"] != "ok":
            continue
        points = [(rec["epoch"], rec["test_accuracy"]) for rec in epochs.get(row["run_id"], [])
                  if rec.get("test_accuracy") is not None]
        xs = [float(e) for e, _ in points]
        ys = [float(a) for _, a in points]
        out.append(EpochCorrelation(row, pearson(xs, ys)))
    return out


@dataclass(frozen=True)
class BootstrapInterval:
    """A cell's mean of one metric with its Student-t and bootstrap intervals."""

    cell: CellSummary
    metric: str
    t_interval: Estimate
    bootstrap: Estimate


def bootstrap_intervals(cells: Sequence[CellSummary],
                        metrics: Sequence[str] = BOOTSTRAP_METRICS) -> list[BootstrapInterval]:
    """Bootstrap 95 % interval of the mean (fixed seed) beside the t-interval, per cell and metric."""
    return [BootstrapInterval(cell, m, cell.estimates[m], bootstrap_mean_ci(r[m] for r in cell.ok_rows))
            for cell in cells for m in metrics if cell.estimates[m].n > 0]
