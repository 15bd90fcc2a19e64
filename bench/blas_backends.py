"""The sweep axis `blas`: which BLAS backend a run asks its framework to compute with (Wu et al.'s Eigen vs MKL
and OpenBLAS vs MKL), declared once as data in each framework's declaration (Era.blas, read by backends():
bench/frameworks/<framework>/__init__.py) and applied in the run's process before the framework loads (apply()).

A value is what the run asked for; what the process really loaded is recorded apart, read from the process
(bench/blas.py: run.json environment.libraries and environment.library_settings), and the report reads that.
- TensorFlow, and Keras (which runs on TensorFlow in the current era: bench/frameworks/keras/current.py sets
  KERAS_BACKEND=tensorflow): "onednn" (TF_ENABLE_ONEDNN_OPTS=1, TensorFlow's default on x86) and "eigen"
  (TF_ENABLE_ONEDNN_OPTS=0: Eigen's contraction kernels, today's form of the study's Eigen build). TensorFlow
  reads the variable once, when it is imported.
- Theano: its compiled modules link the BLAS that THEANO_FLAGS blas.ldflags names, read when Theano is imported:
  "openblas" (Debian's libopenblas, the kit's default), "reference" (Debian's reference BLAS in its own folder,
  libblas-dev) and "mkl" (Intel's MKL from the `mkl` wheel, installed into the environment's <prefix>/lib; the
  wheel ships only libmkl_rt.so.<N>, so it is linked by file name, -l:libmkl_rt.so.<N>; MKL threads with GNU's
  OpenMP, as Theano's own check asks, so one OpenMP runtime serves the process and Intel's libiomp5 is not
  needed; MKL_NUM_THREADS, set by bench/threads.py, is its thread count). Theano adds each -L folder to the
  compiled modules' rpath itself; THEANO_FLAGS is split on commas, so no -Wl,... goes in it. (Tried by hand
  with the mkl 2026.2 wheel unpacked beside Theano 1.0.5: Dot22 links libmkl_rt.so.3 and bench/blas.py
  records MKL, threading layer gnu.)
Other frameworks cannot switch: NumPy-based ones compute with the OpenBLAS their NumPy wheel bundles, PyTorch
and MXNet with the BLAS linked into their own libraries. campaign.plan refuses a blas point for them (refusal()).

A backend whose library this environment lacks stops the run at once with a UsageError naming the fix.
Standard library only, CPython 3.6-clean: it runs before NumPy or any framework is imported.
"""

import ctypes.util
import glob
import os
import shutil
import subprocess
import sys
from typing import Dict, List, NamedTuple, Optional

from bench.errors import UsageError
from bench.frameworks import capabilities

AXIS = "blas"
ONEDNN_VAR = "TF_ENABLE_ONEDNN_OPTS"
# Debian's reference BLAS (libblas3 + libblas-dev) in its own folder, beside the alternatives' libblas.so.
REFERENCE_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"
# The mkl wheel's runtime library, in the environment's <prefix>/lib (only the versioned file).
MKL_RT_GLOB = "libmkl_rt.so.*"
MKL_MARK = "{mkl}"  # in a Theano backend's ldflags: replaced at run time by the found MKL's -L and -l: flags


class Backend(NamedTuple):
    """One value of the axis for one framework: the environment variables it sets, or Theano's blas.ldflags."""

    env: Dict[str, str]
    ldflags: Optional[str]
    needs: Optional[str]  # where it is not bundled: the library file (or 'openblas' for the linker's search)
    fix: str  # how to get that library when it is missing
    imported: str  # the module that reads the setting when it is imported: the switch must come before it


def backends(framework: str, era: str = "current") -> Dict[str, Backend]:
    """value -> Backend of the BLAS backends `framework`'s module of `era` can switch to (its declaration's
    Era.blas: bench/frameworks/<framework>/__init__.py), the first its default; {} when it cannot switch."""
    can = capabilities.era_of(framework, era)
    return can.blas if can is not None else {}


FEATURE = capabilities.Feature(lambda framework, can: bool(can.blas), "cannot choose its BLAS",
                               "the BLAS switch is written", "blas sweeps")


def values() -> List[str]:
    """Every value some framework can switch to, in declaration order."""
    return list(dict.fromkeys(v for fw in capabilities.every() for era in capabilities.eras()
                              for v in backends(fw, era)))


def refusal(framework: str, era: str, value: str) -> Optional[str]:
    """Why `framework` of `era` cannot compute with BLAS backend `value` (one line), or None when it can."""
    eras = FEATURE.eras(framework)
    if not eras:
        return (f"{framework} cannot choose its BLAS (it computes with the one its packages bundle); blas sweeps "
                f"run with FRAMEWORKS={' '.join(FEATURE.frameworks())}")
    if era not in eras:
        return f"the BLAS switch is written for the {' and '.join(eras)} era, not {era} (ERA={eras[0]})"
    if value not in backends(framework, era):
        return f"{framework} has no BLAS backend '{value}' (it has {', '.join(backends(framework, era))})"
    return None


