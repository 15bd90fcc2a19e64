"""'What reproduced': every study's claims (analysis.studies) tested on the campaign, and each claim's test."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from analysis.claims import INSUFFICIENT, VERDICTS, ClaimOutcome, ResultsTable, evaluate_claims
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table, Tag
from analysis.eras import eras_of, outside_image_text
from analysis.studies import CLAIMS


@dataclass(frozen=True)
class EraOutcome:
    """A claim's outcome on one era's runs (claims are tested on each era apart: never on pooled eras)."""

    era: str
    outcome: ClaimOutcome


def claim_outcomes(ctx: ReportContext) -> list[EraOutcome]:
    """Every study's claim (analysis.studies.CLAIMS) evaluated on each era's run table and epoch records, in
    claim order, paper era first. A verdict resting on paper-era runs outside the study's setup (another
    Python: a test environment) says so in its caveat."""
    per_era = []
    for era in eras_of(ctx.campaign.rows):
        rows = [r for r in ctx.campaign.rows if r["era"] == era]
        by_id = {r["run_id"]: r for r in rows}
        outcomes = []
        for o in evaluate_claims(ResultsTable(rows, ctx.epochs), CLAIMS):
            test_env = outside_image_text(by_id[i] for i in o.result.run_ids if i in by_id)
            if test_env:
                o = replace(o, caveat="; ".join(c for c in (o.caveat, f"{test_env}, not the study's setup") if c))
            outcomes.append(EraOutcome(era, o))
        per_era.append(outcomes)
    return [eo for claim_outcomes in zip(*per_era) for eo in claim_outcomes]


def _verdict_cell(outcome: ClaimOutcome) -> list[str | Tag]:
    cell: list[str | Tag] = [Tag(outcome.result.verdict, outcome.result.verdict)]
    if outcome.caveat:
        cell.append(f"({outcome.caveat})")
    return cell


def claims_section(ctx: ReportContext) -> list[Block]:
    """'What reproduced': one row per claim (and era) with verdict, evidence and runs, then each claim's exact
    test."""
    outcomes = claim_outcomes(ctx)
    by_era = len({eo.era for eo in outcomes}) > 1
    by_study: dict[str, Counter[str]] = {}
    for eo in outcomes:
        label = f"{eo.outcome.claim.study} ({eo.era} era)" if by_era else eo.outcome.claim.study
        by_study.setdefault(label, Counter())[eo.outcome.result.verdict] += 1
    summary = "; ".join(f"{study}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
                        for study, counts in by_study.items())
    caveated = sum(bool(eo.outcome.caveat) for eo in outcomes)
    rows: list[list[Inline]] = [
        [eo.outcome.claim.id, eo.outcome.claim.study, *([eo.era] if by_era else []), eo.outcome.claim.statement,
         _verdict_cell(eo.outcome), eo.outcome.result.evidence, ctx.id_links(eo.outcome.result.run_ids) or "—"]
        for eo in outcomes]
    blocks: list[Block] = [
        Heading(2, "What reproduced"),
        Para("Each claim of DLBench (1-9, dlbench.md) and of the other studies (other-studies.md) is tested on "
             "this campaign's run table and the runs' per-epoch records"
             + (", on each software era's runs apart" if by_era else "") + ". Verdicts: reproduced, not "
             f"reproduced, or {INSUFFICIENT} (too few runs, or the campaign does not hold the experiment). The exact "
             f"test of each claim follows the table. {summary}."),
    ]
    if caveated:
        blocks.append(Para(f"{caveated} verdicts rest on synthetic data, a non-paper profile or paper-era versions "
                           "outside their image: they show the checks run, and are not evidence about the paper.",
                           "note"))
    blocks += [Table(["claim", "study", *(["era"] if by_era else []), "statement", "verdict", "evidence", "runs"],
                     rows, css_class="claims"),
               Heading(3, "How each claim is tested"),
               Bullets([f"{c.id} ({c.study}): {c.test}" for c in CLAIMS])]
    return blocks
