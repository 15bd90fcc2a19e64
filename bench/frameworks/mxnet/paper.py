"""MXNet 1.3.0 (Gluon; DLBench's version), the paper era: the era adapter of the Gluon model (blocks.py) and
trainer (trainer.py), for CPython 3.6 and NumPy 1.14.

What MXNet 1.3.0 makes different:
- gluon.rnn.LSTM reads no sequence lengths (use_sequence_length came in 2019), on the CPU and on cuDNN alike: the
  fused RNN operator runs over the whole padded batch and SequenceLast picks each sequence's last real step, and an
  encoder's final (h, c) comes from its LSTMCell stepped by contrib.foreach (blocks.py), on a GPU too.
- SequenceLast/SequenceMask want their lengths in the data's dtype: lengths travel as float32 (exact below 2**24).
- No mx.runtime.Features (1.5) and no nd.multi_all_finite (1.4): the build (CPU or CUDA, MKL-DNN) is read from the
  installed distribution's name (mxnet, mxnet-mkl, mxnet-cu90, ...), and the parameters are checked for NaN
  through one sum each (a NaN or inf anywhere makes its sum non-finite).
- NumPy 1.14: shuffling uses np.random.RandomState(seed); CPython 3.6: no importlib.metadata.
"""

import re
from pathlib import Path
from typing import Any, Dict, List, Union

import numpy as np

from bench.detection.detector import is_detector
from bench.detection.trainer import DetectionTrainer
from bench.frameworks.mxnet import CAPABILITIES, detection, trainer
from bench.frameworks.mxnet.library import mx, nd

NAME = trainer.NAME
PACKAGE = CAPABILITIES.package  # whose version is the framework's version


def _distribution() -> str:
    """The name of the installed MXNet distribution (mxnet, mxnet-mkl, mxnet-cu90, ...), from its
    metadata folder beside the package (CPython 3.6 has no importlib.metadata)."""
    site = Path(mx.__file__).resolve().parent.parent
    for meta in sorted(site.glob("mxnet*.dist-info")) + sorted(site.glob("mxnet*.egg-info")):
        name = meta.name.split("-")[0].replace("_", "-").lower()
        if re.match(r"mxnet(-cu\d+)?(mkl)?$", name):
            return name
    return "mxnet"


def versions() -> Dict[str, str]:
    """Versions of what this module really imported, and the build the distribution name states."""
    import platform

    dist = _distribution()
    cuda = re.match(r"mxnet-cu(\d+)(\d)", dist)
    out = {"mxnet": mx.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "mxnet_distribution": dist, "mxnet_cuda": "yes" if cuda else "no",
           "mxnet_mkldnn": "yes" if dist.endswith("mkl") else "no"}
    if cuda:
        out["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}"
    return out


class PaperTrainer(trainer.MXNetTrainer):
    """The Trainer protocol for MXNet 1.3.0 Gluon."""

    CUDNN_LENGTHS = False
    LENGTHS_DTYPE = "float32"
    SHUFFLER = " (np.random.RandomState)"
    RELU_NAN = "ReLU maps NaN to 0"

    def _shuffler(self, seed: int) -> Any:
        return np.random.RandomState(seed)

    def _all_finite(self, weights: List[nd.NDArray]) -> bool:
        return bool(np.isfinite(nd.concat(*[w.sum() for w in weights], dim=0).asnumpy()).all())

    def _cpu_library(self, op: str) -> str:
        if _distribution().endswith("mkl"):
            return ", MKL-DNN"
        return ": im2col + OpenBLAS GEMM; no MKL-DNN in this build" if op == "conv" else ""

    def _build(self) -> str:
        return f"distribution {_distribution()}"

    def versions(self) -> Dict[str, str]:
        return versions()


class PaperDetector(detection.DetectorNetwork, PaperTrainer):
    """A detector's Network (detection.py) with MXNet 1.3.0's hooks (versions, build facts)."""


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> Union[PaperTrainer, DetectionTrainer]:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed: a PaperTrainer, or for a
    detector (model.architecture "faster_rcnn") a bench.detection DetectionTrainer over a PaperDetector."""
    if is_detector(spec):
        return detection.make_trainer(PaperDetector, spec, data, device, seed)
    return PaperTrainer(spec, data, device, seed)
