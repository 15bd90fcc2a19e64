"""Reading what the analysis wrote or builds from, for the analysis tests: CSV tables and report contexts."""

from __future__ import annotations

import csv
from pathlib import Path

from analysis.context import ReportContext
from analysis.runs import load_campaign
from analysis.summary import summarize


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a table the analysis wrote (tables/runs.csv, tables/summary.csv) as dicts of strings."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def report_context(campaign: Path, out: Path) -> ReportContext:
    """What the report of a campaign folder is built from, without figures (for calling one section)."""
    loaded = load_campaign(campaign)
    return ReportContext(loaded, summarize(loaded.table), [], out, loaded.epochs)
