"""Two data-driven checks DLBench's findings share, each built per finding from its words:

- ranking_check: "framework X is the fastest / slowest / most accurate / uses the least memory on these workloads".
  Reproduced when, in every (workload, device) group of the kit's runs where a named framework and at least one other
  measured the column, a named framework has the extreme mean.
- band_check: "these frameworks reach about the same accuracy (and those fall below them)". Reproduced when, in every
  such group, the frameworks of the band lie within a stated spread and the named outliers below the band.

Each built check carries its own docstring (the precise test with its thresholds and the sentence it rests on), so
the report prints what was tested. experiments_for names the study's make targets that run a check's workloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from analysis.claims import (
    ClaimResult,
    ResultsTable,
    best_frameworks,
    cell_mean,
    cell_run_ids,
    group_label,
    insufficient,
    measured_groups,
    verdict_for,
)
from analysis.reference import device_env
from analysis.stats import format_number
from analysis.summary import CellSummary
from campaign.study import load_study

STUDY = Path(__file__).resolve().parent.name

# The run-table columns a ranking or band reads: (what the evidence calls it, unit).
COLUMNS: dict[str, tuple[str, str]] = {
    "training_time_s": ("training time", "s"),
    "test_accuracy": ("test accuracy", "%"),
    "cpu_util_mean_pct": ("CPU use", "%"),
    "mem_mean_mb": ("memory", "MB"),
    "gpu_util_mean_pct": ("GPU use", "%"),
}

Check = Callable[[ResultsTable], ClaimResult]


def experiments_running(pairs: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The experiments of study.toml (make targets) that run any of the (device, workload) pairs, leaving out those
    not aggregated into the study (the demo): the targets whose campaigns decide a check of those runs."""
    wanted = set(pairs)
    return tuple(name for name, exp in load_study(STUDY).experiments.items()
                 if exp.aggregate and any((exp.device, w) in wanted for w in exp.workloads))


def experiments_for(devices: Iterable[str], workloads: Iterable[str]) -> tuple[str, ...]:
    """experiments_running of every workload on every device."""
    return experiments_running(product(devices, workloads))


def _framework(cell: CellSummary) -> str:
    return cell.key["framework"].lower()


def _groups(t: ResultsTable, column: str, devices: Sequence[str], workloads: Sequence[str]
            ) -> list[tuple[dict[str, str], list[CellSummary]]]:
    return [(g, cs) for g, cs in measured_groups(t, column)
            if device_env(g["device"]) in devices and g["workload"] in workloads]


# --- Extreme frameworks ---------------------------------------------------------------------

@dataclass(frozen=True)
class Extreme:
    """An expected extreme: on each of `workloads`, one of `frameworks` has the lowest (or highest) mean."""

    workloads: tuple[str, ...]
    frameworks: tuple[str, ...]
    lowest: bool

    def text(self) -> str:
        """'chainer/keras lowest on cnn-mnist, cnn-cifar10'."""
        return f"{'/'.join(self.frameworks)} {'lowest' if self.lowest else 'highest'} on {', '.join(self.workloads)}"


def _extreme_part(group: dict[str, str], members: list[CellSummary], column: str, rule: Extreme) -> tuple[bool, str]:
    best = best_frameworks(members, column, rule.lowest)
    holds = bool({b.lower() for b in best} & set(rule.frameworks))
    value = cell_mean(next(c for c in members if c.key["framework"] in best), column)
    what, unit = COLUMNS[column]
    return holds, (f"{group_label(group)}: {'lowest' if rule.lowest else 'highest'} {what} {'/'.join(sorted(best))} "
                   f"({format_number(value, 4)} {unit}) of {len(members)}; expected {'/'.join(rule.frameworks)}: "
                   + ("holds" if holds else "fails"))


