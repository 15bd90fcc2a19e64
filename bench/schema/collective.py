"""collective.csv: one row per message size, repetition and rank of a timed collective (workload family
"collective": bench/collectives); its columns, checks, writer and reader, and run.json's results.collective
summarized from it (with nccl-tests' bandwidths).

Standard library only besides NumPy, CPython 3.6-clean.
"""

import math
from pathlib import Path

import numpy as np

from bench import atomic
from bench.schema.base import COLLECTIVE_FILE, SchemaError, _read_typed_csv
from bench.schema.iterations import ITERATION_PHASES

# collective.csv columns, in order: floats (message size in elements), phase (ITERATION_PHASES), rep
# (1-based within the size and phase), rank, and time_s (that rank's seconds for that repetition).
COLLECTIVE_COLUMNS = ("floats", "phase", "rep", "rank", "time_s")


def bus_bandwidth(nbytes: int, seconds: float, ranks: int) -> tuple:
    """(algbw, busbw) in bytes per second of an all-reduce of `nbytes` bytes taking `seconds` over `ranks`
    ranks, as nccl-tests defines them (its doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw *
    2 (n - 1) / n, the rate each rank's link moves data at in a ring all-reduce (0 for one rank)."""
    algbw = nbytes / seconds
    return algbw, algbw * 2.0 * (ranks - 1) / ranks


def validate_collective(rows: list, ranks: int, where: str = COLLECTIVE_FILE) -> list:
    """Check collective.csv rows (dicts of COLLECTIVE_COLUMNS): each size once, positive; within it the
    warm-up repetitions before the measured ones, each phase's repetitions numbered 1, 2, ... with one row
    per rank 0..ranks-1 in order; finite non-negative times. Return them."""
    prev, seen = None, set()
    for lineno, row in enumerate(rows, 2):
        at = f"{where}:{lineno}"
        if not isinstance(row, dict) or set(row) != set(COLLECTIVE_COLUMNS):
            raise SchemaError(f"{at}: expected the columns {', '.join(COLLECTIVE_COLUMNS)}")
        if any(isinstance(row[k], bool) or not isinstance(row[k], int) for k in ("floats", "rep", "rank")):
            raise SchemaError(f"{at}: floats, rep and rank must be whole numbers")
        if row["phase"] not in ITERATION_PHASES:
            raise SchemaError(f"{at}: phase {row['phase']!r} is not one of {ITERATION_PHASES}")
        value = row["time_s"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise SchemaError(f"{at}: time_s {value!r} is not a finite non-negative number")
        if row["floats"] < 1:
            raise SchemaError(f"{at}: floats {row['floats']} must be at least 1")
        same_block = prev is not None and (prev["floats"], prev["phase"]) == (row["floats"], row["phase"])
        if same_block:
            last = prev["rank"] == ranks - 1
            want = (prev["rep"] + 1, 0) if last else (prev["rep"], prev["rank"] + 1)
        else:
            if prev is not None and prev["rank"] != ranks - 1:
                raise SchemaError(f"{at}: the repetition before lacks ranks {prev['rank'] + 1}..{ranks - 1}")
            same_size = prev is not None and prev["floats"] == row["floats"]
            if same_size and prev["phase"] != "warmup":
                raise SchemaError(f"{at}: a warm-up repetition after a measured one")
            if not same_size and row["floats"] in seen:
                raise SchemaError(f"{at}: size {row['floats']} again; each size's rows come together")
            want = (1, 0)
        if (row["rep"], row["rank"]) != want:
            raise SchemaError(f"{at}: rep {row['rep']} rank {row['rank']}, expected rep {want[0]} rank {want[1]} "
                              "(repetitions count 1, 2, ... with one row per rank in order)")
        seen.add(row["floats"])
        prev = row
    if prev is not None and prev["rank"] != ranks - 1:
        raise SchemaError(f"{where}: the last repetition lacks ranks {prev['rank'] + 1}..{ranks - 1}")
    return rows


def summarize_collective(rows: list, ranks: int) -> list:
    """results.collective.sizes from collective.csv rows (checked false: the run sets it once it has
    verified the sums): per size, in the file's order, the statistics of the measured repetitions, each
    the slowest rank's time (COLLECTIVE_TIME_BASIS), and nccl-tests' algbw and busbw of the median in GB/s.
    The analysis recomputes them from the file with this function."""
    reps = {}
    for row in rows:
        if row["phase"] == "measured":
            key = (row["floats"], row["rep"])
            reps[key] = max(reps.get(key, 0.0), row["time_s"])
    sizes = []
    for floats in sorted({f for f, _ in reps}, key=[r["floats"] for r in rows].index):
        times = np.asarray([t for (f, _), t in sorted(reps.items()) if f == floats], dtype=np.float64)
        median = float(np.median(times))
        nbytes = floats * 4  # float32
        algbw, busbw = bus_bandwidth(nbytes, median, ranks) if median > 0 else (0.0, 0.0)
        sizes.append({"floats": floats, "bytes": nbytes, "median_s": median, "mean_s": float(times.mean()),
                      "min_s": float(times.min()), "max_s": float(times.max()), "algbw_gbps": algbw / 1e9,
                      "busbw_gbps": busbw / 1e9, "checked": False})
    return sizes


def write_collective(run_dir: Path, rows: list, ranks: int) -> None:
    """Validate and atomically write collective.csv (header first; times as Python writes them exactly)."""
    path = Path(run_dir) / COLLECTIVE_FILE
    validate_collective(rows, ranks, str(path))
    lines = [",".join(COLLECTIVE_COLUMNS)]
    lines += ["{},{},{},{},{!r}".format(r["floats"], r["phase"], r["rep"], r["rank"], float(r["time_s"]))
              for r in rows]
    atomic.write_text(path, "\n".join(lines) + "\n")


def read_collective(run_dir: Path, ranks: int) -> list:
    """Read and validate collective.csv (empty list if the file is absent: not a collective run)."""
    path = Path(run_dir) / COLLECTIVE_FILE
    if not path.exists():
        return []
    rows = _read_typed_csv(path, COLLECTIVE_COLUMNS, (int, str, int, int, float))
    return validate_collective(rows, ranks, str(path))
