"""DLBench's published numbers (reference/dlbench.csv: the numbers the paper prints in its text) as run-table rows,
so its claims' checks read the paper as they read a campaign (analysis/published.py; the invariant test
tests/studies/test_published.py).

How the csv becomes rows:
- (arch, dataset) map to the kit's workload of this study as analysis.reference.workload_cell names them; rows of a
  workload the kit has no spec for feed nothing.
- env cpu/gpu is the device; the metrics the kit measures map to run-table columns by analysis.reference's
  METRIC_COLUMNS (percent, seconds and MB as the csv holds them); the others (speed-ups, peak epochs, Pearson r,
  ratios) are no run-table column and feed nothing.
- One row per (env, workload, framework). A '*' row applies to the frameworks its qualifier names, or to every
  framework the csv names where it says "all frameworks"; one naming neither (Sec 5.5.1's "four frameworks" on GPU
  IMDB) feeds no framework, since the paper does not say which. A framework's own row wins over a '*' row.
- A value given as a range ("87-88") is the csv's value, the range's middle; a lower bound (">24 h") is its value:
  a check of who is slowest may count it as the time, since the true time is at least that long.
- No epochs(): the paper prints peak epochs, not the per-epoch curves a peak or a correlation is found on, and one
  record per run would make any "peak" check true by construction (those checks say so: Claim.unfed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from analysis.published import BY_CLAIMS, published_row, row_rule
from analysis.reference import METRIC_COLUMNS, WILDCARD, PublishedValue, load_dlbench, workload_cell

HERE = Path(__file__).resolve().parent
# The qualifier of a '*' row that applies to every framework the csv names.
ALL_FRAMEWORKS = "all frameworks"


# The rows of DLBench's files the reference table does not read (analysis/sections/not_reproduced.py lists them).
ROW_RULES = (
    row_rule("dlbench.csv", BY_CLAIMS, metric="peak_accuracy_epoch"),
    row_rule("dlbench.csv", BY_CLAIMS, metric="peak_accuracy"),
    row_rule("dlbench.csv", f"{BY_CLAIMS} (shown beside the measured speed-ups in 'What transfers across hardware')",
             metric="gpu_speedup_over_cpu"),
    row_rule("dlbench.csv", reason="the study notes do not say which epochs and accuracies the paper's r pairs (shown "
             "beside the kit's per-run r in 'Statistics as the paper did them')", metric="pearson_epochs_accuracy"),
    row_rule("dlbench.csv", BY_CLAIMS, metric="memory_ratio_to_next_framework"),
    row_rule("dlbench.csv", reason="a share of each core of the paper's host: it depends on that host's core count",
             metric="cpu_utilization_per_core"),
    row_rule("from_original_repos.csv", reason="a status note on the authors' runs (truncated), no final number to "
             "compare", metric="status"),
    row_rule("from_original_repos.csv", reason="a warning about the authors' logs, no number to compare",
             metric="warning"),
)


def workloads() -> dict[tuple[str, str], str]:
    """{(arch, dataset) as dlbench.csv names them: the kit's workload}, over this study's workload specs."""
    return {cell: path.stem for path in sorted((HERE / "workloads").glob("*.toml"))
            if (cell := workload_cell(path.stem)) is not None}


def named_frameworks(rows: tuple[PublishedValue, ...]) -> list[str]:
    """The frameworks the csv names (its '*' rows' "all frameworks"), sorted."""
    return sorted({p.framework for p in rows if p.framework != WILDCARD})


def row_frameworks(p: PublishedValue, named: list[str]) -> list[str]:
    """The frameworks one csv row applies to: its own, those its qualifier lists in parentheses, every named one for
    "all frameworks", else none."""
    if p.framework != WILDCARD:
        return [p.framework]
    if ALL_FRAMEWORKS in p.qualifier:
        return named
    # A list of frameworks in parentheses, "range 12-14 (pytorch tensorflow theano mxnet keras)".
    for group in re.findall(r"\(([^()]*)\)", p.qualifier):
        words = group.split()
        if words and all(w in named for w in words):
            return words
    return []


def expanded(metrics: Iterable[str] | None = None) -> Iterator[tuple[PublishedValue, str, str, str]]:
    """(row, env, kit workload, framework) for every framework each dlbench.csv row of a kit workload applies to
    (of `metrics` only, where given): a framework's own rows first, then the '*' rows, so that whoever keeps the first
    value per key keeps the framework's own number."""
    rows = load_dlbench()
    kit, named = workloads(), named_frameworks(rows)
    wanted = None if metrics is None else set(metrics)
    for p in sorted(rows, key=lambda r: r.framework == WILDCARD):
        workload = kit.get((p.arch, p.dataset))
        if workload is None or (wanted is not None and p.metric not in wanted):
            continue
        for fw in row_frameworks(p, named):
            yield p, p.env, workload, fw


def runs() -> list[dict[str, Any]]:
    """dlbench.csv's numbers as run-table rows: one successful paper-era run per (env, workload, framework) with the
    columns the paper prints for it."""
    values: dict[tuple[str, str, str], dict[str, float]] = {}
    for p, env, workload, fw in expanded(METRIC_COLUMNS):
        values.setdefault((env, workload, fw), {}).setdefault(METRIC_COLUMNS[p.metric], p.value)
    return [published_row(f"dlbench:{env}-{workload}-{fw}", fw, workload, env, **cols)
            for (env, workload, fw), cols in sorted(values.items())]
