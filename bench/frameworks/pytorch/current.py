"""PyTorch (today's): the era adapter over model.py's module and trainer.py's loop (both era-neutral).

What only today's PyTorch has, used here: the LSTM reads real lengths through pack_padded_sequence
(enforce_sorted=False) on CUDA (cuDNN skips the padding) and over the whole padded batch on the CPU (oneDNN's
fused kernel; each sequence's last real step picked after); channels_last memory (the layout switch); the
inter-op thread pool; torch.inference_mode for forward passes without autograd; one fused _foreach_mul_ for
the decoupled weight decay; shuffling by torch.randperm on its own generator.

Data-parallel ranks (bench/dataparallel.py): make_trainer's `parallel` {rank, ranks, addr, port} joins
the ranks' process group (PARALLEL_BACKENDS: Gloo on CPUs, NCCL on GPUs, cuda:<rank> each) and wraps the
model in DistributedDataParallel, which averages the gradients over the ranks in every backward pass.
"""

from __future__ import annotations

import hashlib
import platform
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bench import modelplan, switches
from bench.detection.detector import is_detector
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.pytorch import CAPABILITIES, detection, model, trainer
from bench.frameworks.pytorch.trainer import CUDA_CHECK_EVERY, IGNORE, NAME  # noqa: F401  (the module's constants)
from bench.loopback import TIMEOUT

PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# torch.distributed's backend of data-parallel ranks per device.
PARALLEL_BACKENDS = {"cpu": "gloo", "gpu": "nccl"}


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN torch was built with)."""
    out = {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        out["cuda"] = torch.version.cuda
    if torch.backends.cudnn.is_available():
        out["cudnn"] = str(torch.backends.cudnn.version())
    return out


def threads() -> dict[str, int]:
    """The intra-op and inter-op thread pools' sizes."""
    return {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}


