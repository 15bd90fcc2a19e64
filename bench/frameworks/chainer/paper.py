"""Chainer 4.5.0 (the paper era, DLBench Table 2): the era adapter of the era-neutral model (layers.py) and
trainer (trainer.py), so the two eras differ by the framework version, not by the model or the loop.

Runs inside the paper-era chainer environment (CPython 3.6, NumPy 1.14-1.16; the tests also run it on 3.11
with NumPy 1.23). What Chainer 4.5.0 lacks, against the current module's Chainer 7:
- no device objects (chainer.get_device, Link.to_device, device.send, chainer.backend: v6-v7): the GPU is
  made current with backends.cuda.get_device_from_id(0).use(), the model moves with Link.to_gpu(0), arrays
  with backends.cuda.to_gpu; CuPy 4.5 is not asked for the GPU's name, NVML is (bench.gpu);
- no threadpoolctl in the paper image: OpenBLAS' thread count is what the entrypoint pinned
  (OPENBLAS_NUM_THREADS, set before NumPy loads) and the trainer sets and reads it again through
  OpenBLAS' own C API (openblas_set_num_threads / openblas_get_num_threads, ctypes), recording
  when no OpenBLAS is loaded (a BLAS whose threads it then cannot set).
Everything the current era translates, 4.5.0 has too (links.NStepGRU, links.BatchNormalization(decay, eps),
Convolution2D(nobias), functions.local_response_normalization, average_pooling_2d, concat and mean over
axes, and chainer.config.autotune for cuDNN's convolution autotuning on a GPU); iDeep stays off
(use_ideep 'never').
"""

import ctypes
import functools
from typing import Any, Dict, Optional, Tuple, Union

import chainer
import numpy as np
from chainer.backends import cuda

from bench import switches
from bench.detection.detector import is_detector
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.chainer import CAPABILITIES, detection, trainer
from bench.frameworks.chainer.layers import build_model  # noqa: F401 (the module's model, for callers)
from bench.gpu import probe as gpu_probe
from bench.gpu import run_device_index

NAME = trainer.NAME
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# CuPy releases Chainer 4.5 accepts (its setup.py): the GPU build is cupy-cuda92 4.5.0.
CUPY_RANGE = ">=4.4.0,<5.0.0"
CUPY_WANTED = f"chainer 4.5 asks for CuPy {CUPY_RANGE}, e.g. cupy-cuda92 4.5.0"


# -- OpenBLAS, through its own C API (what threadpoolctl does, without it) ----------------------
@functools.lru_cache(maxsize=None)
def _openblas() -> Optional[Tuple[Any, str]]:
    """(the OpenBLAS library this process loaded, its symbol suffix), or None.

    NumPy's wheels bundle OpenBLAS; NumPy >= 1.22 builds it with 64-bit integers and the symbol
    suffix '64_' (openblas_get_num_threads64_), older ones without. Found in /proc/self/maps.
    """
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split(None, 5)[-1].strip() for line in fh
                            if "openblas" in line.rsplit("/", 1)[-1].lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle
        except OSError:
            continue
        for suffix in ("", "64_"):
            if hasattr(lib, "openblas_get_num_threads" + suffix):
                return lib, suffix
    return None


def _blas_call(name: str, *args: int) -> Any:
    found = _openblas()
    if found is None:
        return None
    lib, suffix = found
    fn = getattr(lib, name + suffix)
    if name == "openblas_get_config":
        fn.restype = ctypes.c_char_p
        return fn().decode("ascii", "replace")
    return fn(*args)


def _blas_name() -> Optional[str]:
    """OpenBLAS' own description ('OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64')."""
    return _blas_call("openblas_get_config")


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (and CuPy/cuDNN where a GPU build is present)."""
    return trainer.versions(_blas_name())


class ChainerTrainer(trainer.SpecTrainer):
    """The Trainer protocol (bench.frameworks.Trainer) for Chainer 4.5."""

    def _open_device(self, device: str) -> None:
        self.gpu = trainer.check_device(device, CUPY_WANTED)
        self.xp = cuda.cupy if self.gpu else np
        self.device_label = "@cupy:0" if self.gpu else "@numpy"
        if self.gpu:
            cuda.get_device_from_id(0).use()
            # cuDNN convolution autotuning (the input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            chainer.config.autotune = switches.value(switches.AUTOTUNE) == "on"

    def _send(self, array: np.ndarray) -> Any:
        return cuda.to_gpu(array) if self.gpu else array

    def _place(self, model: chainer.Link) -> None:
        if self.gpu:
            model.to_gpu(0)

    def _set_threads(self) -> Optional[int]:
        """OpenBLAS' thread count set to $DLREPRO_THREADS through its C API; None if not asked or
        no OpenBLAS is loaded (then only OPENBLAS_NUM_THREADS, read when NumPy loaded, applies)."""
        n = common.threads_from_env()
        if n is None or _openblas() is None:
            return None
        _blas_call("openblas_set_num_threads", n)
        return n

    def _blas(self) -> Tuple[str, Optional[int]]:
        return _blas_name() or "no OpenBLAS found", _blas_call("openblas_get_num_threads")

    def _threads(self, blas_name: str, blas_threads: Optional[int]) -> Dict[str, Any]:
        if blas_threads is None:
            how = "unknown: no OpenBLAS loaded, its threads could not be read or set"
        elif self.threads_set is None:
            how = "OpenBLAS' own count (no DLREPRO_THREADS)"
        else:
            how = "openblas_set_num_threads (ctypes; no threadpoolctl in the paper image)"
        return {"intra_op": 1 if self.gpu else blas_threads, "inter_op": 1, "blas": blas_name,
                "blas_threads_set_by": how}

    def _device_name(self) -> str:
        if not self.gpu:
            return common.cpu_name()
        index = run_device_index()
        names = [d["name"] for d in gpu_probe().devices if d["index"] == index]
        return names[0] if names else "CUDA device 0 (NVML did not name it)"

    def _versions(self) -> Dict[str, str]:
        return versions()


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> Union["ChainerTrainer", DetectionTrainer]:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed; a detector spec
    (bench.detection) gets its DetectionTrainer (detection.py) on this era's device and thread hooks."""
    if is_detector(spec):
        return detection.make_trainer(ChainerTrainer, spec, data, device, seed)
    return ChainerTrainer(spec, data, device, seed)
