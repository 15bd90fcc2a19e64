"""The machinery that tests the studies' claims on a campaign's results table.

Each study's claims live in its folder's claims.py, studies/<study>/claims.py (one small check function per claim,
listed in that module's CLAIMS with the claim's words); studies.claims() is all of them in report order.
This module holds what they share: the table a check reads, the verdicts, the helpers and the checks
several studies use, and evaluate_claims. Each check reads only the run table (and the runs'
per-epoch records) and returns a verdict — reproduced, not reproduced or insufficient data — with the
numbers behind it and the runs it used. A check's docstring is its precise test; the report prints it
verbatim, so the code and the text cannot disagree.

Verdicts on synthetic data or a non-paper profile are still computed (they exercise the check) but
carry a caveat: they say nothing about the paper.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from analysis.runs import CURRENT_ERA
from analysis.stats import INSUFFICIENT_DATA, format_number, linear_fit
from analysis.summary import CellSummary, summarize
from analysis.transfer import GROUP_KEYS, Speedup, framework_groups

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INSUFFICIENT = INSUFFICIENT_DATA
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INSUFFICIENT)

# "About an order of magnitude": the nearest power of ten is 10 or more, i.e. speedup >= 10**0.5.
ORDER_OF_MAGNITUDE_LOW = 10**0.5
# Claim 8: cumulative training time vs epoch is a straight line at least this well.
LINEAR_R2_MIN = 0.99
MIN_EPOCHS_FOR_LINEARITY = 3

PAPER_PROFILE = "paper"
REAL_DATA = "real"
# Data a verdict may speak about the paper from: the study's real datasets, and random inputs made in the
# run where the study itself timed its networks on random inputs (bench/generated.py: Shi's FCN-S, AlexNet-S).
PAPER_DATA = (REAL_DATA, "generated")

# What the report says of a claim whose experiment no make target runs yet (Claim.decided_by empty).
NOT_RUNNABLE = "not runnable in the kit yet (issue: study specs)"
# How the evidence of a claim whose experiment the campaign does not hold begins (not_in_campaign).
NOT_IN_CAMPAIGN = "not in this campaign: "


# --- The table the checks read -------------------------------------------------------------

@dataclass
class ResultsTable:
    """The run table (runs.RUN_COLUMNS rows, failed runs included) and each run's epoch records."""

    rows: list[dict[str, Any]]
    epochs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    cells: list[CellSummary] = field(init=False)

    def __post_init__(self) -> None:
        self.cells = summarize(self.rows)

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the runs that finished."""
        return [r for r in self.rows if r["status"] == "ok"]


@dataclass(frozen=True)
class ClaimResult:
    """A check's verdict, the numbers behind it, and the runs it read."""

    verdict: str
    evidence: str
    run_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass(frozen=True)
class Claim:
    """A published claim and the function that tests it."""

    id: str
    study: str
    statement: str
    check: Callable[[ResultsTable], ClaimResult]
    # The check reads figures that other load on the machine changes: training or epoch times, or CPU
    # utilization (system-wide by DLBench's definition); the report names such verdicts when they rest
    # on a contended run (analysis.contention).
    load_sensitive: bool = False
    # The make targets (experiments of studies/*/study.toml) whose campaigns, analysed together, hold the experiment
    # that decides the claim; empty when the kit cannot run that experiment yet.
    decided_by: tuple[str, ...] = ()
    # Why the study's own published tables cannot feed the check (analysis/published.py), e.g. "needs per-epoch
    # times: the paper prints totals"; empty when they can, and then the check fed them must say reproduced (the
    # invariant tests/studies/test_published.py holds every claim to; a check the paper's numbers fail is wrong).
    unfed: str = ""

    @property
    def test(self) -> str:
        """The check's docstring as one paragraph: the precise test, as the report prints it."""
        return " ".join((inspect.getdoc(self.check) or "").split())

    @property
    def decided_by_text(self) -> str:
        """The experiment that would decide the claim, as the report names it: '`make cpu-cnn`',
        '`make cpu-cnn` and `make gpu-cnn`, analysed together', or NOT_RUNNABLE."""
        if not self.decided_by:
            return NOT_RUNNABLE
        targets = " and ".join(f"`make {t}`" for t in self.decided_by)
        return targets + (", analysed together" if len(self.decided_by) > 1 else "")


