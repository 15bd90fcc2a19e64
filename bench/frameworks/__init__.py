"""Framework packages, found by convention: bench/frameworks/<name>/ is framework <name>.

Each package declares what its modules can do once, in its __init__.py (CAPABILITIES, a
bench/frameworks/capabilities.py record: per era its protocols, layer types, performance switches, BLAS
backends, data-parallel training, collectives; its packages), and holds one module per era,
bench/frameworks/<name>/<era>.py. A module named <era>_<anything>.py in a package is a helper of that era
(keras/current_optimizers.py), carried only by that era's images; any other module of a package is era-neutral:
both eras' images carry it, so it is CPython 3.6-clean and written with the API both versions have (Theano's
graph.py, Chainer's layers.py, MXNet's blocks.py and trainer.py), and the era modules are thin adapters over it
for what truly differs. common.py holds what every framework shares. Each era module translates a
workload spec (the resolved spec of a run request) into that framework's idiomatic model and training loop,
building the layers bench/modelplan.py planned. It exposes:

    NAME: str
    PACKAGE: str                                 # CAPABILITIES.package: the key of versions() that is the version
    def versions() -> dict                       # package -> version actually imported
    def make_trainer(spec, data, device, seed) -> a Trainer

Era `current` holds today's releases (CPython 3.11; they may use anything their framework's environment
offers and are the only files exempt from the payload's CPython 3.6 gate, images/compat.py). Era `paper`
holds the versions a study used (DLBench Table 2: TensorFlow 1.11 graph mode, Keras 2.2.4, PyTorch 0.4.1,
MXNet 1.3.0 Gluon, Chainer 4.5.0, Theano 1.0.2) on CPython 3.6, written with their versions' APIs,
NumPy 1.14-era APIs and imports of their own framework only; they keep the same contract. The entrypoint
owns the epoch loop (or the iterations protocol's step loop), the clocks and the artifacts; a Trainer only
computes. This package itself and every declaration are CPython 3.6-clean and import no framework.
"""

import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, List, Optional, Tuple

from bench.errors import UsageError

if TYPE_CHECKING:  # the record types; importing them here would load bench.modelplan with every framework module
    from bench.frameworks.capabilities import Capabilities

ERAS = ("current", "paper")
HERE = Path(__file__).parent


class Trainer:
    """What the entrypoint needs from a framework: build once, then epochs and evaluations.

    Framework modules return objects with these methods (duck-typed; this class documents them).
    step() is needed only by the iterations protocol (bench/iterations.py), infer() only by the inference
    protocol (bench/inference.py); the framework's declaration says which era has them, so the planner refuses
    the others' runs, and a trainer without one still fails such a run with a message naming its framework and era.
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


@functools.lru_cache(maxsize=None)
def discovered() -> Tuple[str, ...]:
    """Every framework package (a folder of this package with an __init__.py), sorted."""
    return tuple(sorted(p.parent.name for p in HERE.glob("*/__init__.py") if not p.parent.name.startswith("_")))


def declaration(name: str) -> "Capabilities":
    """Framework `name`'s capability declaration (its package's CAPABILITIES: bench/frameworks/capabilities.py)."""
    return importlib.import_module(f"{__name__}.{name}").CAPABILITIES


def module_era(stem: str) -> Optional[str]:
    """The era a framework package's module belongs to by its name (<era>.py or <era>_*.py), or None (__init__)."""
    return next((era for era in ERAS if stem == era or stem.startswith(era + "_")), None)


def known_frameworks(era: str = "current") -> List[str]:
    """Every framework with a module in `era`."""
    return [name for name in discovered() if (HERE / name / f"{era}.py").exists()]


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
    return importlib.import_module(f"bench.frameworks.{check_name(name, era)}.{era}")
