"""Executors: where a campaign's planned runs are carried out, on this host or handed to a cluster.

'local' is this process (campaign/execute.py); every other executor is a module of this folder, found there
(discovered(): campaign/executors/<name>.py, not registered; '_' marks a helper module): slurm (one job array,
slurm.py), kubernetes (Indexed Jobs, kubernetes.py). `python -m campaign run` (campaign/__main__.py) hands it the
planned runs.
"""

from __future__ import annotations

from pathlib import Path

from bench.errors import UsageError

LOCAL = "local"
# `python -m campaign run` exits with this when runs were handed to a scheduler and are not back yet.
QUEUED_EXIT = 3


def discovered() -> tuple[str, ...]:
    """Every executor module of this package's folders (campaign/executors/<name>.py), sorted."""
    return tuple(sorted({p.stem for folder in __path__ for p in Path(folder).glob("*.py")
                         if not p.stem.startswith("_")}))


def names() -> tuple[str, ...]:
    """Every executor EXECUTOR may name: local first, then the discovered ones."""
    return (LOCAL, *discovered())


def check_name(name: str) -> str:
    """Return an executor name EXECUTOR may give, else the one-line UsageError naming the choices."""
    if name not in names():
        raise UsageError(f"unknown executor '{name}'", f"choose from: {', '.join(names())} (EXECUTOR=...)")
    return name
