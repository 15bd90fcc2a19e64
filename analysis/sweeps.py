"""Sweep series: the runs of one workload and framework on one device that differ only in the swept axis (the
thread count), grouped by point, with each point's time. The one grouping of runs into series behind Shi et
al.'s claims (studies/shi/claims.py) and the report's Shi section (studies/shi/section.py, through
studies.shi.tables.measured_series); and the groups of a one-axis sweep of any axis (sweep_groups).

Which runs form one cell of a sweep is decided in one place, sweep_cells(): a pandas groupby of the run table on
the cell's identity columns and every sweep axis's column but the swept one (analysis.runs.SWEEP_COLUMNS). A run's
sweep point is read from those columns, never parsed back from the `sweep` display text.

A series holds one kind of time: seconds per measured mini-batch (iteration_time_mean_s, the iterations
protocol: bench/iterations.py) or, where asked for, the training time of epoch-protocol runs; never both.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pandas.core.groupby import DataFrameGroupBy

from analysis.reference import device_env
from analysis.runs import SWEEP_COLUMNS

# The run table's seconds per measured mini-batch, and the training time of a run without it.
SECONDS_PER_MINIBATCH = "iteration_time_mean_s"
TRAINING_TIME = "training_time_s"
# The swept axis: a run's thread count (the run table's `threads`; its sweep column sweep_threads).
AXIS = "threads"
# What, beside the sweep's other axes, makes the runs of one sweep one cell: never averaged across. The order is
# the groups' sort order.
CELL_IDENTITY = ("era", "workload", "framework", "device", "runner", "profile", "data_source", "epochs_planned")
# What else separates two series of one workload, framework and device: they are never averaged together.
# The sweep's other axes are the series' `others` (from their columns) and the context's "sweep" (display text).
CONTEXT_KEYS = ("era", "runner", "profile", "data_source", "batch_size")
# A series' identity: the cell's, with the device as its class (a study's 'cpu' or 'gpu', so every GPU name is one
# series: analysis.reference.device_env) and, deliberately, the batch size: a Shi experiment gives each device
# its own (shi-gpu's LSTM at 128 against the CPU's 256), and the timing kind (per mini-batch or training time).
_DEVICE_CLASS, _PER_MINIBATCH = "_device_class", "_per_minibatch"
SERIES_IDENTITY = tuple(_DEVICE_CLASS if k == "device" else k for k in CELL_IDENTITY) + ("batch_size", _PER_MINIBATCH)


def finite(value: Any) -> float | None:
    """A run-table value as a float; None where it is missing or NaN (not measured)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def minibatch_seconds(row: dict[str, Any]) -> float | None:
    """A run's seconds per measured mini-batch (None: not an iterations-protocol run, or not measured)."""
    return finite(row.get(SECONDS_PER_MINIBATCH))


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def point(row: dict[str, Any]) -> dict[str, Any]:
    """A run's sweep point from its sweep columns: {axis: value}, axes in name order ({} outside a sweep)."""
    return {axis: row[column] for axis, column in sorted(SWEEP_COLUMNS.items()) if _given(row.get(column))}


def sweep_axes(row: dict[str, Any]) -> set[str]:
    """The axes a run's sweep point names (sweep_batch_size 50, sweep_threads 2 -> {'batch_size', 'threads'})."""
    return set(point(row))


def swept(row: dict[str, Any], axis: str = AXIS) -> bool:
    """Whether a run is a point of a sweep over the axis (its sweep column holds a value)."""
    return axis in sweep_axes(row)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def point_label(row: dict[str, Any], without: str | None = None) -> str:
    """A run's sweep point as the report shows it ('batch_size=8, threads=2'), less the axis `without`: display
    only, nothing reads it back."""
    return ", ".join(f"{axis}={_text(v)}" for axis, v in point(row).items() if axis != without)


def other_axes(row: dict[str, Any]) -> str:
    """A run's sweep point without the swept axis, as text ('batch_size=8')."""
    return point_label(row, without=AXIS)


def sweep_cells(frame: pd.DataFrame, axis: str | None, identity: Sequence[str] = CELL_IDENTITY) -> DataFrameGroupBy:
    """The one grouping of runs into the cells of a sweep over `axis`: the run table grouped on `identity` and the
    sweep column of every other axis (None: of every axis), missing values a key of their own. A column the frame
    lacks is taken as empty."""
    keys = [*identity, *(c for a, c in SWEEP_COLUMNS.items() if a != axis)]
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        frame = frame.assign(**dict.fromkeys(missing))
    return frame.groupby(keys, dropna=False, sort=False)


