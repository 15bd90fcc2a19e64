"""Paper era vs current era: one workload run with the study's exact versions and with today's.

A pair is a paper-era cell and a current-era cell of the same framework, workload, device, profile and
data source (the runner may differ: a paper-era image and a current-era environment are two setups of
the same experiment). Per pair: training time current/paper, the accuracy difference in percentage
points, and a line saying what changed with the framework versions, judged with the report's accuracy
tolerance (analysis.transfer.ACCURACY_TOLERANCE_PP). Also here: which paper-era runs ran in their image
and which outside it (a test environment, not the study's setup); what each run ran on, from its own
run.json: the image, the base the image was built on (environment.base, written by `make base ERA=paper`),
the Python's build (environment.python_build: PGO or not) and the BLAS kernels it chose (environment.libraries,
host.cpu_flags), since a time ratio between the eras depends on them; and the command that makes an era's
missing runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analysis.claims import PAPER_DATA, PAPER_PROFILE
from analysis.reference import device_env
from analysis.runs import CURRENT_ERA, PAPER_ERA, blas_cores, blas_loaded, python_build_text
from analysis.stats import Estimate, format_number, ratio
from analysis.summary import CellSummary
from analysis.transfer import ACCURACY_TOLERANCE_PP, accuracy_verdict, paired_cells, run_ids
from bench.request import WRAPPERS
from bench.schema import BASE_SOURCE_KINDS
from images.pythonsource import REGISTRY_BASE

# The cell keys both eras' cells share to be the same experiment (every cell key but era and runner).
ERA_PAIR_KEYS: tuple[str, ...] = ("workload", "framework", "device", "profile", "data_source")
# The eras in the order the report shows them: the study's versions first.
ERA_ORDER: tuple[str, ...] = (PAPER_ERA, CURRENT_ERA)


def eras_of(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The eras present among run-table rows, paper first, then current, then any other (sorted)."""
    present = {r["era"] for r in rows}
    return [e for e in ERA_ORDER if e in present] + sorted(present - set(ERA_ORDER))


# --- Side by side --------------------------------------------------------------------------

def _interval(est: Estimate) -> tuple[float, float] | None:
    return None if est.ci_low is None or est.ci_high is None else (est.ci_low, est.ci_high)


def intervals_overlap(a: Estimate, b: Estimate) -> bool | None:
    """Whether the two 95 % intervals overlap; None when either has none (fewer than two values)."""
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None:
        return None
    return ia[0] <= ib[1] and ib[0] <= ia[1]


@dataclass(frozen=True)
class EraPair:
    """A paper-era and a current-era cell of the same experiment (ERA_PAIR_KEYS)."""

    paper: CellSummary
    current: CellSummary

    @property
    def key(self) -> dict[str, str]:
        """The experiment both cells ran (ERA_PAIR_KEYS)."""
        return {k: self.paper.key[k] for k in ERA_PAIR_KEYS}

    @property
    def run_ids(self) -> list[str]:
        """Both cells' runs, paper era first, failed ones included."""
        return run_ids([self.paper, self.current])

    def means(self, column: str) -> tuple[float | None, float | None]:
        """(paper mean, current mean) of a run-table column over each cell's successful runs."""
        return self.paper.estimates[column].mean, self.current.estimates[column].mean

    @property
    def time_ratio(self) -> float | None:
        """Mean training time current / paper (below 1: the current versions train faster)."""
        paper, current = self.means("training_time_s")
        return ratio(current, paper)

    @property
    def accuracy_diff_pp(self) -> float | None:
        """Mean test accuracy current − paper, in percentage points."""
        paper, current = self.means("test_accuracy")
        return None if paper is None or current is None else current - paper

    def _unmeasured(self, column: str) -> str:
        eras = [era for era, cell in ((PAPER_ERA, self.paper), (CURRENT_ERA, self.current))
                if cell.estimates[column].mean is None]
        return f"no {' or '.join(eras)}-era value"

    def time_change(self) -> str:
        """'2.3× faster', '1.5× slower' or 'same training time' (current vs paper), with '(95 % intervals
        overlap)' when both eras have intervals and they overlap."""
        r = self.time_ratio
        if r is None:
            return f"training time not compared ({self._unmeasured('training_time_s')})"
        text = (f"{format_number(1 / r, 2)}× faster" if r < 1 else f"{format_number(r, 2)}× slower" if r > 1
                else "same training time")
        overlap = intervals_overlap(self.paper.estimates["training_time_s"], self.current.estimates["training_time_s"])
        return text + (" (95 % intervals overlap)" if overlap else "")

    def accuracy_change(self, tolerance_pp: float = ACCURACY_TOLERANCE_PP) -> str:
        """'accuracy within ±2 pp (+0.50 pp)' or 'accuracy outside ±2 pp (-3.10 pp)' (current − paper)."""
        paper, current = self.means("test_accuracy")
        if paper is None or current is None:
            return f"accuracy not compared ({self._unmeasured('test_accuracy')})"
        return "accuracy " + accuracy_verdict(current, paper, tolerance_pp)

    def change_text(self) -> str:
        """What changed with the framework versions, from the numbers: e.g. '2.3× faster, accuracy within
        ±2 pp (+0.50 pp)'."""
        return f"{self.time_change()}, {self.accuracy_change()}"


