"""Published numbers the report compares against, mapped onto a campaign's cells.

Two sources for DLBench (studies/dlbench/reference), kept apart because they disagree in places:
- ``dlbench.csv``: numbers the paper prints in its text (origin "paper").
- ``from_original_repos.csv``: final accuracy and wall time read off the authors' raw
  logs (origin "authors' logs"). Their wall time is measured around the epoch loop *including*
  the per-epoch test pass, which the qualifier says.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import studies

DLBENCH_CSV = studies.reference_file("dlbench.csv")
ORIGINAL_REPOS_CSV = studies.reference_file("from_original_repos.csv")

ORIGIN_PAPER = "paper"
ORIGIN_LOGS = "authors' logs"

# Metric names of dlbench.csv that the kit measures, and the run-table column each maps onto.
METRIC_COLUMNS: dict[str, str] = {
    "test_accuracy": "test_accuracy",
    "training_time": "training_time_s",
    "cpu_utilization_mean": "cpu_util_mean_pct",
    "gpu_utilization_mean": "gpu_util_mean_pct",
    "memory_mean": "mem_mean_mb",
}

# Workload name -> (arch, dataset) as dlbench.csv spells them, where the name's "<arch>-<dataset>"
# form differs: the paper counts its encoder-decoder among the LSTM workloads.
WORKLOAD_TO_PAPER: dict[str, tuple[str, str]] = {
    "seq2seq-manythings": ("lstm", "manythings"),
}

WILDCARD = "*"


@dataclass(frozen=True)
class PublishedValue:
    """One published number for an (env, arch, dataset, framework, metric) cell."""

    env: str
    arch: str
    dataset: str
    framework: str
    metric: str
    value: float
    unit: str
    qualifier: str
    source: str
    origin: str = ORIGIN_PAPER

    @property
    def source_text(self) -> str:
        """Where the number is printed: 'paper Sec 5.1' or "authors' log: <repo>: <file>"."""
        return f"paper {self.source}" if self.origin == ORIGIN_PAPER else f"authors' log: {self.source}"

    @property
    def value_text(self) -> str:
        """The value as printed in the source (98, 96.4, 14,400) with its unit, not padded."""
        return f"{self.value:,.6g} {self.unit}"

    def matches(self, env: str, arch: str, dataset: str, framework: str) -> bool:
        """True if this row applies to the cell; '*' in the row matches anything."""
        return all(
            mine in (WILDCARD, theirs)
            for mine, theirs in (
                (self.env, env),
                (self.arch, arch),
                (self.dataset, dataset),
                (self.framework, framework.lower()),
            )
        )


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of one of a study's reference CSV files, every cell stripped (empty for a blank cell)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


def device_env(device: str) -> str:
    """The study's environment name for a kit device ('cpu', 'gpu', 'cuda:0', ...)."""
    d = device.lower()
    return "gpu" if d.startswith(("gpu", "cuda")) else "cpu"


def workload_cell(workload: str) -> tuple[str, str] | None:
    """(arch, dataset) of a workload as the study names them, or None if it has no such form."""
    if workload in WORKLOAD_TO_PAPER:
        return WORKLOAD_TO_PAPER[workload]
    arch, sep, dataset = workload.partition("-")
    return (arch, dataset) if sep and arch and dataset else None


