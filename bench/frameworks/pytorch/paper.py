"""PyTorch 0.4.1: translates a workload spec into an nn.Module and a plain, idiomatic training loop.

Runs inside the paper-era pytorch image (CPython 3.6). The same model and loop as the current-era
module, written with what PyTorch 0.4.1 has: the whole split lives on the device as one tensor
(images converted once to float32 NCHW, token ids as int64, which 0.4.1's nn.Embedding requires),
batches are rows picked by a seeded NumPy permutation each epoch, cuDNN autotuning is on for a
GPU, and losses are nn.CrossEntropyLoss / nn.BCEWithLogitsLoss on logits.

What 0.4.1 lacks, done by hand: nn.Flatten (1.2) is a view; 'same' padding that TensorFlow makes
asymmetric is an explicit F.pad (zeros before a conv, -inf before a pool); AdamW (1.2) is not
needed because weight decay is applied decoupled by hand (common.WEIGHT_DECAY_RULE);
torch.inference_mode (1.9) is torch.no_grad; nn.Identity (1.1) is an activation of None;
channels_last memory (1.5) does not exist, so the layout switch is left out.

The layers beyond DLBench's are built as the current module builds them, from 0.4.1's own modules
(BatchNorm2d/1d, AvgPool2d(count_include_pad=False), AdaptiveAvgPool2d, torch.cat, LocalResponseNorm,
Conv2d(bias=False), GRU and GRUCell); step() and infer() follow the current module (common.StepRing
batches; infer in eval mode under torch.no_grad).

The LSTM is torch.nn.LSTM fed packed sequences where the spec reads real lengths, so padding is
never computed and the state is the one after each sequence's last real token.
pack_padded_sequence in 0.4.1 needs the batch sorted by length, longest first (enforce_sorted=False
is 1.1): the batch is sorted by its lengths, packed, run, and its outputs and final states are put
back in the batch's own order. On a GPU nn.LSTM runs cuDNN over the packed batch; on the CPU
PyTorch 0.4.1 steps its LSTM cell in autograd over the packed batch sizes, so a packed batch also
shrinks as its sequences end. The encoder-decoder hands the encoder's final (h, c) to the decoder
LSTM as its initial state.
"""

import math
import platform
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bench import modelplan, switches
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.pytorch import CAPABILITIES

NAME = "pytorch"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves
# On CUDA the loss is read back every this many steps rather than every step: a host read is a
# device sync. A NaN is still caught within that many steps. On the CPU every step is checked.
CUDA_CHECK_EVERY = 20
# Target of a sequence step that does not count (padding): CrossEntropyLoss skips it.
IGNORE = -100
_LOSS_NAMES = {
    "categorical": "CrossEntropyLoss",
    "binary": "BCEWithLogitsLoss",
    "sequence": "CrossEntropyLoss over every counted step (ignore_index for padding), mean per token",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN torch was built with)."""
    out = {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    cudnn = _cudnn_version()
    if cudnn is not None:
        out["cudnn"] = str(cudnn)
    return out


def _cudnn_version() -> Optional[int]:
    """cuDNN's version, None without it (backends.cudnn.version() is there in every release)."""
    return torch.backends.cudnn.version() if torch.cuda.is_available() else None


class _Flatten(nn.Module):
    """(N, C, H, W) -> (N, C*H*W): nn.Flatten arrived in PyTorch 1.2."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous().view(x.size(0), -1)


class _Pad(nn.Module):
    """F.pad to the plan's (left, right, top, bottom) amounts with a constant."""

    def __init__(self, pads: Tuple[int, int, int, int], value: float):
        super().__init__()
        self.pads = pads
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, self.pads, mode="constant", value=self.value)


