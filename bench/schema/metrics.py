"""metrics.jsonl: one record per finished epoch (the epoch protocol), its fields, writer and reader.

Standard library only, CPython 3.6-clean.
"""

import json
from pathlib import Path

from bench.schema.base import (
    METRICS_FILE,
    NUM,
    OPT_NUM,
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    _check_fields,
    _check_version,
)

METRIC_FIELDS = {
    "schema_version": (int,),
    "epoch": (int,),
    "loss": NUM,
    "train_accuracy": OPT_NUM,
    "test_accuracy": OPT_NUM,
    "epoch_time_s": NUM,
    "eval_time_s": NUM,
    "end_unix": NUM,
}


def validate_metric(obj: dict, where: str = METRICS_FILE) -> dict:
    """Check one metrics.jsonl record; return it unchanged or raise SchemaError."""
    _check_fields(obj, METRIC_FIELDS, where)
    _check_version(obj, where, READABLE_VERSIONS)
    return obj


class MetricsWriter:
    """Appends validated epoch records to metrics.jsonl, flushed line by line."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self._fh = open(str(self.path), "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        """Append one epoch's record (schema_version added), validated first."""
        record = dict(record, schema_version=SCHEMA_VERSION)
        validate_metric(record, str(self.path))
        self._fh.write(json.dumps(record, sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


def read_metrics(run_dir: Path) -> list:
    """Read and validate every record of metrics.jsonl (empty list if the file is absent)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            out.append(validate_metric(json.loads(line), f"{path}:{lineno}"))
    return out
