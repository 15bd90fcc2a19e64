"""'What reproduced': every study's claims (analysis.studies) tested on the campaign, and each claim's test."""

from __future__ import annotations

from collections import Counter

from analysis.claims import INSUFFICIENT, VERDICTS, ClaimOutcome, ResultsTable, evaluate_claims
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table, Tag
from analysis.studies import CLAIMS


def claim_outcomes(ctx: ReportContext) -> list[ClaimOutcome]:
    """Every study's claim (analysis.studies.CLAIMS) evaluated on the campaign's run table and epoch records."""
    return evaluate_claims(ResultsTable(ctx.campaign.rows, ctx.epochs), CLAIMS)


def _verdict_cell(outcome: ClaimOutcome) -> list[str | Tag]:
    cell: list[str | Tag] = [Tag(outcome.result.verdict, outcome.result.verdict)]
    if outcome.caveat:
        cell.append(f"({outcome.caveat})")
    return cell


def claims_section(ctx: ReportContext) -> list[Block]:
    """'What reproduced': one row per claim with verdict, evidence and runs, then each claim's exact test."""
    outcomes = claim_outcomes(ctx)
    by_study: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_study.setdefault(o.claim.study, Counter())[o.result.verdict] += 1
    summary = "; ".join(f"{study}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
                        for study, counts in by_study.items())
    caveated = sum(bool(o.caveat) for o in outcomes)
    rows: list[list[Inline]] = [
        [o.claim.id, o.claim.study, o.claim.statement, _verdict_cell(o), o.result.evidence,
         ctx.id_links(o.result.run_ids) or "—"]
        for o in outcomes]
    blocks: list[Block] = [
        Heading(2, "What reproduced"),
        Para("Each claim of DLBench (1-9, dlbench.md) and of the other studies (other-studies.md) is tested on "
             "this campaign's run table and the runs' per-epoch records. Verdicts: reproduced, not reproduced, "
             f"or {INSUFFICIENT} (too few runs, or the campaign does not hold the experiment). The exact test of "
             f"each claim follows the table. {summary}."),
    ]
    if caveated:
        blocks.append(Para(f"{caveated} verdicts rest on synthetic data or a non-paper profile: they show the "
                           "checks run, and are not evidence about the paper.", "note"))
    blocks += [Table(["claim", "study", "statement", "verdict", "evidence", "runs"], rows, css_class="claims"),
               Heading(3, "How each claim is tested"),
               Bullets([f"{o.claim.id} ({o.claim.study}): {o.claim.test}" for o in outcomes])]
    return blocks
