"""Theano 1.0.2 on CPython 3.6, the paper era (DLBench's version): the era-neutral trainer (trainer.py, over
graph.py and optimizers.py) with what this era does its own way. The graph is the current era's: every op it
uses is in Theano 1.0.2 as in 1.0.5, so the paper era builds the same models (same parameters, same
initialization) and serves the same protocols (epochs, step(), infer()).

- Scan's compiled inner loop (scan_perform_ext, Cython) builds on CPython 3.6, so scan runs its Cython loop
  here; info() reports which loop really ran.
- Each epoch's order is a permutation drawn from np.random.RandomState(seed) (NumPy's Generator is 1.17's).
- The image links one BLAS (OpenBLAS, THEANO_FLAGS blas.ldflags=-lopenblas): no BLAS choice.

Configuration (THEANO_FLAGS) must be in place before Theano is imported, so it is done at import of this
module (flags.configure), before the package's Theano modules are imported; flags the user already set win.
"""

import platform
import sys
from types import ModuleType
from typing import Any, Tuple, Union

from bench.frameworks.theano import CAPABILITIES, flags

NAME = "theano"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
SCAN_EXTENSION = "theano.scan_module.scan_perform_ext"

FLAGS_SET_HERE = flags.configure(__name__)

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


class PaperTrainer(trainer.TheanoTrainer):
    """The Theano trainer as Theano 1.0.2 on CPython 3.6 runs it."""

    flags_set_here = FLAGS_SET_HERE

    def shuffler(self, seed: int) -> Any:
        """NumPy's RandomState (its permutation orders each epoch): the paper image's NumPy has no Generator."""
        return np.random.RandomState(seed)

    def scan_loop(self) -> Tuple[str, str]:
        """The Cython loop when scan could load its compiled extension (read after compiling), else the Python one."""
        if isinstance(sys.modules.get(SCAN_EXTENSION), ModuleType):
            return "Cython loop (scan_perform_ext)", ""
        return "Python loop", f"scan_perform_ext not available on Python {platform.python_version()}; each step " \
                              "runs compiled C"


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> Union[PaperTrainer, DetectionTrainer]:
    """Build the spec's model, compile its training and evaluation steps for `device` ('cpu'); a detector
    (bench/detection) is detection.py's network in bench.detection.trainer.DetectionTrainer."""
    if is_detector(spec):
        return detection.make_trainer(spec, data, device, seed, FLAGS_SET_HERE)
    return PaperTrainer(spec, data, device, seed)