class _LSTM(nn.Module):
    """torch.nn.LSTM that reads real lengths: sorted, packed, run, put back in the batch's order."""

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool,
                 takes_state: bool = False):
        super().__init__()
        self.lstm = nn.LSTM(input_size, units, batch_first=True)
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.takes_state = takes_state  # starts from an encoder's (h, c) instead of zeros

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor],
                state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None) -> torch.Tensor:
        if state is not None or not self.use_lengths or lengths is None:
            out, (h_n, _) = self.lstm(x, state)
            return out if self.return_sequences else h_n[-1]
        out, h, _ = self.packed(x, lengths)
        return out if self.return_sequences else h

    def final_state(self, x: torch.Tensor, lengths: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(h, c), each (1, N, units), after each sequence's last real token (an encoder's output)."""
        if not self.use_lengths or lengths is None:
            return self.lstm(x)[1]
        _, h, c = self.packed(x, lengths, outputs=False)
        return h.unsqueeze(0), c.unsqueeze(0)

    def packed(self, x: torch.Tensor, lengths: torch.Tensor,
               outputs: bool = True) -> Tuple[Optional[torch.Tensor], torch.Tensor, torch.Tensor]:
        """(every step's output or None, final h, final c) in the batch's order, run over the packed batch.

        lengths: int64 on the CPU. pack_padded_sequence (0.4.1) wants them sorted, longest first.
        """
        sorted_lengths, order = lengths.sort(0, descending=True)
        _, restore = order.sort(0)  # the inverse permutation
        order, restore = order.to(x.device), restore.to(x.device)
        packed = pack_padded_sequence(x.index_select(0, order), sorted_lengths, batch_first=True)
        out, (h_n, c_n) = self.lstm(packed)
        h, c = h_n[-1].index_select(0, restore), c_n[-1].index_select(0, restore)
        if not (outputs and self.return_sequences):
            return None, h, c
        # Zeros after each sequence's end, padded back to the input's length.
        padded, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return padded.index_select(0, restore), h, c


class _GRU(nn.Module):
    """A GRU in cuDNN's form (b_ih and b_hh per gate) over every step; the last step's state or all steps. Fused:
    torch.nn.GRU, cuDNN's one operator over the sequence on a GPU (on the CPU 0.4.1 steps its autograd GRU cell
    over time either way); plain (the rnn_kernel switch): torch.nn.GRUCell applied step by step, the same
    parameters and initialisation."""

    def __init__(self, input_size: int, units: int, return_sequences: bool, plain: bool = False):
        super().__init__()
        self.units = units
        self.gru = None if plain else nn.GRU(input_size, units, batch_first=True)
        self.cell = nn.GRUCell(input_size, units) if plain else None
        self.return_sequences = return_sequences

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gru is not None:
            out, h_n = self.gru(x)
            return out if self.return_sequences else h_n[-1]
        h = torch.zeros(x.size(0), self.units, dtype=x.dtype, device=x.device)
        steps = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
            steps.append(h)
        return torch.stack(steps, dim=1) if self.return_sequences else h


class _Rescale(nn.Module):
    """Multiplies by a constant (1, 1, H, W) map: an average pool's full-window divisor -> real-value count."""

    def __init__(self, factor: torch.Tensor):
        super().__init__()
        self.register_buffer("factor", factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


class _Residual(nn.Module):
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: List[nn.Module], shortcut: List[nn.Module], activation: Optional[str]):
        super().__init__()
        self.branch = nn.Sequential(*branch)
        self.shortcut = nn.Sequential(*shortcut)
        self.activation = _ACTIVATIONS[activation]() if activation not in (None, "linear") else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        added = self.branch(x) + self.shortcut(x)
        return added if self.activation is None else self.activation(added)


