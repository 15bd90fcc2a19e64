"""Paper era vs current era: one workload run with the study's exact versions and with today's.

A pair is a paper-era cell and a current-era cell of the same framework, workload, device, profile and
data source (the runner may differ: a paper-era image and a current-era environment are two setups of
the same experiment). Per pair: training time current/paper, the accuracy difference in percentage
points, and a line saying what changed with the framework versions, judged with the report's accuracy
tolerance (analysis.transfer.ACCURACY_TOLERANCE_PP). Also here: which paper-era runs ran on the study's
Python and which on another (a test environment, not the study's setup), and the command that makes
an era's missing runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analysis.claims import PAPER_DATA, PAPER_PROFILE
from analysis.reference import device_env
from analysis.runs import CURRENT_ERA, PAPER_ERA
from analysis.stats import Estimate, format_number, ratio
from analysis.summary import CellSummary
from analysis.transfer import ACCURACY_TOLERANCE_PP, accuracy_verdict, paired_cells, run_ids

# The cell keys both eras' cells share to be the same experiment (every cell key but era and runner).
ERA_PAIR_KEYS: tuple[str, ...] = ("workload", "framework", "device", "profile", "data_source")
# The eras in the order the report shows them: the study's versions first.
ERA_ORDER: tuple[str, ...] = (PAPER_ERA, CURRENT_ERA)


def eras_of(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The eras present among run-table rows, paper first, then current, then any other (sorted)."""
    present = {r["era"] for r in rows}
    return [e for e in ERA_ORDER if e in present] + sorted(present - set(ERA_ORDER))


# --- Side by side --------------------------------------------------------------------------

def _interval(est: Estimate) -> tuple[float, float] | None:
    return None if est.ci_low is None or est.ci_high is None else (est.ci_low, est.ci_high)


def intervals_overlap(a: Estimate, b: Estimate) -> bool | None:
    """Whether the two 95 % intervals overlap; None when either has none (fewer than two values)."""
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None:
        return None
    return ia[0] <= ib[1] and ib[0] <= ia[1]


@dataclass(frozen=True)
class EraPair:
    """A paper-era and a current-era cell of the same experiment (ERA_PAIR_KEYS)."""

    paper: CellSummary
    current: CellSummary

    @property
    def key(self) -> dict[str, str]:
        """The experiment both cells ran (ERA_PAIR_KEYS)."""
        return {k: self.paper.key[k] for k in ERA_PAIR_KEYS}

    @property
    def run_ids(self) -> list[str]:
        """Both cells' runs, paper era first, failed ones included."""
        return run_ids([self.paper, self.current])

    def means(self, column: str) -> tuple[float | None, float | None]:
        """(paper mean, current mean) of a run-table column over each cell's successful runs."""
        return self.paper.estimates[column].mean, self.current.estimates[column].mean

    @property
    def time_ratio(self) -> float | None:
        """Mean training time current / paper (below 1: the current versions train faster)."""
        paper, current = self.means("training_time_s")
        return ratio(current, paper)

    @property
    def accuracy_diff_pp(self) -> float | None:
        """Mean test accuracy current − paper, in percentage points."""
        paper, current = self.means("test_accuracy")
        return None if paper is None or current is None else current - paper

    def _unmeasured(self, column: str) -> str:
        eras = [era for era, cell in ((PAPER_ERA, self.paper), (CURRENT_ERA, self.current))
                if cell.estimates[column].mean is None]
        return f"no {' or '.join(eras)}-era value"

    def time_change(self) -> str:
        """'2.3× faster', '1.5× slower' or 'same training time' (current vs paper), with '(95 % intervals
        overlap)' when both eras have intervals and they overlap."""
        r = self.time_ratio
        if r is None:
            return f"training time not compared ({self._unmeasured('training_time_s')})"
        text = (f"{format_number(1 / r, 2)}× faster" if r < 1 else f"{format_number(r, 2)}× slower" if r > 1
                else "same training time")
        overlap = intervals_overlap(self.paper.estimates["training_time_s"], self.current.estimates["training_time_s"])
        return text + (" (95 % intervals overlap)" if overlap else "")

    def accuracy_change(self, tolerance_pp: float = ACCURACY_TOLERANCE_PP) -> str:
        """'accuracy within ±2 pp (+0.50 pp)' or 'accuracy outside ±2 pp (-3.10 pp)' (current − paper)."""
        paper, current = self.means("test_accuracy")
        if paper is None or current is None:
            return f"accuracy not compared ({self._unmeasured('test_accuracy')})"
        return "accuracy " + accuracy_verdict(current, paper, tolerance_pp)

    def change_text(self) -> str:
        """What changed with the framework versions, from the numbers: e.g. '2.3× faster, accuracy within
        ±2 pp (+0.50 pp)'."""
        return f"{self.time_change()}, {self.accuracy_change()}"


