"""The host pre-flight: the system libraries and tools each framework's runs need from the machine, checked
before the first run of a campaign, each missing one named in one line with the packages that provide it.

What a framework needs beyond its lock is declared once, here (NEEDS), from what its image installs
(images/frameworks.toml: the era's and the framework's Debian packages) and why (FACTS.md):
- Theano compiles its graphs at run time with g++, against Python's C headers, and links them with a BLAS
  (-lopenblas, the kit's default; a blas sweep's 'reference' point links Debian's reference BLAS instead:
  bench/blas_backends.py, whose require_library checks both, as the run itself does).
- MXNet's libmxnet.so links the system's GNU OpenMP runtime (libgomp.so.1) and, in the current era, the
  libgfortran bundled with it needs libquadmath.so.0 (the paper-era wheel bundles libquadmath too).
- PyTorch, TensorFlow, Keras and Chainer need nothing beyond their wheels (PyTorch's bundles its own OpenMP
  runtime).

Only the host runners are checked (HOST_RUNNERS: local, system), on the machine that runs them: a scheduler's
task checks its own node (campaign/task.py). An image run needs none of this from the host: its image
carries the libraries (images/frameworks.toml), and the GPU pre-flight (campaign/preflight.py) checks what
the host must give a GPU image. A run that could not start for want of one of these is never recorded: the
campaign stops before its first run (or the task before it takes its run's lease), and the same command, once the
package is installed, runs it.
"""

from __future__ import annotations

import ctypes.util
import shutil
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench import blas_backends
from bench.errors import UsageError

# The runners whose runs load the machine's own libraries (the others run in an image that carries them).
HOST_RUNNERS = ("local", "system")
# How a need is checked: LIBRARY, the dynamic linker's search (ctypes.util.find_library: ldconfig's cache,
# then the compiler's and the linker's paths); TOOL, a command on PATH; HEADER, a file in the C include
# folder of the Python the environments are made from (this one: images/envs.py); BLAS, a BLAS backend of
# bench/blas_backends.py (its require_library).
LIBRARY, TOOL, HEADER, BLAS = "library", "tool", "header", "blas"


@dataclass(frozen=True)
class Need:
    """One thing a framework's runs need from the machine: words naming it (and why), how it is checked
    (`kind`, `name`), and the package that provides it on Debian and Ubuntu and on Fedora and RHEL."""

    what: str
    kind: str
    name: str
    debian: str
    rpm: str

    def present(self) -> bool:
        """Whether this machine has it (checked for real, each time)."""
        if self.kind == LIBRARY:
            return ctypes.util.find_library(self.name) is not None
        if self.kind == TOOL:
            return shutil.which(self.name) is not None
        if self.kind == HEADER:
            return (Path(sysconfig.get_paths()["include"]) / self.name).is_file()
        try:
            blas_backends.require_library("theano", self.name)  # one check of a BLAS backend's library
        except UsageError:
            return False
        return True

    def package(self) -> str:
        """'libopenblas-dev (Debian, Ubuntu) or openblas-devel (Fedora, RHEL)'."""
        return f"{self.debian} (Debian, Ubuntu) or {self.rpm} (Fedora, RHEL)"


OPENBLAS = Need("OpenBLAS (libopenblas, which Theano links its compiled graphs with)", BLAS, "openblas",
                "libopenblas-dev", "openblas-devel")
REFERENCE_BLAS = Need(f"the reference BLAS ({blas_backends.REFERENCE_BLAS_DIR}/libblas.so, the blas sweep's "
                      "'reference' backend)", BLAS, "reference", "libblas-dev", "blas-devel")
GXX = Need("a C++ compiler (g++, which compiles Theano's graphs)", TOOL, "g++", "g++", "gcc-c++")
PYTHON_H = Need(f"Python's C headers (Python.h of Python {sys.version_info[0]}.{sys.version_info[1]}, which "
                "Theano's compiled graphs include)", HEADER, "Python.h", "python3-dev", "python3-devel")
LIBGOMP = Need("GNU's OpenMP runtime (libgomp.so.1, which libmxnet.so links)", LIBRARY, "gomp", "libgomp1",
               "libgomp")
LIBQUADMATH = Need("libquadmath (libquadmath.so.0, which the libgfortran bundled with MXNet needs)", LIBRARY,
                   "quadmath", "libquadmath0", "libquadmath")

# (era, framework) -> what its runs need from the machine; a framework not listed needs nothing.
NEEDS: dict[tuple[str, str], tuple[Need, ...]] = {
    ("current", "theano"): (OPENBLAS, GXX, PYTHON_H),
    ("current", "mxnet"): (LIBGOMP, LIBQUADMATH),
    ("paper", "theano"): (OPENBLAS, GXX, PYTHON_H),
    ("paper", "mxnet"): (LIBGOMP,),
}
# A blas sweep point's backend -> what it needs instead of the framework's default BLAS (bench/blas_backends.py;
# mkl comes as a wheel inside the environment, which the run itself checks). Only Theano links a system BLAS.
BLAS_NEEDS = {("theano", "openblas"): OPENBLAS, ("theano", "reference"): REFERENCE_BLAS}


def needs(frameworks: Iterable[str], era: str, blas: Iterable[str | None] = ()) -> dict[Need, list[str]]:
    """{need: the frameworks that need it} of runs of `frameworks` in `era` at sweep points whose 'blas' values
    are `blas` (None, or none given: the framework's default BLAS)."""
    points = set(blas) or {None}
    found: dict[Need, list[str]] = {}
    for fw in frameworks:
        own = [n for n in NEEDS.get((era, fw), ()) if n.kind != BLAS or None in points]
        own += [BLAS_NEEDS[fw, v] for v in sorted(points - {None}) if (fw, v) in BLAS_NEEDS]
        for need in own:
            found.setdefault(need, []).append(fw)
    return found


def problems(frameworks: Iterable[str], era: str, blas: Iterable[str | None] = ()) -> list[tuple[str, str]]:
    """(problem, fix) for each thing the runs need that this machine lacks (needs()), in declaration order."""
    found = []
    for need, users in needs(frameworks, era, blas).items():
        if need.present():
            continue
        who = " and ".join(sorted(users))
        verb, them = ("needs", "it") if len(users) == 1 else ("need", "them")
        found.append((f"{who} {verb} {need.what}, which this machine lacks",
                      f"install {need.package()}, or run {who} in its image (RUNNER=docker), or leave {them} out "
                      "(FRAMEWORKS=...)"))
    return found


def check(runner: str, frameworks: Iterable[str], era: str, blas: Iterable[str | None] = ()) -> None:
    """Stop a campaign whose `runner` runs on this machine (HOST_RUNNERS) when the machine lacks what its
    runs need: one line `error: <problem>; <fix>` per missing thing on stderr, the last one raised as the
    UsageError (exit code 2). Nothing for an image runner."""
    if runner not in HOST_RUNNERS:
        return
    found = problems(frameworks, era, blas)
    for problem, fix in found[:-1]:
        print(f"error: {problem}; {fix}", file=sys.stderr, flush=True)
    if found:
        raise UsageError(*found[-1])
