"""PyTorch: translates a workload spec into an nn.Module and a plain, idiomatic training loop.

Runs inside the pytorch environment. Choices made for speed that a PyTorch user would make:
the whole split lives on the device as one tensor (images converted once to float32 NCHW, the
layout cuDNN and oneDNN prefer), batches are rows picked by a seeded permutation (no per-step
host feeding), cuDNN autotuning is on, and the LSTM is the fused torch.nn.LSTM fed packed
sequences so padding costs nothing and the last *real* hidden state is used. The model's modules
are built by current_model.py.

Data-parallel ranks (bench/dataparallel.py): make_trainer's `parallel` {rank, ranks, addr, port} joins
the ranks' process group (PARALLEL_BACKENDS: Gloo on CPUs, NCCL on GPUs, cuda:<rank> each) and wraps the
model in DistributedDataParallel, which averages the gradients over the ranks in every backward pass.
"""

from __future__ import annotations

import hashlib
import math
import platform
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from bench import modelplan, switches
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.pytorch import CAPABILITIES
from bench.frameworks.pytorch.current_model import (  # noqa: F401  (the probes read _LSTM and _modules here)
    _GRU,
    _LSTM,
    _modules,
    build_model,
)
from bench.loopback import TIMEOUT

NAME = "pytorch"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# On CUDA the loss is read back every this many steps rather than every step: a host read is a
# device sync, and syncing each step would slow small models. A NaN is still caught within
# that many steps. On the CPU reading it costs nothing, so every step is checked.
CUDA_CHECK_EVERY = 20
# Target of a sequence step that does not count (padding): CrossEntropyLoss skips it.
IGNORE = -100
_LOSS_NAMES = {
    "categorical": "CrossEntropyLoss",
    "binary": "BCEWithLogitsLoss",
    "sequence": "CrossEntropyLoss over every counted step (ignore_index for padding), mean per token",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}

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


def _resolve_device(device: str, index: int = 0) -> torch.device:
    """The torch device of a run's `device`; on a GPU cuda:<index> (a data-parallel rank's own GPU)."""
    if device == "cpu":
        return torch.device("cpu")
    if device == "gpu":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device 'gpu' requested but PyTorch sees no CUDA device "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'})"
            )
        return torch.device("cuda", index)
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


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


class TorchTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for PyTorch."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int, parallel: dict | None = None):
        self.parallel = parallel
        self.device = _resolve_device(device, parallel["rank"] if parallel else 0)
        self.cuda = self.device.type == "cuda"
        _set_threads()
        if self.cuda:
            # Autotune conv algorithms (input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            torch.backends.cudnn.benchmark = switches.value(switches.AUTOTUNE) == "on"
        torch.manual_seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone, not on how many
        # random numbers model initialization or dropout drew.
        self.generator = torch.Generator().manual_seed(seed)
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        # The bare model: evaluation and outputs run it (a DDP forward broadcasts BatchNorm's buffers, a
        # collective that only rank 0, which alone evaluates, would call). Training runs self.model.
        # The convolutions' memory layout (the layout switch): the module's NCHW, or NHWC strides (channels_last).
        self.memory_format = (torch.channels_last if switches.value(switches.LAYOUT) == "channels_last"
                              else torch.contiguous_format)
        self.net = build_model(self.spec_model).to(self.device, memory_format=self.memory_format)
        self.model: nn.Module = self.net
        if parallel:
            self.backend = PARALLEL_BACKENDS[device]
            if self.cuda:
                torch.cuda.set_device(self.device)
            dist.init_process_group(self.backend, init_method=f"tcp://{parallel['addr']}:{parallel['port']}",
                                    rank=parallel["rank"], world_size=parallel["ranks"], timeout=TIMEOUT)
            # Averages the gradients over the ranks in backward; starts every rank from rank 0's parameters.
            self.model = DistributedDataParallel(self.net, device_ids=[self.device.index] if self.cuda else None)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = self._make_optimizer(self.opt_settings)
        # Sequence labels that do not count are IGNORE, so the mean is over counted tokens.
        self.loss_fn = nn.BCEWithLogitsLoss() if self.kind == "binary" else nn.CrossEntropyLoss(ignore_index=IGNORE)
        self.train_split = self._to_tensors(data.train)
        self.test_split = self._to_tensors(data.test)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring: common.StepRing | None = None  # step()'s batch order, made on its first call
        self._ring_rows: tuple[torch.Tensor, torch.Tensor] | None = None  # its rows on the device and the CPU

    # -- setup ---------------------------------------------------------------------------------
    def _make_optimizer(self, opt: dict) -> torch.optim.Optimizer:
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.params = params
        # weight_decay=0 here: it is applied decoupled in _decay(), as Keras 3 does (common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            return torch.optim.SGD(params, lr=opt["lr"], momentum=opt["momentum"])
        if opt["name"] == "adadelta":  # the same update as Keras 2's Adadelta, given its rho and epsilon
            return torch.optim.Adadelta(params, lr=opt["lr"], rho=opt["rho"], eps=opt["epsilon"])
        return torch.optim.Adam(params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["epsilon"])

    def _to_tensors(self, split: dict) -> dict[str, torch.Tensor]:
        """The split's roles as tensors: x (and x_dec) on the device, len on the CPU, y as targets."""
        out = {}
        x = torch.from_numpy(np.ascontiguousarray(split["x"]))
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
            out["x"] = x.to(self.device).permute(0, 3, 1, 2).float().div_(255.0).contiguous()
        else:
            out["x"] = x.to(self.device)  # int32 token ids; nn.Embedding takes them as they are
        if "x_dec" in split:
            out["x_dec"] = torch.from_numpy(np.ascontiguousarray(split["x_dec"])).to(self.device)
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])  # the same contract Keras' mask needs
            # pack_padded_sequence wants int64 lengths on the CPU.
            out["len"] = torch.from_numpy(np.asarray(split["len"], dtype=np.int64))
        y = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "sequence":
            y = np.where(common.token_mask(y, split.get("y_len")), y, IGNORE)
        out["y"] = torch.from_numpy(y).to(self.device)
        if self.kind == "binary":
            out["y"] = out["y"].float()
        return out

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (torch.nn.LSTM has two bias vectors where Keras has one)."""
        return sum(p.numel() for p in self.params)

    def _logits(self, batch: dict[str, torch.Tensor], net: nn.Module | None = None) -> torch.Tensor:
        """The model's logits of a batch; `net`: the module to run (default the training one, self.model)."""
        net = self.model if net is None else net
        lengths = batch.get("len")
        if batch["x"].ndim == 4:  # images in the run's layout (a no-op when they are in it already)
            batch = {**batch, "x": batch["x"].contiguous(memory_format=self.memory_format)}
        if "x_dec" in batch:
            return net(batch["x"], lengths, batch["x_dec"])
        out = net(batch["x"], lengths)
        return out.squeeze(1) if self.kind == "binary" else out

    def _loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "sequence":  # (N, T, C) -> (N*T, C): one cross-entropy over every step
            return self.loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        return self.loss_fn(logits, y)

    def _counted(self, y: torch.Tensor) -> torch.Tensor:
        """How many labels of a batch count: examples, or counted tokens for sequences."""
        return (y != IGNORE).sum() if self.kind == "sequence" else torch.tensor(len(y), device=y.device)

    def _correct(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "binary":
            return ((logits > 0).float() == y).sum()
        return (logits.argmax(dim=-1) == y).sum()  # IGNORE never equals a class index

    def _decay(self) -> None:
        wd = self.opt_settings["weight_decay"]
        if wd:
            with torch.no_grad():
                torch._foreach_mul_(self.params, 1.0 - self.opt_settings["lr"] * wd)

    def _check_finite(self, weighted: torch.Tensor, first: int) -> None:
        bad = ~torch.isfinite(weighted)
        if bool(bad.any()):
            b = first + int(bad.nonzero()[0, 0])
            value = weighted[b - first].item()
            raise NonFiniteLoss(f"loss became {value} at step {b + 1} of epoch {self.epoch}")

    @staticmethod
    def _rows(split: dict[str, torch.Tensor], idx: torch.Tensor, idx_cpu: torch.Tensor) -> dict[str, torch.Tensor]:
        return {k: v[idx_cpu] if k == "len" else v[idx] for k, v in split.items()}

    def _train_batch(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer update on a batch (the model in training mode); (logits, mean loss) on the device."""
        logits = self._logits(batch)
        loss = self._loss(logits, batch["y"])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._decay()
        self.optimizer.step()
        return logits, loss

    def _start_ring(self) -> None:
        """step()'s and infer()'s batch order (common.StepRing), its rows on the device and the CPU, made once."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train_split["y"]), self.batch_size)
            ring = torch.from_numpy(self._ring.ring)
            self._ring_rows = (ring.to(self.device), ring)

    @torch.inference_mode()
    def infer(self) -> np.ndarray:
        """One forward pass of the bare model in inference mode (eval: batchnorm's moving statistics, dropout
        off; no autograd) on the next batch of the training set in order, wrapping around as step() does; its
        outputs copied to the host (N, output values), as ilkarman's feature extraction does."""
        self._start_ring()
        if self.net.training:
            self.net.eval()
        rows = self._ring.take()
        inputs = {k: v for k, v in self.train_split.items() if k != "y"}  # the labels are not read
        return self._logits(self._rows(inputs, self._ring_rows[0][rows], self._ring_rows[1][rows]),
                            self.net).cpu().numpy()

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss."""
        self._start_ring()
        if not self.model.training:
            self.model.train()
        rows = self._ring.take()
        _, loss = self._train_batch(self._rows(self.train_split, self._ring_rows[0][rows], self._ring_rows[1][rows]))
        self.steps += 1
        value = loss.item()
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss per example or token, training accuracy over the epoch)."""
        self.epoch += 1
        self.model.train()
        split = self.train_split
        n = len(split["y"])
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        order_dev = order.to(self.device)
        starts = common.batches(n, self.batch_size)
        # Per-step losses (times the labels counted) stay on the device; see CUDA_CHECK_EVERY.
        weighted = torch.zeros(len(starts), device=self.device)
        counted = torch.zeros((), dtype=torch.int64, device=self.device)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        check_every = CUDA_CHECK_EVERY if self.cuda else 1
        checked = 0
        for b, start in enumerate(starts):
            stop = start + self.batch_size
            batch = self._rows(split, order_dev[start:stop], order[start:stop])
            logits, loss = self._train_batch(batch)
            count = self._counted(batch["y"])
            weighted[b] = loss.detach() * count
            counted += count
            correct += self._correct(logits.detach(), batch["y"])
            if (b + 1) % check_every == 0 or b == len(starts) - 1:
                self._check_finite(weighted[checked : b + 1], checked)
                checked = b + 1
        total = counted.item()
        return weighted.sum().item() / total, correct.item() / total

    @torch.inference_mode()
    def evaluate(self) -> float:
        """Test accuracy (per token for sequences) in eval mode (dropout off), training-size batches."""
        self.net.eval()
        split = self.test_split
        counted = torch.zeros((), dtype=torch.int64, device=self.device)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        for start in common.batches(len(split["y"]), self.batch_size):
            batch = {k: v[start : start + self.batch_size] for k, v in split.items()}
            correct += self._correct(self._logits(batch, self.net), batch["y"])
            counted += self._counted(batch["y"])
        return correct.item() / counted.item()

    @torch.inference_mode()
    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays, in eval mode (the probe's padding check)."""
        self.net.eval()
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in batch.items() if k in ("x", "x_dec", "len")}
        tensors = {k: v.to(torch.int64) if k == "len" else v.to(self.device) for k, v in tensors.items()}
        return self._logits(tensors, self.net).cpu().numpy()

    def synchronize(self) -> None:
        """Wait for queued CUDA work; nothing to wait for on the CPU."""
        if self.cuda:
            torch.cuda.synchronize(self.device)

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

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        cudnn = self.cuda and torch.backends.cudnn.is_available()
        if self.cuda:
            conv = f"torch.nn.Conv2d (cuDNN, benchmark autotuning {'on' if torch.backends.cudnn.benchmark else 'off'}"
        elif torch.backends.mkldnn.is_available():
            conv = "torch.nn.Conv2d (CPU, oneDNN"
        else:
            conv = "torch.nn.Conv2d (CPU"
        conv += ", channels_last)" if self.memory_format == torch.channels_last else ")"
        kernels = {}
        stack = self.spec_model.all_layers
        types = {layer.type for layer in self.spec_model.flat_layers}
        if "conv2d" in types:
            kernels["conv2d"] = conv
        if "batchnorm" in types:
            kernels["batchnorm"] = ("torch.nn.BatchNorm2d/1d (momentum = 1 - the plan's; train mode in step and "
                                    "train_epoch, eval mode with moving statistics in evaluate)")
        if "residual" in types:
            kernels["residual"] = ("activation(branch(x) + shortcut(x)); projection = 1x1 Conv2d(bias=False) "
                                   "+ BatchNorm2d")
        if "concat" in types:
            kernels["concat"] = "torch.cat of the branches' outputs on channels (dim 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("torch.nn.LocalResponseNorm (size = 2 * depth_radius + 1, alpha = the plan's alpha * "
                              "size: PyTorch divides by the window, TensorFlow does not; k = bias)")
        if "lstm" in types:
            if cudnn:
                kernels["lstm"] = "torch.nn.LSTM (cuDNN)"
            else:
                kernels["lstm"] = "torch.nn.LSTM (CPU, oneDNN)" if torch.backends.mkldnn.is_available() else (
                    "torch.nn.LSTM (CPU)"
                )
        if "gru" in types:
            gru = next(m for m in self.net.modules() if isinstance(m, _GRU))
            fused = "torch.nn.GRU (" + ("cuDNN" if cudnn else "CPU") + ", fused)"
            kernels["gru"] = (fused if gru.cell is None else "torch.nn.GRUCell stepped over time (plain)") + (
                ", every step including padding")
        if self.spec_model.encoder is not None:
            kernels["lstm_lengths"] = ("encoder: pack_padded_sequence(enforce_sorted=False), final (h, c) at the "
                                       "last real token; decoder: from that state over the whole padded batch")
        elif any(layer.get("use_lengths") for layer in stack):
            kernels["lstm_lengths"] = ("pack_padded_sequence(enforce_sorted=False); last real hidden state" if cudnn
                                       else "whole padded batch; output at each sequence's last real step")
        out = {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if self.cuda else common.cpu_name(),
            "threads": {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
            "kernels": kernels,
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if self.cuda else False,
            "data_layout": ("NCHW (converted once at setup" + (", channels_last strides)" if self.memory_format
                                                                 == torch.channels_last else ")")
                            if self.spec_model.input_shape else "ids (N, T)"),
            "input_pipeline": "whole split as device tensors, rows picked by a seeded permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }
        if self.parallel:
            out["data_parallel"] = {"ranks": self.parallel["ranks"], "backend": self.backend,
                                    "wrapper": "torch.nn.parallel.DistributedDataParallel (gradients averaged "
                                               "over the ranks in backward)"}
        return out


def make_trainer(spec: dict, data: Any, device: str, seed: int, parallel: dict | None = None) -> TorchTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed; `parallel`
    {rank, ranks, addr, port}: as one data-parallel rank of bench/dataparallel.py."""
    return TorchTrainer(spec, data, device, seed, parallel)
