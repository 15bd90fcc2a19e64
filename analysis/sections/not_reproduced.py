"""Published numbers with no measured counterpart: in this campaign's scope (with the reason) and outside it; and
every row of the published files, either compared somewhere or listed with why it is not comparable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

import studies
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.published import PUBLISHED_MODULE, RowRule
from analysis.reference import (
    DLBENCH_CSV,
    METRIC_COLUMNS,
    ORIGIN_PAPER,
    ORIGINAL_REPOS_CSV,
    PublishedValue,
    all_published,
    campaign_studies,
    device_env,
    original_repos_values,
    published_hardware,
    read_rows,
    workload_cell,
)
from analysis.summary import CellSummary

# Where the reference table ('Comparison with the published numbers', analysis/reference.py) compares a row.
REFERENCE_TABLE = "the reference table ('Comparison with the published numbers')"


def row_rules() -> list[RowRule]:
    """Every study's ROW_RULES (its published.py: analysis.published.RowRule), in study order: the published rows the
    reference table does not read, by kind (columns' values, never a row's index, so a new row of a kind is covered);
    the first rule matching a row says where it is compared or why it cannot be. Rows of a study with its own report
    section or published table and no rule are compared there (_derived)."""
    return [rule for study in studies.folders()
            for rule in getattr(studies.module(study, PUBLISHED_MODULE), "ROW_RULES", ())]


@dataclass(frozen=True)
class RowReading:
    """How one row of a published file is read: where it is compared, or why it is not comparable (one of them,
    both empty when nothing says)."""

    study: str
    file: str
    line: int  # the row's line in the CSV file (the header is line 1)
    row: dict[str, str]
    compared_by: str
    reason: str
    rule: RowRule | None  # the study's ROW_RULES entry that says it, None where it is derived

    @property
    def shown(self) -> bool:
        """Whether the report lists the row: a rule names it, or no comparison reads it (it names its own reader
        otherwise: the reference table or its study's section)."""
        return self.rule is not None or not self.compared_by


def _kit_cells() -> set[tuple[str, str]]:
    # (arch, dataset) of every workload the kit has, as dlbench.csv names them.
    return {cell for name in studies.workload_files() if (cell := workload_cell(name))}


def _derived(source: studies.Source, row: dict[str, str], kit: set[tuple[str, str]]) -> tuple[str, str]:
    """Where a row no rule names is compared, or why not: the reference table reads DLBench's metrics of the kit's
    workloads; a study's own section or published table compares the rest of its files."""
    if source.file == DLBENCH_CSV.name:
        if row["metric"] not in METRIC_COLUMNS:
            return "", ""  # a metric the reference table does not compare: a study's ROW_RULES must say what does
        if (row["arch"].lower(), row["dataset"].lower()) not in kit:
            return "", f"no workload of the kit runs {row['arch']}/{row['dataset']}"
        return REFERENCE_TABLE, ""
    if source.file == ORIGINAL_REPOS_CSV.name:
        return (REFERENCE_TABLE, "") if original_repos_values(row, row["file_path"]) else ("", "")
    found = studies.folder(source.study)
    readers = ([f"the {source.study} section"] if studies.module(found, "section") else []) + (
        [f"{source.study}'s claim checks (its published table)"]
        if (found.path / f"{PUBLISHED_MODULE}.py").is_file() else [])
    return " and ".join(readers), ""


def reading(sources: Iterable[studies.Source]) -> list[RowReading]:
    """Every row of these published files (studies.Source: each study's reference/SOURCES.md rows), with where it
    is compared or why it is not comparable: ROW_RULES first, then what the kit derives (_derived)."""
    kit, rules = _kit_cells(), row_rules()
    out = []
    for source in sources:
        for line, row in enumerate(read_rows(studies.reference_file(source.file)), 2):
            rule = next((r for r in rules if r.matches(source.file, row)), None)
            compared_by, reason = (rule.compared_by, rule.reason) if rule else _derived(source, row, kit)
            out.append(RowReading(source.study, source.file, line, row, compared_by, reason, rule))
    return out


def _rule_for(p: PublishedValue) -> RowRule | None:
    # A dlbench.csv value's rule, as its row would match it.
    row = {"env": p.env, "arch": p.arch, "dataset": p.dataset, "framework": p.framework, "metric": p.metric}
    if p.origin != ORIGIN_PAPER:
        return None
    return next((r for r in row_rules() if r.matches(DLBENCH_CSV.name, row)), None)


def _no_workload(values: Sequence[PublishedValue]) -> str:
    # Why a workload was not attempted, where a rule says the kit has none (': no Faster R-CNN workload (issue 31)').
    reasons = {rule.reason for p in values if (rule := _rule_for(p)) and dict(rule.where).keys() == {"arch"}}
    return f": {'; '.join(sorted(reasons))}" if reasons else ""


def _lines_text(lines: Sequence[int]) -> str:
    """'lines 3-5, 9' from [3, 4, 5, 9]."""
    runs = [[n for _, n in g] for _, g in groupby(enumerate(lines), lambda item: item[1] - item[0])]
    spans = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    return ("line " if len(lines) == 1 else "lines ") + spans


def _measured_cells(ctx: ReportContext) -> dict[tuple[str, str, str, str], list[CellSummary]]:
    # (env, arch, dataset, framework) -> the campaign's cells that measure it.
    out: dict[tuple[str, str, str, str], list[CellSummary]] = {}
    for cell in ctx.cells:
        wc = workload_cell(cell.key["workload"])
        if wc:
            key = (device_env(cell.key["device"]), *wc, cell.key["framework"].lower())
            out.setdefault(key, []).append(cell)
    return out


def _why_unmeasured(p: PublishedValue, ctx: ReportContext,
                    measured: dict[tuple[str, str, str, str], list[CellSummary]]) -> str | None:
    """Why a published value has no measured counterpart, or None if it has one."""
    cells = [c for (env, arch, ds, fw), cs in measured.items() if p.matches(env, arch, ds, fw) for c in cs]
    if not cells:
        return "framework not run in this campaign"
    if p.metric not in METRIC_COLUMNS:
        rule = _rule_for(p)
        return (rule.compared_by or rule.reason) if rule else "metric not computed by this analysis yet"
    if any(c.estimates[METRIC_COLUMNS[p.metric]].n > 0 for c in cells):
        return None
    if not any(c.ok_rows for c in cells):
        return "every run failed"
    return "not measured (no monitor data for it)"


def _unread_section(sources: list[studies.Source]) -> list[Block]:
    """The rows of the campaign's studies' published files that no comparison of this report reads (with where they
    are compared instead, or why they cannot be), grouped by file and reason."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for r in reading(sources):
        if r.shown:
            why = r.reason or ("" if r.compared_by else "none given: nothing reads it")
            groups.setdefault((r.file, r.compared_by, why), []).append(r.line)
    rows: list[list[Inline]] = [[file, _lines_text(lines), compared_by or "—", reason or "—"]
                                for (file, compared_by, reason), lines in groups.items()]
    if not rows:
        return []
    return [Para("Rows of these studies' published files that the reference table does not compare: where they are "
                 "compared instead, or why they are not comparable (published, not comparable because ...):"),
            Table(["file", "rows", "where compared", "not comparable because"], rows)]


def not_reproduced_section(ctx: ReportContext) -> list[Block]:
    """Published numbers with no measured counterpart: in scope (with the reason) and out of scope; and the rows of
    the campaign's studies' published files that the reference table does not compare."""
    measured = _measured_cells(ctx)
    scope = {(env, arch, ds) for env, arch, ds, _ in measured}
    in_scope: list[list[Inline]] = []
    out_of_scope: dict[tuple[str, str, str], list[PublishedValue]] = {}
    sources = published_hardware(campaign_studies(ctx.campaign.rows))
    compares = {DLBENCH_CSV.name, ORIGINAL_REPOS_CSV.name} & {s.file for s in sources}
    # The reference table's values (DLBench's files) only where the campaign ran DLBench's workloads.
    for p in all_published() if compares else ():
        if any(p.matches(env, arch, ds, p.framework) for env, arch, ds in scope):
            why = _why_unmeasured(p, ctx, measured)
            if why:
                in_scope.append([p.env, f"{p.arch}/{p.dataset}", p.framework, p.metric,
                                 p.value_text, p.qualifier,
                                 p.source_text, why])
        else:
            out_of_scope.setdefault((p.env, p.arch, p.dataset), []).append(p)
    blocks: list[Block] = [Heading(2, "What was not reproduced / not measured")]
    failed_cells = [c for c in ctx.cells if not c.ok_rows]
    if failed_cells:
        blocks.append(Para("Not reproduced — every run of these cells failed:"))
        blocks.append(Bullets([f"{c.key['workload']} / {c.key['framework']} ({c.key['era']} era) on "
                               f"{c.key['device']} ({c.key['runner']}): {c.failure_causes()}" for c in failed_cells]))
    if in_scope:
        blocks.append(Para("Published numbers for this campaign's workloads and devices with no measured "
                           "counterpart here:"))
        blocks.append(Table(["env", "workload", "framework", "metric", "published", "qualifier", "source",
                             "why"], in_scope))
    else:
        blocks.append(Para("Every published number for this campaign's workloads and devices has a measured "
                           "counterpart."))
    if out_of_scope:
        blocks.append(Para("Published numbers outside this campaign's workloads and devices "
                           "(not attempted):"))
        blocks.append(Bullets([
            f"{env} {arch}/{ds}: {len(ps)} number{'s' if len(ps) > 1 else ''} "
            f"({', '.join(sorted({p.metric for p in ps}))})" + _no_workload(ps)
            for (env, arch, ds), ps in sorted(out_of_scope.items())]))
    blocks += _unread_section(sources)
    blocks.append(Para("The paper's claims are judged in 'What reproduced' and its statistical tests in "
                       "'Statistics as the paper did them'."))
    return blocks
