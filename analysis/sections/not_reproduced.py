"""Published numbers with no measured counterpart: in this campaign's scope (with the reason) and outside it."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.reference import METRIC_COLUMNS, PublishedValue, all_published, device_env, workload_cell
from analysis.summary import CellSummary


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
        return "metric not computed by this analysis yet"
    if any(c.estimates[METRIC_COLUMNS[p.metric]].n > 0 for c in cells):
        return None
    if not any(c.ok_rows for c in cells):
        return "every run failed"
    return "not measured (no monitor data for it)"


def not_reproduced_section(ctx: ReportContext) -> list[Block]:
    """Published numbers with no measured counterpart: in scope (with the reason) and out of scope."""
    measured = _measured_cells(ctx)
    scope = {(env, arch, ds) for env, arch, ds, _ in measured}
    in_scope: list[list[Inline]] = []
    out_of_scope: dict[tuple[str, str, str], list[PublishedValue]] = {}
    for p in all_published():
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
            f"({', '.join(sorted({p.metric for p in ps}))})"
            for (env, arch, ds), ps in sorted(out_of_scope.items())]))
    blocks.append(Para("The paper's claims are judged in 'What reproduced' and its statistical tests in "
                       "'Statistics as the paper did them'."))
    return blocks
