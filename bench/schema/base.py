"""What every artifact of a run folder shares: the schema version, the file names, the error, the checkers.

SchemaError is the one error of a file that does not match; _check_fields (a section's fields and their
types), _check_version (schema_version) and _read_typed_csv (a CSV file's header and typed cells) are the
checks the artifact modules of this package build on: the package's own helpers, not part of its interface.
Standard library only, CPython 3.6-clean.
"""

import csv
import math
from pathlib import Path

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

# The files of a run folder (the package docstring says what each holds).
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
ITERATIONS_FILE = "iterations.csv"
COLLECTIVE_FILE = "collective.csv"
MONITOR_FILE = "monitor.csv"
LOG_FILE = "log.txt"

# Accepted types of a field (bool never counts as a number: _check_fields).
NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_INT = (int, type(None))
OPT_STR = (str, type(None))
OPT_DICT = (dict, type(None))


class SchemaError(ValueError):
    """An artifact does not match the schema; the message names the file and the field."""


def _check_fields(obj, fields, where):
    """Check that `obj` is an object holding every field of `fields` ({name: accepted types}), finite."""
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


def _check_version(obj, where, versions=(SCHEMA_VERSION,)):
    """Check that obj's schema_version is one of `versions` (a refusal says how to get a kit that reads it)."""
    version = obj.get("schema_version")
    if version not in versions:
        raise SchemaError(
            f"{where}: schema_version {version!r} is not supported (this kit reads "
            f"{', '.join(str(v) for v in versions)}); re-run the campaign or use the kit version that wrote it"
        )


def _read_typed_csv(path: Path, columns: tuple, types: tuple) -> list:
    """The rows of a CSV file whose header must be `columns`, each cell converted by its type in `types`
    (dicts keyed by column); a row with the wrong number of cells or a cell that does not convert is a
    SchemaError naming the line."""
    with open(str(path), newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    if not table or tuple(table[0]) != columns:
        raise SchemaError(f"{path}: header is not {','.join(columns)}")
    rows = []
    for lineno, cells in enumerate(table[1:], 2):
        try:
            if len(cells) != len(columns):
                raise ValueError
            rows.append({col: kind(cell) for col, kind, cell in zip(columns, types, cells)})
        except ValueError:
            raise SchemaError(f"{path}:{lineno}: expected {len(columns)} cells "
                              f"({','.join(columns)}), got {cells!r}") from None
    return rows
