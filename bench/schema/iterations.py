"""iterations.csv: one row per timed mini-batch of the iterations and inference protocols, warm-up included;
its columns, checks, writer and reader, and the run.json figures summarized from it (timing's iteration
statistics, the inference results).

Standard library only besides NumPy, CPython 3.6-clean.
"""

import math
from pathlib import Path
from typing import Optional

import numpy as np

from bench import atomic
from bench.schema.base import ITERATIONS_FILE, SchemaError, _read_typed_csv

# iterations.csv columns, in order: iteration (1-based over warm-up and measured steps together, so
# Shams et al.'s "iterations 101-1100" are rows 101-1100), phase (ITERATION_PHASES), time_s (seconds
# of that step, device synchronized) and loss (the step's mini-batch loss; an inference run's forward pass has
# none: there, the mean of the batch's outputs, checked finite as a loss is).
ITERATION_COLUMNS = ("iteration", "phase", "time_s", "loss")
ITERATION_PHASES = ("warmup", "measured")


def iteration_stats(seconds: list) -> Optional[dict]:
    """ITERATION_STATS of per-iteration seconds (None for none); std is the sample one, None for one value.
    Percentiles interpolate linearly between ranks (NumPy's default)."""
    if not seconds:
        return None
    values = np.asarray(seconds, dtype=np.float64)
    p5, median, p95 = (float(v) for v in np.percentile(values, [5, 50, 95]))
    return {"mean": float(values.mean()), "median": median,
            "std": float(values.std(ddof=1)) if len(values) > 1 else None,
            "min": float(values.min()), "max": float(values.max()), "p5": p5, "p95": p95}


def summarize_iterations(rows: list) -> dict:
    """run.json's timing fields of the iterations protocol from iterations.csv rows (read_iterations):
    the counts, warm-up seconds, training_time_s (sum of the measured steps) and iteration_time_s
    (their statistics; the warm-up never counts). The analysis can recompute them with this function."""
    warmup = [r["time_s"] for r in rows if r["phase"] == "warmup"]
    measured = [r["time_s"] for r in rows if r["phase"] == "measured"]
    return {
        "warmup_iterations": len(warmup),
        "measured_iterations": len(measured),
        "warmup_time_s": sum(warmup),
        "training_time_s": sum(measured),
        "iteration_time_s": iteration_stats(measured),
    }


def summarize_inference(stats: Optional[dict], batch_size: int) -> dict:
    """run.json's results of the inference protocol from the measured batches' statistics (iteration_stats,
    None when none was measured) and the batch size: images_per_s = batch_size / mean seconds per batch and
    s_per_1000_images = 1000 / images_per_s (null without a measured batch)."""
    if not stats or stats["mean"] <= 0:
        return {"batch_size": batch_size, "images_per_s": None, "s_per_1000_images": None}
    rate = batch_size / stats["mean"]
    return {"batch_size": batch_size, "images_per_s": rate, "s_per_1000_images": 1000.0 / rate}


def validate_iterations(rows: list, where: str = ITERATIONS_FILE) -> list:
    """Check iterations.csv rows (dicts of ITERATION_COLUMNS): numbered 1, 2, ... in order, every
    warm-up row before every measured one, finite non-negative times and finite losses. Return them."""
    seen_measured = False
    for number, row in enumerate(rows, 1):
        at = f"{where}: iteration {number}"
        if not isinstance(row, dict) or set(row) != set(ITERATION_COLUMNS):
            raise SchemaError(f"{at}: expected the columns {', '.join(ITERATION_COLUMNS)}")
        if isinstance(row["iteration"], bool) or row["iteration"] != number:
            raise SchemaError(f"{at}: numbered {row['iteration']!r}; iterations count 1, 2, ... without gaps")
        if row["phase"] not in ITERATION_PHASES:
            raise SchemaError(f"{at}: phase {row['phase']!r} is not one of {ITERATION_PHASES}")
        if row["phase"] == "warmup" and seen_measured:
            raise SchemaError(f"{at}: a warm-up step after a measured one")
        seen_measured = seen_measured or row["phase"] == "measured"
        for col in ("time_s", "loss"):
            value = row[col]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SchemaError(f"{at}: {col} {value!r} is not a finite number")
        if row["time_s"] < 0:
            raise SchemaError(f"{at}: time_s {row['time_s']} is negative")
    return rows


def write_iterations(run_dir: Path, rows: list) -> None:
    """Validate and atomically write iterations.csv (header first; floats as Python writes them
    exactly, so a read gives back the same numbers)."""
    path = Path(run_dir) / ITERATIONS_FILE
    validate_iterations(rows, str(path))
    lines = [",".join(ITERATION_COLUMNS)]
    lines += ["{},{},{!r},{!r}".format(r["iteration"], r["phase"], float(r["time_s"]), float(r["loss"]))
              for r in rows]
    atomic.write_text(path, "\n".join(lines) + "\n")


def read_iterations(run_dir: Path) -> list:
    """Read and validate iterations.csv (empty list if the file is absent: an epoch-protocol run)."""
    path = Path(run_dir) / ITERATIONS_FILE
    if not path.exists():
        return []
    rows = _read_typed_csv(path, ITERATION_COLUMNS, (int, str, float, float))
    return validate_iterations(rows, str(path))
