"""The make targets derived from the study files: `python -m campaign targets` writes the make include that defines
them, so that no list of experiments is kept by hand.

The naming rule (docs/studies.md):

    make <experiment>         each [experiments.<experiment>] of a study file: its runs, in campaign <experiment>,
                              then its report
    make <study>-all-cpu      every study's CPU (GPU) experiments, in study-file order and without those marked
    make <study>-all-gpu      aggregate = false (the demo), in one campaign and one report; a study without a GPU
                              experiment keeps <study>-all-gpu, which stops in one line naming the CPU one, so that
                              every study answers to the same names
    make <study>-cpu          the same as <study>-all-cpu (-gpu), wherever no experiment of the study has that name:
    make <study>-gpu          an experiment keeps its name (shi-cpu, shi-gpu, shams-cpu and shams-gpu are experiments,
                              as they always were; dlbench-cpu, wu-cpu, ilkarman-gpu, ... are whole studies)

So no name ever changes meaning: a whole-study name is taken only where it is free. An experiment named as another
study's whole-study target, or as its own study's <study>-all-*, is refused in one line.

The kit's own studies (studies/) are written to targets.mk at the repository's root, committed and checked by a test;
the studies on DLREPRO_STUDIES_PATH, with --path, to a file of the Makefile's choosing (git-ignored). Both only add
to the same variables (+=), so the Makefile includes the one and, when the path is set, the other; it remakes each
when a study file, the studies' folder or this generator is newer. The recipes are the Makefile's; a generated file
holds names only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import studies
from bench.errors import UsageError
from bench.names import RULE, is_plain
from campaign import study

REPO = Path(__file__).resolve().parent.parent
KIT_FILE = REPO / "targets.mk"
COMMAND = "python -m campaign targets"
DEVICES = study.DEVICES


@dataclass(frozen=True)
class Aggregate:
    """A make target running several experiments of one study and device in one campaign and one report."""

    names: tuple[str, ...]  # its canonical <study>-all-<device>, then the short <study>-<device> where free
    study: str
    device: str
    experiments: tuple[str, ...]
    # For a GPU aggregate: the CPU make target offered on a machine without a GPU, by each of its names.
    instead: dict[str, str]


@dataclass(frozen=True)
class StudyTargets:
    """One study's make targets: its experiments and its aggregates."""

    study: str
    experiments: tuple[str, ...]
    gpu_experiments: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]

    def names(self) -> list[str]:
        """Every make target of the study: its experiments, then its aggregates' names."""
        return [*self.experiments, *(n for a in self.aggregates for n in a.names)]


def aggregate_names(name: str, device: str, experiments: list[str]) -> tuple[str, ...]:
    """A study's aggregate names for a device: <study>-all-<device>, and <study>-<device> unless an experiment of
    the study (`experiments`) has it."""
    short = f"{name}-{device}"
    return (f"{name}-all-{device}",) + (() if short in experiments else (short,))


def study_targets(name: str) -> StudyTargets:
    """The make targets of one study (its study file read and checked by campaign.study)."""
    experiments = study.load_study(name).experiments
    names = list(experiments)
    cpu, gpu = (aggregate_names(name, d, names) for d in DEVICES)
    # Without a GPU, <study>-gpu offers <study>-cpu where that is the whole study too, else <study>-all-cpu.
    offered = dict(zip(gpu, (cpu[0], cpu[-1]), strict=False))

    def members(device: str) -> tuple[str, ...]:
        return tuple(e for e in names if experiments[e].device == device and experiments[e].aggregate)

    return StudyTargets(name, tuple(names), tuple(e for e in names if experiments[e].device == "gpu"),
                        (Aggregate(cpu, name, "cpu", members("cpu"), {}),
                         Aggregate(gpu, name, "gpu", members("gpu"), offered)))


def derive(path_only: bool = False) -> list[StudyTargets]:
    """The make targets of the kit's own studies (path_only: of the studies on DLREPRO_STUDIES_PATH), in study
    order; a UsageError for an experiment whose name cannot be a make target or takes an aggregate's name. Every
    discovered study is checked either way, so both files agree."""
    every = [study_targets(f.name) for f in studies.folders()]
    _check_names(every)
    own = {f.name for f in studies.folders() if f.path.parent == studies.HERE}
    return [t for t in every if (t.study in own) != path_only]