class _Concat(nn.Module):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: dim 1)."""

    def __init__(self, branches: List[List[nn.Module]]):
        super().__init__()
        self.branches = nn.ModuleList([nn.Sequential(*branch) for branch in branches])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], 1)


class SpecNet(nn.Module):
    """A stack of layers built from a spec; sequence lengths (or an initial state) go to the LSTMs."""

    def __init__(self, layers: List[nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor] = None,
                state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None) -> torch.Tensor:
        for layer in self.layers:
            if isinstance(layer, _LSTM):
                x = layer(x, lengths, state if layer.takes_state else None)
            else:
                x = layer(x)
        return x

    def encode(self, x: torch.Tensor, lengths: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """An encoder's final (h, c): every layer but the last, then the last LSTM's state."""
        layers = list(self.layers)
        for layer in layers[:-1]:
            x = layer(x, lengths) if isinstance(layer, _LSTM) else layer(x)
        return layers[-1].final_state(x, lengths)


class EncoderDecoder(nn.Module):
    """The encoder's final (h, c) starts the decoder LSTM; the decoder reads x_dec (teacher forcing)."""

    def __init__(self, encoder: SpecNet, decoder: SpecNet):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, x: torch.Tensor, lengths: Optional[torch.Tensor], x_dec: torch.Tensor) -> torch.Tensor:
        return self.decoder(x_dec, None, self.encoder.encode(x, lengths))


def build_model(model: modelplan.ModelPlan) -> nn.Module:
    """The spec's model: one stack, or an encoder stack and a decoder stack."""
    if model.encoder is None:
        return build_stack(model.layers)
    return EncoderDecoder(build_stack(model.encoder), build_stack(model.layers))


def build_stack(layers: List[modelplan.Layer]) -> SpecNet:
    """Translate planned layers into torch modules; every size and padding amount comes from the plan."""
    return SpecNet(_modules(layers))


def _modules(layers: List[modelplan.Layer]) -> List[nn.Module]:
    """The torch modules of planned layers, in order (a residual block recurses into its branch and shortcut,
    a concat into its branches)."""
    mods = []  # type: List[nn.Module]
    for layer in layers:
        kind = layer.type
        if kind in modelplan.WINDOWED:
            mods += _windowed(layer)
        elif kind == "residual":
            mods.append(_Residual(_modules(layer.branch), _modules(layer.shortcut), layer["activation"]))
            continue  # its activation is after the add
        elif kind == "concat":
            mods.append(_Concat([_modules(branch) for branch in layer.branches]))
        elif kind == "batchnorm":  # PyTorch's momentum is the batch statistics' weight: 1 - the plan's
            norm = nn.BatchNorm2d if layer.input.kind == modelplan.IMAGE else nn.BatchNorm1d
            mods.append(norm(layer.input.features, eps=layer["epsilon"], momentum=1.0 - layer["momentum"]))
        elif kind == "lrn":  # PyTorch divides alpha by the window (size): the plan's alpha (TensorFlow's) times it
            size = modelplan.lrn_size(layer)
            mods.append(nn.LocalResponseNorm(size, alpha=layer["alpha"] * size, beta=layer["beta"], k=layer["bias"]))
        elif kind == "global_avgpool":
            mods += [nn.AdaptiveAvgPool2d(1), _Flatten()]
        elif kind == "gru":
            mods.append(_GRU(layer.input.features, layer["units"], layer["return_sequences"],
                             plain=switches.value(switches.RNN_KERNEL) == "plain"))
        elif kind == "dropout":
            mods.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            mods.append(_Flatten())
        elif kind == "dense":  # on a sequence nn.Linear maps the last axis: every time step
            mods.append(nn.Linear(layer.input.features, layer["units"]))
        elif kind == "embedding":
            mods.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            mods.append(_LSTM(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                              takes_state=layer["initial_state"] == "encoder"))
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            mods.append(_ACTIVATIONS[activation]())
    return mods


def _windowed(layer: modelplan.Layer) -> List[nn.Module]:
    """A conv2d or pool (NCHW) with the plan's padding: the module's own symmetric `padding`, or,
    where TensorFlow's 'same' is asymmetric (the extra row/column goes after), an explicit pad first."""
    pads = layer.pads
    padding = (pads.top, pads.left) if pads.symmetric else 0
    if layer.type == "conv2d":
        window = nn.Conv2d(layer.input.features, layer["filters"], layer["kernel"], stride=layer["stride"],
                           padding=padding, bias=layer["bias"])  # type: nn.Module
    elif layer.type == "avgpool2d":
        return _avgpool(layer)
    else:  # floor mode; its implicit padding is -inf
        window = nn.MaxPool2d(layer["pool"], stride=layer["stride"], padding=padding)
    if pads.symmetric:
        return [window]
    # -inf is never a pool's max: TensorFlow's 'same' pooling ignores the padding the same way.
    value = 0.0 if layer.type == "conv2d" else float("-inf")
    return [_Pad((pads.left, pads.right, pads.top, pads.bottom), value), window]


