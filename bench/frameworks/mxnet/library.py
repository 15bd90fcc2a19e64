"""MXNet, imported once the run's thread variables are pinned: every module of this package imports it from here.

MXNet reads OMP_NUM_THREADS and MXNET_CPU_WORKER_NTHREADS once, when it is imported. The entrypoint
(bench.threads.pin) sets them before importing a framework module: the OpenMP pool from the request, one engine
worker (bench.threads.UNSET_VARS says why: two hang MXNet 1.3.0's bundled OpenBLAS); they are pinned again here
for the probe and other callers, and set_threads() calls MXSetNumOMPThreads as well, which holds even if MXNet was
imported earlier. CPython 3.6-clean: both eras' modules use it.
"""

import ctypes
from typing import Optional

from bench import threads
from bench.frameworks import common

# Before `import mxnet`: its engine and OpenMP pool read these once, at import.
threads.pin(common.threads_from_env())

import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402

__all__ = ["autograd", "gluon", "mx", "nd", "nn", "rnn", "set_threads"]


def set_threads() -> Optional[int]:
    """Apply $DLREPRO_THREADS to MXNet's OpenMP pool (also when MXNet was imported earlier)."""
    n = common.threads_from_env()
    if n is not None:
        mx.base.check_call(mx.base._LIB.MXSetNumOMPThreads(ctypes.c_int(n)))
    return n
