"""A campaign's runs as one tidy table, and per-cell summaries over repeats.

Raw files are the source of truth: the CPU and memory means are recomputed from monitor.csv over
the training window, and run.json's monitor summary is only a cache that is checked against them.
Every artifact is read through bench.schema's readers.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.stats import INSUFFICIENT_DATA, Estimate, describe
from bench import atomic
from bench.schema import (
    RUN_FILE,
    SchemaError,
    iter_run_dirs,
    monitor_window,
    read_metrics,
    read_monitor,
    read_run,
    summarize_monitor,
)

# One row per run, in this column order (tables/runs.csv).
RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "framework", "era", "workload", "dataset", "data_source", "device", "profile", "repeat", "seed",
    "status", "failure_cause", "failure_message",
    "training_time_s", "eval_time_s", "test_accuracy", "epochs", "epochs_planned",
    "cpu_util_mean_pct", "mem_mean_mb", "mem_peak_mb", "gpu_util_mean_pct",
    "monitor_source", "monitor_samples",
    # Contention over the training window (bench.schema.other_load): other processes' CPU, and on a
    # GPU the most other processes seen on it; empty for runs whose monitor did not record them.
    "other_cpu_s", "other_cpu_share_pct", "other_cpu_mean_pct", "gpu_other_procs_max",
    "batch_size", "learning_rate",
    "trainable_params", "runner", "image_digest", "env_id", "framework_version", "python", "run_dir",
)

# The software eras a run belongs to (run.json config.era; bench.frameworks.ERAS): the study's exact
# versions, and today's releases.
PAPER_ERA, CURRENT_ERA = "paper", "current"

# A summary cell: runs that differ only in repeat/seed. Profile and data source are part of the
# key because a mean over a quick and a paper run (or real and synthetic data) means nothing; the
# era too: paper-era and current-era runs of one workload are two experiments, never repeats of one.
CELL_KEYS: tuple[str, ...] = ("workload", "framework", "era", "device", "runner", "profile", "data_source")

# Run-table columns summarized over the successful repeats of a cell.
SUMMARY_METRICS: tuple[str, ...] = (
    "training_time_s", "test_accuracy",
    "cpu_util_mean_pct", "mem_mean_mb", "mem_peak_mb", "gpu_util_mean_pct",
)

# The run-table columns taken from the monitor summary (bench.schema.summarize_monitor names).
_MONITOR_SUMMARY_KEYS = ("samples", "cpu_util_mean_pct", "mem_mean_mb", "gpu_util_mean_pct", "mem_peak_mb",
                         "other_cpu_s", "other_cpu_share_pct", "other_cpu_mean_pct", "gpu_other_procs_max")

# run.json's cached monitor summary disagrees "noticeably" when both limits are exceeded; the
# absolute floor keeps near-zero values (idle GPU, 0.3 % vs 0.4 %) from raising noise.
DISAGREE_RELATIVE = 0.05
DISAGREE_ABSOLUTE = 1.0


@dataclass
class Campaign:
    """Everything the analysis reads from one campaign folder, or from several analysed together."""

    root: Path
    rows: list[dict[str, Any]]
    runs: dict[str, dict]  # run_id -> run.json, for the spec and environment tables
    problems: list[str] = field(default_factory=list)  # run dirs or files that could not be read
    notes: list[str] = field(default_factory=list)  # raw-vs-cache disagreements and fallbacks
    # Every folder read, in the order given (just [root] for one campaign).
    roots: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.roots:
            self.roots = [self.root]

    @property
    def name(self) -> str:
        """The campaign's name: its folder's name, or the folders' names joined by '+'."""
        return "+".join(r.name for r in self.roots)

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the runs that finished."""
        return [r for r in self.rows if r["status"] == "ok"]


@dataclass
class CellSummary:
    """The runs of one cell (see CELL_KEYS) and their estimates over successful repeats."""

    key: dict[str, str]
    rows: list[dict[str, Any]]
    estimates: dict[str, Estimate]

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the cell's successful runs."""
        return [r for r in self.rows if r["status"] == "ok"]

    @property
    def failed_rows(self) -> list[dict[str, Any]]:
        """Rows of the cell's failed runs."""
        return [r for r in self.rows if r["status"] != "ok"]

    def failure_causes(self) -> str:
        """'cause:count' pairs, e.g. 'oom:1; nan:2' (empty if none failed)."""
        counts = Counter(r["failure_cause"] for r in self.failed_rows)
        return "; ".join(f"{cause}:{n}" for cause, n in sorted(counts.items()))

    def as_csv_row(self) -> dict[str, Any]:
        """The cell as one row of tables/summary.csv."""
        row: dict[str, Any] = dict(self.key)
        row["n_ok"] = len(self.ok_rows)
        row["n_failed"] = len(self.failed_rows)
        row["failure_causes"] = self.failure_causes()
        for metric in SUMMARY_METRICS:
            est = self.estimates[metric]
            row[f"{metric}_n"] = est.n
            row[f"{metric}_mean"] = est.mean
            row[f"{metric}_std"] = est.std
            row[f"{metric}_ci95_low"] = est.ci_low
            row[f"{metric}_ci95_high"] = est.ci_high
        thin = [m for m in SUMMARY_METRICS if 0 < self.estimates[m].n < 2]
        row["notes"] = f"{INSUFFICIENT_DATA} (n<2): {', '.join(thin)}" if thin else ""
        row["run_ids"] = ";".join(r["run_id"] for r in self.rows)
        return row


