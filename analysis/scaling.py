"""Data-parallel scaling (bench/dataparallel.py): images per millisecond per rank count, the speedup over one
rank and the efficiency (speedup / ranks), from the run table's ranks and images_per_ms columns.

Only runs of a ranks sweep count (their sweep point names ranks: the run table's sweep_ranks): the one-rank runs
of such a sweep are each group's base. A group is the runs that differ only in repeat, seed and rank count
(analysis.sweeps.sweep_cells over ranks). The scaling section and claim Shams-3 read these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import mean
from typing import Any

from analysis import sweeps
from analysis.summary import CELL_IDENTITY

AXIS = "ranks"
# A group's key as shown: the cell's identity, with the sweep point less its ranks (display text; the groups are
# sweeps.cells', on the sweep columns).
GROUP_KEYS = (*CELL_IDENTITY, "other_sweep")


@dataclass(frozen=True)
class ScalePoint:
    """One group's runs at one rank count: their mean images per ms, and against the group's 1-rank mean the
    speedup and efficiency (None without 1-rank runs)."""

    key: dict[str, Any]
    ranks: int
    runs: tuple[dict[str, Any], ...]
    images_per_ms: float
    speedup: float | None
    efficiency: float | None

    @property
    def label(self) -> str:
        """'workload framework device' (with the sweep's other axes where it has any), as evidence names it."""
        rest = f" {self.key['other_sweep']}" if self.key["other_sweep"] else ""
        return f"{self.key['workload']} {self.key['framework']} {self.key['device']}{rest}"


def swept(row: dict[str, Any]) -> bool:
    """Whether a run-table row is a run of a ranks sweep."""
    return sweeps.swept(row, AXIS)


def scale_points(rows: Iterable[dict[str, Any]]) -> list[ScalePoint]:
    """Every group's points in key and rank order, from the ok runs of ranks sweeps with a throughput."""
    timed = [row for row in rows if row.get("status") == "ok" and swept(row) and row.get("images_per_ms") is not None
             and row.get("ranks")]
    groups: list[tuple[tuple, dict[int, list[dict[str, Any]]]]] = []
    for members in sweeps.cells(timed, AXIS):
        key = tuple(str(members[0].get(k)) for k in GROUP_KEYS[:-1]) + (sweeps.point_label(members[0], AXIS),)
        by_ranks: dict[int, list[dict[str, Any]]] = {}
        for row in members:
            by_ranks.setdefault(int(row["ranks"]), []).append(row)
        groups.append((key, by_ranks))
    points = []
    for key, by_ranks in sorted(groups, key=lambda group: group[0]):
        base = mean(float(r["images_per_ms"]) for r in by_ranks[1]) if 1 in by_ranks else None
        for ranks, runs in sorted(by_ranks.items()):
            rate = mean(float(r["images_per_ms"]) for r in runs)
            speedup = rate / base if base else None
            points.append(ScalePoint(dict(zip(GROUP_KEYS, key, strict=True)), ranks, tuple(runs), rate, speedup,
                                     None if speedup is None else speedup / ranks))
    return points
