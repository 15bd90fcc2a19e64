"""PyTorch: translates a workload spec into an nn.Module and a plain, idiomatic training loop.

Runs inside the pytorch environment. Choices made for speed that a PyTorch user would make:
the whole split lives on the device as one tensor (images converted once to float32 NCHW, the
layout cuDNN and oneDNN prefer), batches are rows picked by a seeded permutation (no per-step
host feeding), cuDNN autotuning is on, and the LSTM is the fused torch.nn.LSTM fed packed
sequences so padding costs nothing and the last *real* hidden state is used.
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bench.frameworks import NonFiniteLoss, _common

NAME = "pytorch"
PACKAGE = "torch"  # whose version is the framework's version
# On CUDA the loss is read back every this many steps rather than every step: a host read is a
# device sync, and syncing each step would slow small models. A NaN is still caught within
# that many steps. On the CPU reading it costs nothing, so every step is checked.
CUDA_CHECK_EVERY = 20

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN torch was built with)."""
    out = {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        out["cuda"] = torch.version.cuda
    if torch.backends.cudnn.is_available():
        out["cudnn"] = str(torch.backends.cudnn.version())
    return out


class _LSTM(nn.Module):
    """torch.nn.LSTM that reads real lengths: the state after each sequence's last real token."""

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool):
        super().__init__()
        self.lstm = nn.LSTM(input_size, units, batch_first=True)
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        if not self.use_lengths or lengths is None:
            out, (h_n, _) = self.lstm(x)
            return out if self.return_sequences else h_n[-1]
        return self.packed(x, lengths) if x.is_cuda else self.gathered(x, lengths)

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


class SpecNet(nn.Module):
    """A stack of layers built from a spec; sequence lengths go to the LSTM layers."""

    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, lengths) if isinstance(layer, _LSTM) else layer(x)
        return x


def build_model(model: _common.Model) -> SpecNet:
    """Translate validated spec layers into torch modules, tracking shapes (C, H, W) or (features,)."""
    mods: list[nn.Module] = []
    # Images: (C, H, W). Token sequences: ("seq", features) while time steps remain, then (features,).
    shape: tuple[Any, ...] = ()
    if model.input_shape:
        h, w, c = model.input_shape
        shape = (c, h, w)
    for i, layer in enumerate(model.layers):
        kind = layer["type"]
        if kind == "conv2d":
            c, h, w = _image_shape(shape, i, kind)
            k, stride = layer["kernel"], layer["stride"]
            (h, top, bottom), (w, left, right) = (_window(n, k, stride, layer["padding"]) for n in (h, w))
            if (top, left) == (bottom, right):
                mods.append(nn.Conv2d(c, layer["filters"], k, stride=stride, padding=(top, left)))
            else:  # TensorFlow's asymmetric 'same': the extra row/column of zeros goes after
                mods.append(nn.ZeroPad2d((left, right, top, bottom)))
                mods.append(nn.Conv2d(c, layer["filters"], k, stride=stride))
            shape = (layer["filters"], h, w)
        elif kind == "maxpool2d":
            c, h, w = _image_shape(shape, i, kind)
            pool, stride = layer["pool"], layer["stride"]
            (h, top, bottom), (w, left, right) = (_window(n, pool, stride, layer["padding"]) for n in (h, w))
            if (top, left) == (bottom, right):  # floor mode; its implicit padding is -inf
                mods.append(nn.MaxPool2d(pool, stride=stride, padding=(top, left)))
            else:  # PyTorch has no 'same' pooling: pad with -inf to TensorFlow's amounts, then pool
                mods.append(nn.ConstantPad2d((left, right, top, bottom), float("-inf")))
                mods.append(nn.MaxPool2d(pool, stride=stride))
            shape = (c, h, w)
        elif kind == "dropout":
            mods.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            mods.append(nn.Flatten())
            shape = (int(np.prod(_image_shape(shape, i, kind))),)
        elif kind == "dense":
            if len(shape) != 1:
                raise _common.SpecError(f"layer {i}: dense needs flat input (add a flatten; got {shape})")
            mods.append(nn.Linear(shape[0], layer["units"]))
            shape = (layer["units"],)
        elif kind == "embedding":
            mods.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
            shape = ("seq", layer["output_dim"])
        elif kind == "lstm":
            if len(shape) != 2:
                raise _common.SpecError(f"layer {i}: lstm needs a sequence input (got {shape})")
            mods.append(_LSTM(shape[1], layer["units"], layer["use_lengths"], layer["return_sequences"]))
            shape = ("seq", layer["units"]) if layer["return_sequences"] else (layer["units"],)
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            mods.append(_ACTIVATIONS[activation]())
    return SpecNet(mods)