SUMMARY_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS, "n_ok", "n_failed", "failure_causes",
    *(f"{m}_{s}" for m in SUMMARY_METRICS for s in ("n", "mean", "std", "ci95_low", "ci95_high")),
    "notes", "run_ids",
)


# --- Reading -------------------------------------------------------------------------------

def load_campaign(root: Path | str) -> Campaign:
    """Read every run of a campaign folder into a Campaign.

    A run dir whose run.json fails the schema is listed in ``problems`` and left out; a run whose
    monitor.csv cannot be read keeps its row, with run.json's cached summary and a problem noted.
    ``.partial`` dirs (runs in progress or interrupted) are ignored.
    """
    root = Path(root)
    campaign = Campaign(root=root, rows=[], runs={})
    run_dirs = list(iter_run_dirs(root))
    listed = {d.name for d in run_dirs}
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.is_dir() and d.name not in listed and not d.name.endswith(".partial") \
                    and not d.name.startswith("."):
                campaign.problems.append(f"{d}: no {RUN_FILE} (an interrupted run?); left out")
    for run_dir in run_dirs:
        try:
            run = read_run(run_dir)
        except (SchemaError, OSError, UnicodeDecodeError) as exc:
            # SchemaError messages already name the file; others may not.
            where = "" if str(run_dir) in str(exc) else f"{run_dir}: "
            campaign.problems.append(f"{where}{exc}; left out")
            continue
        if run["run_id"] in campaign.runs:
            # A copied run dir would count twice in every mean: keep the first, report the copy.
            campaign.problems.append(f"{run_dir}: run_id {run['run_id']} was already read from another "
                                     "dir; left out")
            continue
        row = run_row(run_dir, run, campaign)
        campaign.rows.append(row)
        campaign.runs[row["run_id"]] = run
    campaign.rows.sort(key=_row_order)
    return campaign


def _row_order(row: dict[str, Any]) -> tuple:
    return (row["workload"], row["framework"], row["era"], row["device"], row["runner"], row["repeat"])


def load_campaigns(roots: Sequence[Path | str]) -> Campaign:
    """Read several campaign folders (e.g. a CPU and a GPU campaign) into one Campaign.

    Runs keep their own folders (links point at them); a run_id seen in an earlier folder is
    left out and listed in ``problems``, as a copied run dir would count twice in every mean.
    """
    paths = [Path(r) for r in roots]
    if not paths:
        raise ValueError("no campaign folder given")
    if len(paths) == 1:
        return load_campaign(paths[0])
    merged = Campaign(root=paths[0], rows=[], runs={}, roots=paths)
    for path in paths:
        part = load_campaign(path)
        merged.problems += part.problems
        merged.notes += part.notes
        for row in part.rows:
            if row["run_id"] in merged.runs:
                merged.problems.append(f"{row['run_dir']}: run_id {row['run_id']} was already read from another "
                                       "campaign folder; left out")
                continue
            merged.rows.append(row)
            merged.runs[row["run_id"]] = part.runs[row["run_id"]]
    merged.rows.sort(key=_row_order)
    return merged


