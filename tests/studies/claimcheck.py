"""Running one claim check on a small hand-made results table (rows from tests/resultrows.py)."""

from __future__ import annotations

from typing import Any

from analysis.claims import INSUFFICIENT, ClaimResult, ResultsTable
from tests.resultrows import row


def check(fn: Any, rows: list[dict[str, Any]], epochs: dict[str, list[dict]] | None = None) -> ClaimResult:
    """The check's result on a table of these rows and per-run epoch records."""
    return fn(ResultsTable(rows, epochs or {}))


def epochs_of(times: list[float], accs: list[float] | None = None) -> list[dict[str, Any]]:
    """metrics.jsonl records: epoch_time_s per epoch, test_accuracy as a fraction."""
    accs = accs or [0.5] * len(times)
    return [{"epoch": i, "epoch_time_s": t, "test_accuracy": a} for i, (t, a) in enumerate(zip(times, accs), 1)]


def assert_not_in_campaign(fn: Any) -> None:
    """The check needs an experiment no campaign holds: insufficient data, saying so, on any table."""
    res = check(fn, [row("tensorflow", "cnn-mnist")])
    assert (res.verdict, res.evidence[:21]) == (INSUFFICIENT, "not in this campaign:")
