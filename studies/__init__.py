"""The studies the kit reproduces: one folder each, discovered, not registered.

A study is a folder studies/<name>/ (<name> a Python identifier) holding everything that is its own:

    study.toml        [study] title, claims (the study name its claims carry), order (its place among the studies:
                      the report's order) and its experiments, each a make target (campaign/study.py reads them)
    workloads/*.toml  the workload specs its experiments use (campaign/specs.py); a workload name is unique across
                      every study folder, and a workload two studies run lives in the first that defined it
    reference/        its published numbers (*.csv) and SOURCES.md, whose table names each published file, its
                      source and the hardware it was measured on (the study's `reference`: sources())
    claims.py         CLAIMS: its claims (analysis.claims.Claim), each with the check that tests it
    findings.toml     every quantitative finding of the paper, each checked by claims or with the reason it is not
                      (analysis/findings.py)
    published.py      runs(): its published numbers as run-table rows, which every check must reproduce
                      (analysis/published.py; tests/studies/test_published.py)
    section.py        SECTIONS: its own report sections (analysis.sections.Section builders); optional
    ...               its other Python, e.g. tables.py, the reader of its published tables

Discovery lists the folders with a study.toml here and under each folder named by DLREPRO_STUDIES_PATH
(os.pathsep-separated: studies kept outside the kit), ordered by `order`. Adding a study is adding a folder:
every list of studies, workloads, claims and study sections is derived from this one. Host only: nothing inside an
image imports it (the run request carries the resolved spec), and it imports neither campaign nor analysis, so both
can import it; a study's Python is imported when first asked for.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import tomllib
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import UsageError
from bench.names import is_plain

HERE = Path(__file__).resolve().parent
PATH_VAR = "DLREPRO_STUDIES_PATH"
STUDY_FILE = "study.toml"
SOURCES_FILE = "SOURCES.md"
CLAIMS_MODULE, SECTIONS_MODULE = "claims", "section"


@dataclass(frozen=True)
class StudyFolder:
    """One discovered study: its name (the folder's), its folder and its place among the studies."""

    name: str
    path: Path
    order: int

    @property
    def study_file(self) -> Path:
        """Its study.toml."""
        return self.path / STUDY_FILE

    @property
    def reference_dir(self) -> Path:
        """Its published numbers' folder (which need not exist: a study with none yet)."""
        return self.path / "reference"

    def where(self, *parts: str) -> str:
        """A path in the folder as messages and the report name it: from the repository's root for the kit's own
        studies (studies/shi/study.toml), whole for a study kept elsewhere."""
        path = self.path.joinpath(*parts)
        return path.relative_to(HERE.parent).as_posix() if path.is_relative_to(HERE.parent) else str(path)


@dataclass(frozen=True)
class Source:
    """One row of a study's reference/SOURCES.md table: a published file, its source, the hardware it was measured
    on, and the study it belongs to."""

    file: str
    source: str
    hardware: str
    study: str


def roots() -> list[Path]:
    """The folders searched for study folders: this package's, then DLREPRO_STUDIES_PATH's."""
    extra = [Path(p).resolve() for p in os.environ.get(PATH_VAR, "").split(os.pathsep) if p]
    return [HERE, *extra]


def folders() -> list[StudyFolder]:
    """Every study folder, in study order (`order`, then name); a UsageError for a bad or doubly named one."""
    found = tuple((p, p.stat().st_mtime_ns) for root in roots() for p in sorted(root.glob(f"*/{STUDY_FILE}")))
    return list(_folders(found))


@functools.cache
def _folders(found: tuple[tuple[Path, int], ...]) -> tuple[StudyFolder, ...]:
    # Keyed on the study files and their times: a folder added, or a study file edited, is seen on the next call.
    out: dict[str, StudyFolder] = {}
    for path, _ in found:
        name = path.parent.name
        where = str(path) if not path.is_relative_to(HERE.parent) else path.relative_to(HERE.parent).as_posix()
        if not (name.isidentifier() and is_plain(name)):
            raise UsageError(f"study folder '{path.parent}' is not named as a Python module",
                             "name it with letters, digits and '_', starting with a letter")
        if name in out:
            raise UsageError(f"two study folders are named '{name}': {out[name].path} and {path.parent}",
                             f"rename one, or leave it out of {PATH_VAR}")
        out[name] = StudyFolder(name, path.parent, _order(path, where))
    return tuple(sorted(out.values(), key=lambda f: (f.order, f.name)))


def _order(path: Path, where: str) -> int:
    with open(path, "rb") as fh:
        try:
            order = (tomllib.load(fh).get("study") or {}).get("order")
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{where} is not valid TOML ({exc})", f"fix {where}") from None
    if type(order) is not int:
        raise UsageError(f"{where} has no whole-number [study] order", "write order = <n> under [study]: the "
                         "study's place in the report")
    return order


def names() -> list[str]:
    """Every study's name, in study order."""
    return [f.name for f in folders()]


def folder(name: str) -> StudyFolder:
    """The study folder of that name (a UsageError naming the choices)."""
    for found in folders():
        if found.name == name:
            return found
    raise UsageError(f"unknown study '{name}'", f"choose from: {', '.join(names())}")


def workload_files() -> dict[str, Path]:
    """{workload name: its spec file} over every study folder's workloads/ (a UsageError for a name two define)."""
    out: dict[str, Path] = {}
    for study in folders():
        for path in sorted((study.path / "workloads").glob("*.toml")):
            if path.stem in out:
                raise UsageError(f"workload '{path.stem}' is defined twice: {out[path.stem]} and {path}",
                                 "keep it in the first study that uses it and remove the other")
            out[path.stem] = path
    return out


def sources(study: StudyFolder | None = None) -> list[Source]:
    """The rows of the SOURCES.md tables (file | source | hardware) of every study in study order, or of one."""
    out = []
    for found in [study] if study is not None else folders():
        path = found.reference_dir / SOURCES_FILE
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            # Data rows name a file in backticks; the header and the |---| rule do not.
            if line.startswith("|") and len(cells) == 3 and cells[0].startswith("`"):
                out.append(Source(cells[0].strip("`"), cells[1], cells[2], found.name))
    return out


def reference_file(name: str) -> Path:
    """A published table by its file name, from whichever study's reference/ holds it (names are unique)."""
    for found in folders():
        if (found.reference_dir / name).is_file():
            return found.reference_dir / name
    raise UsageError(f"no study folder has reference/{name}", "copy it into its study's reference/ folder")


def module(study: StudyFolder, stem: str) -> types.ModuleType | None:
    """The study's Python module <stem> (studies.<name>.<stem>), None where the folder has no <stem>.py. A folder
    outside this package is imported as studies.<name> all the same, so its modules import each other alike."""
    if not (study.path / f"{stem}.py").is_file():
        return None
    package = f"{__name__}.{study.name}"
    loaded = sys.modules.get(package)
    if loaded is not None and [str(study.path)] != list(getattr(loaded, "__path__", [])):
        for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
            del sys.modules[key]  # another folder of that name seen earlier (a test's copy): forget its modules
        loaded = None
    if loaded is None and study.path.parent != HERE:
        bare = types.ModuleType(package)
        bare.__path__ = [str(study.path)]
        sys.modules[package] = bare
    return importlib.import_module(f"{package}.{stem}")


def _exported(stem: str, attribute: str) -> list[Any]:
    return [item for study in folders() for item in getattr(module(study, stem), attribute, ())]


def claims() -> list[Any]:
    """Every study's claims (its claims.py's CLAIMS: analysis.claims.Claim), in study order."""
    return _exported(CLAIMS_MODULE, "CLAIMS")


def sections() -> list[Any]:
    """Every study's own report sections (its section.py's SECTIONS), in study order."""
    return _exported(SECTIONS_MODULE, "SECTIONS")
