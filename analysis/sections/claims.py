"""'What reproduced': the studies' claims (studies.claims()) this campaign decides, grouped by study, and one line
per claim it cannot decide naming the experiment that would; before them, per study, how many of the paper's findings
(analysis/findings.py) the claims check. Each claim's exact test, and each finding without a check with the reason,
come after the detail tables (claim_tests_section)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import studies
from analysis.claims import (
    INSUFFICIENT,
    NOT_EVIDENCE,
    NOT_IN_CAMPAIGN,
    VERDICTS,
    Claim,
    ClaimOutcome,
    ResultsTable,
    evaluate_claims,
)
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table, Tag
from analysis.eras import OUTSIDE_IMAGE, eras_of, outside_image_text
from analysis.findings import CHECKED, PENDING, Finding, all_findings, count
from campaign.study import known_studies, load_study


@dataclass(frozen=True)
class EraOutcome:
    """A claim's outcome on one era's runs (claims are tested on each era apart: never on pooled eras)."""

    era: str
    outcome: ClaimOutcome


def claim_scopes() -> dict[str, str]:
    """{the study name claims carry (Claim.study): its study file's name}, for every study file
    (studies/<name>/study.toml [study] claims): a claim of such a study is tested on the runs of that
    study's workloads (the run table's `study`, from the workload spec) and of workloads naming none."""
    return {load_study(name).claims: name for name in known_studies()}


def _foreign(rows: list[dict], scope: str | None) -> list[dict]:
    """Rows of another study's workloads than scope (none without a scope)."""
    return [r for r in rows if scope is not None and r.get("study") and r["study"] != scope]


def _scope_note(claim: Claim, foreign: list[dict]) -> str:
    """'; runs of fcn-r-mnist (study shi) are not DLBench's workloads: they do not count for its claims'."""
    by_study: dict[str, set[str]] = {}
    for r in foreign:
        by_study.setdefault(str(r["study"]), set()).add(r["workload"])
    names = "; ".join(f"{', '.join(sorted(wls))} (study {study})" for study, wls in sorted(by_study.items()))
    return f"; runs of {names} are not {claim.study}'s workloads: they do not count for its claims"


def claim_outcomes(ctx: ReportContext) -> list[EraOutcome]:
    """Every study's claim (studies.claims()) evaluated on each era's run table and epoch records, in
    claim order, paper era first; a claim of a study with a study file reads only the runs of its workloads
    (claim_scopes), and where that leaves it undecided its evidence names the runs left out. A verdict resting
    on paper-era runs outside the study's setup (another Python: a test environment) says so in its caveat."""
    scopes = claim_scopes()
    per_era = []
    for era in eras_of(ctx.campaign.rows):
        rows = [r for r in ctx.campaign.rows if r["era"] == era]
        by_id = {r["run_id"]: r for r in rows}
        tables: dict[str | None, ResultsTable] = {}
        outcomes = []
        for claim in studies.claims():
            scope = scopes.get(claim.study)
            foreign = _foreign(rows, scope)
            if scope not in tables:
                left_out = {r["run_id"] for r in foreign}
                tables[scope] = ResultsTable([r for r in rows if r["run_id"] not in left_out], ctx.epochs)
            (o,) = evaluate_claims(tables[scope], [claim])
            # A claim no campaign can decide yet (no decided_by) needs no word on which runs it left out.
            if foreign and o.result.verdict == INSUFFICIENT and claim.decided_by:
                o = replace(o, result=replace(o.result, evidence=o.result.evidence + _scope_note(claim, foreign)))
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
    # Claim order is study order (studies.folders(): each study.toml's order), so the rows come grouped by study.
    tested = _tested_findings()
    rows: list[list[Inline]] = [
        [eo.outcome.claim.id, eo.outcome.claim.study, *([eo.era] if by_era else []),
         _statement_cell(eo.outcome.claim, tested),
         _verdict_cell(eo.outcome), eo.outcome.result.evidence, ctx.id_links(eo.outcome.result.run_ids) or "—"]
        for eo in decided]
    blocks: list[Block] = [
        Heading(2, "What reproduced"),
        Para(f"This campaign decides {len(decided)} of the {len(outcomes)} claim verdicts of the studies "
             "(studies/*/claims.py), tested on its run table and the runs' "
             "per-epoch records" + (", on each software era's runs apart" if by_era else "") + "; they follow, "
             "grouped by study, and the claims it cannot decide are listed after them with the experiment that "
             f"would. {summary}. The exact tests: 'How each claim is tested'."),
    ]
    blocks += [Para("The papers' quantitative findings (studies/*/findings.toml) and how many the claims check; "
                    "the findings without a check, each with the reason, follow the claims' tests."),
               _findings_counts()]
    scoped = _scope_text(ctx.campaign.rows)
    if scoped:
        blocks.append(Para(scoped))
    if caveated:
        blocks.append(Para(f"{caveated} verdicts rest on {_caveat_reasons(decided)}: they show the checks run, and "
                           "are not evidence about the paper.", "note"))
    if rows:
        blocks.append(Table(["claim", "study", *(["era"] if by_era else []), "statement", "verdict", "evidence",
                             "runs"], rows, css_class="claims"))
    else:
        blocks.append(Para("This campaign decides none of the claims."))
    return blocks + _undecided_blocks(outcomes, by_era)


