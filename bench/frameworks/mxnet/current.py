"""Today's MXNet (1.9, Gluon): the era adapter of the Gluon model (blocks.py) and trainer (trainer.py).

What today's MXNet has that MXNet 1.3.0 lacks, used here: mx.runtime.Features (the build's CUDA, cuDNN and oneDNN),
nd.multi_all_finite (one check of every weight), the fused LSTM's use_sequence_length on cuDNN (the padding skipped,
and an encoder's final (h, c) read off the kernel), int32 lengths for SequenceLast/SequenceMask, NumPy's
default_rng and importlib.metadata.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

import numpy as np

from bench.detection.detector import is_detector
from bench.detection.trainer import DetectionTrainer
from bench.frameworks.mxnet import CAPABILITIES, detection, trainer
from bench.frameworks.mxnet.library import mx, nd

NAME = trainer.NAME
PACKAGE = CAPABILITIES.package  # whose version is the framework's version


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and whether MXNet was built with CUDA)."""
    from importlib import metadata

    out = {"mxnet": mx.__version__, "numpy": np.__version__, "python": platform.python_version()}
    # The distribution name tells the build: mxnet (CPU) or mxnet-cuXYZ (built for CUDA XY.Z).
    names = (d.metadata["Name"] or "" for d in metadata.distributions())
    dists = sorted(name for name in names if re.fullmatch(r"mxnet(-cu\d+|-mkl|-native)?", name.lower()))
    if dists:
        out["mxnet_distribution"] = dists[0]
    features = mx.runtime.Features()
    cuda = re.fullmatch(r"mxnet-cu(\d+)(\d)", dists[0].lower()) if dists else None
    if cuda and features.is_enabled("CUDA"):
        out["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}"
    out["mxnet_cuda"] = "yes" if features.is_enabled("CUDA") else "no"
    out["mxnet_cudnn"] = "yes" if features.is_enabled("CUDNN") else "no"
    out["mxnet_onednn"] = "yes" if features.is_enabled("MKLDNN") else "no"
    return out


class CurrentTrainer(trainer.MXNetTrainer):
    """The Trainer protocol for today's MXNet Gluon."""

    def _shuffler(self, seed: int) -> Any:
        return np.random.default_rng(seed)

    def _all_finite(self, weights: list[nd.NDArray]) -> bool:
        return bool(nd.multi_all_finite(*weights, num_arrays=len(weights)).asscalar())

    def _cpu_library(self, op: str) -> str:
        onednn = mx.runtime.Features().is_enabled("MKLDNN") and os.environ.get("MXNET_MKLDNN_ENABLED", "1") != "0"
        if op == "rnn":
            onednn = onednn and os.environ.get("MXNET_USE_MKLDNN_RNN", "1") != "0"
        return ", oneDNN" if onednn else ""

    def _build(self) -> str:
        return "a CUDA build" if mx.runtime.Features().is_enabled("CUDA") else "a CPU-only build (pip 'mxnet')"

    def versions(self) -> dict[str, str]:
        return versions()


class CurrentDetector(detection.DetectorNetwork, CurrentTrainer):
    """A detector's Network (detection.py) with today's MXNet's hooks (versions, build facts)."""


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> CurrentTrainer | DetectionTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed: a CurrentTrainer, or for a
    detector (model.architecture "faster_rcnn") a bench.detection DetectionTrainer over a CurrentDetector."""
    if is_detector(spec):
        return detection.make_trainer(CurrentDetector, spec, data, device, seed)
    return CurrentTrainer(spec, data, device, seed)
