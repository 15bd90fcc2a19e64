"""Framework modules, found by convention: bench/frameworks/<era>/<name>.py is framework <name> of that era.

Each module translates a workload spec (the resolved spec of a run request) into that framework's
idiomatic model and training loop, building the layers bench/modelplan.py planned. It exposes:

    NAME: str
    PACKAGE: str                                 # the key of versions() that is the framework's version
    def versions() -> dict                       # package -> version actually imported
    def make_trainer(spec, data, device, seed) -> a Trainer

Era `current` holds today's releases (CPython 3.11); era `paper` the versions a study used
(CPython 3.6). Modules whose name starts with '_' are helpers, not frameworks. The entrypoint
owns the epoch loop (or the iterations protocol's step loop), the clocks and the artifacts; a
Trainer only computes. This package itself is
CPython 3.6-clean and imports no framework.
"""

import importlib
from pathlib import Path
from types import ModuleType
from typing import List, Optional, Tuple

from bench.errors import UsageError

ERAS = ("current", "paper")
HERE = Path(__file__).parent


class Trainer:
    """What the entrypoint needs from a framework: build once, then epochs and evaluations.

    Framework modules return objects with these methods (duck-typed; this class documents them).
    step() is needed only by the iterations protocol (bench/iterations.py); a trainer without it
    fails such a run with a message naming its framework and era.
    """

    def param_count(self) -> int:
        """Number of trainable parameters of the built model."""
        raise NotImplementedError

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass over the training set in training mode; (mean loss, train accuracy or None).

        Raise bench.frameworks.NonFiniteLoss as soon as the loss is NaN or infinite.
        """
        raise NotImplementedError

    def step(self) -> float:
        """One training mini-batch (forward, backward, optimizer update) in training mode; its loss.

        The batches follow the training set in order from its first row, wrapping around at the
        end (no shuffling; every batch has batch_size rows, fewer only when the set is smaller), and
        each one runs through the same per-batch code as train_epoch. Returns the batch's mean loss
        as a float (a host read); raise bench.frameworks.NonFiniteLoss when it is NaN or infinite.
        """
        raise NotImplementedError

    def infer(self):
        """Optional (the inference protocol, bench/inference.py, needs it): one forward pass in the framework's
        inference mode (no gradient, batchnorm's moving statistics, dropout off) on the next batch of the
        training set, in step()'s order; its outputs as a NumPy array on the host (N, output values)."""
        raise NotImplementedError

    def check_finite(self) -> None:
        """Optional: raise NonFiniteLoss if the model diverged in a way step()'s loss does not show
        (MXNet: oneDNN's ReLU maps NaN to 0). The iterations protocol calls it, when a trainer has
        it, once after the measured steps, outside their clocks."""

    def evaluate(self) -> float:
        """Test-set accuracy in [0, 1], in inference mode (dropout off)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Block until queued device work is done, so a clock read after it is honest."""
        raise NotImplementedError

    def info(self) -> dict:
        """What was really used: {'device_name', 'threads', 'kernels': {...}, 'data_layout', ...}."""
        raise NotImplementedError


class NonFiniteLoss(RuntimeError):
    """Training produced a NaN or infinite loss; the run is recorded as failed with cause 'nan'."""


def known_frameworks(era: str = "current") -> List[str]:
    """Every framework with a module in `era`."""
    return sorted(p.stem for p in (HERE / era).glob("*.py") if not p.stem.startswith("_"))


def check_name(name: str, era: str = "current") -> str:
    """Return name if `era` has a module for it, else raise a UsageError naming the choices."""
    if era not in ERAS:
        raise UsageError(f"unknown era '{era}'", f"choose from: {', '.join(ERAS)} (ERA=...)")
    if name not in known_frameworks(era):
        have = ", ".join(known_frameworks(era)) or "none yet"
        raise UsageError(f"unknown framework '{name}' for the {era} era",
                         f"choose from: {have} (FRAMEWORKS=...)")
    return name


def load(name: str, era: str = "current") -> ModuleType:
    """Import the module of framework `name` in `era` (inside that framework's environment)."""
    return importlib.import_module(f"bench.frameworks.{era}.{check_name(name, era)}")
