"""A study's published numbers as run-table rows, so a claim's check reads the paper as it reads a campaign.

Each study folder may hold published.py with `runs() -> list[dict]`: its reference tables' numbers as rows of the run
table (analysis.runs.RUN_COLUMNS, only the columns its checks read), made with published_row, and optionally
`epochs() -> dict[run_id, list[record]]` for per-epoch figures the paper prints, and ROW_RULES: which of its
reference rows no comparison of the reference table reads, where they are compared instead or why they cannot be
(RowRule; the report's 'not reproduced' section lists them, analysis/sections/not_reproduced.py). The invariant test
(tests/studies/test_published.py) feeds each study's checks its own published table: a check whose inputs the tables
hold must say "reproduced" there, else the check (not the paper) is wrong; a check they cannot feed names why
(Claim.unfed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import studies
from analysis.claims import ResultsTable
from analysis.runs import PAPER_ERA

# The run table's data_source of a published number: never a run of the kit's (analysis.claims.caveat_for).
PUBLISHED = "published"
PUBLISHED_MODULE = "published"
# What a RowRule says of rows a claim check reads rather than the reference table.
BY_CLAIMS = "compared by claim checks, not by the reference table"


@dataclass(frozen=True)
class RowRule:
    """Published rows of one file whose columns hold the values of `where` (case-insensitive): where they are
    compared instead of the reference table (`compared_by`), or why they are not comparable (`reason`); exactly one
    of the two."""

    file: str
    where: tuple[tuple[str, str], ...]
    compared_by: str = ""
    reason: str = ""

    def matches(self, file: str, row: dict[str, str]) -> bool:
        """Whether the rule applies to this row of that file."""
        return file == self.file and all(row.get(k, "").lower() == v.lower() for k, v in self.where)


def row_rule(file: str, compared_by: str = "", reason: str = "", **where: str) -> RowRule:
    """A RowRule for the rows of `file` whose columns hold `where`'s values."""
    return RowRule(file, tuple(where.items()), compared_by, reason)


def published_row(run_id: str, framework: str, workload: str, device: str, **values: Any) -> dict[str, Any]:
    """One published measurement as a successful run-table row of the paper's setup (its era and profile), one
    repeat; `values` are run-table columns (accuracy in percent, times in seconds, as the run table holds them)."""
    return {"run_id": f"{PUBLISHED}:{run_id}", "framework": framework, "workload": workload, "device": device,
            "era": PAPER_ERA, "runner": PUBLISHED, "profile": "paper", "data_source": PUBLISHED, "repeat": 1,
            "status": "ok", "failure_cause": None, **values}


def published_table(study: studies.StudyFolder) -> ResultsTable | None:
    """The study's published numbers as a results table (its published.py's runs() and epochs()); None where the
    study folder has no published.py."""
    mod = studies.module(study, PUBLISHED_MODULE)
    if mod is None:
        return None
    epochs = mod.epochs() if hasattr(mod, "epochs") else {}
    return ResultsTable(mod.runs(), epochs)
