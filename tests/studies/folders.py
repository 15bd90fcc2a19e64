"""Study folders written by a test and found by discovery (studies/__init__.py) through DLREPRO_STUDIES_PATH, beside
the kit's own: the way a study kept outside the kit is added, with no other file edited."""

from __future__ import annotations

from pathlib import Path

import pytest

import studies
from campaign import study


def add_study(monkeypatch: pytest.MonkeyPatch, root: Path, name: str, body: str = "",
              workloads: dict[str, str] | None = None, head: str = 'title = "S"\nclaims = "S"\norder = 99\n') -> Path:
    """root/<name>/ with a study.toml ([study] `head`, then `body`) and workloads/<w>.toml for each of `workloads`
    ({name: TOML text}); root is put on DLREPRO_STUDIES_PATH and the study cache cleared. Returns the folder."""
    folder = root / name
    (folder / "workloads").mkdir(parents=True, exist_ok=True)
    (folder / studies.STUDY_FILE).write_text(f"[study]\n{head}\n{body}")
    for workload, text in (workloads or {}).items():
        (folder / "workloads" / f"{workload}.toml").write_text(text)
    monkeypatch.setenv(studies.PATH_VAR, str(root))
    study.load_study.cache_clear()
    return folder
