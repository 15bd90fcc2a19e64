"""CPU thread pinning for a run. Standard library only: it must run before NumPy or any framework
is imported, because OpenBLAS, MKL and OpenMP read these variables once, when they load.
CPython 3.6-clean."""

import os
from typing import Optional

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# Left unset whatever the thread count, so the library's own default holds. MXNet's engine workers (inter-op) stay
# at MXNet's default of one in every era: a second worker only puts twice the OpenMP threads on the same cores, and
# MXNet 1.3.0's wheel bundles an OpenBLAS (OpenMP build) whose exec_blas reads its buffer-in-use flag without a
# fence, so a second caller arriving while the first is inside loops forever (it hung the paper image at two
# threads, one core spinning on `jmp .`). Unset, MXNet's default (one worker) holds in both eras.
UNSET_VARS = ("MXNET_CPU_WORKER_NTHREADS",)


def pin(threads: Optional[int]) -> None:
    """Set DLREPRO_THREADS and every thread-pool variable the frameworks read; unset UNSET_VARS."""
    for var in UNSET_VARS:
        os.environ.pop(var, None)
    if threads:
        os.environ["DLREPRO_THREADS"] = str(threads)
        for var in THREAD_VARS:
            os.environ[var] = str(threads)


def physical_cores() -> int:
    """Physical cores of this machine: distinct (physical id, core id) pairs of /proc/cpuinfo, else the
    logical CPU count (Shi et al. sweep threads up to and past this)."""
    cores, package = set(), "0"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "physical id":
                    package = value.strip()
                elif key.strip() == "core id":
                    cores.add((package, value.strip()))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1
