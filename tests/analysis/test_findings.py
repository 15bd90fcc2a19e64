"""Each study's findings (analysis/findings.py): read and counted from findings.toml, and a bad file refused in one
line naming the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import studies
from analysis.findings import CHECKED, NOT_CHECKABLE, count, load_findings
from bench.errors import UsageError

TOY = Path(__file__).resolve().parents[1] / "studies" / "toy"


@pytest.fixture
def toy(tmp_path, monkeypatch) -> studies.StudyFolder:
    shutil.copytree(TOY, tmp_path / "toy")
    monkeypatch.setenv(studies.PATH_VAR, str(tmp_path))
    return studies.folder("toy")


def test_the_toys_findings_are_read_and_counted(toy):
    found = load_findings(toy)
    assert [(f.id, f.status, f.checked_by, f.reason) for f in found] == [
        ("T1", CHECKED, ("Toy-1",), ""), ("T2", NOT_CHECKABLE, (), "needs Caffe, CNTK or Torch7")]
    counted = count(toy)
    assert (counted.total, counted.checked, counted.checkable, counted.coverage) == (2, 1, 1, 1.0)
    assert counted.text() == "2 findings: 1 checked, 1 not checkable (needs Caffe, CNTK or Torch7: 1)"


def _rewrite(toy: studies.StudyFolder, old: str, new: str) -> None:
    path = toy.path / "findings.toml"
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))


@pytest.mark.parametrize(("old", "new", "problem"), [
    ('checked_by = ["Toy-1"]', 'checked_by = ["Toy-2"]', "names claim(s) Toy-2 that"),
    ('checked_by = ["Toy-1"]', 'pending = "later"', "claim(s) Toy-1 of"),
    ('text_from = "paper"\n', 'text_from = "paper"\npending = "x"\n', "gives not_checkable and pending of"),
    ('text_from = "paper"', 'text_from = "memory"', "has text_from = 'memory'"),
    ('id = "T2"', 'id = "T1"', "names finding(s) T1 twice"),
    ('section = "Sec 2"', 'sektion = "Sec 2"', "has unknown key(s) sektion"),
    ('id = "T2"', 'id = "T2\n', "is not valid TOML"),
])
def test_a_bad_findings_file_is_refused_in_one_line(toy, old, new, problem):
    _rewrite(toy, old, new)
    with pytest.raises(UsageError) as err:
        load_findings(toy)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_every_kit_study_lists_its_findings_and_checks_most_checkable_ones():
    """Issue 30's bar: at least 80 % of the findings a kit of the six frameworks could check have a check."""
    for folder in studies.folders():
        counted = count(folder)
        assert counted.total, f"{folder.where()} lists no findings (findings.toml)"
        assert counted.coverage is None or counted.coverage >= 0.8, f"{folder.name}: {counted.text()}"