def era_pairs(cells: Sequence[CellSummary]) -> list[EraPair]:
    """Every (paper-era cell, current-era cell) of the same experiment, in sorted key order."""
    return [EraPair(p, c) for p, c in paired_cells(cells, ERA_PAIR_KEYS, lambda c: c.key["era"],
                                                   PAPER_ERA, CURRENT_ERA)]


def unpaired_cells(cells: Sequence[CellSummary]) -> list[CellSummary]:
    """The paper-era and current-era cells whose experiment the other era did not run."""
    paired = {id(c) for pair in era_pairs(cells) for c in (pair.paper, pair.current)}
    return [c for c in cells if c.key["era"] in ERA_ORDER and id(c) not in paired]


# --- Which Python the paper-era runs ran on ------------------------------------------------

@cache
def study_python() -> str:
    """The study's Python as 'major.minor' ('3.6'): what images/frameworks.toml says the paper-era
    images run ([paper] python)."""
    from images.build import era_packages  # host tooling: only the report needs it

    text = str(era_packages()[PAPER_ERA]["python"])
    found = re.match(r"\d+\.\d+", text)
    if found is None:
        raise ValueError(f"images/frameworks.toml [paper] python = {text!r} names no version")
    return found.group(0)


def minor_version(python: str) -> str:
    """'3.11.7' -> '3.11'."""
    return ".".join(python.split(".")[:2])


def on_study_python(row: dict[str, Any]) -> bool | None:
    """Whether a run ran on the study's Python (None when it recorded none)."""
    python = row.get("python")
    return None if not python else minor_version(str(python)) == study_python()


# What the note on paper-era runs outside their image says (outside_image_text), found in claim caveats.
OUTSIDE_IMAGE = "outside their image"
# The runners whose runs run inside the framework's image: Docker, and the HPC wrappers of the same image.
IMAGE_RUNNERS: tuple[str, ...] = ("docker", *WRAPPERS)


def in_image(row: dict[str, Any]) -> bool:
    """Whether a run ran inside its framework's image (its runner is one of IMAGE_RUNNERS)."""
    return row.get("runner") in IMAGE_RUNNERS


def outside_image_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paper-era runs that did not run in their image (a local, system or other environment): the paper's
    framework versions outside their image, a test environment rather than the study's setup."""
    return [r for r in rows if r.get("era") == PAPER_ERA and not in_image(r)]


