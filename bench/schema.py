"""The run artifact schema, defined once and checked on every write and every read.

A run directory holds four files:

- ``run.json``      one object: configuration, versions, host, timings, status, summaries.
- ``metrics.jsonl`` one object per finished epoch.
- ``monitor.csv``   one row per monitor sample (1 s), header row first.
- ``log.txt``       free-form output of the training process.

Every object carries ``schema_version``; readers refuse versions they do not know, so an old
checker never silently misreads a newer run.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench import atomic

SCHEMA_VERSION = 1

RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
MONITOR_FILE = "monitor.csv"
LOG_FILE = "log.txt"

STATUSES = ("ok", "failed")
FAILURE_CAUSES = ("nan", "oom", "timeout", "crash", "killed")

NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_STR = (str, type(None))
OPT_DICT = (dict, type(None))

# Field name -> accepted types. Nested dicts are checked one level down where listed.
RUN_FIELDS: dict[str, tuple[type, ...]] = {
    "schema_version": (int,),
    "run_id": (str,),
    "status": (str,),
    "failure": OPT_DICT,  # {"cause": one of FAILURE_CAUSES, "message": str}
    "config": (dict,),
    "spec": (dict,),
    "dataset": (dict,),
    "environment": (dict,),
    "host": (dict,),
    "device_used": (dict,),
    "model": (dict,),
    "timing": (dict,),
    "results": (dict,),
    "monitor": (dict,),
    "started_at": (str,),
    "finished_at": OPT_STR,
}
RUN_CONFIG_FIELDS: dict[str, tuple[type, ...]] = {
    "framework": (str,),
    "workload": (str,),
    "profile": (str,),
    "device": (str,),
    "seed": (int,),
    "repeat": (int,),
    "campaign": (str,),
    "runner": (str,),
}
RUN_TIMING_FIELDS: dict[str, tuple[type, ...]] = {
    # Sum of the epochs' training passes: what the paper calls training time.
    "training_time_s": OPT_NUM,
    # Sum of the per-epoch test passes (the authors' notebooks timed these too).
    "eval_time_s": OPT_NUM,
    # Model construction, data loading into the framework, compilation before epoch 1.
    "setup_time_s": OPT_NUM,
    "train_start_unix": OPT_NUM,
    "train_end_unix": OPT_NUM,
    "definition": (str,),
}
RUN_RESULTS_FIELDS: dict[str, tuple[type, ...]] = {
    "test_accuracy": OPT_NUM,
    "final_loss": OPT_NUM,
    "epochs_completed": (int,),
}

METRIC_FIELDS: dict[str, tuple[type, ...]] = {
    "schema_version": (int,),
    "epoch": (int,),
    "loss": NUM,
    "train_accuracy": OPT_NUM,
    "test_accuracy": OPT_NUM,
    "epoch_time_s": NUM,
    "eval_time_s": NUM,
    "end_unix": NUM,
}

# monitor.csv columns, in order. Empty cells mean "not measured" (e.g. no GPU).
MONITOR_COLUMNS: tuple[str, ...] = (
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
)


class SchemaError(ValueError):
    """An artifact does not match the schema; the message names the file and the field."""


def _check_fields(obj: Any, fields: dict[str, tuple[type, ...]], where: str) -> None:
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object, got {type(obj).__name__}")
    for name, types in fields.items():
        if name not in obj:
            raise SchemaError(f"{where}: missing field '{name}'")
        value = obj[name]
        # bool is an int subclass; a True where a number belongs is a bug, not a number.
        if isinstance(value, bool) or not isinstance(value, types):
            raise SchemaError(
                f"{where}: field '{name}' has type {type(value).__name__}, "
                f"expected {' or '.join(t.__name__ for t in types)}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"{where}: field '{name}' is {value}; write null for 'no value'")


def _check_version(obj: dict, where: str) -> None:
    version = obj.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"{where}: schema_version {version!r} is not supported (this kit reads {SCHEMA_VERSION}); "
            "re-run the campaign or use the kit version that wrote it"
        )


def validate_run(obj: dict, where: str = RUN_FILE) -> dict:
    """Check a run.json object; return it unchanged or raise SchemaError."""
    _check_fields(obj, RUN_FIELDS, where)
    _check_version(obj, where)
    _check_fields(obj["config"], RUN_CONFIG_FIELDS, f"{where}: config")
    _check_fields(obj["timing"], RUN_TIMING_FIELDS, f"{where}: timing")
    _check_fields(obj["results"], RUN_RESULTS_FIELDS, f"{where}: results")
    if obj["config"]["runner"] == "docker":
        # A container run names the exact image it ran in (runs of older kits had no docker runner).
        image = obj["environment"].get("image_digest")
        if not isinstance(image, str) or "sha256:" not in image:
            raise SchemaError(f"{where}: a docker run needs environment.image_digest (sha256:... or name@sha256:...)")
    if obj["status"] not in STATUSES:
        raise SchemaError(f"{where}: status {obj['status']!r} is not one of {STATUSES}")
    failure = obj["failure"]
    if obj["status"] == "failed":
        if not failure or failure.get("cause") not in FAILURE_CAUSES:
            raise SchemaError(f"{where}: a failed run needs failure.cause in {FAILURE_CAUSES}")
    elif failure is not None:
        raise SchemaError(f"{where}: status ok but failure is set")
    return obj


def validate_metric(obj: dict, where: str = METRICS_FILE) -> dict:
    """Check one metrics.jsonl record; return it unchanged or raise SchemaError."""
    _check_fields(obj, METRIC_FIELDS, where)
    _check_version(obj, where)
    return obj


def write_run(run_dir: Path, obj: dict) -> None:
    """Validate and atomically write run.json into run_dir."""
    validate_run(obj, str(Path(run_dir) / RUN_FILE))
    atomic.write_text(Path(run_dir) / RUN_FILE, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_run(run_dir: Path) -> dict:
    """Read and validate run.json from run_dir."""
    path = Path(run_dir) / RUN_FILE
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: not valid JSON ({exc})") from exc
    return validate_run(obj, str(path))


class MetricsWriter:
    """Appends validated epoch records to metrics.jsonl, flushed line by line."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / METRICS_FILE
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        record = {"schema_version": SCHEMA_VERSION, **record}
        validate_metric(record, str(self.path))
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_metrics(run_dir: Path) -> list[dict]:
    """Read and validate every record of metrics.jsonl (empty list if the file is absent)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            out.append(validate_metric(json.loads(line), f"{path}:{lineno}"))
    return out


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


def read_monitor(run_dir: Path) -> Iterator[dict]:
    """Yield monitor.csv rows as dicts of floats (None for empty cells; strings kept for lists).

    A last line cut off by a kill is skipped, not an error: the monitor flushes whole lines.
    """
    path = Path(run_dir) / MONITOR_FILE
    if not path.exists():
        return
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return
        if tuple(header) != MONITOR_COLUMNS:
            raise SchemaError(f"{path}: header does not match schema version {SCHEMA_VERSION}")
        for cells in reader:
            if len(cells) != len(MONITOR_COLUMNS):
                continue
            yield {col: _cell(col, cell) for col, cell in zip(MONITOR_COLUMNS, cells)}


_TEXT_COLUMNS = {"cpu_per_core_pct", "gpu_throttle_reasons"}


def _cell(col: str, cell: str) -> Any:
    if cell == "":
        return None
    if col in _TEXT_COLUMNS:
        return cell
    return float(cell)


def iter_run_dirs(root: Path) -> Iterable[Path]:
    """Completed run directories below a campaign folder (those holding a run.json)."""
    root = Path(root)
    if not root.is_dir():
        return []
    # Hidden folders hold runs moved aside for a retry; .partial ones are unfinished.
    return sorted(
        p.parent for p in root.glob(f"*/{RUN_FILE}")
        if not p.parent.name.startswith(".") and not p.parent.name.endswith(".partial")
    )