def _avgpool(layer: modelplan.Layer) -> List[nn.Module]:
    """An average over the real values only (TensorFlow's 'same' rule): count_include_pad=False where the
    padding is symmetric; otherwise zeros padded explicitly, a full-window average, rescaled by the plan's counts."""
    pads = layer.pads
    if pads.symmetric:
        return [nn.AvgPool2d(layer["pool"], stride=layer["stride"], padding=(pads.top, pads.left),
                             count_include_pad=False)]
    rows, cols = modelplan.pool_counts(layer)
    window = layer["pool"] * layer["pool"]
    factor = torch.tensor([[window / (r * c) for c in cols] for r in rows], dtype=torch.float32)[None, None]
    return [_Pad((pads.left, pads.right, pads.top, pads.bottom), 0.0),
            nn.AvgPool2d(layer["pool"], stride=layer["stride"]), _Rescale(factor)]


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


class TorchTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for PyTorch 0.4.1."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.device = _resolve_device(device)
        self.cuda = self.device.type == "cuda"
        threads = common.threads_from_env()
        if threads is not None:
            torch.set_num_threads(threads)  # 0.4.1 has no inter-op pool to set (set_num_interop_threads is 1.2)
        if self.cuda:
            # Autotune conv algorithms (input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            torch.backends.cudnn.benchmark = switches.value(switches.AUTOTUNE) == "on"
        torch.manual_seed(seed)  # model initialization and dropout (CUDA generators too)
        # Shuffling has its own generator so its order depends on the seed alone.
        self.rng = np.random.RandomState(seed)
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model).to(self.device)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = self._make_optimizer(self.opt_settings)
        # Sequence labels that do not count are IGNORE, so the mean is over counted tokens.
        self.loss_fn = nn.BCEWithLogitsLoss() if self.kind == "binary" else nn.CrossEntropyLoss(ignore_index=IGNORE)
        self.train_split = self._to_tensors(data.train)
        self.test_split = self._to_tensors(data.test)
        self.epoch = 0
        self.steps = 0  # step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s and infer()'s batch order, made once

    # -- setup ---------------------------------------------------------------------------------
    def _make_optimizer(self, opt: dict) -> torch.optim.Optimizer:
        # No weight_decay here: it is applied decoupled in _decay() (common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            return torch.optim.SGD(self.params, lr=opt["lr"], momentum=opt["momentum"])
        if opt["name"] == "adadelta":  # the same update as Keras 2's Adadelta, given its rho and epsilon
            return torch.optim.Adadelta(self.params, lr=opt["lr"], rho=opt["rho"], eps=opt["epsilon"])
        return torch.optim.Adam(self.params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["epsilon"])

    def _to_tensors(self, split: dict) -> Dict[str, torch.Tensor]:
        """The split's roles as tensors: x (and x_dec) on the device, len on the CPU, y as targets."""
        out = {}
        x = np.ascontiguousarray(split["x"])
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
            out["x"] = torch.from_numpy(x).to(self.device).permute(0, 3, 1, 2).float().div_(255.0).contiguous()
        else:
            out["x"] = torch.from_numpy(x.astype(np.int64)).to(self.device)  # 0.4.1's nn.Embedding takes int64
        if "x_dec" in split:
            out["x_dec"] = torch.from_numpy(np.asarray(split["x_dec"], dtype=np.int64)).to(self.device)
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])  # the same contract Keras' mask needs
            out["len"] = torch.from_numpy(np.asarray(split["len"], dtype=np.int64))  # stays on the CPU
        y = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "sequence":
            y = np.where(common.token_mask(y, split.get("y_len")), y, IGNORE)
        out["y"] = torch.from_numpy(np.ascontiguousarray(y)).to(self.device)
        if self.kind == "binary":
            out["y"] = out["y"].float()
        return out

    # -- steps ---------------------------------------------------------------------------------
    def _logits(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        lengths = batch.get("len")
        if "x_dec" in batch:
            return self.model(batch["x"], lengths, batch["x_dec"])
        out = self.model(batch["x"], lengths)
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
        """Hits of a batch (float). 0.4.1 does not promote types across tensors: cast before summing."""
        if self.kind == "binary":
            return ((logits > 0).float() == y).float().sum()
        return (logits.max(-1)[1] == y).float().sum()  # IGNORE never equals a class index

    def _decay(self) -> None:
        wd = self.opt_settings["weight_decay"]
        if wd:
            scale = 1.0 - self.opt_settings["lr"] * wd
            for p in self.params:
                p.data.mul_(scale)

    def _check_finite(self, weighted: torch.Tensor, first: int) -> None:
        values = weighted.cpu().numpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            b = int(bad[0])
            raise NonFiniteLoss(f"loss became {values[b]} at step {first + b + 1} of epoch {self.epoch}")

    def _rows(self, split: Dict[str, torch.Tensor], rows: np.ndarray) -> Dict[str, torch.Tensor]:
        idx = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.int64))
        idx_dev = idx.to(self.device)
        return {k: v[idx] if k == "len" else v[idx_dev] for k, v in split.items()}

    def _train_batch(self, batch: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """One optimizer update on a batch (the model in training mode); (logits, mean loss) on the device."""
        logits = self._logits(batch)
        loss = self._loss(logits, batch["y"])
        self.optimizer.zero_grad()
        loss.backward()
        self._decay()
        self.optimizer.step()
        return logits, loss

    def _next_rows(self) -> np.ndarray:
        """The rows of step()'s and infer()'s next batch: the training set in order, wrapping around."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train_split["y"]), self.batch_size)
        return self._ring.ring[self._ring.take()]

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (torch.nn.LSTM has two bias vectors where Keras has one)."""
        return int(sum(p.numel() for p in self.params))

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss per example or token, training accuracy over the epoch)."""
        self.epoch += 1
        self.model.train()
        split = self.train_split
        n = len(split["y"])
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        starts = common.batches(n, self.batch_size)
        # Per-step losses (times the labels counted), counts and hits stay on the device.
        weighted = torch.zeros(len(starts), device=self.device)
        counted = torch.zeros(len(starts), device=self.device)
        correct = torch.zeros(len(starts), device=self.device)
        check_every = CUDA_CHECK_EVERY if self.cuda else 1
        checked = 0
        for b, start in enumerate(starts):
            batch = self._rows(split, order[start:start + self.batch_size])
            logits, loss = self._train_batch(batch)
            count = self._counted(batch["y"])
            weighted[b] = loss.detach() * count
            counted[b] = count
            correct[b] = self._correct(logits.detach(), batch["y"])
            if (b + 1) % check_every == 0 or b == len(starts) - 1:
                self._check_finite(weighted[checked:b + 1], checked)
                checked = b + 1
        total = counted.double().sum().item()
        return weighted.double().sum().item() / total, correct.double().sum().item() / total

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss."""
        if not self.model.training:
            self.model.train()
        _, loss = self._train_batch(self._rows(self.train_split, self._next_rows()))
        self.steps += 1
        value = loss.item()
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One forward pass in eval mode (batchnorm's moving statistics, dropout off) under torch.no_grad on the
        next batch of the training set in step()'s order; its outputs copied to the host (N, output values)."""
        if self.model.training:
            self.model.eval()
        inputs = {k: v for k, v in self.train_split.items() if k != "y"}  # the labels are not read
        with torch.no_grad():
            return self._logits(self._rows(inputs, self._next_rows())).cpu().numpy()

    def evaluate(self) -> float:
        """Test accuracy (per token for sequences) in eval mode (dropout off), training-size batches."""
        self.model.eval()
        split = self.test_split
        counted, correct = 0.0, 0.0
        with torch.no_grad():
            for start in common.batches(len(split["y"]), self.batch_size):
                batch = {k: v[start:start + self.batch_size] for k, v in split.items()}
                correct += self._correct(self._logits(batch), batch["y"]).item()
                counted += self._counted(batch["y"]).item()
        return correct / counted

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays, in eval mode (the probe's padding check)."""
        self.model.eval()
        tensors = {}
        for role in ("x", "x_dec", "len"):
            if role in batch:
                values = torch.from_numpy(np.asarray(batch[role], dtype=np.int64))
                tensors[role] = values if role == "len" else values.to(self.device)
        with torch.no_grad():
            return self._logits(tensors).cpu().numpy()

    def synchronize(self) -> None:
        """Wait for queued CUDA work; nothing to wait for on the CPU."""
        if self.cuda:
            torch.cuda.synchronize()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        cudnn = self.cuda and bool(torch.backends.cudnn.enabled) and _cudnn_version() is not None
        stack = self.spec_model.all_layers
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = self._newer_kernels(types, cudnn)
        if "conv2d" in types:
            autotune = "on" if torch.backends.cudnn.benchmark else "off"
            kernels["conv2d"] = (f"torch.nn.Conv2d (cuDNN, benchmark autotuning {autotune})" if cudnn
                                 else "torch.nn.Conv2d (CPU)")
        if "lstm" in types:
            kernels["lstm"] = ("torch.nn.LSTM (cuDNN)" if cudnn
                               else "torch.nn.LSTM (CPU: PyTorch 0.4.1's autograd LSTM cell, stepped per time step)")
        sort = "batch sorted by length (longest first), pack_padded_sequence, order restored after"
        if self.spec_model.encoder is not None:
            kernels["lstm_lengths"] = ("encoder: " + sort + "; final (h, c) at the last real token; decoder: from "
                                       "that state over the whole padded batch")
        elif any(layer.get("use_lengths") for layer in stack):
            kernels["lstm_lengths"] = sort + "; last real hidden state"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(0) if self.cuda else common.cpu_name(),
            # Ops run one at a time from the Python thread: 0.4.1 has no inter-op pool.
            "threads": {"intra_op": torch.get_num_threads(), "inter_op": 1},
            "kernels": kernels,
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if self.cuda else False,
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else "ids (N, T), int64",
            "input_pipeline": "whole split as device tensors, rows picked by a seeded NumPy permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    def _newer_kernels(self, types: set, cudnn: bool) -> Dict[str, str]:
        """The kernels of the layers beyond DLBench's (the residual vocabulary, concat, lrn, gru)."""
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("torch.nn.BatchNorm2d/1d (momentum = 1 - the plan's; train mode in step and "
                                    "train_epoch, eval mode with moving statistics in evaluate and infer)")
        if "residual" in types:
            kernels["residual"] = ("activation(branch(x) + shortcut(x)); projection = 1x1 Conv2d(bias=False) "
                                   "+ BatchNorm2d")
        if "concat" in types:
            kernels["concat"] = "torch.cat of the branches' outputs on channels (dim 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("torch.nn.LocalResponseNorm (size = 2 * depth_radius + 1, alpha = the plan's alpha * "
                              "size: PyTorch divides by the window, TensorFlow does not; k = bias)")
        if "gru" in types:
            gru = next(m for m in self.model.modules() if isinstance(m, _GRU))
            fused = ("torch.nn.GRU (cuDNN, fused)" if cudnn
                     else "torch.nn.GRU (CPU: PyTorch 0.4.1's autograd GRU cell, stepped per time step)")
            kernels["gru"] = (fused if gru.cell is None else "torch.nn.GRUCell stepped over time (plain)") + (
                ", every step including padding")
        return kernels


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TorchTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return TorchTrainer(spec, data, device, seed)