def run_row(run_dir: Path, run: dict, campaign: Campaign) -> dict[str, Any]:
    """One run-table row from a validated run.json and the run's monitor.csv.

    Problems reading monitor.csv and disagreements with run.json's cache go into the campaign's
    ``problems`` and ``notes``.
    """
    cfg, timing, results = run["config"], run["timing"], run["results"]
    env = run.get("environment") or {}
    dataset = run.get("dataset") or {}
    spec = run.get("spec") or {}
    failure = run.get("failure") or {}
    cached = cached_monitor_summary(run)
    accuracy = results.get("test_accuracy")
    row: dict[str, Any] = {
        "run_id": run["run_id"],
        "framework": cfg["framework"],
        # "current" or "paper"; bench.schema reads version-1 runs (before eras) as "current".
        "era": cfg["era"],
        "workload": cfg["workload"],
        "dataset": dataset.get("name") or spec.get("dataset"),
        "data_source": dataset.get("source") or "unknown",
        "device": cfg["device"],
        "profile": cfg["profile"],
        "repeat": cfg["repeat"],
        "seed": cfg["seed"],
        "status": run["status"],
        "failure_cause": failure.get("cause"),
        "failure_message": failure.get("message"),
        "training_time_s": timing.get("training_time_s"),
        "eval_time_s": timing.get("eval_time_s"),
        # run.json holds a fraction; the study and the table speak percent.
        "test_accuracy": None if accuracy is None else accuracy * 100,
        "epochs": results.get("epochs_completed"),
        "epochs_planned": (spec.get("training") or {}).get("epochs"),
        # The hyper-parameters the other studies sweep (Wu et al.: batch size, learning rate).
        "batch_size": (spec.get("training") or {}).get("batch_size"),
        "learning_rate": _learning_rate(spec),
        "trainable_params": (run.get("model") or {}).get("trainable_params"),
        "runner": cfg["runner"],
        "image_digest": env.get("image_digest"),
        "env_id": env.get("env_id"),
        "framework_version": env.get("framework_version"),
        "python": run_python(run),
        "run_dir": str(run_dir),
    }
    has_cache = any(v is not None for v in cached.values())
    try:
        raw = monitor_window_summary(run_dir, timing)
        if raw is None and has_cache:
            campaign.notes.append(f"{run['run_id']}: no monitor.csv samples in the training window; "
                                  "CPU/memory taken from run.json's summary")
    except (SchemaError, ValueError, OSError) as exc:
        campaign.problems.append(f"{run_dir}: monitor.csv unreadable ({exc}); using run.json's summary")
        raw = None
    if raw is None:
        row.update(cached, monitor_source="run.json" if has_cache else "", monitor_samples=0)
        return row
    samples = raw.pop("samples")
    for column, raw_value in raw.items():
        if disagrees(raw_value, cached.get(column)):
            campaign.notes.append(
                f"{run['run_id']}: {column} is {raw_value:.4g} from monitor.csv but {cached[column]:.4g} "
                "in run.json's summary; using monitor.csv")
    row.update(raw, monitor_source="monitor.csv", monitor_samples=samples)
    return row


def run_python(run: dict) -> str | None:
    """The Python version the run really ran on: host.python, else environment.python (both are
    platform.python_version() of the training process), None when neither was recorded."""
    return (run.get("host") or {}).get("python") or (run.get("environment") or {}).get("python")


def _learning_rate(spec: dict) -> float | None:
    optimizer = (spec.get("training") or {}).get("optimizer")
    lr = optimizer.get("lr") if isinstance(optimizer, dict) else None
    return float(lr) if isinstance(lr, int | float) and not isinstance(lr, bool) else None


