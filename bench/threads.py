"""CPU thread pinning for a run. Standard library only: it must run before NumPy or any framework
is imported, because OpenBLAS, MKL and OpenMP read these variables once, when they load.
CPython 3.6-clean."""

import os
from typing import Optional

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS")


def pin(threads: Optional[int]) -> None:
    """Set DLREPRO_THREADS and every thread-pool variable the frameworks read."""
    if threads:
        os.environ["DLREPRO_THREADS"] = str(threads)
        for var in THREAD_VARS:
            os.environ[var] = str(threads)
