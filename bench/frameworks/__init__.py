"""Framework modules, found by convention: bench/frameworks/<name>.py is framework <name>.

Each module translates a workload spec (bench/workloads/*.toml) into that framework's idiomatic
model and training loop. It exposes:

    NAME: str
    PACKAGE: str                                 # the key of versions() that is the framework's version
    def versions() -> dict[str, str]            # package -> version actually imported
    def make_trainer(spec, data, device, seed) -> Trainer

The entrypoint owns the epoch loop, the clocks and the artifacts; a Trainer only computes.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Protocol

from bench.errors import UsageError


class Trainer(Protocol):
    """What the entrypoint needs from a framework: build once, then epochs and evaluations."""

    def param_count(self) -> int:
        """Number of trainable parameters of the built model."""

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass over the training set in training mode; (mean loss, train accuracy or None).

        Raise bench.frameworks.NonFiniteLoss as soon as the loss is NaN or infinite.
        """

    def evaluate(self) -> float:
        """Test-set accuracy in [0, 1], in inference mode (dropout off)."""

    def synchronize(self) -> None:
        """Block until queued device work is done, so a clock read after it is honest."""

    def info(self) -> dict:
        """What was really used: {'device_name', 'threads', 'kernels': {...}, 'data_layout', ...}."""


class NonFiniteLoss(RuntimeError):
    """Training produced a NaN or infinite loss; the run is recorded as failed with cause 'nan'."""


def known_frameworks() -> list[str]:
    """Every framework with a module here."""
    here = Path(__file__).parent
    return sorted(p.stem for p in here.glob("*.py") if not p.stem.startswith("_"))


def check_name(name: str) -> str:
    """Return name if a module exists for it, else raise a UsageError naming the choices."""
    if name not in known_frameworks():
        raise UsageError(
            f"unknown framework '{name}'",
            f"choose from: {', '.join(known_frameworks())} (FRAMEWORKS=...)",
        )
    return name


def load(name: str) -> ModuleType:
    """Import the module of framework `name` (inside that framework's environment)."""
    return importlib.import_module(f"bench.frameworks.{check_name(name)}")
