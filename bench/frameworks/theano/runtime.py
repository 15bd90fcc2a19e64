"""The process Theano computes in: its device, its toolchain (g++, the BLAS it links), the BLAS's threads, the
versions imported and the configuration in force, as info() reports them.

Era-neutral, CPython 3.6-clean; imported after THEANO_FLAGS is set (flags.configure).
"""

import ctypes
import ctypes.util
import platform
from typing import Any, Dict

import numpy as np
import scipy
import theano

from bench import blas_backends
from bench.frameworks import common


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (Theano's BLAS is a system library: bench/blas.py records it)."""
    return {
        "theano": theano.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }


def resolve_device(device: str) -> str:
    """'cpu' (checked against THEANO_FLAGS), or a clear error: this environment has no GPU backend."""
    if device == "cpu":
        if theano.config.device != "cpu":
            raise RuntimeError(
                f"device 'cpu' requested but THEANO_FLAGS sets device={theano.config.device} "
                "(Theano picks its device at import); unset it"
            )
        return "cpu"
    if device == "gpu":
        raise RuntimeError(
            "device 'gpu' requested but this Theano environment is CPU only: Theano's GPU backend "
            "(theano.gpuarray, device=cuda) needs pygpu/libgpuarray, which no PyPI release provides "
            f"(Theano {theano.__version__}, Python {platform.python_version()})"
        )
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def check_toolchain() -> None:
    """Fail clearly where Theano would otherwise fall back to slow Python code or a link error."""
    if not theano.config.cxx:
        raise RuntimeError(
            "Theano found no C++ compiler (g++): without it every op runs as slow Python code. "
            "Install g++ (Debian: apt-get install g++) and the Python headers"
        )
    if "openblas" in theano.config.blas.ldflags:  # the kit's default too, which no blas sweep point checked
        blas_backends.require_library("theano", "openblas")


def _openblas() -> Any:
    """The OpenBLAS that Theano's compiled modules link against (-lopenblas), or None."""
    name = ctypes.util.find_library("openblas")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def set_threads() -> Dict[str, Any]:
    """Apply DLREPRO_THREADS to OpenBLAS (the threads of Theano's gemm, conv and dense) when blas.ldflags links
    OpenBLAS; report them. Another BLAS is left alone: opening OpenBLAS here would load it into a run that
    computes with another (bench/blas_backends.py), MKL reads MKL_NUM_THREADS (bench/threads.py) when it loads,
    and the reference BLAS runs on one thread."""
    n = common.threads_from_env()
    ldflags = theano.config.blas.ldflags
    lib = _openblas() if "openblas" in ldflags else None
    blas_threads = None
    if lib is not None:
        if n is not None:
            lib.openblas_set_num_threads(int(n))
        blas_threads = int(lib.openblas_get_num_threads())
    elif f"-L{blas_backends.REFERENCE_BLAS_DIR} " in ldflags:  # Debian's reference BLAS: single-threaded
        blas_threads = 1
    return {
        # Theano's ops run one after another (no inter-op pool); inside one, the BLAS's threads.
        "intra_op": blas_threads if blas_threads is not None else n,
        "inter_op": 1,
        "openblas": blas_threads if lib is not None else None,  # None: blas.ldflags links another BLAS
        "openmp": bool(theano.config.openmp),  # Theano's default: off (only a few ops use it)
    }


def config_info(flags_set_here: Dict[str, str]) -> Dict[str, Any]:
    """The Theano configuration in force, for info(); `flags_set_here`: what flags.configure set."""
    return {
        "floatX": theano.config.floatX,
        "linker": theano.config.linker,
        "optimizer": theano.config.optimizer,
        "blas.ldflags": theano.config.blas.ldflags,
        "compiledir": theano.config.compiledir,
        "flags_set_by_dlrepro": flags_set_here,
    }


def blas_name() -> str:
    """The BLAS Theano's compiled modules link against, in words."""
    ldflags = theano.config.blas.ldflags
    return "OpenBLAS" if "openblas" in ldflags else (ldflags or "NumPy C-API BLAS")
