"""PyTorch, either era: the Trainer protocol (bench.frameworks.Trainer) over model.py's module, a plain, idiomatic
training loop.

Era-neutral (both images carry it): written with what PyTorch 0.4.1 and today's PyTorch both have, CPython
3.6-clean. Choices made for speed that a PyTorch user would make: the whole split lives on the device as one tensor
(images converted once to float32 NCHW, the layout cuDNN and oneDNN prefer), batches are rows picked by a seeded
permutation (no per-step host feeding), cuDNN autotuning is on unless the cudnn_autotune switch turns it off, and
losses are nn.CrossEntropyLoss / nn.BCEWithLogitsLoss on logits. Weight decay is applied decoupled by hand
(common.WEIGHT_DECAY_RULE), so no AdamW (1.2) is needed; counts and hits are float tensors (0.4.1 does not promote
types across tensors), exact for any batch.

An era module subclasses TorchTrainer for what differs: LSTM (its model.LengthsLSTM), order() (the seeded
permutation), no_grad() (torch.inference_mode where it exists), and the info() strings naming its kernels.
"""

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from bench import modelplan, switches
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.pytorch import model

NAME = "pytorch"
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


def resolve_device(device: str, index: int = 0) -> torch.device:
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


def make_optimizer(params: List[nn.Parameter], opt: dict) -> torch.optim.Optimizer:
    """The torch optimizer of common.optimizer_settings `opt` over `params`, without weight decay: every PyTorch
    trainer applies it decoupled before each update (TorchTrainer._decay, common.WEIGHT_DECAY_RULE)."""
    # weight_decay=0 here: it is applied decoupled, as Keras 3 does (common.WEIGHT_DECAY_RULE).
    if opt["name"] == "sgd":
        return torch.optim.SGD(params, lr=opt["lr"], momentum=opt["momentum"])
    if opt["name"] == "adadelta":  # the same update as Keras 2's Adadelta, given its rho and epsilon
        return torch.optim.Adadelta(params, lr=opt["lr"], rho=opt["rho"], eps=opt["epsilon"])
    return torch.optim.Adam(params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["epsilon"])