@dataclass(frozen=True)
class ClaimOutcome:
    """A claim with its result and, where it rests on synthetic data or a non-paper profile, a caveat."""

    claim: Claim
    result: ClaimResult
    caveat: str = ""


# --- Helpers -------------------------------------------------------------------------------

def cell_run_ids(cells: Iterable[CellSummary]) -> tuple[str, ...]:
    """The ids of the cells' successful runs: the runs a check used."""
    return tuple(r["run_id"] for c in cells for r in c.ok_rows)


def group_label(group: dict[str, str]) -> str:
    """'workload/device' of a framework group, as the evidence names it ('workload/device/paper' for a
    group of another era than the current one)."""
    era = group.get("era", CURRENT_ERA)
    return f"{group['workload']}/{group['device']}" + ("" if era == CURRENT_ERA else f"/{era}")


def cell_mean(cell: CellSummary, column: str) -> float | None:
    """The cell's mean of a run-table column over its successful runs (None when unmeasured)."""
    return cell.estimates[column].mean


def measured_groups(t: ResultsTable, *columns: str, min_frameworks: int = 2
                    ) -> list[tuple[dict[str, str], list[CellSummary]]]:
    """Groups (workload, device, runner, profile, data) with >= min_frameworks cells measuring every column."""
    out = []
    for _, members in framework_groups(t.cells).items():
        measured = [c for c in members if all(cell_mean(c, col) is not None for col in columns)]
        if len(measured) >= min_frameworks:
            out.append(({k: measured[0].key[k] for k in GROUP_KEYS}, measured))
    return out


def insufficient(why: str, run_ids: Iterable[str] = ()) -> ClaimResult:
    """An insufficient-data result saying why, with the runs that were looked at."""
    return ClaimResult(INSUFFICIENT, why, tuple(run_ids))


def not_in_campaign(needs: str) -> ClaimResult:
    """Insufficient data because the campaign does not hold the experiment the claim needs."""
    return ClaimResult(INSUFFICIENT, f"{NOT_IN_CAMPAIGN}needs {needs}")


def verdict_for(holds: bool) -> str:
    """Reproduced when the claim holds on the data, not reproduced otherwise."""
    return REPRODUCED if holds else NOT_REPRODUCED


def best_frameworks(cells: Sequence[CellSummary], column: str, lowest: bool) -> set[str]:
    """Frameworks with the best mean (ties all count as best)."""
    values = {c.key["framework"]: cell_mean(c, column) for c in cells}
    top = min(values.values()) if lowest else max(values.values())
    return {fw for fw, v in values.items() if v == top}


def speedup_text(s: Speedup) -> str:
    """'framework workload N×' for a GPU/CPU speedup in the evidence."""
    return f"{s.cpu.key['framework']} {s.cpu.key['workload']} {format_number(s.value)}×"


# --- Checks several studies make -----------------------------------------------------------

def no_single_winner(t: ResultsTable, column: str, lowest: bool, unit: str, what: str) -> ClaimResult:
    """Reproduced when no framework has the best mean of column in every (workload, device) group
    (DLBench claim 1 on accuracy)."""
    groups = measured_groups(t, column)
    workloads = {g["workload"] for g, _ in groups}
    cells = [c for _, cs in groups for c in cs]
    if len(groups) < 2:
        return insufficient(f"{len(groups)} (workload, device) group(s) with >= 2 frameworks' {what}; "
                            "needs >= 2", cell_run_ids(cells))
    if column == "test_accuracy" and len(workloads) < 2:
        return insufficient(f"only workload {', '.join(workloads)} has >= 2 frameworks' {what}; "
                            "needs >= 2 workloads", cell_run_ids(cells))
    values = [(group_label(group), {c.key["framework"]: cell_mean(c, column) for c in members})
              for group, members in groups]
    return winner_result(values, lowest, unit, cell_run_ids(cells))