def _tested_findings() -> dict[tuple[str, str], list[Finding]]:
    """{(study folder, claim id): the findings its check tests}."""
    out: dict[tuple[str, str], list[Finding]] = {}
    for f in all_findings():
        for cid in f.checked_by:
            out.setdefault((f.study, cid), []).append(f)
    return out


def _statement_cell(claim: Claim, tested: dict[tuple[str, str], list[Finding]]) -> str:
    """The claim's statement and the paper's findings it tests, with where the paper states them:
    '... (findings S1, S2: concl. (1), Sec 4.1.2)'."""
    found = tested.get((claim_scopes().get(claim.study, ""), claim.id), [])
    if not found:
        return claim.statement
    where = ", ".join(dict.fromkeys(f.section for f in found))
    return f"{claim.statement} (finding{'s' if len(found) > 1 else ''} {', '.join(f.id for f in found)}: {where})"


def _findings_counts() -> Block:
    """Per study: 'N findings: k checked, m not checkable (reasons), p checkable, not checked yet (reasons)'."""
    counted = [(folder.name, count(folder)) for folder in studies.folders()]
    items: list[Inline] = [f"{load_study(name).title}: {c.text()}"
                           + ("" if c.coverage is None else f"; {c.coverage:.0%} of the checkable ones checked")
                           for name, c in counted if c.total]
    return Bullets(items) if items else Para("No study lists its findings (studies/*/findings.toml).")


def _caveat_reasons(decided: list[EraOutcome]) -> str:
    """What the caveated verdicts rest on: synthetic data or a non-paper profile (analysis.claims.caveat_for),
    paper-era versions outside their image (outside_image_text), or both; only the reasons some caveat gives."""
    caveats = [eo.outcome.caveat for eo in decided if eo.outcome.caveat]
    outside = any(OUTSIDE_IMAGE in c for c in caveats)
    setup = any(NOT_EVIDENCE in c for c in caveats)
    if outside and setup:
        return "synthetic data, a non-paper profile or paper-era versions outside their image"
    return "paper-era versions outside their image" if outside else "synthetic data or a non-paper profile"


def _scope_text(rows: list[dict]) -> str:
    """How the claims are scoped by study, naming the campaign's workloads by study ('' when no run names one)."""
    by_study: dict[str, set[str]] = {}
    for r in rows:
        if r.get("study"):
            by_study.setdefault(str(r["study"]), set()).add(r["workload"])
    if not by_study:
        return ""
    scopes = claim_scopes()
    here = "; ".join(f"{study}: {', '.join(sorted(wls))}" for study, wls in sorted(by_study.items()))
    cannot = sorted(claims for claims, study in scopes.items() if study not in by_study)
    return ("A study's claims are tested only on the runs of its own workloads (each workload spec names its "
            f"study; this campaign's runs are of {here})" + (
                f", so this campaign cannot decide the claims of {' or '.join(cannot)}: they are listed "
                "below with the runs left out" if cannot else "") + ". Claims of studies without a study file "
            "(studies/*/study.toml) read every run.")


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
    blocks: list[Block] = [Heading(2, "How each claim is tested"),
                           Bullets([f"{c.id} ({c.study}): {c.test}" for c in studies.claims()])]
    unchecked = [f for f in all_findings() if f.status != CHECKED]
    if unchecked:
        blocks += [Heading(3, "Findings without a check"),
                   Para(f"{len(unchecked)} of the studies' findings have no check: the reason is given for each "
                        "(studies/*/findings.toml; the text is the paper's, or the study notes' where marked)."),
                   Table(["study", "finding", "where", "text", "why not checked"],
                         [[load_study(f.study).claims, f.id, f.section,
                           f.text + ("" if f.text_from == "paper" else f" ({f.text_from})"),
                           f.reason + (" (checkable: not yet)" if f.status == PENDING else "")]
                          for f in unchecked])]
    return blocks
