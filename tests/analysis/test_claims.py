"""The claim machinery of analysis.claims and the list of every study's claims (studies.claims()).

Each study's checks are tested on small hand-made result tables in tests/studies/<study>/test_claims.py.
"""

from __future__ import annotations

import pytest

import studies
from analysis.claims import (
    INSUFFICIENT,
    REPRODUCED,
    VERDICTS,
    ClaimResult,
    ResultsTable,
    caveat_for,
    evaluate_claims,
)
from tests.resultrows import row


def test_registry_has_the_nine_dlbench_claims_and_documented_checks() -> None:
    ids = [claim.id for claim in studies.claims()]
    assert ids[:9] == [str(i) for i in range(1, 10)] and len(set(ids)) == len(ids)
    assert {claim.study for claim in studies.claims()} >= {"DLBench", "Wu et al.", "Shi et al."}
    for claim in studies.claims():
        text = claim.test.lower()
        assert "reproduced when" in text or "not in this campaign" in text, claim.id


def test_every_claim_gives_a_verdict_on_an_empty_table() -> None:
    outcomes = evaluate_claims(ResultsTable([], {}), studies.claims())
    assert len(outcomes) == len(studies.claims())
    assert all(o.result.verdict == INSUFFICIENT and not o.caveat for o in outcomes)
    with pytest.raises(ValueError):
        ClaimResult("probably", "")


def test_caveat_marks_synthetic_data_and_quick_profile() -> None:
    assert caveat_for([row("a", "cnn-mnist")]) == ""
    assert caveat_for([row("a", "cnn-mnist", profile="quick", data_source="synthetic")]) == \
        "on synthetic data / quick profile: not evidence about the paper"
    rows = [row("keras", "cnn-mnist", acc=99, profile="quick"), row("pytorch", "cnn-mnist", acc=98, profile="quick"),
            row("keras", "lstm-imdb", acc=85, profile="quick"), row("pytorch", "lstm-imdb", acc=88, profile="quick")]
    (first,) = [o for o in evaluate_claims(ResultsTable(rows), studies.claims()) if o.claim.id == "1"]
    assert first.result.verdict == REPRODUCED  # still computed ...
    assert first.caveat == "on quick profile: not evidence about the paper"  # ... but flagged


def test_verdicts_are_the_three_words() -> None:
    assert VERDICTS == ("reproduced", "not reproduced", "insufficient data")