def era_pairs(cells: Sequence[CellSummary]) -> list[EraPair]:
    """Every (paper-era cell, current-era cell) of the same experiment, in sorted key order."""
    return [EraPair(p, c) for p, c in paired_cells(cells, ERA_PAIR_KEYS, lambda c: c.key["era"],
                                                   PAPER_ERA, CURRENT_ERA)]


def unpaired_cells(cells: Sequence[CellSummary]) -> list[CellSummary]:
    """The paper-era and current-era cells whose experiment the other era did not run."""
    paired = {id(c) for pair in era_pairs(cells) for c in (pair.paper, pair.current)}
    return [c for c in cells if c.key["era"] in ERA_ORDER and id(c) not in paired]


# --- Which Python the paper-era runs ran on ------------------------------------------------

@cache
def study_python() -> str:
    """The study's Python as 'major.minor' ('3.6'): what images/frameworks.toml says the paper-era
    images run ([paper] python)."""
    from images.build import era_packages  # host tooling: only the report needs it

    text = str(era_packages()[PAPER_ERA]["python"])
    found = re.match(r"\d+\.\d+", text)
    if found is None:
        raise ValueError(f"images/frameworks.toml [paper] python = {text!r} names no version")
    return found.group(0)


def minor_version(python: str) -> str:
    """'3.11.7' -> '3.11'."""
    return ".".join(python.split(".")[:2])


def on_study_python(row: dict[str, Any]) -> bool | None:
    """Whether a run ran on the study's Python (None when it recorded none)."""
    python = row.get("python")
    return None if not python else minor_version(str(python)) == study_python()


def outside_image_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper-era runs that ran on another Python than the study's: the paper's framework versions
    outside their image, a test environment rather than the study's setup."""
    return [r for r in rows if r.get("era") == PAPER_ERA and on_study_python(r) is False]


def outside_image_text(rows: Iterable[dict[str, Any]]) -> str:
    """'paper-era framework versions on Python 3.11, outside their image: a test environment' for the
    test-environment runs among rows ('' when there is none)."""
    found = outside_image_rows(rows)
    if not found:
        return ""
    versions = ", ".join(sorted({minor_version(str(r["python"])) for r in found}))
    return f"paper-era framework versions on Python {versions}, outside their image: a test environment"


# --- The command that makes an era's missing runs -----------------------------------------

def _targets() -> dict[str, dict]:
    from campaign.study import experiments  # host tooling: only the report's hint needs it

    return {name: {"device": e.device, "workloads": list(e.workloads)} for name, e in experiments().items()}


def _target_for(device: str, workload: str, folder: str, targets: dict[str, dict]) -> str | None:
    """The Makefile campaign target that runs the workload on the device, if any: the one named like the
    campaign folder (e.g. demo), else a <device>-<arch> one (cpu-cnn, gpu-lstm, ...)."""
    env = device_env(device)
    names = [folder, *(n for n in targets if n.startswith(f"{env}-"))]
    for name in names:
        target = targets.get(name) or {}
        if target.get("device") == env and workload in target.get("workloads", []):
            return name
    return None


def missing_era_commands(cells: Sequence[CellSummary]) -> list[str]:
    """One make command per group of unpaired cells that makes the other era's runs into the same
    campaign folder, e.g. 'make cpu-cnn ERA=paper FRAMEWORKS="pytorch"'."""
    targets = _targets()
    groups: dict[tuple[str, ...], tuple[set[str], set[str]]] = {}
    for cell in unpaired_cells(cells):
        k = cell.key
        missing = PAPER_ERA if k["era"] == CURRENT_ERA else CURRENT_ERA
        folder = Path(cell.rows[0]["run_dir"]).parent.name
        target = _target_for(k["device"], k["workload"], folder, targets) or ""
        fws, wls = groups.setdefault((target, k["device"], missing, k["profile"], k["data_source"], folder),
                                     (set(), set()))
        fws.add(k["framework"])
        wls.add(k["workload"])
    out = []
    for (target, device, era, profile, data, folder), (fws, wls) in sorted(groups.items()):
        parts = [f"make {target}" if target else f"make run DEVICE={device}", f"ERA={era}",
                 f'FRAMEWORKS="{" ".join(sorted(fws))}"']
        if not target or wls != set(targets[target]["workloads"]):
            parts.append(f'WORKLOADS="{" ".join(sorted(wls))}"')
        if profile != PAPER_PROFILE:  # the Makefile's defaults: PROFILE=paper DATA=real
            parts.append(f"PROFILE={profile}")
        if data not in PAPER_DATA and data != "unknown":  # generated data need no DATA=
            parts.append(f"DATA={data}")
        if folder != target:
            parts.append(f"CAMPAIGN={folder}")
        out.append(" ".join(parts))
    return out
