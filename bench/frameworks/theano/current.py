"""Theano 1.0.5 on CPython 3.11, the current era: the era-neutral trainer (trainer.py, over graph.py and
optimizers.py) with what this era does its own way.

- Scan's compiled inner loop (scan_perform_ext, Cython) does not build on Python 3.11 (longintrepr.h was
  moved): a None in sys.modules makes its import fail cleanly, and scan falls back to its Python loop over
  steps (each step still runs compiled C thunks). info() says which loop ran.
- Each epoch's order is a permutation drawn from np.random.default_rng(seed).
- The BLAS Theano links is a run's choice (CAPABILITIES' BLAS: bench/blas_backends.py puts its blas.ldflags in
  THEANO_FLAGS before this module loads; flags.configure keeps it).

Configuration (THEANO_FLAGS) must be in place before Theano is imported, so it is done at import of this
module (flags.configure), before the package's Theano modules are imported; flags the user already set win.
"""

import sys
from typing import Any

from bench.frameworks.theano import CAPABILITIES, flags

NAME = "theano"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
SCAN_EXTENSION = "theano.scan_module.scan_perform_ext"

FLAGS_SET_HERE = flags.configure(__name__)
sys.modules.setdefault(SCAN_EXTENSION, None)  # type: ignore[arg-type]  # scan's Python loop (see above)

import numpy as np  # noqa: E402

# theano, T, FLOATX and SpecNet are read off an era module by the tests' probes (tests/bench/lrnprobe.py,
# tests/bench/frameworks/paper/inimage.py).
import theano  # noqa: E402,F401
import theano.tensor as T  # noqa: E402,F401,N812

from bench.detection.detector import is_detector  # noqa: E402
from bench.detection.trainer import DetectionTrainer  # noqa: E402
from bench.frameworks.theano import detection, runtime, trainer  # noqa: E402
from bench.frameworks.theano.graph import FLOATX, SpecNet  # noqa: E402,F401

versions = runtime.versions  # the module contract's versions()


class CurrentTrainer(trainer.TheanoTrainer):
    """The Theano trainer as Theano 1.0.5 on CPython 3.11 runs it."""

    flags_set_here = FLAGS_SET_HERE

    def shuffler(self, seed: int) -> Any:
        """NumPy's Generator (its permutation orders each epoch)."""
        return np.random.default_rng(seed)

    def scan_loop(self) -> tuple[str, str]:
        """The Python loop, unless something put the compiled extension in place before this module did."""
        if sys.modules.get(SCAN_EXTENSION) is None:
            return "Python loop", ("the compiled scan_perform_ext does not build on Python 3.11; each step runs "
                                   "compiled C")
        return "Cython loop", ""


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> CurrentTrainer | DetectionTrainer:
    """Build the spec's model, compile its training and evaluation steps for `device` ('cpu'); a detector
    (bench/detection) is detection.py's network in bench.detection.trainer.DetectionTrainer."""
    if is_detector(spec):
        return detection.make_trainer(spec, data, device, seed, FLAGS_SET_HERE)
    return CurrentTrainer(spec, data, device, seed)
