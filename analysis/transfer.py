"""What can transfer from the paper's hardware to ours: orders, ratios, speedups, accuracy tolerance.

Absolute training times depend on the machine (a Tesla P4 and a 64-core Xeon in DLBench), so a
reproduction on other hardware is judged on what should survive the move: the order of frameworks
per (workload, device, metric) (Kendall tau against the published order), each framework's time
relative to the fastest, the GPU/CPU speedup of the same workload and framework, and test accuracy
within a stated tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from analysis.reference import (
    METRIC_COLUMNS,
    ORIGIN_LOGS,
    ORIGIN_PAPER,
    WILDCARD,
    PublishedValue,
    device_env,
    published_for,
)
from analysis.stats import StatResult, kendall
from analysis.summary import CELL_KEYS, SHOWN_KEYS, CellSummary

# Test accuracy "within tolerance" of a published value: |measured mean - published| <= this,
# in percentage points. Two points is about the spread the paper itself reports between runs and
# frameworks that it calls "about the same" (e.g. 87-88 % on IMDB, ~98 % on MNIST).
ACCURACY_TOLERANCE_PP = 2.0

ORIGINS: tuple[str, ...] = (ORIGIN_PAPER, ORIGIN_LOGS)

# Metrics whose order is compared, and whether a lower value is better (the order's direction does
# not change Kendall tau, but the text says "fastest first" or "most accurate first").
ORDER_METRICS: tuple[str, ...] = ("test_accuracy", "training_time", "cpu_utilization_mean",
                                  "gpu_utilization_mean", "memory_mean")
LOWER_IS_BETTER = {"training_time"}

# A comparison group as shown: every shown cell key except the framework (frameworks compete in it).
GROUP_KEYS: tuple[str, ...] = tuple(k for k in SHOWN_KEYS if k != "framework")


def group_key(cell: CellSummary) -> tuple[str, ...]:
    """The cell's comparison group: every cell key (CELL_KEYS, the sweep point by its columns) except the
    framework."""
    return tuple(cell.identity[k] for k in CELL_KEYS if k != "framework")


def framework_groups(cells: Iterable[CellSummary]) -> dict[tuple[str, ...], list[CellSummary]]:
    """Cells grouped by group_key, groups in the order they are shown (GROUP_KEYS), frameworks sorted within a
    group."""
    groups: dict[tuple[str, ...], list[CellSummary]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)
    order = sorted(groups.items(), key=lambda kv: tuple(kv[1][0].key[k] for k in GROUP_KEYS))
    return {k: sorted(v, key=lambda c: c.key["framework"]) for k, v in order}


def framework_specific(device: str, workload: str, framework: str, metric: str,
                       origin: str) -> PublishedValue | None:
    """The first published value of one origin naming this framework ('*' rows give no order)."""
    for p in published_for(device, workload, framework, metric):
        if p.origin == origin and p.framework != WILDCARD:
            return p
    return None


def run_ids(cells: Iterable[CellSummary]) -> list[str]:
    """The run ids of the cells' runs, failed ones included."""
    return [r["run_id"] for c in cells for r in c.rows]


# --- Order of frameworks -------------------------------------------------------------------

@dataclass(frozen=True)
class OrderComparison:
    """Measured vs published values of one metric over the frameworks of one group that have both."""

    group: dict[str, str]
    metric: str
    origin: str
    frameworks: list[str]
    measured: list[float]
    published: list[PublishedValue]
    test: StatResult
    run_ids: list[str]

    def order_text(self, values: Sequence[float]) -> str:
        """Frameworks from best to worst by values ('a < b < c' for time, 'a > b > c' otherwise)."""
        lower = self.metric in LOWER_IS_BETTER
        ranked = sorted(zip(values, self.frameworks), key=lambda vf: vf[0], reverse=not lower)
        return (" < " if lower else " > ").join(fw for _, fw in ranked)


def order_comparisons(cells: Sequence[CellSummary]) -> list[OrderComparison]:
    """Kendall tau between measured means and published values, per group, metric and origin.

    A row exists when at least one framework of the group has a framework-specific published
    value of that metric and origin; Kendall needs 3 frameworks with both values, else the row
    says insufficient data.
    """
    out: list[OrderComparison] = []
    for _, members in framework_groups(cells).items():
        group = {k: members[0].key[k] for k in GROUP_KEYS}
        for metric in ORDER_METRICS:
            column = METRIC_COLUMNS[metric]
            for origin in ORIGINS:
                fws, measured, published = [], [], []
                any_published = False
                for cell in members:
                    ref = framework_specific(group["device"], group["workload"], cell.key["framework"],
                                             metric, origin)
                    any_published |= ref is not None
                    mean = cell.estimates[column].mean
                    if ref is not None and mean is not None:
                        fws.append(cell.key["framework"])
                        measured.append(mean)
                        published.append(ref)
                if not any_published:
                    continue
                test = kendall(measured, [p.value for p in published])
                out.append(OrderComparison(group, metric, origin, fws, measured, published, test,
                                           run_ids(members)))
    return out


# --- Time relative to the fastest framework ------------------------------------------------

@dataclass(frozen=True)
class RelativeTime:
    """One framework's training time divided by its group's fastest, measured and published."""

    group: dict[str, str]
    framework: str
    measured_mean: float
    measured_relative: float
    fastest_measured: str
    published: PublishedValue | None
    published_relative: float | None
    fastest_published: str | None
    run_ids: list[str]


