"""CSV files that must not parse, for every result file bench.schema reads through its one typed-CSV reader
(iterations.csv, collective.csv): one case list, built from the file's columns and one row that parses, so
each file's tests cover the same ways of breaking it."""

from __future__ import annotations

import re

import pytest


def parse_errors(columns: tuple[str, ...], good: tuple[str, ...]) -> list:
    """pytest params (text, message) of files with header `columns` that fail to parse, `message` a regex of
    the error: an empty file, a header missing or renaming a column, a row with a cell too few or too many,
    and, for each numeric cell of `good` (one row that parses), that row with the cell not a number."""
    header = ",".join(columns)
    wrong_header = re.escape(f"header is not {header}")
    wrong_row = re.escape(f":2: expected {len(columns)} cells")
    cases = [
        pytest.param("", wrong_header, id="empty file"),
        pytest.param(",".join(columns[:-1]) + "\n", wrong_header, id="header lacks a column"),
        pytest.param(",".join(columns[:-1] + ("seconds",)) + "\n", wrong_header, id="header renames a column"),
        pytest.param(f"{header}\n{','.join(good[:-1])}\n", wrong_row, id="a cell too few"),
        pytest.param(f"{header}\n{','.join(good + good[-1:])}\n", wrong_row, id="a cell too many"),
    ]
    for i, cell in enumerate(good):
        if _is_number(cell):
            row = good[:i] + ("one",) + good[i + 1:]
            cases.append(pytest.param(f"{header}\n{','.join(row)}\n", wrong_row, id=f"{columns[i]} not a number"))
    return cases


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