def ranking_check(column: str, devices: Sequence[str], extremes: Sequence[Extreme], basis: str) -> Check:
    """A check that the named frameworks are the extreme ones (the module's docstring); `basis` quotes the sentence
    or table the expectation rests on, for the check's docstring."""
    what, _ = COLUMNS[column]
    workloads = tuple(dict.fromkeys(w for rule in extremes for w in rule.workloads))

    def check(t: ResultsTable) -> ClaimResult:
        outcomes, parts, used = [], [], []
        for group, members in _groups(t, column, devices, workloads):
            present = {_framework(c) for c in members}
            for rule in extremes:
                if group["workload"] in rule.workloads and present & set(rule.frameworks):
                    holds, part = _extreme_part(group, members, column, rule)
                    outcomes.append(holds)
                    parts.append(part)
                    used += members
        if not outcomes:
            return insufficient(f"no {'/'.join(devices)} group of {', '.join(workloads)} where a named framework and "
                                f"another measured {what}", cell_run_ids(c for _, cs in _groups(
                                    t, column, devices, workloads) for c in cs))
        return ClaimResult(verdict_for(all(outcomes)), f"{sum(outcomes)} of {len(outcomes)} expectations hold: "
                           + "; ".join(parts), cell_run_ids({id(c): c for c in used}.values()))

    check.__doc__ = (
        f"{basis} Test: in every {'/'.join(devices)} (workload, device) group of {', '.join(workloads)} where at "
        f"least 2 frameworks have a mean {what} ({column}) and one of the named frameworks is among them, find the "
        f"framework(s) with the extreme mean (ties all count). Expected: {'; '.join(r.text() for r in extremes)}. "
        "Reproduced when every such expectation holds; not reproduced when any fails. Insufficient data without such "
        "a group.")
    return check


# --- Agreement within a band ------------------------------------------------------------------

def _band_part(group: dict[str, str], members: list[CellSummary], spread_pp: float, below: Sequence[str]
               ) -> tuple[bool, str] | None:
    band = [c for c in members if _framework(c) not in below]
    if len(band) < 2:
        return None
    means = [cell_mean(c, "test_accuracy") for c in band]
    spread, floor = max(means) - min(means), min(means)
    holds = spread <= spread_pp
    text = (f"{group_label(group)}: {len(band)} frameworks within {spread:.2f} pp ({format_number(floor, 4)}-"
            f"{format_number(max(means), 4)} %; spread ≤ {spread_pp:g} pp: {'holds' if holds else 'fails'})")
    for cell in (c for c in members if _framework(c) in below):
        value = cell_mean(cell, "test_accuracy")
        holds &= value < floor
        text += (f"; {cell.key['framework']} {format_number(value, 4)} % below the band: "
                 + ("holds" if value < floor else "fails"))
    return holds, text


def band_check(devices: Sequence[str], workloads: Sequence[str], spread_pp: float, below: Sequence[str],
               basis: str) -> Check:
    """A check that the frameworks other than `below` agree on test accuracy within spread_pp percentage points and
    that each of `below` lies under them (the module's docstring); `basis` as for ranking_check."""
    def check(t: ResultsTable) -> ClaimResult:
        outcomes, parts, used = [], [], []
        for group, members in _groups(t, "test_accuracy", devices, workloads):
            found = _band_part(group, members, spread_pp, below)
            if found is not None:
                outcomes.append(found[0])
                parts.append(found[1])
                used += members
        if not outcomes:
            return insufficient(f"no {'/'.join(devices)} group of {', '.join(workloads)} with >= 2 frameworks' test "
                                "accuracy" + (f" besides {'/'.join(below)}" if below else ""))
        return ClaimResult(verdict_for(all(outcomes)), f"{sum(outcomes)} of {len(outcomes)} groups hold: "
                           + "; ".join(parts), cell_run_ids(used))

    outliers = (f", and each of {'/'.join(below)} (where run) has a mean below the band's lowest" if below else "")
    check.__doc__ = (
        f"{basis} Test: in every {'/'.join(devices)} (workload, device) group of {', '.join(workloads)}, the band is "
        f"every framework with a mean test accuracy{' except ' + '/'.join(below) if below else ''}; a group with at "
        f"least 2 in the band holds when the band's spread (highest − lowest mean) is at most {spread_pp:g} "
        f"percentage points{outliers}. Reproduced when every such group holds; not reproduced when any fails. "
        "Insufficient data without such a group.")
    return check
