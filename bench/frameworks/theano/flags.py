"""Theano's configuration (THEANO_FLAGS) and its compile cache, put in place before Theano is imported.

Theano reads THEANO_FLAGS once, when it is imported, so each era module calls configure() first and imports
Theano (and this package's graph, optimizers and trainer modules, which import it) after. This module itself
imports no framework; the standard library only, CPython 3.6-clean.
"""

import os
import sys
from pathlib import Path
from typing import Dict

from bench import threads
from bench.frameworks import common

# Theano's compiled cache lives beside the environment it was compiled for (see compiledir()).
COMPILEDIR_NAME = "theano-compiledir"


def compiledir() -> Path:
    """A per-environment compile cache: <venv>/theano-compiledir, else a folder named after the interpreter's
    prefix in the user's cache (an image's system Python).

    Per environment, not per run: a cold cache costs minutes of g++ (measured on a busy 2-core
    machine: ~2.5 min for cnn-mnist, ~5 min for lstm-imdb; warm: ~1-10 s), which would inflate
    every run's setup and differ between runs. Theano keys each compiled module by a
    hash of its C code, the compiler flags and the NumPy ABI, so reuse inside one environment is
    safe; the environment's folder name carries its lock's sha256, so a changed lock (other Theano,
    NumPy or SciPy) starts from an empty cache and never loads modules built for other packages,
    and deleting the environment deletes its cache. (~/.theano, Theano's default, is shared by
    every environment and every checkout: a stale module there could hide an error.)
    """
    prefix = Path(sys.prefix)
    if sys.prefix != sys.base_prefix and os.access(str(prefix), os.W_OK):
        return prefix / COMPILEDIR_NAME
    return Path.home() / ".cache" / "dlrepro" / "theano-{}".format(prefix.name or "system")


def configure(module: str) -> Dict[str, str]:
    """Set THEANO_FLAGS and the BLAS thread count before Theano loads; return the flags set here.

    - floatX=float32 (as every other framework trains), device=cpu (no GPU backend: see
      runtime.resolve_device), blas.ldflags=-lopenblas (Debian's libopenblas-dev; without it Theano's
      BLAS detection goes through numpy.distutils and fails), base_compiledir per environment.
    - Flags already in THEANO_FLAGS win, so a user (or a run's BLAS backend, bench/blas_backends.py) can
      override any of them.
    - $DLREPRO_THREADS becomes OPENBLAS_NUM_THREADS/OMP_NUM_THREADS (bench.threads.pin) for the BLAS that
      Theano's compiled modules link against, read when that library loads (also set at run time in
      runtime.set_threads, in case it was loaded already).
    `module`: the era module calling, named in the error when Theano was imported before it.
    """
    if "theano" in sys.modules:
        raise RuntimeError(
            f"theano was imported before {module}, so its THEANO_FLAGS (floatX, blas.ldflags, base_compiledir) could "
            f"not be set: import {module} first")
    user = {}  # type: Dict[str, str]
    for item in os.environ.get("THEANO_FLAGS", "").split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            user[key.strip()] = value.strip()
    defaults = {
        "floatX": "float32",
        "device": "cpu",
        "blas.ldflags": "-lopenblas",
        "base_compiledir": str(compiledir()),
    }
    ours = {k: v for k, v in defaults.items() if k not in user}
    merged = dict(user)
    merged.update(ours)
    os.environ["THEANO_FLAGS"] = ",".join(f"{k}={v}" for k, v in merged.items())
    threads.pin(common.threads_from_env())
    return ours
