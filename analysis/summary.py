"""Per-cell summaries of the run table, computed with pandas, and the tables written beside the report.

A cell is the runs that differ only in repeat and seed (CELL_KEYS: a groupby on those columns, a sweep's point by its
own columns, never by its display text). ``summary_table`` is one row per cell (tables/summary.csv): counts of ok
and failed runs, failure causes, and each SUMMARY_METRICS column's n, mean, sample standard deviation and 95 %
Student-t interval over the cell's successful runs.
``summarize`` hands the same figures to the report's sections as CellSummary objects.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.runs import RUN_COLUMNS, SWEEP_COLUMNS, Campaign, records, run_frame
from analysis.stats import DEFAULT_CONFIDENCE, INSUFFICIENT_DATA, Estimate
from bench import atomic

# A summary cell: runs that differ only in repeat/seed. Profile and data source are part of the
# key because a mean over a quick and a paper run (or real and synthetic data) means nothing; the
# era too: paper-era and current-era runs of one workload are two experiments, never repeats of one;
# and a study sweep's point, by its columns (one per axis, sweep_<axis>: analysis.runs.SWEEP_COLUMNS).
CELL_IDENTITY: tuple[str, ...] = ("workload", "framework", "era", "device", "runner", "profile", "data_source")
CELL_KEYS: tuple[str, ...] = (*CELL_IDENTITY, *SWEEP_COLUMNS.values())
# How a cell is shown (CellSummary.key, the tables' key columns): its identity and its sweep point as text (the run
# table's `sweep`, 'batch_size=16, threads=4', '' outside a sweep). Display only: one text per point, nothing
# groups or matches on it; cells are listed in the order of these keys.
SHOWN_KEYS: tuple[str, ...] = (*CELL_IDENTITY, "sweep")

# Run-table columns summarized over the successful repeats of a cell.
SUMMARY_METRICS: tuple[str, ...] = (
    "training_time_s", "test_accuracy",
    "cpu_util_mean_pct", "mem_mean_mb", "mem_peak_mb", "gpu_util_mean_pct",
    # Iteration-protocol runs (bench/iterations.py): seconds per measured mini-batch and its standard deviation
    # within the run; empty for epoch-protocol runs.
    "iteration_time_mean_s", "iteration_time_std_s",
)

# Each metric's statistics, as suffixes of the summary table's columns.
_STATISTICS: tuple[str, ...] = ("n", "mean", "std", "ci95_low", "ci95_high")

SUMMARY_COLUMNS: tuple[str, ...] = (
    *SHOWN_KEYS, *SWEEP_COLUMNS.values(), "n_ok", "n_failed", "failure_causes",
    *(f"{m}_{s}" for m in SUMMARY_METRICS for s in _STATISTICS),
    "notes", "run_ids",
)

# How far above its majority accuracy (always guessing the test rows' most frequent label) a run must end to
# count as having learnt, in percentage points: a run that learnt nothing ends at the majority accuracy
# itself, give or take a test row or two.
LEARNT_MARGIN_PP = 5.0

# The tables' folder under the report's, and their floats in CSV: 10 significant digits. CSV always;
# Parquet beside it where pyarrow is installed (it keeps the dtypes).
TABLE_DIR = "tables"
FLOAT_FORMAT = "%.10g"


# --- Summaries -----------------------------------------------------------------------------

def _text(column: pd.Series) -> pd.Series:
    """A column's values as text ("None" where a value was not recorded)."""
    return column.astype(object).where(column.notna(), None).map(str)


def cell_keys(frame: pd.DataFrame, keys: tuple[str, ...] = CELL_KEYS) -> list[pd.Series]:
    """Each row's cell key columns (CELL_KEYS) as text ("None" where a key was not recorded; a column the frame
    lacks is not recorded)."""
    return [_text(frame[k]) if k in frame.columns else pd.Series("None", index=frame.index) for k in keys]