def read_epochs(campaign: Campaign) -> dict[str, list[dict[str, Any]]]:
    """metrics.jsonl records of every run, by run_id; an unreadable file is a problem, not an error."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in campaign.rows:
        try:
            out[row["run_id"]] = read_metrics(Path(row["run_dir"]))
        except (SchemaError, ValueError, OSError) as exc:
            campaign.problems.append(f"{row['run_dir']}: metrics.jsonl unreadable ({exc}); no per-epoch values")
            out[row["run_id"]] = []
    return out


def cached_monitor_summary(run: dict) -> dict[str, float | None]:
    """run.json's monitor summary under run-table column names (GPU None when not measured)."""
    monitor = run.get("monitor") or {}
    gpu = monitor.get("gpu")
    # monitor.gpu is either a status string ("no GPU: NVML library not found", "measured") with the
    # GPU means beside it at the top level, or an object holding them.
    gpu_util = gpu.get("util_mean_pct") if isinstance(gpu, dict) else monitor.get("gpu_util_mean_pct")
    return {
        "cpu_util_mean_pct": monitor.get("cpu_util_mean_pct"),
        "mem_mean_mb": monitor.get("mem_mean_mb"),
        "mem_peak_mb": monitor.get("mem_peak_mb"),
        "gpu_util_mean_pct": gpu_util,
        "other_cpu_s": monitor.get("other_cpu_s"),
        "other_cpu_share_pct": monitor.get("other_cpu_share_pct"),
        "other_cpu_mean_pct": monitor.get("other_cpu_mean_pct"),
        "gpu_other_procs_max": monitor.get("gpu_other_procs_max"),
    }


def training_window_samples(run_dir: Path, timing: dict) -> list[dict[str, Any]]:
    """monitor.csv samples taken in [train_start_unix, train_end_unix] of a run's timing."""
    return monitor_window(list(read_monitor(run_dir)), timing.get("train_start_unix"), timing.get("train_end_unix"))


def monitor_window_summary(run_dir: Path, timing: dict) -> dict[str, Any] | None:
    """Means (and the memory peak) of the monitor samples in the run's training window.

    The same computation the entrypoint caches in run.json, redone from the raw file.
    Returns None when no sample falls in the window.
    """
    summary = summarize_monitor(training_window_samples(run_dir, timing))
    if not summary["samples"]:
        return None
    return {key: summary[key] for key in _MONITOR_SUMMARY_KEYS}


def disagrees(raw: float | None, cached: float | None) -> bool:
    """True when both values exist and differ by more than the relative and absolute limits."""
    if raw is None or cached is None:
        return False
    diff = abs(raw - cached)
    return diff > DISAGREE_ABSOLUTE and diff > DISAGREE_RELATIVE * max(abs(raw), abs(cached))


# --- Summaries -----------------------------------------------------------------------------

def cell_key(row: dict[str, Any]) -> tuple[str, ...]:
    """The summary cell a run belongs to, as a tuple in CELL_KEYS order."""
    return tuple(str(row[k]) for k in CELL_KEYS)


def summarize(rows: Iterable[dict[str, Any]]) -> list[CellSummary]:
    """Group runs into cells and estimate each metric over the cell's successful runs, sorted."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(cell_key(row), []).append(row)
    out = []
    for key in sorted(groups):
        members = groups[key]
        ok = [r for r in members if r["status"] == "ok"]
        estimates = {m: describe(r[m] for r in ok) for m in SUMMARY_METRICS}
        out.append(CellSummary(dict(zip(CELL_KEYS, key)), members, estimates))
    return out


# --- Writing -------------------------------------------------------------------------------

def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.10g}"
    return value


def write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """Write rows (dicts) as CSV with the given column order; None becomes an empty cell."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _csv_cell(row.get(c)) for c in columns})
    atomic.write_text(path, buf.getvalue())


def write_tables(campaign: Campaign, cells: Sequence[CellSummary], out_dir: Path) -> list[Path]:
    """tables/runs.csv and tables/summary.csv under out_dir; returns the paths written."""
    tables = Path(out_dir) / "tables"
    runs_csv, summary_csv = tables / "runs.csv", tables / "summary.csv"
    write_csv(runs_csv, campaign.rows, RUN_COLUMNS)
    write_csv(summary_csv, [c.as_csv_row() for c in cells], SUMMARY_COLUMNS)
    return [runs_csv, summary_csv]