def cells(rows: Iterable[dict[str, Any]], axis: str | None, identity: Sequence[str] = CELL_IDENTITY,
          derived: dict[str, Callable[[dict[str, Any]], Any]] | None = None) -> list[list[dict[str, Any]]]:
    """The rows grouped by sweep_cells, each cell's rows in the given order, cells in order of their first row.
    `derived`: {column: value(row)} computed for the grouping only (the rows are not changed)."""
    rows = list(rows)
    if not rows:
        return []
    frame = pd.DataFrame(rows).assign(**{c: [f(r) for r in rows] for c, f in (derived or {}).items()})
    found = [sorted(part.index) for _, part in sweep_cells(frame, axis, identity)]
    return [[rows[i] for i in members] for members in sorted(found)]


@dataclass
class Series:
    """The ok runs of one workload and framework on one device ('cpu' or 'gpu': analysis.reference.device_env)
    in one context (CONTEXT_KEYS and the sweep's other axes: `others`, {axis: value} from the sweep columns; the
    context's "sweep" shows them), by thread count (None: not recorded), all timed alike: per_minibatch, seconds
    per measured mini-batch, else the training time."""

    workload: str
    framework: str
    device: str
    context: dict[str, Any]
    per_minibatch: bool
    runs: dict[int | None, list[dict[str, Any]]] = field(default_factory=dict)
    others: dict[str, Any] = field(default_factory=dict)

    def context_key(self) -> tuple:
        """The series' context as a key to group or match series on: CONTEXT_KEYS' values as text and the other
        axes' (axis, value) pairs, never the display text."""
        return (*(str(self.context[k]) for k in CONTEXT_KEYS), tuple(self.others.items()))

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
    """The ok runs among rows grouped into series (sweep_cells over the thread count, SERIES_IDENTITY), in
    (workload, framework, device, context, kind) order; runs in their rows' order within a point. Runs without
    seconds per mini-batch are left out, unless `training_time`: then those with a training time form series of
    their own (per_minibatch False)."""
    timed = [r for r in rows if r["status"] == "ok" and (minibatch_seconds(r) is not None or (
        training_time and finite(r.get(TRAINING_TIME)) is not None))]
    found = []
    for members in cells(timed, AXIS, SERIES_IDENTITY, {_DEVICE_CLASS: lambda r: device_env(r["device"]),
                                                         _PER_MINIBATCH: lambda r: minibatch_seconds(r) is not None}):
        first = members[0]
        context = {**{k: first.get(k) for k in CONTEXT_KEYS}, "sweep": other_axes(first)}
        s = Series(first["workload"], first["framework"], device_env(first["device"]), context,
                   minibatch_seconds(first) is not None,
                   others={a: v for a, v in point(first).items() if a != AXIS})
        for row in members:
            threads = finite(row.get(AXIS))
            s.runs.setdefault(None if threads is None else int(threads), []).append(row)
        found.append(s)
    return sorted(found, key=lambda s: (s.workload, s.framework, s.device, tuple(str(v) for v in s.context.values()),
                                        s.per_minibatch))


# --- One-axis sweeps of any axis (a study's sweep experiments: Wu et al.'s, ilkarman's switches) ---------------

Group = tuple[dict[str, Any], dict[Any, list[dict[str, Any]]]]


def sweep_groups(rows: Iterable[dict[str, Any]], axis: str, min_points: int = 2,
                 value: Callable[[dict[str, Any]], Any] | None = None) -> list[Group]:
    """The successful runs of a one-axis sweep (their sweep point names the axis and no other), grouped into
    cells (sweep_cells: CELL_IDENTITY), then by the axis's value (the run-table column of that name, or
    `value(row)`); only groups with >= min_points values; groups in key order, values ascending."""
    read = value or (lambda r: r.get(axis))
    one_axis = [r for r in rows if r["status"] == "ok" and sweep_axes(r) == {axis} and read(r) is not None]
    found = []
    for members in cells(one_axis, axis):
        points: dict[Any, list[dict[str, Any]]] = {}
        for row in members:
            points.setdefault(read(row), []).append(row)
        if len(points) >= min_points:
            found.append(({k: members[0].get(k) for k in CELL_IDENTITY}, dict(sorted(points.items()))))
    return sorted(found, key=lambda group: tuple(str(v) for v in group[0].values()))


def group_label(key: dict[str, Any]) -> str:
    """'tensorflow wu-tf-mnist/cpu' (and the era where it is not the current one)."""
    era = "" if key.get("era") in (None, "current") else f"/{key['era']}"
    return f"{key['framework']} {key['workload']}/{key['device']}{era}"