def winner_result(groups: Sequence[tuple[str, dict[str, float]]], lowest: bool, unit: str,
                  run_ids: Iterable[str]) -> ClaimResult:
    """Over groups (label, {framework: value}) of >= 2 frameworks each: reproduced when no framework has the
    best value (lowest or highest; ties all count as best) in every group, not reproduced when one has."""
    winners = []
    parts = []
    for label, values in groups:
        top = min(values.values()) if lowest else max(values.values())
        best = {fw for fw, v in values.items() if v == top}
        winners.append(best)
        parts.append(f"{label}: best {'/'.join(sorted(best))} ({format_number(top, 4)} {unit}) of {len(values)}")
    everywhere = set.intersection(*winners)
    tail = f"; {'/'.join(sorted(everywhere))} best in every group" if everywhere else "; no framework best everywhere"
    return ClaimResult(verdict_for(not everywhere), "; ".join(parts) + tail, tuple(run_ids))


def epoch_linearity(t: ResultsTable) -> ClaimResult:
    """Reproduced when every successful run's cumulative training time against epoch number is a straight
    line with R² >= LINEAR_R2_MIN (DLBench claim 8, Wu et al. claim 1)."""
    fits = []
    for row in t.ok_rows:
        records = sorted(t.epochs.get(row["run_id"], []), key=lambda r: r["epoch"])
        if len(records) < MIN_EPOCHS_FOR_LINEARITY:
            continue
        cumulative = list(accumulate(float(r["epoch_time_s"]) for r in records))
        fit = linear_fit([float(r["epoch"]) for r in records], cumulative, MIN_EPOCHS_FOR_LINEARITY)
        if fit.r_squared is not None:
            fits.append((row, fit))
    if not fits:
        return insufficient(f"no successful run with >= {MIN_EPOCHS_FOR_LINEARITY} epochs",
                            (r["run_id"] for r in t.ok_rows))
    low = [(row, fit) for row, fit in fits if fit.r_squared < LINEAR_R2_MIN]
    worst_row, worst = min(fits, key=lambda rf: rf[1].r_squared)
    evidence = (f"{len(fits) - len(low)} of {len(fits)} runs linear (R² ≥ {LINEAR_R2_MIN}); lowest R² "
                f"{worst.r_squared:.4f} ({worst_row['framework']} {worst_row['workload']} repeat "
                f"{worst_row['repeat']}, {worst.n} epochs)")
    if low:
        evidence += "; below: " + ", ".join(f"{r['run_id']} ({f.r_squared:.4f})" for r, f in low)
    return ClaimResult(verdict_for(not low), evidence, tuple(r["run_id"] for r, _ in fits))


# --- Evaluation ----------------------------------------------------------------------------

# How a caveat ends that says a verdict's runs are not the paper's setup (caveat_for).
NOT_EVIDENCE = "not evidence about the paper"


def caveat_for(rows: Iterable[dict[str, Any]]) -> str:
    """'on synthetic data / quick profile: not evidence about the paper' when any row is either; else ''."""
    rows = list(rows)
    parts = []
    if any(r.get("data_source") not in PAPER_DATA for r in rows):
        parts.append("synthetic data" if any(r.get("data_source") == "synthetic" for r in rows)
                     else "data of unknown origin")
    profiles = sorted({str(r.get("profile")) for r in rows if r.get("profile") != PAPER_PROFILE})
    if profiles:
        parts.append(f"{'/'.join(profiles)} profile")
    return f"on {' / '.join(parts)}: {NOT_EVIDENCE}" if parts else ""


def evaluate_claims(table: ResultsTable, claims: Sequence[Claim]) -> list[ClaimOutcome]:
    """Run every claim's check on the table (e.g. studies.claims()); each outcome carries the caveat
    of the runs it used."""
    by_id = {r["run_id"]: r for r in table.rows}
    out = []
    for claim in claims:
        result = claim.check(table)
        used = [by_id[i] for i in result.run_ids if i in by_id]
        out.append(ClaimOutcome(claim, result, caveat_for(used) if used else ""))
    return out