def _window(size: int, window: int, stride: int, padding: str) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of a conv or pool along one axis.

    'valid': no padding, floor((size - window) / stride) + 1. 'same': TensorFlow's rule,
    ceil(size / stride) outputs, total padding max((out - 1) * stride + window - size, 0), the
    smaller half before (so with stride > 1 or an even window the extra one goes after).
    """
    if padding == "valid":
        return (size - window) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2, total - total // 2


def _image_shape(shape: tuple[Any, ...], i: int, kind: str) -> tuple[int, int, int]:
    if len(shape) != 3:
        raise _common.SpecError(f"layer {i}: {kind} needs an image input (got {shape})")
    return shape  # type: ignore[return-value]


def _resolve_device(device: str) -> torch.device:
    if device == "cpu":
        return torch.device("cpu")
    if device == "gpu":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device 'gpu' requested but PyTorch sees no CUDA device "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'})"
            )
        return torch.device("cuda", 0)
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def _set_threads() -> None:
    n = _common.threads_from_env()
    if n is None:
        return
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:
        pass  # only settable once per process, before any parallel work; keep what is there


class TorchTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for PyTorch."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.device = _resolve_device(device)
        self.cuda = self.device.type == "cuda"
        _set_threads()
        if self.cuda:
            torch.backends.cudnn.benchmark = True  # autotune conv algorithms: input shapes are fixed
        torch.manual_seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone, not on how many
        # random numbers model initialization or dropout drew.
        self.generator = torch.Generator().manual_seed(seed)
        self.spec_model = _common.model_layers(spec)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model).to(self.device)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = _common.optimizer_settings(spec)
        self.optimizer = self._make_optimizer(self.opt_settings)
        self.loss_fn = nn.CrossEntropyLoss() if self.kind == "categorical" else nn.BCEWithLogitsLoss()
        self.x_train, self.len_train, self.y_train = self._to_tensors(data.train)
        self.x_test, self.len_test, self.y_test = self._to_tensors(data.test)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    def _make_optimizer(self, opt: dict) -> torch.optim.Optimizer:
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.params = params
        # weight_decay=0 here: it is applied decoupled in _decay(), as Keras 3 does (see _common).
        if opt["name"] == "sgd":
            return torch.optim.SGD(params, lr=opt["lr"], momentum=opt["momentum"])
        return torch.optim.Adam(params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["epsilon"])

    def _to_tensors(self, split: dict) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        x = torch.from_numpy(np.ascontiguousarray(split["x"]))
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
            x = x.to(self.device).permute(0, 3, 1, 2).float().div_(255.0).contiguous()
        else:
            x = x.to(self.device)  # int32 token ids; nn.Embedding takes them as they are
        lengths = None
        if "len" in split:
            _common.check_post_padded(split["x"], split["len"])  # the same contract Keras' mask needs
            # pack_padded_sequence wants int64 lengths on the CPU.
            lengths = torch.from_numpy(np.asarray(split["len"], dtype=np.int64))
        y = torch.from_numpy(np.asarray(split["y"], dtype=np.int64)).to(self.device)
        if self.kind == "binary":
            y = y.float()
        return x, lengths, y

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (torch.nn.LSTM has two bias vectors where Keras has one)."""
        return sum(p.numel() for p in self.params)

    def _logits(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        out = self.model(x, lengths)
        return out.squeeze(1) if self.kind == "binary" else out

    def _correct(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "binary":
            return ((logits > 0).float() == y).sum()
        return (logits.argmax(dim=1) == y).sum()

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

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss per example, training accuracy over the epoch)."""
        self.epoch += 1
        self.model.train()
        n = len(self.y_train)
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        order_dev = order.to(self.device)
        starts = _common.batches(n, self.batch_size)
        # Per-step losses (times batch size) stay on the device; see CUDA_CHECK_EVERY.
        weighted = torch.zeros(len(starts), device=self.device)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        check_every = CUDA_CHECK_EVERY if self.cuda else 1
        checked = 0
        for b, start in enumerate(starts):
            stop = start + self.batch_size
            idx = order_dev[start:stop]
            lengths = None if self.len_train is None else self.len_train[order[start:stop]]
            y = self.y_train[idx]
            logits = self._logits(self.x_train[idx], lengths)
            loss = self.loss_fn(logits, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self._decay()
            self.optimizer.step()
            weighted[b] = loss.detach() * len(idx)
            correct += self._correct(logits.detach(), y)
            if (b + 1) % check_every == 0 or b == len(starts) - 1:
                self._check_finite(weighted[checked : b + 1], checked)
                checked = b + 1
        return weighted.sum().item() / n, correct.item() / n

    @torch.inference_mode()
    def evaluate(self) -> float:
        """Test accuracy in eval mode (dropout off), batches of the training batch size."""
        self.model.eval()
        n = len(self.y_test)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        for start in _common.batches(n, self.batch_size):
            stop = start + self.batch_size
            lengths = None if self.len_test is None else self.len_test[start:stop]
            correct += self._correct(self._logits(self.x_test[start:stop], lengths), self.y_test[start:stop])
        return correct.item() / n

    def synchronize(self) -> None:
        """Wait for queued CUDA work; nothing to wait for on the CPU."""
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        cudnn = self.cuda and torch.backends.cudnn.is_available()
        if self.cuda:
            conv = "torch.nn.Conv2d (cuDNN, benchmark autotuning on)"
        elif torch.backends.mkldnn.is_available():
            conv = "torch.nn.Conv2d (CPU, oneDNN)"
        else:
            conv = "torch.nn.Conv2d (CPU)"
        kernels = {}
        types = {layer["type"] for layer in self.spec_model.layers}
        if "conv2d" in types:
            kernels["conv2d"] = conv
        if "lstm" in types:
            if cudnn:
                kernels["lstm"] = "torch.nn.LSTM (cuDNN)"
                kernels["lstm_lengths"] = "pack_padded_sequence(enforce_sorted=False); last real hidden state"
            else:
                kernels["lstm"] = "torch.nn.LSTM (CPU, oneDNN)" if torch.backends.mkldnn.is_available() else (
                    "torch.nn.LSTM (CPU)"
                )
                kernels["lstm_lengths"] = "whole padded batch; output at each sequence's last real step"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if self.cuda else _common.cpu_name(),
            "threads": {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
            "kernels": kernels,
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if self.cuda else False,
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else "ids (N, T)",
            "input_pipeline": "whole split as device tensors, rows picked by a seeded permutation each epoch",
            "loss": ("CrossEntropyLoss" if self.kind == "categorical" else "BCEWithLogitsLoss")
            + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "weight_decay_rule": _common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TorchTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return TorchTrainer(spec, data, device, seed)
