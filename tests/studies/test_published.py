"""The invariant every claim is held to: a check fed its study's own published numbers (the study's published.py:
analysis/published.py) says "reproduced". A check that the paper's numbers fail is wrong, not the paper. A check the
published tables cannot feed names why (Claim.unfed), and must then say "insufficient data" on them, so that the
reason stays true."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

import studies
from analysis.claims import INSUFFICIENT, REPRODUCED, Claim
from analysis.published import PUBLISHED, published_table

TOY = Path(__file__).parent / "toy"


def _claims() -> list[tuple[studies.StudyFolder, Claim]]:
    return [(study, claim) for study in studies.folders()
            for claim in getattr(studies.module(study, studies.CLAIMS_MODULE), "CLAIMS", ())]


def violation(study: studies.StudyFolder, claim: Claim) -> str:
    """How the claim breaks the invariant on its study's published numbers ('' when it holds)."""
    table = published_table(study)
    result = claim.check(table) if table is not None else None
    if claim.unfed:
        if result is not None and result.verdict != INSUFFICIENT:
            return (f"{claim.id} says the published tables cannot feed it ({claim.unfed}), yet decides on them: "
                    f"{result.verdict}: {result.evidence}")
        return ""
    if result is None:
        return f"{claim.id}: {study.where()} has no published.py, and the claim names no reason (unfed)"
    if result.verdict != REPRODUCED:
        return f"{claim.id} on {study.name}'s published numbers: {result.verdict}: {result.evidence}"
    if not result.run_ids or not all(i.startswith(f"{PUBLISHED}:") for i in result.run_ids):
        return f"{claim.id}'s verdict names no published row it read"
    return ""


def _id(value: object) -> str:
    return value.name if isinstance(value, studies.StudyFolder) else str(value.id)


@pytest.mark.parametrize(("study", "claim"), _claims(), ids=_id)
def test_a_check_fed_the_studys_own_numbers_reproduces_them(study, claim):
    assert violation(study, claim) == ""


def test_the_claims_the_published_tables_cannot_feed_say_why():
    for _, claim in _claims():
        assert not claim.unfed or len(claim.unfed.split()) >= 3, f"{claim.id}: {claim.unfed!r} does not say why"


def test_the_invariant_fails_a_check_that_the_papers_numbers_fail(tmp_path, monkeypatch):
    """The toy study's check, fed its published 10 s, reproduces it; made strict (faster than published), the
    paper's own number fails it, and the invariant says so."""
    shutil.copytree(TOY, tmp_path / "toy")
    monkeypatch.setenv(studies.PATH_VAR, str(tmp_path))
    toy = studies.folder("toy")
    (claim,) = studies.module(toy, studies.CLAIMS_MODULE).CLAIMS
    assert violation(toy, claim) == ""
    claims_py = tmp_path / "toy" / "claims.py"
    claims_py.write_text(claims_py.read_text().replace('r["training_time_s"] <= limit', 'r["training_time_s"] < limit'))
    (strict,) = importlib.reload(studies.module(toy, studies.CLAIMS_MODULE)).CLAIMS
    assert violation(toy, strict).startswith("Toy-1 on toy's published numbers: not reproduced: 1 runs against")