class TorchTrainer:
    """The Trainer protocol for PyTorch; an era module's subclass sets LSTM and the hooks below."""

    LSTM = model.LengthsLSTM  # the era's subclass
    ID_DTYPE = None  # token ids' dtype on the device (None: as the data gives them)

    def __init__(self, spec: dict, data: Any, device: torch.device, seed: int):
        self.device = device
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            # Autotune conv algorithms (input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            torch.backends.cudnn.benchmark = switches.value(switches.AUTOTUNE) == "on"
        torch.manual_seed(seed)  # model initialization and dropout (CUDA generators too)
        self.spec_model = modelplan.plan(spec)
        self.check_plan(self.spec_model)
        self.kind = self.spec_model.kind
        # The bare model: evaluation and outputs run it. Training runs self.model (an era may wrap it).
        self.net = self.place(model.build_model(self.spec_model, self.LSTM))
        self.model = self.net  # type: nn.Module
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.params = [p for p in self.net.parameters() if p.requires_grad]
        self.optimizer = self._make_optimizer(self.opt_settings)
        # Sequence labels that do not count are IGNORE, so the mean is over counted tokens.
        self.loss_fn = nn.BCEWithLogitsLoss() if self.kind == "binary" else nn.CrossEntropyLoss(ignore_index=IGNORE)
        self.train_split = self._to_tensors(data.train)
        self.test_split = self._to_tensors(data.test)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s and infer()'s batch order, made once
        self._ring_rows = None  # type: Optional[Tuple[torch.Tensor, torch.Tensor]]  # on the device and the CPU

    # -- what an era changes ---------------------------------------------------------------------
    def check_plan(self, plan: modelplan.ModelPlan) -> None:
        """Refuse a model the era cannot build (every layer type by default)."""

    def place(self, net: nn.Module) -> nn.Module:
        """The built model on the run's device (and in the era's memory layout)."""
        return net.to(self.device)

    def images(self, x: torch.Tensor) -> torch.Tensor:
        """A batch of NCHW images in the run's memory layout (as they are by default)."""
        return x

    def order(self, n: int) -> torch.Tensor:
        """An epoch's seeded permutation of n rows (int64, on the CPU)."""
        raise NotImplementedError

    def no_grad(self) -> Any:
        """The context of a forward pass without autograd."""
        return torch.no_grad()

    def scale_params(self, factor: float) -> None:
        """Every trainable parameter times `factor` (decoupled weight decay)."""
        for p in self.params:
            p.data.mul_(factor)

    # -- setup ---------------------------------------------------------------------------------
    def _make_optimizer(self, opt: dict) -> torch.optim.Optimizer:
        return make_optimizer(self.params, opt)

    def _ids(self, values: np.ndarray) -> torch.Tensor:
        """Token ids on the device in the era's dtype (ID_DTYPE)."""
        values = np.ascontiguousarray(values if self.ID_DTYPE is None else values.astype(self.ID_DTYPE))
        return torch.from_numpy(values).to(self.device)

    def _to_tensors(self, split: dict) -> Dict[str, torch.Tensor]:
        """The split's roles as tensors: x (and x_dec) on the device, len on the CPU, y as targets."""
        out = {}
        x = np.ascontiguousarray(split["x"])
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
            out["x"] = torch.from_numpy(x).to(self.device).permute(0, 3, 1, 2).float().div_(255.0).contiguous()
        else:
            out["x"] = self._ids(x)
        if "x_dec" in split:
            out["x_dec"] = self._ids(np.asarray(split["x_dec"]))
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])  # the same contract Keras' mask needs
            # pack_padded_sequence wants int64 lengths on the CPU.
            out["len"] = torch.from_numpy(np.asarray(split["len"], dtype=np.int64))
        y = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "sequence":
            y = np.where(common.token_mask(y, split.get("y_len")), y, IGNORE)
        out["y"] = torch.from_numpy(np.ascontiguousarray(y)).to(self.device)
        if self.kind == "binary":
            out["y"] = out["y"].float()
        return out

    # -- steps ---------------------------------------------------------------------------------
    def _logits(self, batch: Dict[str, torch.Tensor], net: Optional[nn.Module] = None) -> torch.Tensor:
        """The model's logits of a batch; `net`: the module to run (default the training one, self.model)."""
        net = self.model if net is None else net
        lengths = batch.get("len")
        x = batch["x"]
        if x.dim() == 4:
            x = self.images(x)
        if "x_dec" in batch:
            return net(x, lengths, batch["x_dec"])
        out = net(x, lengths)
        return out.squeeze(1) if self.kind == "binary" else out

    def _loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "sequence":  # (N, T, C) -> (N*T, C): one cross-entropy over every step
            return self.loss_fn(logits.contiguous().view(-1, logits.size(-1)), y.contiguous().view(-1))
        return self.loss_fn(logits, y)

    def _counted(self, y: torch.Tensor) -> torch.Tensor:
        """How many labels of a batch count (float): examples, or counted tokens for sequences."""
        if self.kind == "sequence":
            return (y != IGNORE).float().sum()
        return torch.tensor(float(y.size(0)), device=y.device)

    def _correct(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Hits of a batch (float)."""
        if self.kind == "binary":
            return ((logits > 0).float() == y).float().sum()
        return (torch.argmax(logits, -1) == y).float().sum()  # IGNORE never equals a class index

    def _decay(self) -> None:
        wd = self.opt_settings["weight_decay"]
        if wd:
            self.scale_params(1.0 - self.opt_settings["lr"] * wd)

    def _check_finite(self, weighted: torch.Tensor, first: int) -> None:
        values = weighted.detach().cpu().numpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            b = int(bad[0])
            raise NonFiniteLoss(f"loss became {values[b]} at step {first + b + 1} of epoch {self.epoch}")

    @staticmethod
    def _rows(split: Dict[str, torch.Tensor], idx: torch.Tensor, idx_cpu: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {k: v[idx_cpu] if k == "len" else v[idx] for k, v in split.items()}

    def _train_batch(self, batch: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """One optimizer update on a batch (the model in training mode); (logits, mean loss) on the device."""
        logits = self._logits(batch)
        loss = self._loss(logits, batch["y"])
        self.optimizer.zero_grad()  # today's PyTorch sets the gradients to None, 0.4.1 to zeros
        loss.backward()
        self._decay()
        self.optimizer.step()
        return logits, loss

    def _next_batch(self, split: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """step()'s and infer()'s next batch (common.StepRing: the training set in order, wrapping around)."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train_split["y"]), self.batch_size)
            ring = torch.from_numpy(np.ascontiguousarray(self._ring.ring, dtype=np.int64))
            self._ring_rows = (ring.to(self.device), ring)
        rows = self._ring.take()
        return self._rows(split, self._ring_rows[0][rows], self._ring_rows[1][rows])

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (torch.nn.LSTM has two bias vectors where Keras has one)."""
        return int(sum(p.numel() for p in self.params))

    def infer(self) -> np.ndarray:
        """One forward pass of the bare model in inference mode (eval: batchnorm's moving statistics, dropout
        off; no autograd) on the next batch of the training set in order, wrapping around as step() does; its
        outputs copied to the host (N, output values), as ilkarman's feature extraction does."""
        if self.net.training:
            self.net.eval()
        inputs = {k: v for k, v in self.train_split.items() if k != "y"}  # the labels are not read
        with self.no_grad():
            return self._logits(self._next_batch(inputs), self.net).cpu().numpy()

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss."""
        if not self.model.training:
            self.model.train()
        _, loss = self._train_batch(self._next_batch(self.train_split))
        self.steps += 1
        value = loss.item()
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss per example or token, training accuracy over the epoch)."""
        self.epoch += 1
        self.model.train()
        split = self.train_split
        n = len(split["y"])
        order = self.order(n) if self.shuffle else torch.from_numpy(np.arange(n, dtype=np.int64))
        order_dev = order.to(self.device)
        starts = common.batches(n, self.batch_size)
        # Per-step losses (times the labels counted), counts and hits stay on the device; see CUDA_CHECK_EVERY.
        weighted = torch.zeros(len(starts), device=self.device)
        counted = torch.zeros(len(starts), device=self.device)
        correct = torch.zeros(len(starts), device=self.device)
        check_every = CUDA_CHECK_EVERY if self.cuda else 1
        checked = 0
        for b, start in enumerate(starts):
            stop = start + self.batch_size
            batch = self._rows(split, order_dev[start:stop], order[start:stop])
            logits, loss = self._train_batch(batch)
            count = self._counted(batch["y"])
            weighted[b] = loss.detach() * count
            counted[b] = count
            correct[b] = self._correct(logits.detach(), batch["y"])
            if (b + 1) % check_every == 0 or b == len(starts) - 1:
                self._check_finite(weighted[checked:b + 1], checked)
                checked = b + 1
        total = counted.double().sum().item()
        return weighted.sum().item() / total, correct.double().sum().item() / total

    def evaluate(self) -> float:
        """Test accuracy (per token for sequences) in eval mode (dropout off), training-size batches."""
        self.net.eval()
        split = self.test_split
        counted = torch.zeros((), dtype=torch.float64, device=self.device)
        correct = torch.zeros((), dtype=torch.float64, device=self.device)
        with self.no_grad():
            for start in common.batches(len(split["y"]), self.batch_size):
                batch = {k: v[start:start + self.batch_size] for k, v in split.items()}
                correct += self._correct(self._logits(batch, self.net), batch["y"]).double()
                counted += self._counted(batch["y"]).double()
        return correct.item() / counted.item()

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays, in eval mode (the probe's padding check)."""
        self.net.eval()
        tensors = {k: self._ids(np.asarray(batch[k])) for k in ("x", "x_dec") if k in batch}
        if "len" in batch:
            tensors["len"] = torch.from_numpy(np.asarray(batch["len"], dtype=np.int64))
        with self.no_grad():
            return self._logits(tensors, self.net).cpu().numpy()

    def synchronize(self) -> None:
        """Wait for queued CUDA work (on the current device, the run's); nothing to wait for on the CPU."""
        if self.cuda:
            torch.cuda.synchronize()

    # -- info ----------------------------------------------------------------------------------
    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        return {
            "framework": NAME,
            "versions": self.versions(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device.index or 0) if self.cuda else common.cpu_name(),
            "threads": self.threads(),
            "kernels": self.kernels(),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if self.cuda else False,
            "data_layout": self.data_layout() if self.spec_model.input_shape else self.ids_layout(),
            "input_pipeline": self.input_pipeline(),
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    def kernels(self) -> Dict[str, str]:
        """The kernel of each layer type the model has."""
        cudnn = self.cudnn()
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = {}
        if "conv2d" in types:
            kernels["conv2d"] = self.conv_kernel(cudnn)
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
            kernels["lstm"] = self.lstm_kernel(cudnn)
        if "gru" in types:
            gru = next(m for m in self.net.modules() if isinstance(m, model.GRU))
            kernels["gru"] = (self.gru_kernel(cudnn) if gru.cell is None
                              else "torch.nn.GRUCell stepped over time (plain)") + ", every step including padding"
        encoder, lengths = self.lengths_kernels(cudnn)
        if self.spec_model.encoder is not None:
            kernels["lstm_lengths"] = encoder
        elif any(layer.get("use_lengths") for layer in self.spec_model.all_layers):
            kernels["lstm_lengths"] = lengths
        return kernels

    def versions(self) -> Dict[str, str]:
        """The era module's versions()."""
        raise NotImplementedError

    def cudnn(self) -> bool:
        """Whether the run's recurrent and convolution kernels are cuDNN's."""
        raise NotImplementedError

    def threads(self) -> Dict[str, int]:
        """The intra-op and inter-op thread counts."""
        raise NotImplementedError

    def conv_kernel(self, cudnn: bool) -> str:
        """info()'s conv2d kernel."""
        raise NotImplementedError

    def lstm_kernel(self, cudnn: bool) -> str:
        """info()'s lstm kernel."""
        raise NotImplementedError

    def gru_kernel(self, cudnn: bool) -> str:
        """info()'s fused gru kernel."""
        raise NotImplementedError

    def lengths_kernels(self, cudnn: bool) -> Tuple[str, str]:
        """info()'s lstm_lengths of an encoder-decoder and of a stack reading real lengths."""
        raise NotImplementedError

    def data_layout(self) -> str:
        """info()'s data_layout of images."""
        return "NCHW (converted once at setup)"

    def ids_layout(self) -> str:
        """info()'s data_layout of token ids."""
        return "ids (N, T)"

    def input_pipeline(self) -> str:
        """info()'s input_pipeline."""
        return "whole split as device tensors, rows picked by a seeded permutation each epoch"
