"""Which key columns the sections' tables show: the defining ones always, the others only where they vary."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.summary import SHOWN_KEYS, CellSummary
from analysis.transfer import GROUP_KEYS


def cell_columns(cells: Sequence[CellSummary]) -> list[str]:
    """Cell keys for a per-cell table: workload, framework and device always, the other keys when they vary."""
    return [k for k in SHOWN_KEYS if k in ("workload", "framework", "device")
            or len({c.key[k] for c in cells}) > 1]


def group_columns(cells: Sequence[CellSummary]) -> list[str]:
    """Group keys for a per-group table: workload and device always; runner, profile and data source only
    when they vary."""
    return [k for k in GROUP_KEYS if k in ("workload", "device") or len({c.key[k] for c in cells}) > 1]
