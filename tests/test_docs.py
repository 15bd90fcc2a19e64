"""The front door and the docs it points to: the README stays a short page, every relative link in it and in docs/
resolves, and its studies table names every study folder and make target the study files give (campaign/targets.py),
so a study added as a folder shows on the first page or this test says which name is missing."""

from __future__ import annotations

import re
from pathlib import Path

import studies
from campaign import targets

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_LINES = 150  # issue 29: what it is, the studies, two commands, the flow, the folders, "extend it"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _pages() -> list[Path]:
    return [README, *sorted((REPO / "docs").glob("*.md"))]


def test_readme_is_a_front_door() -> None:
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_every_relative_link_resolves() -> None:
    broken = [f"{page.relative_to(REPO)} -> {target}" for page in _pages()
              for target in LINK.findall(page.read_text())
              if "://" not in target and not (page.parent / target).exists()]
    assert broken == []


def test_readme_names_every_study_and_its_make_targets() -> None:
    text = README.read_text()
    own = [f for f in studies.folders() if f.path.parent == studies.HERE]
    missing = [f"studies/{f.name}/" for f in own if f"`studies/{f.name}/`" not in text]
    for t in targets.derive():
        # Every experiment, and each device's shortest whole-study name (<study>-cpu where free, else -all-cpu).
        wanted = [*t.experiments, *(a.names[-1] for a in t.aggregates)]
        missing += [name for name in wanted if f"`{name}`" not in text]
    assert missing == []
