"""Chainer 7 (the current era): the era adapter of the era-neutral model (layers.py) and trainer (trainer.py).

Runs inside the chainer environment (CPython 3.11). What is Chainer 7's own, against the paper era's 4.5.0:

Device: Chainer 6+'s device objects - chainer.get_device('@numpy' / '@cupy:0') sends arrays (device.send),
the model moves with Link.to_device, and CuPy names the GPU (getDeviceProperties).

Threads: on the CPU Chainer's work is NumPy, i.e. OpenBLAS GEMMs (convolutions are im2col +
tensordot, the LSTM and dense layers are dot products) plus single-threaded NumPy elementwise
loops. OpenBLAS reads OPENBLAS_NUM_THREADS only when NumPy is loaded, which in the entrypoint and
the probe happens before this module is imported, so the trainer sets the thread count at run
time with threadpoolctl and reports what OpenBLAS really uses.

Performance switches from Chainer's performance guide: type checking is off in the training and
evaluation loops (chainer.config.type_check=False); on a GPU cuDNN is used ('auto') with its
convolution autotuning on (chainer.config.autotune=True) unless the cudnn_autotune sweep turns it
off. iDeep (Chainer's oneDNN backend for the CPU) has no build for Python 3.11, so the CPU path is
plain NumPy.
"""

from __future__ import annotations

import os
from typing import Any

from bench import switches
from bench.frameworks import common
from bench.frameworks.chainer import CAPABILITIES

# Honoured only if NumPy is not loaded yet (a plain `python -c` caller); see the docstring.
_REQUESTED_THREADS = common.threads_from_env()
if _REQUESTED_THREADS is not None:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(_REQUESTED_THREADS)

import chainer  # noqa: E402
import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402
from chainer.backends import cuda  # noqa: E402

from bench.detection.detector import is_detector  # noqa: E402
from bench.detection.trainer import DetectionTrainer  # noqa: E402
from bench.frameworks.chainer import detection, trainer  # noqa: E402
from bench.frameworks.chainer.layers import build_model  # noqa: E402, F401 (the module's model, for callers)

NAME = trainer.NAME
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# What chainer 7.8.1 asks for, named when there is none.
CUPY_WANTED = "chainer 7.8.1 asks for CuPy >=7.7,<8"


def _blas() -> list[dict]:
    return [lib for lib in threadpoolctl.threadpool_info() if lib.get("user_api") == "blas"]


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and CuPy/cuDNN where a GPU build is present)."""
    blas = _blas()
    return trainer.versions(f"{blas[0].get('internal_api')} {blas[0].get('version')}" if blas else None)


class ChainerTrainer(trainer.SpecTrainer):
    """The Trainer protocol (bench.frameworks.Trainer) for Chainer 7."""

    def _open_device(self, device: str) -> None:
        self.gpu = trainer.check_device(device, CUPY_WANTED)
        self.device = chainer.get_device("@cupy:0" if self.gpu else "@numpy")
        self.xp = self.device.xp
        self.device_label = str(self.device)
        if self.gpu:
            # cuDNN convolution autotuning (the input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            chainer.config.autotune = switches.value(switches.AUTOTUNE) == "on"

    def _send(self, array: np.ndarray) -> Any:
        return self.device.send(array)

    def _place(self, model: chainer.Link) -> None:
        model.to_device(self.device)
        self.device.use()

    def _set_threads(self) -> threadpoolctl.threadpool_limits | None:
        n = common.threads_from_env()
        if n is None:
            return None
        # Kept referenced: the limit holds until restored (never, in a run).
        return threadpoolctl.threadpool_limits(limits=n)

    def _blas(self) -> tuple[str, int]:
        blas = _blas()
        name = (f"{blas[0].get('internal_api')} {blas[0].get('version')} ({blas[0].get('threading_layer')})"
                if blas else "none found")
        return name, min((lib["num_threads"] for lib in blas), default=1)

    def _threads(self, blas_name: str, blas_threads: int | None) -> dict[str, Any]:
        return {"intra_op": blas_threads if not self.gpu else 1, "inter_op": 1, "blas": blas_name}

    def _device_name(self) -> str:
        if not self.gpu:
            return common.cpu_name()
        name = cuda.cupy.cuda.runtime.getDeviceProperties(self.device.device.id)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def _versions(self) -> dict[str, str]:
        return versions()


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> ChainerTrainer | DetectionTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed; a detector spec
    (bench.detection) gets its DetectionTrainer (detection.py) on this era's device and thread hooks."""
    if is_detector(spec):
        return detection.make_trainer(ChainerTrainer, spec, data, device, seed)
    return ChainerTrainer(spec, data, device, seed)
