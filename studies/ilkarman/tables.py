"""ilkarman/DeepLearningFrameworks ("Evaluation Of Major Deep Learning Frameworks"): its published times
(ilkarman_dlf.csv: one model written idiomatically in each framework, timed on a K80 and a P100), the mapping of its
benchmarks and framework names onto the kit (ilkarman_benchmarks.csv, ilkarman_frameworks.csv), and the kit's
measured times beside them.

The article's GPUs are not the kit's device, and the kit's profiles train fewer rows than the article, so what
transfers is the comparison between frameworks: each framework's time divided by one base framework's time on the
same hardware (the base: the fastest framework the campaign measured that the article also timed), and the order
of the frameworks (Kendall's tau between the kit's and a GPU's times). The measured side reads only the run table:
each benchmark's `measure` column of ok runs of its workload, averaged over repeats within one context. The article's
performance switches (bench/switches.py) are sweeps of their own: each switch's runs grouped as one-axis sweeps.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from analysis import stats, sweeps
from analysis.reference import device_env, read_rows
from analysis.sweeps import Group, sweep_axes, sweep_groups
from bench import switches

REFERENCE_DIR = Path(__file__).parent / "reference"
DLF_CSV = REFERENCE_DIR / "ilkarman_dlf.csv"
BENCHMARKS_CSV = REFERENCE_DIR / "ilkarman_benchmarks.csv"
FRAMEWORKS_CSV = REFERENCE_DIR / "ilkarman_frameworks.csv"
# The spec's study key of ilkarman's workloads (studies/ilkarman/workloads/*.toml; the run table's `study`).
STUDY = "ilkarman"
# What else separates two groups of one benchmark's runs: they are never averaged together ("sweep": the point's
# display text; the grouping reads the sweep columns: analysis.sweeps.sweep_cells).
CONTEXT_KEYS = ("era", "device", "runner", "profile", "data_source", "sweep")
# A group's identity: the cell's less the framework, deliberately (a group compares the frameworks on one
# benchmark), with the device as its class ('gpu' whatever the GPU's name).
_DEVICE_CLASS = "_device_class"
GROUP_IDENTITY = ("workload", "era", _DEVICE_CLASS, "runner", "profile", "data_source")


@dataclass(frozen=True)
class Benchmark:
    """One of the article's benchmarks, the kit's workload for it and the run-table column that times it."""

    benchmark: str
    workload: str
    measure: str
    title: str
    note: str


@dataclass(frozen=True)
class Name:
    """One of the article's framework names and the kit's framework for it (None: not in the kit), with why."""

    name: str
    framework: str | None
    note: str


@dataclass
class Measured:
    """The ok runs of one benchmark in one context (CONTEXT_KEYS), by framework."""

    benchmark: Benchmark
    context: dict[str, Any]
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def seconds(self) -> dict[str, float]:
        """{framework: mean of the benchmark's measure over its runs}."""
        return {fw: statistics.fmean(float(r[self.benchmark.measure]) for r in rs) for fw, rs in self.runs.items()}


@cache
def benchmarks() -> tuple[Benchmark, ...]:
    """The article's benchmarks in ilkarman_benchmarks.csv's order."""
    return tuple(Benchmark(r["benchmark"], r["workload"], r["measure"], r["title"], r["note"])
                 for r in read_rows(BENCHMARKS_CSV))


@cache
def names() -> tuple[Name, ...]:
    """The article's framework names, each with the kit's framework (where two names map to one framework, the
    first is the one whose published time stands for it)."""
    return tuple(Name(r["name"], r["framework"] or None, r["note"]) for r in read_rows(FRAMEWORKS_CSV))


@cache
def published() -> dict[tuple[str, str, str], float]:
    """{(benchmark, article's framework name, GPU): seconds} from ilkarman_dlf.csv."""
    return {(r["benchmark"], r["framework"], r["gpu"]): float(r["value"]) for r in read_rows(DLF_CSV)}


def gpus() -> list[str]:
    """The article's GPUs, in the file's order."""
    return list(dict.fromkeys(gpu for (_, _, gpu) in published()))


def benchmark_of(workload: str) -> Benchmark | None:
    """The article's benchmark a kit workload runs (None: not one of ilkarman's)."""
    return next((b for b in benchmarks() if b.workload == workload), None)


def article_names(benchmark: str) -> list[str]:
    """The framework names the article timed on a benchmark, in ilkarman_dlf.csv's order."""
    return list(dict.fromkeys(name for (b, name, _) in published() if b == benchmark))


def published_by_framework(benchmark: str, gpu: str) -> dict[str, float]:
    """{kit framework: the article's seconds on this GPU}, through the first name that maps to it."""
    found: dict[str, float] = {}
    for n in names():
        value = published().get((benchmark, n.name, gpu))
        if n.framework and value is not None:
            found.setdefault(n.framework, value)
    return found


def measured(rows: Iterable[dict[str, Any]]) -> list[Measured]:
    """The ok runs of ilkarman's workloads with their benchmark's measure, grouped by benchmark and context, in
    (benchmark order, context) order; runs of a performance switch's sweep are left to switch_groups()."""
    timed = [row for row in rows if (bench := benchmark_of(row["workload"])) is not None and row["status"] == "ok"
             and sweeps.finite(row.get(bench.measure)) is not None and not sweep_axes(row) & set(switches.SWITCHES)]
    found = []
    for members in sweeps.cells(timed, None, GROUP_IDENTITY, {_DEVICE_CLASS: lambda r: device_env(r["device"])}):
        first = members[0]
        bench = benchmark_of(first["workload"])
        context = {k: (device_env(first["device"]) if k == "device" else first.get(k) or "") for k in CONTEXT_KEYS}
        group = Measured(bench, context)
        for row in members:
            group.runs.setdefault(row["framework"], []).append(row)
        found.append(((benchmarks().index(bench), tuple(str(v) for v in context.values())), group))
    return [group for _, group in sorted(found, key=lambda kv: kv[0])]


def base_framework(group: Measured) -> str | None:
    """The ratios' base: the fastest measured framework the article also timed on this benchmark (None: none)."""
    timed = {fw for gpu in gpus() for fw in published_by_framework(group.benchmark.benchmark, gpu)}
    candidates = {fw: s for fw, s in group.seconds.items() if fw in timed}
    return min(candidates, key=candidates.__getitem__) if candidates else None


def ratios(times: dict[str, float], base: str | None) -> dict[str, float]:
    """{framework: time / the base's time} (empty where the base has no time)."""
    if base is None or not times.get(base):
        return {}
    return {fw: t / times[base] for fw, t in times.items()}


def order_agreement(group: Measured, gpu: str) -> stats.StatResult:
    """Kendall's tau between the kit's and the article's times on one GPU, over the frameworks with both."""
    article = published_by_framework(group.benchmark.benchmark, gpu)
    common = sorted(set(article) & set(group.seconds))
    return stats.kendall([group.seconds[fw] for fw in common], [article[fw] for fw in common])


def ilkarman_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of runs of ilkarman's workloads: the spec's study is 'ilkarman', or a benchmark maps the workload."""
    return [r for r in rows if r.get("study") == STUDY or benchmark_of(r["workload"]) is not None]


def switch_groups(rows: Iterable[dict[str, Any]]) -> list[tuple[str, Group]]:
    """The ok runs of each performance switch's one-axis sweep, as (axis, group), switches in bench/switches.py's
    order; values in the switch's own order, its default (the first) first."""
    found = []
    for axis, switch in switches.SWITCHES.items():
        for key, by_value in sweep_groups(rows, axis, min_points=1):
            ordered = {v: by_value[v] for v in switch.values if v in by_value}
            found.append((axis, (key, ordered)))
    return found
