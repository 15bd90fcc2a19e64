"""Sweep series: the runs of one workload and framework on one device that differ only in the swept axis (the
thread count), grouped by point, with each point's time. The one grouping of runs into series behind Shi et
al.'s claims (studies/shi/claims.py) and the report's Shi section (studies/shi/section.py, through
studies.shi.tables.measured_series); and the groups of a one-axis sweep of any axis (sweep_groups).

A series holds one kind of time: seconds per measured mini-batch (iteration_time_mean_s, the iterations
protocol: bench/iterations.py) or, where asked for, the training time of epoch-protocol runs; never both.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from analysis.reference import device_env

# The run table's seconds per measured mini-batch, and the training time of a run without it.
SECONDS_PER_MINIBATCH = "iteration_time_mean_s"
TRAINING_TIME = "training_time_s"
# The swept axis: a run's thread count (the run table's `threads`; its sweep text names it "threads=<n>").
AXIS = "threads"
# What else separates two series of one workload, framework and device: they are never averaged together.
# The sweep's other axes (its text without the swept one) are the context's "sweep".
CONTEXT_KEYS = ("era", "runner", "profile", "data_source", "batch_size")


def finite(value: Any) -> float | None:
    """A run-table value as a float; None where it is missing or NaN (not measured)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def minibatch_seconds(row: dict[str, Any]) -> float | None:
    """A run's seconds per measured mini-batch (None: not an iterations-protocol run, or not measured)."""
    return finite(row.get(SECONDS_PER_MINIBATCH))


def other_axes(sweep: str | None) -> str:
    """A run's sweep text ('batch_size=8, threads=2') without the swept axis ('batch_size=8')."""
    return ", ".join(p for p in str(sweep or "").split(", ") if p and not p.startswith(f"{AXIS}="))


def swept(row: dict[str, Any]) -> bool:
    """Whether a run is a point of a sweep over the axis (its sweep text names it)."""
    return f"{AXIS}=" in str(row.get("sweep") or "")


@dataclass
class Series:
    """The ok runs of one workload and framework on one device ('cpu' or 'gpu': analysis.reference.device_env)
    in one context (CONTEXT_KEYS and the sweep's other axes), by thread count (None: not recorded), all timed
    alike: per_minibatch, seconds per measured mini-batch, else the training time."""

    workload: str
    framework: str
    device: str
    context: dict[str, Any]
    per_minibatch: bool
    runs: dict[int | None, list[dict[str, Any]]] = field(default_factory=dict)

    def time(self, row: dict[str, Any]) -> float:
        """A run's time as this series counts it."""
        return float(row[SECONDS_PER_MINIBATCH if self.per_minibatch else TRAINING_TIME])

    @property
    def seconds(self) -> dict[int | None, float]:
        """{thread count: mean time over the repeats}, counts ascending (None last)."""
        return {n: statistics.fmean(map(self.time, rs)) for n, rs in sorted(
            self.runs.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))}

    @property
    def mean(self) -> float:
        """The mean time over every run of the series, whatever its thread count (a GPU figure)."""
        return statistics.fmean(map(self.time, self.rows))

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every run of the series, point by point."""
        return [r for rs in self.runs.values() for r in rs]


def series(rows: Iterable[dict[str, Any]], training_time: bool = False) -> list[Series]:
    """The ok runs among rows grouped into series, in (workload, framework, device, context, kind) order; runs in
    their rows' order within a point. Runs without seconds per mini-batch are left out, unless `training_time`:
    then those with a training time form series of their own (per_minibatch False)."""
    found: dict[tuple, Series] = {}
    for row in rows:
        if row["status"] != "ok":
            continue
        per_minibatch = minibatch_seconds(row) is not None
        if not per_minibatch and not (training_time and finite(row.get(TRAINING_TIME)) is not None):
            continue
        device = device_env(row["device"])
        context = {**{k: row.get(k) for k in CONTEXT_KEYS}, "sweep": other_axes(row.get("sweep"))}
        key = (row["workload"], row["framework"], device, tuple(str(v) for v in context.values()), per_minibatch)
        s = found.setdefault(key, Series(row["workload"], row["framework"], device, context, per_minibatch))
        threads = finite(row.get(AXIS))
        s.runs.setdefault(None if threads is None else int(threads), []).append(row)
    return [found[k] for k in sorted(found)]


# --- One-axis sweeps of any axis (a study's sweep experiments: Wu et al.'s, ilkarman's switches) ---------------

# What else separates two groups of one one-axis sweep: their runs are never averaged together.
SWEEP_FIXED = ("era", "workload", "framework", "device", "runner", "profile", "data_source", "epochs_planned")


def sweep_axes(row: dict[str, Any]) -> set[str]:
    """The axes a run's sweep point names ('batch_size=50, threads=2' -> {'batch_size', 'threads'})."""
    return {part.split("=", 1)[0] for part in str(row.get("sweep") or "").split(", ") if "=" in part}


Group = tuple[dict[str, Any], dict[Any, list[dict[str, Any]]]]


def sweep_groups(rows: Iterable[dict[str, Any]], axis: str, min_points: int = 2,
                 value: Callable[[dict[str, Any]], Any] | None = None) -> list[Group]:
    """The successful runs of a one-axis sweep (their sweep point names the axis and no other), grouped by
    SWEEP_FIXED, then by the axis's value (the run-table column of that name, or `value(row)`); only groups
    with >= min_points values; groups in key order, values ascending."""
    read = value or (lambda r: r.get(axis))
    found: dict[tuple, tuple[dict[str, Any], dict[Any, list[dict[str, Any]]]]] = {}
    for row in rows:
        point = read(row)
        if row["status"] != "ok" or sweep_axes(row) != {axis} or point is None:
            continue
        key = {k: row.get(k) for k in SWEEP_FIXED}
        found.setdefault(tuple(str(v) for v in key.values()), (key, {}))[1].setdefault(point, []).append(row)
    return [(key, dict(sorted(points.items()))) for _, (key, points) in sorted(found.items())
            if len(points) >= min_points]


def group_label(key: dict[str, Any]) -> str:
    """'tensorflow wu-tf-mnist/cpu' (and the era where it is not the current one)."""
    era = "" if key.get("era") in (None, "current") else f"/{key['era']}"
    return f"{key['framework']} {key['workload']}/{key['device']}{era}"