def outside_image_text(rows: Iterable[dict[str, Any]]) -> str:
    """'paper-era framework versions on Python 3.11, outside their image: a test environment' for the
    test-environment runs among rows ('' when there is none)."""
    found = outside_image_rows(rows)
    if not found:
        return ""
    versions = ", ".join(sorted({minor_version(str(r["python"])) if r.get("python") else "not recorded"
                                 for r in found}))
    return f"paper-era framework versions on Python {versions}, {OUTSIDE_IMAGE}: a test environment"


# --- What each run ran on: image, base, Python build, BLAS kernels ------------------------------

# What the registry base the paper-era Dockerfile pins (images.pythonsource.REGISTRY_BASE) runs on; its
# CPython was configured with --enable-optimizations (PGO).
REGISTRY_DEBIAN = "Debian 10 (buster)"
PYTHON_ORG, STANDIN = BASE_SOURCE_KINDS


def pgo_of(value: Any) -> bool | None:
    """A record's pgo (true/false, or the label's 'yes'/'no') as a bool; None when not recorded."""
    return {True: True, False: False, "yes": True, "no": False}.get(value) if value is not None else None


def python_text(run: dict[str, Any]) -> str:
    """A run's Python and its build: '3.6.15 (no PGO, GCC 10.2.1 20210110)'."""
    env, host = run.get("environment") or {}, run.get("host") or {}
    version = host.get("python") or env.get("python") or "?"
    return f"{version} ({python_build_text(env.get('python_build')) or 'build not recorded'})"


def blas_text(run: dict[str, Any]) -> str:
    """The BLAS that did a run's work and the kernels it chose for the CPU, from the run's record:
    'openblas (Haswell)', 'onednn', 'mkl'; 'not recorded' before the kit recorded it."""
    env = run.get("environment") or {}
    loaded, cores = blas_loaded(env), blas_cores(env)
    if loaded is None:
        return "not recorded"
    return f"{loaded} ({cores})" if cores else loaded


def cpu_flags_text(run: dict[str, Any]) -> str:
    """The host's kernel-choosing CPU features the run recorded (host.cpu_flags): 'avx2 avx512f fma'."""
    flags = (run.get("host") or {}).get("cpu_flags")
    return "not recorded" if flags is None else " ".join(flags) or "none of them"


def base_text(run: dict[str, Any]) -> str:
    """The base a run's image was built on, from its run.json (environment.base, /etc/dlrepro/base.json of the
    kit's own base): 'made here: Debian 11.11 (bullseye), CPython 3.6.15 from a stand-in source (<file>, sha256
    <hex>)'; for an image run without the record, that it has none; '— (no image)' for a run outside an image."""
    env = run.get("environment") or {}
    base = env.get("base")
    if base:
        origin = "a stand-in source" if base.get("source_kind") == STANDIN else "python.org's file"
        return (f"made here: Debian {base.get('debian_version')} ({base.get('debian_release')}), CPython "
                f"{base.get('python')} from {origin} ({base.get('source')}, sha256 {base.get('source_sha256')})")
    return "no base record in the image" if in_image(run.get("config") or {}) else "— (no image)"


def base_departure_text(base: dict[str, Any]) -> str:
    """How a base made here by `make base ERA=paper` departs from the registry's python:3.6.15-slim-buster, in
    one sentence from its record (run.json environment.base): the source (a stand-in, or python.org's file at its
    published digest) with its sha256, the Debian release, and PGO."""
    if base.get("source_kind") == STANDIN:
        origin = (f"a stand-in source, {base.get('source')} (sha256 {base.get('source_sha256')}, trusted on first "
                  "use: not python.org's file checked at its published digest)")
    else:
        origin = f"python.org's {base.get('source')} (sha256 {base.get('source_sha256')}, its published digest)"
    pgo = pgo_of(base.get("pgo"))
    pgo_text = ("with PGO, as the registry image's" if pgo else "without PGO (the registry image's CPython was "
                "built with PGO)" if pgo is False else "PGO not recorded")
    return (f"CPython {base.get('python')} built here (`make base ERA=paper`) from {origin}, on Debian "
            f"{base.get('debian_version')} ({base.get('debian_release')}) instead of the registry image "
            f"{REGISTRY_BASE}'s {REGISTRY_DEBIAN}, {pgo_text}")


