"""Each study's findings: every quantitative statement of the paper's text, with the check that tests it or the reason
this kit cannot.

A study folder's findings.toml lists them, one [[findings]] table each:

    id         the finding's id within the study (D9, W14, ...)
    section    where the paper states it ("Sec 5.2", "Table 21", "abstract")
    text       the statement's words, quoted from `text_from`
    text_from  "paper" (the paper's own words), "study notes" (shared/studies' paraphrase: the kit had no copy of
               the paper's sentence) or "reference" (numbers of the study's reference/*.csv)
and exactly one of
    checked_by     the ids of the claims (the study's claims.py CLAIMS) whose checks test it
    not_checkable  why no kit of the six frameworks can check it ("needs Caffe", "needs a KNL", "qualitative")
    pending        why this kit does not check it yet although one could ("needs a Faster R-CNN workload")

Validated on read: a bad file or a claim id no check has is a one-line UsageError; every claim of the study must
test some finding. The report counts them per study: "N findings: k checked, m not checkable".
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import studies
from bench.errors import UsageError

FINDINGS_FILE = "findings.toml"
TEXT_FROM = ("paper", "study notes", "reference")
STATUS_KEYS = ("checked_by", "not_checkable", "pending")
_KEYS = {"id", "section", "text", "text_from", *STATUS_KEYS}
CHECKED, NOT_CHECKABLE, PENDING = "checked", "not checkable", "pending"


@dataclass(frozen=True)
class Finding:
    """One quantitative statement of a study's paper and how the kit stands to it."""

    study: str
    id: str
    section: str
    text: str
    text_from: str
    checked_by: tuple[str, ...] = ()
    not_checkable: str = ""
    pending: str = ""

    @property
    def status(self) -> str:
        """CHECKED, NOT_CHECKABLE or PENDING."""
        return CHECKED if self.checked_by else NOT_CHECKABLE if self.not_checkable else PENDING

    @property
    def reason(self) -> str:
        """Why it is not checked ('' when it is)."""
        return self.not_checkable or self.pending


@dataclass(frozen=True)
class FindingCounts:
    """A study's findings counted: all, checked, not checkable (with each reason's count) and pending."""

    study: str
    total: int
    checked: int
    not_checkable: Counter[str]
    pending: Counter[str]

    @property
    def checkable(self) -> int:
        """Findings a kit of the six frameworks could check."""
        return self.total - sum(self.not_checkable.values())

    @property
    def coverage(self) -> float | None:
        """The share of the checkable findings that have a check (None with none checkable)."""
        return self.checked / self.checkable if self.checkable else None

    def text(self) -> str:
        """'37 findings: 30 checked, 2 not checkable (needs Caffe: 1; qualitative: 1), 5 pending (...)'."""
        def reasons(counts: Counter[str]) -> str:
            return "; ".join(f"{r}: {n}" for r, n in sorted(counts.items(), key=lambda rn: (-rn[1], rn[0])))
        n_not, n_pending = sum(self.not_checkable.values()), sum(self.pending.values())
        parts = [f"{self.checked} checked"]
        parts.append(f"{n_not} not checkable" + (f" ({reasons(self.not_checkable)})" if n_not else ""))
        if n_pending:
            parts.append(f"{n_pending} checkable, not checked yet ({reasons(self.pending)})")
        return f"{self.total} findings: " + ", ".join(parts)


def _finding(study: studies.StudyFolder, raw: Any, where: str) -> Finding:
    if not isinstance(raw, dict):
        raise UsageError(f"{where} has a [[findings]] entry that is not a table", "write each as [[findings]] id = ...")
    fid = raw.get("id")
    label = f"{where} finding {fid!r}"
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise UsageError(f"{label} has unknown key(s) {', '.join(unknown)}", f"use only: {', '.join(sorted(_KEYS))}")
    for key in ("id", "section", "text", "text_from"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise UsageError(f"{label} has no {key}", f"write {key} = \"...\"")
    if raw["text_from"] not in TEXT_FROM:
        raise UsageError(f"{label} has text_from = {raw['text_from']!r}", f"choose from: {', '.join(TEXT_FROM)}")
    given = [k for k in STATUS_KEYS if raw.get(k)]
    if len(given) != 1:
        raise UsageError(f"{label} gives {' and '.join(given) or 'none'} of {', '.join(STATUS_KEYS)}",
                         "give exactly one: the claims that check it, or why it is not checked")
    checked = raw.get("checked_by", [])
    if not isinstance(checked, list) or not all(isinstance(c, str) for c in checked):
        raise UsageError(f"{label} has a checked_by that is not a list of claim ids", 'write checked_by = ["Id-1"]')
    return Finding(study.name, fid, raw["section"], raw["text"], raw["text_from"], tuple(checked),
                   str(raw.get("not_checkable", "")), str(raw.get("pending", "")))


def load_findings(study: studies.StudyFolder) -> list[Finding]:
    """The study's findings.toml, validated (empty where the folder has none); every checked_by id must be one of
    the study's claims, and every claim must check some finding."""
    path = study.path / FINDINGS_FILE
    if not path.is_file():
        return []
    where = study.where(FINDINGS_FILE)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{where} is not valid TOML ({exc})", f"fix {where}") from None
    found = [_finding(study, item, where) for item in raw.get("findings", [])]
    ids = Counter(f.id for f in found)
    twice = sorted(i for i, n in ids.items() if n > 1)
    if twice:
        raise UsageError(f"{where} names finding(s) {', '.join(twice)} twice", "give each finding its own id")
    claims = [c.id for c in getattr(studies.module(study, studies.CLAIMS_MODULE), "CLAIMS", ())]
    named = {c for f in found for c in f.checked_by}
    unknown = sorted(named - set(claims))
    if unknown:
        raise UsageError(f"{where} names claim(s) {', '.join(unknown)} that {study.where('claims.py')} does not define",
                         f"choose from: {', '.join(claims)}")
    unused = [c for c in claims if c not in named]
    if found and unused:
        raise UsageError(f"claim(s) {', '.join(unused)} of {study.where('claims.py')} check no finding of {where}",
                         "name each claim in the checked_by of the finding it tests")
    return found


def count(study: studies.StudyFolder) -> FindingCounts:
    """The study's findings counted by status."""
    found = load_findings(study)
    return FindingCounts(study.name, len(found), sum(f.status == CHECKED for f in found),
                         Counter(f.not_checkable for f in found if f.status == NOT_CHECKABLE),
                         Counter(f.pending for f in found if f.status == PENDING))


def all_findings() -> list[Finding]:
    """Every study's findings, in study order."""
    return [f for study in studies.folders() for f in load_findings(study)]