def requested(req: dict) -> Optional[str]:
    """The BLAS backend a run request asks for (its sweep point's `blas`), or None."""
    return (req.get("sweep") or {}).get(AXIS)


def apply(req: dict) -> Optional[Backend]:
    """Put the request's BLAS backend in place for its framework, before that framework is imported; return it
    (None when the request asks for none). A UsageError when the framework cannot switch to it or this
    environment lacks its library; a RuntimeError when the framework was imported already."""
    value = requested(req)
    if value is None:
        return None
    framework, era = req["framework"], req["era"]
    why = refusal(framework, era, value)
    if why:
        raise UsageError(f"the request asks for BLAS backend '{value}' but {why}",
                         "plan the run again (python -m campaign skips it)")
    backend = backends(framework, era)[value]
    if backend.imported in sys.modules:
        raise RuntimeError(f"{backend.imported} was imported before the BLAS backend '{value}' was applied")
    ldflags = theano_ldflags(value) if backend.ldflags is not None else None  # its library checked first
    os.environ.update(backend.env)
    if ldflags is not None:
        set_theano_ldflags(ldflags)
    return backend


def require_library(framework: str, value: str) -> None:
    """Raise a UsageError naming the fix unless this environment has the library that `framework`'s BLAS backend
    `value` needs (nothing for one bundled with the framework). Theano checks its OpenBLAS here too when no
    backend was asked for (bench/frameworks/theano/runtime.py)."""
    backend = backends(framework)[value]
    if backend.ldflags == MKL_MARK:
        if mkl_runtime() is None:
            raise UsageError(f"BLAS backend '{value}' needs the mkl wheel's {MKL_RT_GLOB} in "
                             f"{os.path.join(sys.prefix, 'lib')}, which this environment lacks", backend.fix)
        return
    present = linkable("openblas") if backend.needs == "openblas" else (
        backend.needs is None or os.path.exists(backend.needs))
    if not present:
        raise UsageError(f"BLAS backend '{value}' needs {backend.needs}, which this environment lacks", backend.fix)


# How a file the linker takes for -l<name> begins: a shared object, or a linker script (as libc.so is).
_LINKABLE_HEADS = (b"\x7fELF", b"/* GNU ld script", b"INPUT", b"GROUP")


def linkable(name: str) -> bool:
    """Whether `-l<name>` links here, as Theano's compiled modules need: the dynamic loader finds the library and
    the C++ compiler Theano compiles with finds lib<name>.so, a shared object or a linker script (a runtime-only
    package, e.g. Debian's libopenblas0 without libopenblas-dev, installs lib<name>.so.N alone, which the loader
    finds and the linker does not). Without g++ only the loader is asked (the run then fails for the compiler)."""
    if ctypes.util.find_library(name) is None:
        return False
    gxx = shutil.which("g++")
    if gxx is None:
        return True
    try:
        answer = subprocess.run([gxx, "-print-file-name=lib" + name + ".so"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, timeout=60)  # bytes: CPython 3.6 has no text=
        found = answer.stdout.decode(errors="replace").strip()
        if not os.path.isabs(found):  # g++ echoes the bare name when no folder of its search holds it
            return False
        with open(found, "rb") as fh:
            return fh.read(16).startswith(_LINKABLE_HEADS)
    except (OSError, subprocess.SubprocessError):
        return False


def theano_ldflags(value: str) -> str:
    """The blas.ldflags of Theano's BLAS backend `value`, its library checked present first (require_library: a
    UsageError naming the fix); MKL's names the runtime found in this environment."""
    require_library("theano", value)
    backend = backends("theano")[value]
    if backend.ldflags == MKL_MARK:
        found = mkl_runtime() or ""
        return f"-L{os.path.dirname(found)} -l:{os.path.basename(found)}"
    return backend.ldflags or ""


def mkl_runtime(prefix: Optional[str] = None) -> Optional[str]:
    """The path of the mkl wheel's libmkl_rt.so.<N> in the environment at `prefix` (default this one), or None."""
    found = sorted(glob.glob(os.path.join(prefix or sys.prefix, "lib", MKL_RT_GLOB)))
    return found[-1] if found else None


def set_theano_ldflags(ldflags: str) -> None:
    """THEANO_FLAGS with blas.ldflags set to `ldflags` (the run's choice wins over one already there); the other
    flags kept as they were."""
    kept = [item for item in os.environ.get("THEANO_FLAGS", "").split(",")
            if item.strip() and item.split("=", 1)[0].strip() != "blas.ldflags"]
    os.environ["THEANO_FLAGS"] = ",".join(kept + [f"blas.ldflags={ldflags}"])