def relative_times(cells: Sequence[CellSummary]) -> list[RelativeTime]:
    """Per group with >= 2 measured frameworks: each framework's mean time / the fastest mean.

    The published side divides by the fastest published value of the same origin among the
    group's frameworks (shown only when >= 2 of them have one); one row per framework and origin
    with a published value, or one row without.
    """
    out: list[RelativeTime] = []
    column = METRIC_COLUMNS["training_time"]
    for _, members in framework_groups(cells).items():
        timed = [c for c in members if c.estimates[column].mean]
        if len(timed) < 2:
            continue
        group = {k: timed[0].key[k] for k in GROUP_KEYS}
        fastest = min(timed, key=lambda c: c.estimates[column].mean)
        best = fastest.estimates[column].mean
        refs = {origin: {c.key["framework"]: framework_specific(group["device"], group["workload"],
                                                                c.key["framework"], "training_time", origin)
                         for c in timed}
                for origin in ORIGINS}
        for cell in timed:
            fw, mean = cell.key["framework"], cell.estimates[column].mean
            rows = 0
            for origin in ORIGINS:
                ref = refs[origin][fw]
                if ref is None:
                    continue
                known = {f: p for f, p in refs[origin].items() if p is not None}
                rel, top = None, None
                if len(known) >= 2:
                    top = min(known, key=lambda f: known[f].value)
                    rel = ref.value / known[top].value
                out.append(RelativeTime(group, fw, mean, mean / best, fastest.key["framework"], ref, rel, top,
                                        run_ids([cell])))
                rows += 1
            if not rows:
                out.append(RelativeTime(group, fw, mean, mean / best, fastest.key["framework"], None, None, None,
                                        run_ids([cell])))
    return out


# --- GPU / CPU speedups --------------------------------------------------------------------

PAIR_KEYS: tuple[str, ...] = ("workload", "framework", "era", "profile", "data_source")


def paired_cells(cells: Iterable[CellSummary], keys: Sequence[str], side: Callable[[CellSummary], str],
                 first: str, second: str) -> list[tuple[CellSummary, CellSummary]]:
    """(first-side cell, second-side cell) pairs that agree on every one of keys, where side(cell) names
    the cell's side (e.g. its device env 'cpu' or 'gpu'); cells of any other side are left out. Several
    cells on one side (e.g. two runners) pair with each cell of the other, in sorted key order."""
    by_side: dict[str, dict[tuple[str, ...], list[CellSummary]]] = {first: {}, second: {}}
    for cell in cells:
        if side(cell) in by_side:
            by_side[side(cell)].setdefault(tuple(cell.key[k] for k in keys), []).append(cell)
    return [(a, b) for key, firsts in sorted(by_side[first].items()) for a in firsts
            for b in by_side[second].get(key, [])]


def device_pairs(cells: Sequence[CellSummary]) -> list[tuple[CellSummary, CellSummary]]:
    """(CPU cell, GPU cell) pairs of the same workload, framework, era, profile and data source.

    The runner may differ (a CPU campaign run locally, a GPU one in a container): it is the same
    experiment on other hardware.
    """
    return paired_cells(cells, PAIR_KEYS, lambda c: device_env(c.key["device"]), "cpu", "gpu")


@dataclass(frozen=True)
class PublishedSpeedup:
    """A published GPU/CPU speedup: printed by the paper, or derived from its CPU and GPU times."""

    value: float
    qualifier: str
    source: str


@dataclass(frozen=True)
class Speedup:
    """Mean CPU training time / mean GPU training time of one workload and framework."""

    cpu: CellSummary
    gpu: CellSummary
    value: float | None
    published: list[PublishedSpeedup]
    run_ids: list[str]


def published_speedups(workload: str, framework: str) -> list[PublishedSpeedup]:
    """Printed speedups (metric gpu_speedup_over_cpu), then CPU time / GPU time per origin."""
    out = [PublishedSpeedup(p.value, p.qualifier, f"paper {p.source}" if p.origin == ORIGIN_PAPER
                            else f"authors' log: {p.source}")
           for p in published_for("gpu", workload, framework, "gpu_speedup_over_cpu")]
    for origin in ORIGINS:
        cpu = framework_specific("cpu", workload, framework, "training_time", origin)
        gpu = framework_specific("gpu", workload, framework, "training_time", origin)
        if cpu and gpu and gpu.value:
            where = "paper" if origin == ORIGIN_PAPER else "authors' logs"
            out.append(PublishedSpeedup(cpu.value / gpu.value, f"derived: CPU {cpu.value:g} s / GPU {gpu.value:g} s",
                                        f"{where}: {cpu.source}; {gpu.source}"))
    return out


def speedups(cells: Sequence[CellSummary]) -> list[Speedup]:
    """GPU/CPU speedup for every device pair (None where either side has no mean time)."""
    column = METRIC_COLUMNS["training_time"]
    out = []
    for cpu, gpu in device_pairs(cells):
        c, g = cpu.estimates[column].mean, gpu.estimates[column].mean
        value = c / g if c is not None and g else None
        out.append(Speedup(cpu, gpu, value, published_speedups(cpu.key["workload"], cpu.key["framework"]),
                           run_ids([cpu, gpu])))
    return out


# --- Accuracy tolerance --------------------------------------------------------------------

WITHIN = "within"
OUTSIDE = "outside"


def accuracy_verdict(measured_mean: float | None, published: float | None,
                     tolerance_pp: float = ACCURACY_TOLERANCE_PP) -> str:
    """'within ±2 pp (+0.50 pp)', 'outside ±2 pp (-9.50 pp)', or 'no measured value'."""
    if measured_mean is None or published is None:
        return "no measured value" if measured_mean is None else "no published value"
    diff = measured_mean - published
    word = WITHIN if abs(diff) <= tolerance_pp else OUTSIDE
    return f"{word} ±{tolerance_pp:g} pp ({diff:+.2f} pp)"
