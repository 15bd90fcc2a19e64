"""'Contention': runs whose training absorbed other load, and the verdicts resting on their timings."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT
from analysis.contention import (
    CONTENDED_CPU_MEAN_PCT,
    CONTENDED_CPU_SHARE_PCT,
    NOT_RECORDED,
    contended_runs,
    recorded,
    touched,
)
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table, Tag
from analysis.sections.claims import claim_outcomes
from analysis.stats import format_number


def contention_section(ctx: ReportContext) -> list[Block]:
    """The contended runs with their figures, the runs that did not record contention, and every timing or
    CPU-utilization verdict that used a contended run."""
    rows = ctx.campaign.rows
    missing = [r for r in rows if not recorded(r)]
    contended = contended_runs(rows)
    blocks: list[Block] = [
        Heading(2, "Contention: other load during training"),
        Para("Each second the monitor records the CPU used by processes outside the run's process tree (the "
             "system-wide active time less the run's and the monitor's own) and, on a GPU run, the other "
             "processes on its GPU. A run is marked contended when, over its training window, other processes "
             f"used more than {CONTENDED_CPU_SHARE_PCT:g} % of the machine's CPU capacity or more than "
             f"{CONTENDED_CPU_MEAN_PCT:g} % of one core on average, or when any other process held its GPU: its "
             "training time (and its CPU utilization, system-wide by DLBench's definition) then includes load "
             f"that was not the run's. {len(rows) - len(missing)} of {len(rows)} runs recorded it; "
             f"{len(contended)} {'is' if len(contended) == 1 else 'are'} contended."),
    ]
    if contended:
        blocks.append(Table(
            ["run", "framework", "workload", "device", "training time (s)", "other CPU (s)",
             "other CPU share of machine (%)", "other CPU (% of a core)", "other GPU processes", "why"],
            [[ctx.run_links([c.row]), c.row["framework"], c.row["workload"], c.row["device"],
              format_number(c.row.get("training_time_s")), format_number(c.row.get("other_cpu_s")),
              format_number(c.row.get("other_cpu_share_pct")), format_number(c.row.get("other_cpu_mean_pct")),
              _count(c.row.get("gpu_other_procs_max")), [Tag("contended", "contended"), "; ".join(c.reasons)]]
             for c in contended], css_class="contention"))
    if missing:
        blocks.append(Para(f"Contention {NOT_RECORDED} for {len(missing)} run{'s' if len(missing) > 1 else ''} "
                           "(a monitor.csv older than these figures): "
                           + ", ".join(r["run_id"] for r in missing) + ".", "note"))
    blocks += _verdicts(ctx, {c.row["run_id"] for c in contended})
    return blocks


def _count(value: float | None) -> str:
    return "—" if value is None else str(int(value))


def _verdicts(ctx: ReportContext, contended_ids: set[str]) -> list[Block]:
    """The load-sensitive claims whose verdicts used a contended run, with those runs (an insufficient-data
    verdict rests on no figure, so it is not listed)."""
    if not contended_ids:
        return []
    outcomes = claim_outcomes(ctx)
    by_era = len({eo.era for eo in outcomes}) > 1
    items: list[Inline] = []
    for eo in outcomes:
        claim, result = eo.outcome.claim, eo.outcome.result
        hit = touched(result.run_ids, contended_ids) if claim.load_sensitive and result.verdict != INSUFFICIENT else []
        if hit:
            era = f", {eo.era} era" if by_era else ""
            items.append([f"claim {claim.id} ({claim.study}{era}):", Tag(result.verdict, result.verdict),
                          f"rests on {len(hit)} contended run{'s' if len(hit) > 1 else ''}:", *ctx.id_links(hit)])
    if not items:
        return [Para("No timing or CPU-utilization verdict used a contended run.")]
    return [Heading(3, "Verdicts that rest on contended runs"),
            Para("These claims test training times or CPU utilization, and their verdicts used the runs below: "
                 "the verdict may change once those runs are repeated on a quiet machine."),
            Bullets(items)]