class _LSTM(model.LengthsLSTM):
    """torch.nn.LSTM over real lengths: packed on CUDA, the whole padded batch gathered after on the CPU."""

    def over_lengths(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.packed(x, lengths) if x.is_cuda else self.gathered(x, lengths)

    def final_state(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(h, c), each (1, N, units), after each sequence's last real token (an encoder's output).

        Packed on every device: c is not among the outputs, so the CPU's gather trick cannot give it.
        """
        _, state = self.lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return state

    def packed(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Packed batch (CUDA): cuDNN skips the padding."""
        # enforce_sorted=False: torch sorts the batch itself and returns h_n in the batch's order.
        out, (h_n, _) = self.lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        if self.return_sequences:
            return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]
        return h_n[-1]

    def gathered(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Whole padded batch, then each sequence's last real step (CPU).

        On the CPU a packed batch leaves the fused oneDNN kernel for a per-step loop whose
        backward is ~5x slower. With post-padding the values are the same as packed: an LSTM never
        looks ahead, so the padding after the last real step cannot change it (the probe checks).
        """
        out, _ = self.lstm(x)
        lengths = lengths.to(x.device)
        if self.return_sequences:  # zeros after the end, as pad_packed_sequence gives
            steps = torch.arange(x.shape[1], device=x.device)
            return out * (steps[None, :] < lengths[:, None]).unsqueeze(-1)
        return out[torch.arange(x.shape[0], device=x.device), lengths - 1]


def _modules(layers: list[modelplan.Layer]) -> list[nn.Module]:
    """The torch modules of planned layers with this era's LSTM (the lrn probe builds a layer with it)."""
    return model.modules(layers, _LSTM)


def check_parallel(device: str, ranks: int) -> None:
    """Raise a RuntimeError when `ranks` data-parallel ranks cannot run on `device`: on a GPU one GPU each."""
    if device == "gpu":
        have = torch.cuda.device_count()
        if have < ranks:
            raise RuntimeError(f"{ranks} data-parallel NCCL ranks need {ranks} GPUs, one each; this run sees {have} "
                               "(a campaign gives such a run one GPU per rank: check CUDA_VISIBLE_DEVICES, or sweep "
                               "fewer ranks)")


def _set_threads() -> None:
    n = common.threads_from_env()
    if n is None:
        return
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:
        pass  # only settable once per process, before any parallel work; keep what is there


class TorchTrainer(trainer.TorchTrainer):
    """The Trainer protocol (bench.frameworks.Trainer) for today's PyTorch."""

    LSTM = _LSTM
    versions = staticmethod(versions)

    def __init__(self, spec: dict, data: Any, device: str, seed: int, parallel: dict | None = None):
        self.parallel = parallel
        _set_threads()
        # Shuffling has its own generator so its order depends on the seed alone, not on how many
        # random numbers model initialization or dropout drew.
        self.generator = torch.Generator().manual_seed(seed)
        # The convolutions' memory layout (the layout switch): the module's NCHW, or NHWC strides (channels_last).
        self.memory_format = (torch.channels_last if switches.value(switches.LAYOUT) == "channels_last"
                              else torch.contiguous_format)
        super().__init__(spec, data, trainer.resolve_device(device, parallel["rank"] if parallel else 0), seed)
        if parallel:
            # Evaluation and outputs run the bare self.net (a DDP forward broadcasts BatchNorm's buffers, a
            # collective that only rank 0, which alone evaluates, would call); training runs the wrapper.
            self.backend = PARALLEL_BACKENDS[device]
            if self.cuda:
                torch.cuda.set_device(self.device)
            dist.init_process_group(self.backend, init_method=f"tcp://{parallel['addr']}:{parallel['port']}",
                                    rank=parallel["rank"], world_size=parallel["ranks"], timeout=TIMEOUT)
            # Averages the gradients over the ranks in backward; starts every rank from rank 0's parameters.
            self.model = DistributedDataParallel(self.net, device_ids=[self.device.index] if self.cuda else None)

    def place(self, net: nn.Module) -> nn.Module:
        return net.to(self.device, memory_format=self.memory_format)

    def images(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous(memory_format=self.memory_format)  # a no-op when they are in it already

    def order(self, n: int) -> torch.Tensor:
        return torch.randperm(n, generator=self.generator)

    def no_grad(self) -> Any:
        return torch.inference_mode()

    def scale_params(self, factor: float) -> None:
        with torch.no_grad():
            torch._foreach_mul_(self.params, factor)

    def param_digest(self) -> str:
        """sha256 of every parameter's bytes in order: data-parallel ranks that averaged their gradients end
        with the same digest."""
        digest = hashlib.sha256()
        for p in self.params:
            digest.update(p.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()

    def close(self) -> None:
        """Leave the ranks' process group (data-parallel ranks; nothing otherwise)."""
        if self.parallel and dist.is_initialized():
            dist.destroy_process_group()

    # -- info ----------------------------------------------------------------------------------
    def info(self) -> dict:
        out = super().info()
        if self.parallel:
            out["data_parallel"] = {"ranks": self.parallel["ranks"], "backend": self.backend,
                                    "wrapper": "torch.nn.parallel.DistributedDataParallel (gradients averaged "
                                               "over the ranks in backward)"}
        return out

    def cudnn(self) -> bool:
        return self.cuda and torch.backends.cudnn.is_available()

    def threads(self) -> dict[str, int]:
        return threads()

    def _layout(self) -> str:
        return ", channels_last" if self.memory_format == torch.channels_last else ""

    def conv_kernel(self, cudnn: bool) -> str:
        if self.cuda:
            conv = f"torch.nn.Conv2d (cuDNN, benchmark autotuning {'on' if torch.backends.cudnn.benchmark else 'off'}"
        elif torch.backends.mkldnn.is_available():
            conv = "torch.nn.Conv2d (CPU, oneDNN"
        else:
            conv = "torch.nn.Conv2d (CPU"
        return conv + self._layout() + ")"

    def lstm_kernel(self, cudnn: bool) -> str:
        if cudnn:
            return "torch.nn.LSTM (cuDNN)"
        return "torch.nn.LSTM (CPU, oneDNN)" if torch.backends.mkldnn.is_available() else "torch.nn.LSTM (CPU)"

    def gru_kernel(self, cudnn: bool) -> str:
        return "torch.nn.GRU (" + ("cuDNN" if cudnn else "CPU") + ", fused)"

    def lengths_kernels(self, cudnn: bool) -> tuple[str, str]:
        return ("encoder: pack_padded_sequence(enforce_sorted=False), final (h, c) at the last real token; decoder: "
                "from that state over the whole padded batch",
                "pack_padded_sequence(enforce_sorted=False); last real hidden state" if cudnn
                else "whole padded batch; output at each sequence's last real step")

    def data_layout(self) -> str:
        return "NCHW (converted once at setup" + (self._layout() + " strides)" if self._layout() else ")")


def make_trainer(spec: dict, data: Any, device: str, seed: int,
                 parallel: dict | None = None) -> TorchTrainer | DetectionTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed; `parallel`
    {rank, ranks, addr, port}: as one data-parallel rank of bench/dataparallel.py. A detector workload gets
    detection.py's DetectionTrainer (one process: no data-parallel ranks)."""
    if is_detector(spec):
        if parallel:
            raise RuntimeError(f"{NAME}: a detector ({spec['model']['architecture']}) trains in one process; "
                               "data-parallel ranks are not implemented for it")
        _set_threads()
        return detection.make_trainer(spec, data, trainer.resolve_device(device), seed, versions, threads)
    return TorchTrainer(spec, data, device, seed, parallel)