# What of the paper-era PyTorch image no one can check (images/external.py: torch 0.4.1, trusted on first use).
PYTORCH_UNVERIFIED = (
    "torch 0.4.1's wheel comes from PyTorch's own wheel archive, which publishes no sha256 of it: it is trusted on "
    "first use (the digest the first build got is recorded in versions.local.lock and in the image's label "
    "org.dlrepro.external.torch, and a later build refuses any other file), so nothing checks that it is the file "
    "PyTorch published for the study; where the archive cannot be reached, the PyTorch paper-era image is not built")


def pytorch_paper_note(rows: Iterable[dict[str, Any]]) -> str:
    """What is unverified about the paper era's PyTorch, for a set of runs holding any PyTorch run: said of its
    paper-era runs, or why there may be none; '' when no PyTorch run is among them."""
    torch = [r for r in rows if r.get("framework") == "pytorch"]
    if not torch:
        return ""
    absent = "" if any(r.get("era") == PAPER_ERA for r in torch) else "No paper-era PyTorch run here. "
    return f"{absent}Paper-era PyTorch (what is unverified): {PYTORCH_UNVERIFIED}."


# --- The command that makes an era's missing runs -----------------------------------------

def _targets() -> dict[str, dict]:
    from campaign.study import experiments  # host tooling: only the report's hint needs it

    return {name: {"device": e.device, "workloads": list(e.workloads)} for name, e in experiments().items()}


def _target_for(device: str, workload: str, folder: str, targets: dict[str, dict]) -> str | None:
    """The Makefile campaign target that runs the workload on the device, if any: the one named like the
    campaign folder (e.g. demo), else a <device>-<arch> one (cpu-cnn, gpu-lstm, ...)."""
    env = device_env(device)
    names = [folder, *(n for n in targets if n.startswith(f"{env}-"))]
    for name in names:
        target = targets.get(name) or {}
        if target.get("device") == env and workload in target.get("workloads", []):
            return name
    return None


def missing_era_commands(cells: Sequence[CellSummary]) -> list[str]:
    """One make command per group of unpaired cells that makes the other era's runs into the same
    campaign folder, e.g. 'make cpu-cnn ERA=paper FRAMEWORKS="pytorch"'."""
    targets = _targets()
    groups: dict[tuple[str, ...], tuple[set[str], set[str]]] = {}
    for cell in unpaired_cells(cells):
        k = cell.key
        missing = PAPER_ERA if k["era"] == CURRENT_ERA else CURRENT_ERA
        folder = Path(cell.rows[0]["run_dir"]).parent.name
        target = _target_for(k["device"], k["workload"], folder, targets) or ""
        fws, wls = groups.setdefault((target, k["device"], missing, k["profile"], k["data_source"], folder),
                                     (set(), set()))
        fws.add(k["framework"])
        wls.add(k["workload"])
    out = []
    for (target, device, era, profile, data, folder), (fws, wls) in sorted(groups.items()):
        parts = [f"make {target}" if target else f"make run DEVICE={device}", f"ERA={era}",
                 f'FRAMEWORKS="{" ".join(sorted(fws))}"']
        if not target or wls != set(targets[target]["workloads"]):
            parts.append(f'WORKLOADS="{" ".join(sorted(wls))}"')
        if profile != PAPER_PROFILE:  # the Makefile's defaults: PROFILE=paper DATA=real
            parts.append(f"PROFILE={profile}")
        if data not in PAPER_DATA and data != "unknown":  # generated data need no DATA=
            parts.append(f"DATA={data}")
        if folder != target:
            parts.append(f"CAMPAIGN={folder}")
        out.append(" ".join(parts))
    return out