def _check_names(every: list[StudyTargets]) -> None:
    study.experiments()  # one name declared by two studies: refused there
    experiments = {e: t.study for t in every for e in t.experiments}
    for target, owner in experiments.items():
        if not is_plain(target):
            raise UsageError(f"experiment '{target}' of {_where(owner)} is not a plain name ({RULE})",
                             "rename it: it is a make target")
    for t in every:
        for a in t.aggregates:
            for name in a.names:
                if name in experiments:
                    raise UsageError(f"experiment '{name}' of {_where(experiments[name])} takes the name of study "
                                     f"{t.study}'s whole-study target", f"rename the experiment in "
                                     f"{_where(experiments[name])}")


def _where(name: str) -> str:
    return studies.folder(name).where(studies.STUDY_FILE)


def render(path_only: bool = False) -> str:
    """The make include of the kit's own studies (path_only: of those on DLREPRO_STUDIES_PATH)."""
    found = derive(path_only)
    what = "the studies on DLREPRO_STUDIES_PATH" if path_only else "the kit's study files, studies/*/study.toml"
    lines = [f"# Generated by `{COMMAND}{' --path' if path_only else ''}` from {what}: do not edit.",
             "# The naming rule is campaign/targets.py's; the Makefile includes this file and remakes it when a study",
             "# file is newer.",
             _add("STUDIES", [t.study for t in found]),
             _add("CAMPAIGN_TARGETS", [e for t in found for e in t.experiments]),
             _add("GPU_TARGETS", [e for t in found for e in t.gpu_experiments]),
             _add("STUDY_TARGETS", [n for t in found for a in t.aggregates for n in a.names]),
             _add("GPU_STUDY_TARGETS", [n for t in found for a in t.aggregates if a.device == "gpu" for n in a.names])]
    for t in found:
        lines += ["", f"# {t.study}", f"HELP.{t.study} := {help_text(t)}"]
        for a in t.aggregates:
            lines.append(f"{' '.join(a.names)}: STUDY_EXPERIMENTS := {' '.join(a.experiments)}".rstrip())
            lines += [f"{name}: STUDY_INSTEAD := {cpu}" for name, cpu in a.instead.items()]
            if not a.experiments:
                lines += [f"{name}: STUDY_NONE := {_none(a, name)}" for name in a.names]
    return "\n".join(lines) + "\n"


def _none(a: Aggregate, name: str) -> str:
    """The one-line error of an aggregate with no experiment to run (a study without a GPU experiment)."""
    fix = f"run make {a.instead[name]}" if a.instead else "run its experiments one at a time (make help lists them)"
    return f"study {a.study} has no {a.device.upper()} experiment; {fix}"


def _add(variable: str, names: list[str]) -> str:
    return f"{variable} += {' '.join(names)}".rstrip()


def help_text(t: StudyTargets) -> str:
    """The line `make help` shows for a study: its experiments, then its whole-study targets (short name first)."""
    whole = ", ".join(" = ".join(reversed(a.names)) for a in t.aggregates)
    return f"{' '.join(t.experiments)}; whole study: {whole}"


def write(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (a make running beside this one reads either file, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # a committed file's mode, not mkstemp's owner-only one
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """`targets [--path] [--out FILE]`: write the make include of the kit's studies (default: targets.mk at the
    repository's root) or, with --path, of the studies on DLREPRO_STUDIES_PATH (--out required)."""
    ap = argparse.ArgumentParser(prog=f"{COMMAND}")
    ap.add_argument("--path", action="store_true", help="the studies on DLREPRO_STUDIES_PATH, not the kit's")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.path and a.out is None:
        raise UsageError("--path needs --out", f"name the file to write: {COMMAND} --path --out FILE")
    out = a.out or KIT_FILE
    write(out, render(a.path))
    print(f"{a.out or KIT_FILE.name}: the make targets of the study files, regenerated", flush=True)
    return 0