@cache
def load_dlbench(path: Path = DLBENCH_CSV) -> tuple[PublishedValue, ...]:
    """Every row of dlbench.csv (all metrics, not only those the kit measures)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return tuple(
            PublishedValue(
                env=r["env"].strip().lower(),
                arch=r["arch"].strip().lower(),
                dataset=r["dataset"].strip().lower(),
                framework=r["framework"].strip().lower(),
                metric=r["metric"].strip(),
                value=float(r["value"]),
                unit=r["unit"].strip(),
                qualifier=r["qualifier"].strip(),
                source=r["source"].strip(),
                origin=ORIGIN_PAPER,
            )
            for r in csv.DictReader(fh)
        )


_DATASET_ALIASES = {"imdblstm": "imdb", "ptblstm": "ptb"}
_ARCH_OF_DATASET = {"mnist": "cnn", "cifar10": "cnn", "cifar100": "cnn", "svhn": "cnn",
                    "imdb": "lstm", "ptb": "lstm", "manythings": "lstm", "voc2012": "frcnn"}
_WALL_RE = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)$")
_ACC_RE = re.compile(r"^([0-9.]+)\s*(%?)")


def _normalize_dataset(text: str) -> str:
    # "CIFAR-10" -> cifar10, "IMDB LSTM" -> imdb, "SVHN (extra split 531k train)" -> svhn.
    head = text.split("(")[0]
    key = re.sub(r"[^a-z0-9]", "", head.lower())
    return _DATASET_ALIASES.get(key, key)


def parse_wall_seconds(text: str) -> float | None:
    """'1:28:01.6' (h:mm:ss.s) -> seconds, or None if the text is not in that form."""
    m = _WALL_RE.match(text.strip())
    if not m:
        return None
    hours, minutes, seconds = m.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def parse_accuracy_percent(text: str) -> float | None:
    """'0.9833' -> 98.33 and '87.74%' or '49.981% (NaN loss)' -> percent; None if unparseable."""
    m = _ACC_RE.match(text.strip())
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    # The logs print either a fraction or a percentage; a bare number <= 1 is a fraction.
    return value if m.group(2) == "%" or value > 1 else value * 100


@cache
def load_original_repos(path: Path = ORIGINAL_REPOS_CSV) -> tuple[PublishedValue, ...]:
    """DLBench rows of from_original_repos.csv with a parseable 'test_acc|wall' value (original_repos_values)."""
    out: list[PublishedValue] = []
    last_path = ""
    for r in read_rows(path):
        # "same" in file_path repeats the path pattern of the row above.
        file_path = last_path if r["file_path"] == "same" else r["file_path"]
        last_path = file_path
        out += original_repos_values(r, file_path)
    return tuple(out)


def original_repos_values(r: dict[str, str], file_path: str) -> list[PublishedValue]:
    """The values one row of from_original_repos.csv gives the comparison: test_accuracy (percent) and
    training_time (s) of a DLBench 'test_acc|wall' row; none for the rest.

    Rows for several frameworks at once, warnings, truncated runs and other studies' rows are skipped: they carry no
    single DLBench number to compare with (the report's 'not reproduced' section says why for each).
    """
    if r["study"] != "DLBench" or r["metric"] != "test_acc|wall":
        return []
    framework = r["framework"].lower()
    device = r["device"].lower()
    if "/" in framework or not device.startswith(("cpu", "gpu")) or "?" in device:
        return []
    dataset = _normalize_dataset(r["dataset_or_task"])
    arch = _ARCH_OF_DATASET.get(dataset)
    acc_text, _, wall_text = r["value"].partition("|")
    if arch is None or not wall_text:
        return []
    notes = r.get("notes", "")
    extra = f"; {notes}" if notes else ""
    common = dict(env=device_env(device), arch=arch, dataset=dataset, framework=framework,
                  source=f"{r['source_repo']}: {file_path}", origin=ORIGIN_LOGS)
    epochs = r["epochs_or_setting"]
    out = []
    acc = parse_accuracy_percent(acc_text)
    if acc is not None:
        out.append(PublishedValue(metric="test_accuracy", value=acc, unit="percent",
                                  qualifier=f"final, run 1, {epochs} epochs{extra}", **common))
    wall = parse_wall_seconds(wall_text)
    if wall is not None:
        out.append(PublishedValue(
            metric="training_time", value=wall, unit="s",
            qualifier=f"wall time incl. per-epoch test pass, {epochs} epochs{extra}", **common))
    return out


def all_published() -> tuple[PublishedValue, ...]:
    """Paper rows followed by authors'-log rows."""
    return load_dlbench() + load_original_repos()


def published_for(device: str, workload: str, framework: str, metric: str | None = None,
                  refs: tuple[PublishedValue, ...] | None = None) -> list[PublishedValue]:
    """Published values for one campaign cell (optionally one metric), paper rows first.

    ``metric`` uses dlbench.csv names (test_accuracy, training_time, ...). Rows whose framework
    is '*' apply to every framework.
    """
    cell = workload_cell(workload)
    if cell is None:
        return []
    arch, dataset = cell
    env = device_env(device)
    rows = all_published() if refs is None else refs
    return [
        p for p in rows
        if p.matches(env, arch, dataset, framework) and (metric is None or p.metric == metric)
    ]


def campaign_studies(rows: Iterable[dict[str, Any]]) -> list[studies.StudyFolder]:
    """The studies whose workloads a campaign ran, in study order: the run table's `study` column, or for a run whose
    spec named none (an older kit's) the study folder that holds its workload's spec."""
    folders = studies.workload_files()
    named = set()
    for row in rows:
        study = row.get("study")
        if isinstance(study, str) and study:
            named.add(study)
        elif row.get("workload") in folders:
            named.add(folders[row["workload"]].parent.parent.name)
    return [found for found in studies.folders() if found.name in named]


def published_hardware(only: Iterable[studies.StudyFolder] | None = None) -> list[studies.Source]:
    """The rows of the studies' reference/SOURCES.md tables (file | source | hardware), in study order, so the
    report states them verbatim: every study's, or those of `only`."""
    return studies.sources() if only is None else [s for found in only for s in studies.sources(found)]