def summary_table(table: pd.DataFrame | Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per cell (SUMMARY_COLUMNS), cells in the order of their shown keys (SHOWN_KEYS).

    Only successful runs count in a metric's statistics; a missing or non-finite value is not measured.
    With n < 2 a metric has no std and no interval (NaN): the notes column says INSUFFICIENT_DATA.
    """
    frame = table if isinstance(table, pd.DataFrame) else run_frame(table)
    missing = [k for k in (*SHOWN_KEYS, *SWEEP_COLUMNS.values()) if k not in frame.columns]
    if missing:  # hand-made rows of no sweep: '' and empty, as the run table has them
        frame = frame.assign(**{k: "" if k == "sweep" else None for k in missing})
    keys = cell_keys(frame)
    ok = frame["status"] == "ok"
    out = pd.DataFrame({"n_ok": ok.groupby(keys).sum(), "n_failed": (~ok).groupby(keys).sum()})
    failed = frame[~ok].groupby([k[~ok] for k in keys])["failure_cause"].agg(_cause_counts)
    out["failure_causes"] = failed.reindex(out.index).fillna("")
    values = frame[list(SUMMARY_METRICS)].astype("float64").replace([np.inf, -np.inf], np.nan)
    stats = values[ok].groupby([k[ok] for k in keys]).agg(["count", "mean", "std"])
    for metric in SUMMARY_METRICS:
        n = stats[(metric, "count")].reindex(out.index, fill_value=0).astype("int64")
        mean = stats[(metric, "mean")].reindex(out.index)
        std = stats[(metric, "std")].reindex(out.index).where(n >= 2)
        half = t_quantile(n) * std / np.sqrt(n)
        out[f"{metric}_n"], out[f"{metric}_mean"], out[f"{metric}_std"] = n, mean, std
        out[f"{metric}_ci95_low"], out[f"{metric}_ci95_high"] = mean - half, mean + half
    thin = zip(*(np.where(out[f"{m}_n"] == 1, m, "") for m in SUMMARY_METRICS), strict=True)
    out["notes"] = [f"{INSUFFICIENT_DATA} (n<2): {', '.join(filter(None, t))}" if any(t) else "" for t in thin]
    out["run_ids"] = frame["run_id"].groupby(keys).agg(";".join)
    # A cell's point as recorded (its sweep columns' values, one per cell) and as shown.
    point = frame[[*SWEEP_COLUMNS.values(), "sweep"]].groupby(keys).first().reindex(out.index)
    out = pd.concat([out.index.to_frame(index=False, name=list(CELL_KEYS))[list(CELL_IDENTITY)],
                     point.reset_index(drop=True), out.reset_index(drop=True)], axis=1)
    shown = pd.DataFrame(dict(zip(SHOWN_KEYS, cell_keys(out, SHOWN_KEYS), strict=True)))
    return out.loc[shown.sort_values(list(SHOWN_KEYS), kind="stable").index, list(SUMMARY_COLUMNS)].reset_index(
        drop=True)


def learnt(accuracy, majority, margin_pp: float = LEARNT_MARGIN_PP):
    """Whether an accuracy (percent; a number or a Series) is more than `margin_pp` above the majority
    accuracy, the accuracy of always guessing the most frequent label: the one test of having learnt."""
    return accuracy > majority + margin_pp


def not_learnt(frame: pd.DataFrame, margin_pp: float = LEARNT_MARGIN_PP) -> pd.DataFrame:
    """The successful runs whose test accuracy is not `margin_pp` above their majority accuracy: runs that
    learnt nothing. Runs without a recorded majority accuracy (before the kit recorded it) are left out."""
    known = (frame["status"] == "ok") & frame["majority_accuracy"].notna()
    return frame[known & ~learnt(frame["test_accuracy"], frame["majority_accuracy"], margin_pp)]


def _cause_counts(causes: pd.Series) -> str:
    """'cause:count' pairs sorted by cause, e.g. 'nan:2; oom:1'."""
    counts = causes.astype(str).value_counts().sort_index()
    return "; ".join(f"{cause}:{n}" for cause, n in counts.items())


def t_quantile(n: pd.Series, confidence: float = DEFAULT_CONFIDENCE) -> pd.Series:
    """The two-sided Student-t quantile for n values (n - 1 degrees of freedom); NaN where n < 2."""
    # Imported on first use: scipy.stats takes ~1 s to load, which the CLI's quick error paths skip.
    from scipy import stats as scipy_stats

    dof = (n - 1).where(n >= 2)
    return pd.Series(scipy_stats.t.ppf((1 + confidence) / 2, dof), index=n.index)


@dataclass
class CellSummary:
    """The runs of one cell (see CELL_KEYS) and their estimates over successful repeats: one row of
    summary_table with the cell's run-table rows. `key` is how the cell is shown (SHOWN_KEYS), `identity` what
    makes it one cell (CELL_KEYS as text): what cells are grouped and matched on."""

    key: dict[str, str]
    rows: list[dict[str, Any]]
    estimates: dict[str, Estimate]
    causes: str = ""  # 'cause:count' pairs of the failed runs (summary_table's failure_causes)
    identity: dict[str, str] = field(default_factory=dict)

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the cell's successful runs."""
        return [r for r in self.rows if r["status"] == "ok"]

    @property
    def failed_rows(self) -> list[dict[str, Any]]:
        """Rows of the cell's failed runs."""
        return [r for r in self.rows if r["status"] != "ok"]

    @property
    def majority_accuracy(self) -> float | None:
        """The accuracy (%) of always guessing the most frequent label of the cell's test rows (None where no
        successful run recorded it)."""
        known = [float(r["majority_accuracy"]) for r in self.ok_rows if pd.notna(r.get("majority_accuracy"))]
        return max(known) if known else None

    def failure_causes(self) -> str:
        """'cause:count' pairs, e.g. 'nan:2; oom:1' (empty if none failed)."""
        return self.causes


def _estimate(summary: dict[str, Any], metric: str) -> Estimate:
    """A metric's Estimate from a summary_table row (None where the table has no value)."""
    def value(stat: str) -> float | None:
        v = summary[f"{metric}_{stat}"]
        return None if v is None else float(v)

    return Estimate(int(summary[f"{metric}_n"]), value("mean"), value("std"), value("ci95_low"),
                    value("ci95_high"))


def summarize(table: pd.DataFrame | Iterable[dict[str, Any]],
              summary: pd.DataFrame | None = None) -> list[CellSummary]:
    """The cells of a run table (a DataFrame, or run-table rows as dicts) with their estimates, in
    summary_table's order (``summary``: that table, when already computed); each cell's rows in the
    table's order."""
    frame = table if isinstance(table, pd.DataFrame) else run_frame(table)
    summary = summary_table(frame) if summary is None else summary
    members: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for key, row in zip(zip(*cell_keys(frame)), records(frame), strict=True):
        members.setdefault(key, []).append(row)
    out = []
    for identity, cell in zip(zip(*cell_keys(summary)), records(summary), strict=True):
        out.append(CellSummary({k: cell[k] for k in SHOWN_KEYS}, members[identity],
                               {m: _estimate(cell, m) for m in SUMMARY_METRICS}, cell["failure_causes"],
                               dict(zip(CELL_KEYS, identity, strict=True))))
    return out


# --- Writing -------------------------------------------------------------------------------

def parquet_available() -> bool:
    """Whether pandas can write Parquet here (pyarrow installed)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def write_table(frame: pd.DataFrame, path: Path) -> list[Path]:
    """frame as CSV at path (missing values empty, floats to 10 significant digits) and, where pyarrow is
    installed, as Parquet beside it; returns the paths written."""
    atomic.write_text(path, frame.to_csv(index=False, na_rep="", float_format=FLOAT_FORMAT, lineterminator="\n"))
    written = [path]
    if parquet_available():
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        atomic.write_bytes(path.with_suffix(".parquet"), buf.getvalue())
        written.append(path.with_suffix(".parquet"))
    return written


def write_tables(campaign: Campaign, summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """tables/runs.csv and tables/summary.csv under out_dir (and .parquet beside each where pyarrow is
    installed); returns the paths written."""
    tables = Path(out_dir) / TABLE_DIR
    return [*write_table(campaign.table[list(RUN_COLUMNS)], tables / "runs.csv"),
            *write_table(summary, tables / "summary.csv")]
