"""CPU thread pinning for a run. Standard library only: it must run before NumPy or any framework
is imported, because OpenBLAS, MKL and OpenMP read these variables once, when they load."""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS")


def pin(threads: int | None) -> None:
    """Set DLREPRO_THREADS and every thread-pool variable the frameworks read."""
    if threads:
        os.environ["DLREPRO_THREADS"] = str(threads)
        for var in THREAD_VARS:
            os.environ[var] = str(threads)


def pin_from_argv(argv: list[str]) -> None:
    """Pin from a `--threads N` (or `--threads=N`) in a command line, before argparse runs."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--threads" and i + 1 < len(argv) else (
            arg.split("=", 1)[1] if arg.startswith("--threads=") else None)
        if value and value.isdigit():
            pin(int(value))
