"""`python -m campaign.hostcheck`: can this Python run the host stages as it is? (RUNNER=system)

With RUNNER=system the Makefile runs the host stages (data, campaign, analysis) on the machine's own
Python instead of building the kit's host environment, for machines that reach no package index.
They need Python >= 3.11 (tomllib) and HOST_MODULES; nvidia-ml-py (pynvml) only for GPU figures,
and neither the docker SDK nor pytest. Standard library only and free of newer syntax, so that an
older Python gets the one-line answer too.
"""

import importlib.util
import sys

from bench.errors import UsageError, run_cli

MIN_PYTHON = (3, 11)
# Import name -> the package that provides it.
HOST_MODULES = {"numpy": "numpy", "scipy": "scipy", "matplotlib": "matplotlib", "psutil": "psutil", "pandas": "pandas"}
GPU_MODULES = {"pynvml": "nvidia-ml-py"}


def absent(modules: dict) -> list:
    """The packages whose module this Python cannot find."""
    return [package for module, package in modules.items() if importlib.util.find_spec(module) is None]


def check(argv: list) -> int:
    """Exit 0 when the host stages can run here; else one line naming what is missing and the fix."""
    python = sys.executable
    if sys.version_info[:2] < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        raise UsageError(f"RUNNER=system runs the host stages on {python}, which is Python "
                         f"{sys.version.split()[0]}; they need Python >= {need}",
                         f"point PYTHON at a Python >= {need} (make ... PYTHON=/path/to/python3.11), or use "
                         "RUNNER=local")
    missing = absent(HOST_MODULES)
    if missing:
        raise UsageError(f"RUNNER=system runs the host stages on {python}, which lacks {', '.join(missing)}",
                         f"pip install {' '.join(missing)} into it, point PYTHON at another Python, or use "
                         "RUNNER=local")
    if absent(GPU_MODULES):
        print(f"note: {python} has no nvidia-ml-py: runs record no GPU figures", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(check, sys.argv[1:]))
