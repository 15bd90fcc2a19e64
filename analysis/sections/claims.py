"""'What reproduced': the studies' claims (analysis.studies) this campaign decides, grouped by study, and one line
per claim it cannot decide naming the experiment that would; each claim's exact test comes after the detail tables
(claim_tests_section)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from analysis.claims import (
    INSUFFICIENT,
    NOT_IN_CAMPAIGN,
    VERDICTS,
    ClaimOutcome,
    ResultsTable,
    evaluate_claims,
)
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
    """'What reproduced': the claims this campaign decides (one row per claim and era, grouped by study, with
    verdict, evidence and runs), then one line per claim it cannot decide naming the experiment that would."""
    outcomes = claim_outcomes(ctx)
    by_era = len({eo.era for eo in outcomes}) > 1
    by_study: dict[str, Counter[str]] = {}
    for eo in outcomes:
        label = f"{eo.outcome.claim.study} ({eo.era} era)" if by_era else eo.outcome.claim.study
        by_study.setdefault(label, Counter())[eo.outcome.result.verdict] += 1
    summary = "; ".join(f"{study}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
                        for study, counts in by_study.items())
    decided = [eo for eo in outcomes if eo.outcome.result.verdict != INSUFFICIENT]
    caveated = sum(bool(eo.outcome.caveat) for eo in decided)
    # Claim order is study order (analysis.studies.STUDIES), so the rows come grouped by study.
    rows: list[list[Inline]] = [
        [eo.outcome.claim.id, eo.outcome.claim.study, *([eo.era] if by_era else []), eo.outcome.claim.statement,
         _verdict_cell(eo.outcome), eo.outcome.result.evidence, ctx.id_links(eo.outcome.result.run_ids) or "—"]
        for eo in decided]
    blocks: list[Block] = [
        Heading(2, "What reproduced"),
        Para(f"This campaign decides {len(decided)} of the {len(outcomes)} claim verdicts of DLBench (1-9, "
             "dlbench.md) and the other studies (other-studies.md), tested on its run table and the runs' "
             "per-epoch records" + (", on each software era's runs apart" if by_era else "") + "; they follow, "
             "grouped by study, and the claims it cannot decide are listed after them with the experiment that "
             f"would. {summary}. The exact tests: 'How each claim is tested'."),
    ]
    if caveated:
        blocks.append(Para(f"{caveated} verdicts rest on synthetic data, a non-paper profile or paper-era versions "
                           "outside their image: they show the checks run, and are not evidence about the paper.",
                           "note"))
    if rows:
        blocks.append(Table(["claim", "study", *(["era"] if by_era else []), "statement", "verdict", "evidence",
                             "runs"], rows, css_class="claims"))
    else:
        blocks.append(Para("This campaign decides none of the claims."))
    return blocks + _undecided_blocks(outcomes, by_era)


def _undecided_blocks(outcomes: list[EraOutcome], by_era: bool) -> list[Block]:
    """One line per claim this campaign cannot decide (on any era where it cannot): the claim, the make
    target(s) whose runs would decide it (Claim.decided_by), and what this campaign lacks."""
    undecided: dict[str, list[EraOutcome]] = {}
    for eo in outcomes:
        if eo.outcome.result.verdict == INSUFFICIENT:
            undecided.setdefault(eo.outcome.claim.id, []).append(eo)
    if not undecided:
        return []
    n_eras = len({eo.era for eo in outcomes})
    items: list[Inline] = []
    for eos in undecided.values():
        claim = eos[0].outcome.claim
        eras = f", {'/'.join(eo.era for eo in eos)} era" if by_era and len(eos) < n_eras else ""
        reasons = {eo.era: eo.outcome.result.evidence.removeprefix(NOT_IN_CAMPAIGN) for eo in eos}
        distinct = set(reasons.values())
        here = distinct.pop() if len(distinct) == 1 else "; ".join(f"{e} era: {r}" for e, r in reasons.items())
        # Not runnable: what it needs is the experiment itself; runnable: why this campaign's runs fall short.
        tail = (f"decided by {claim.decided_by_text} (this campaign: {here})" if claim.decided_by
                else f"{claim.decided_by_text}: {here}")
        items.append([Tag(claim.id, "claim"), f"{claim.study}{eras}: {claim.statement} — {tail}."])
    return [Heading(3, "Claims this campaign cannot decide"),
            Para(f"{len(items)} claims: each line names the campaign that would decide it and what this one lacks."),
            Bullets(items)]


def claim_tests_section(ctx: ReportContext) -> list[Block]:
    """'How each claim is tested': every claim's exact test (its check's docstring), after the detail tables."""
    return [Heading(2, "How each claim is tested"),
            Bullets([f"{c.id} ({c.study}): {c.test}" for c in CLAIMS])]
