"""monitor.csv: one row per monitor sample (1 s, bench/monitor.py), header row first; its columns, the
writer's line format and the reader, and run.json's monitor section summarized from it (means, peaks and
the contention of other processes over the training window).

Standard library only, CPython 3.6-clean.
"""

import csv
from pathlib import Path
from typing import Optional

from bench.schema.base import MONITOR_FILE, SCHEMA_VERSION, SchemaError

# monitor.csv columns, in order. Empty cells mean "not measured" (e.g. no GPU).
MONITOR_COLUMNS = (
    "time_unix",
    "elapsed_s",
    "cpu_util_pct",  # mean over cores of each core's active share (dlbench Eq. 1-2)
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_per_core_pct",  # ';'-joined active share of each core
    "proc_cpu_pct",  # the run's process tree, 100 = one core
    "proc_rss_mb",  # resident memory of the run's process tree
    "sys_mem_used_mb",
    "gpu_util_pct",
    "gpu_mem_used_mb",
    "gpu_power_w",
    "gpu_energy_j",
    "gpu_sm_clock_mhz",
    "gpu_temp_c",
    "gpu_throttle_reasons",
    # Contention (bench.monitor's docstring has the rules); older monitor.csv files lack these.
    "other_cpu_pct",  # CPU of processes outside the run's tree and the monitor, 100 = one core
    "gpu_other_procs",  # processes on the run's GPU that are not the run
)
MONITOR_INTERVAL_S = 1.0


def monitor_header() -> str:
    """The header line of monitor.csv."""
    return ",".join(MONITOR_COLUMNS) + "\n"


def format_monitor_row(row: dict) -> str:
    """One CSV line for a sample; unknown keys are an error, missing keys become empty cells."""
    unknown = set(row) - set(MONITOR_COLUMNS)
    if unknown:
        raise SchemaError(f"{MONITOR_FILE}: unknown columns {sorted(unknown)}")
    cells = []
    for col in MONITOR_COLUMNS:
        value = row.get(col)
        if value is None:
            cells.append("")
        elif isinstance(value, float):
            cells.append(f"{value:.6g}" if col != "time_unix" else f"{value:.3f}")
        else:
            cells.append(str(value))
    return ",".join(cells) + "\n"


def read_monitor(run_dir: Path):
    """Yield monitor.csv rows as dicts of floats (None for empty cells; strings kept for lists).

    A last line cut off by a kill is skipped, not an error: the monitor flushes whole lines.
    """
    path = Path(run_dir) / MONITOR_FILE
    if not path.exists():
        return
    with open(str(path), newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return
        # Files of older kits lack the columns added since (read as empty cells); a column this kit
        # does not know means a newer kit wrote the file.
        unknown = [col for col in header if col not in MONITOR_COLUMNS]
        if unknown or len(set(header)) != len(header):
            raise SchemaError(f"{path}: header does not match schema version {SCHEMA_VERSION} "
                              f"(unknown or repeated columns {unknown or header})")
        for cells in reader:
            if len(cells) != len(header):
                continue
            row = dict.fromkeys(MONITOR_COLUMNS)
            row.update((col, _cell(col, cell)) for col, cell in zip(header, cells))
            yield row


_TEXT_COLUMNS = {"cpu_per_core_pct", "gpu_throttle_reasons"}


def _cell(col, cell):
    if cell == "":
        return None
    if col in _TEXT_COLUMNS:
        return cell
    return float(cell)


def monitor_window(rows: list, t0: Optional[float] = None, t1: Optional[float] = None) -> list:
    """The samples taken in [t0, t1]; a missing bound is open (a failed run has no end)."""
    return [
        r for r in rows
        if r.get("time_unix") is not None
        and (t0 is None or r["time_unix"] >= t0) and (t1 is None or r["time_unix"] <= t1)
    ]


def summarize_monitor(rows: list, t0: Optional[float] = None, t1: Optional[float] = None) -> dict:
    """run.json's monitor section: means and peaks over the samples taken in [t0, t1] (the training
    window when given). The analysis recomputes it from monitor.csv with this same function."""
    window_rows = monitor_window(rows, t0, t1)

    def values(col):
        return [r[col] for r in window_rows if r.get(col) is not None]

    def mean(col):
        vals = values(col)
        return sum(vals) / len(vals) if vals else None

    def peak(col):
        vals = values(col)
        return max(vals) if vals else None

    energy = values("gpu_energy_j")
    return {
        "interval_s": MONITOR_INTERVAL_S,
        "samples": len(window_rows),
        "cpu_util_mean_pct": mean("cpu_util_pct"),
        "cpu_user_mean_pct": mean("cpu_user_pct"),
        "cpu_system_mean_pct": mean("cpu_system_pct"),
        "cpu_iowait_mean_pct": mean("cpu_iowait_pct"),
        "proc_cpu_mean_pct": mean("proc_cpu_pct"),
        "mem_mean_mb": mean("proc_rss_mb"),
        "mem_peak_mb": peak("proc_rss_mb"),
        "gpu_util_mean_pct": mean("gpu_util_pct"),
        "gpu_mem_peak_mb": peak("gpu_mem_used_mb"),
        "gpu_power_mean_w": mean("gpu_power_w"),
        "gpu_energy_j": (energy[-1] - energy[0]) if len(energy) > 1 else None,
        **other_load(window_rows),
    }


def other_load(window_rows: list) -> dict:
    """Contention over a window's samples: other processes' CPU seconds (other_cpu_pct times each
    sample's interval: the gap to the previous sample, the nominal interval for the first), their
    share of the machine's capacity (all cores over the seconds those samples cover) and mean in
    percent of one core, and the most processes seen on the run's GPU besides the run. None where
    the samples do not record it (monitor.csv of older kits)."""
    other_s = capacity_s = covered_s = 0.0
    measured = 0
    prev_t = None
    for row in window_rows:
        t = row["time_unix"]
        dt = MONITOR_INTERVAL_S if prev_t is None else t - prev_t
        prev_t = t
        other, cores = row.get("other_cpu_pct"), row.get("cpu_per_core_pct")
        if other is None or not cores:
            continue
        measured += 1
        other_s += other / 100.0 * dt
        capacity_s += len(cores.split(";")) * dt
        covered_s += dt
    gpu = [r["gpu_other_procs"] for r in window_rows if r.get("gpu_other_procs") is not None]
    return {
        "other_cpu_s": other_s if measured else None,
        "other_cpu_share_pct": 100.0 * other_s / capacity_s if capacity_s > 0 else None,
        "other_cpu_mean_pct": 100.0 * other_s / covered_s if covered_s > 0 else None,
        "gpu_other_procs_max": int(max(gpu)) if gpu else None,
    }
