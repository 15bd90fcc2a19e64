"""PyTorch, either era: the spec's nn.Module, built from the planned layers (bench/modelplan.py).

Era-neutral (both images carry it): written with what PyTorch 0.4.1 and today's PyTorch both have, CPython
3.6-clean. A residual block, a concat and TensorFlow's 'same' padding and averaging are built from PyTorch's own
modules with every size taken from the plan; what 0.4.1 lacks is done by hand and computes the same values
(nn.Flatten, 1.2, is a reshape; nn.Identity, 1.1, is an activation of None; an asymmetric pad is F.pad, zeros
before a conv, -inf before a pool).

The one layer whose code differs by era is the LSTM that reads real lengths: how a padded batch is run so that the
state is the one after each sequence's last real token (today's pack_padded_sequence(enforce_sorted=False), 1.1,
or the whole padded batch on the CPU; 0.4.1's packing of a batch sorted by length). LengthsLSTM holds the rest;
each era module subclasses it and hands its class to build_model.
"""

from typing import List, Optional, Tuple, Type, Union

import torch
import torch.nn.functional as F
from torch import nn

from bench import modelplan, switches

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


class Flatten(nn.Module):
    """(N, C, H, W) -> (N, C*H*W) in NCHW order, whatever the memory layout (nn.Flatten arrived in PyTorch 1.2)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous().view(x.size(0), -1)


class Pad(nn.Module):
    """F.pad to the plan's (left, right, top, bottom) amounts with a constant."""

    def __init__(self, pads: Tuple[int, int, int, int], value: float):
        super().__init__()
        self.pads = pads
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, self.pads, mode="constant", value=self.value)


class LengthsLSTM(nn.Module):
    """torch.nn.LSTM that reads real lengths (the era modules' subclasses say how: over_lengths, final_state)."""

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
        return self.over_lengths(x, lengths)

    def over_lengths(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Every step's output (zeros after each sequence's end) or the state after its last real token."""
        raise NotImplementedError

    def final_state(self, x: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(h, c), each (1, N, units), after each sequence's last real token (an encoder's output)."""
        raise NotImplementedError


class GRU(nn.Module):
    """A GRU in cuDNN's form (b_ih and b_hh per gate) over every step; the last step's state or all steps. Fused:
    torch.nn.GRU, one operator over the sequence; plain (the rnn_kernel switch): torch.nn.GRUCell applied step by
    step, the same parameters and initialisation."""

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
            if isinstance(layer, LengthsLSTM):
                x = layer(x, lengths, state if layer.takes_state else None)
            else:
                x = layer(x)
        return x

    def encode(self, x: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """An encoder's final (h, c): every layer but the last, then the last LSTM's state."""
        layers = list(self.layers)
        for layer in layers[:-1]:
            x = layer(x, lengths) if isinstance(layer, LengthsLSTM) else layer(x)
        return layers[-1].final_state(x, lengths)


class EncoderDecoder(nn.Module):
    """The encoder's final (h, c) starts the decoder LSTM; the decoder reads x_dec (teacher forcing)."""

    def __init__(self, encoder: SpecNet, decoder: SpecNet):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, x_dec: torch.Tensor) -> torch.Tensor:
        return self.decoder(x_dec, None, self.encoder.encode(x, lengths))


def build_model(model: modelplan.ModelPlan, lstm: Type[LengthsLSTM]) -> Union[SpecNet, EncoderDecoder]:
    """The spec's model: one stack, or an encoder stack and a decoder stack; `lstm`: the era's LengthsLSTM."""
    if model.encoder is None:
        return SpecNet(modules(model.layers, lstm))
    return EncoderDecoder(SpecNet(modules(model.encoder, lstm)), SpecNet(modules(model.layers, lstm)))


def modules(layers: List[modelplan.Layer], lstm: Type[LengthsLSTM]) -> List[nn.Module]:
    """The torch modules of planned layers, in order (a residual block recurses into its branch and shortcut,
    a concat into its branches); every size and padding amount comes from the plan."""
    mods = []  # type: List[nn.Module]
    for layer in layers:
        kind = layer.type
        if kind in modelplan.WINDOWED:
            mods += _windowed(layer)
        elif kind == "residual":
            mods.append(_Residual(modules(layer.branch, lstm), modules(layer.shortcut, lstm), layer["activation"]))
            continue  # its activation is after the add
        elif kind == "concat":
            mods.append(_Concat([modules(branch, lstm) for branch in layer.branches]))
        elif kind == "batchnorm":  # PyTorch's momentum is the batch statistics' weight: 1 - the plan's
            norm = nn.BatchNorm2d if layer.input.kind == modelplan.IMAGE else nn.BatchNorm1d
            mods.append(norm(layer.input.features, eps=layer["epsilon"], momentum=1.0 - layer["momentum"]))
        elif kind == "lrn":  # PyTorch divides alpha by the window (size): the plan's alpha (TensorFlow's) times it
            size = modelplan.lrn_size(layer)
            mods.append(nn.LocalResponseNorm(size, alpha=layer["alpha"] * size, beta=layer["beta"], k=layer["bias"]))
        elif kind == "global_avgpool":
            mods += [nn.AdaptiveAvgPool2d(1), Flatten()]
        elif kind == "dropout":
            mods.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            mods.append(Flatten())
        elif kind == "dense":  # on a sequence nn.Linear maps the last axis: every time step
            mods.append(nn.Linear(layer.input.features, layer["units"]))
        elif kind == "embedding":
            mods.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            mods.append(lstm(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                             takes_state=layer["initial_state"] == "encoder"))
        elif kind == "gru":
            mods.append(GRU(layer.input.features, layer["units"], layer["return_sequences"],
                            plain=switches.value(switches.RNN_KERNEL) == "plain"))
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
    # PyTorch has no 'same' pooling: pad with -inf (never the max) to TensorFlow's amounts, then pool.
    value = 0.0 if layer.type == "conv2d" else float("-inf")
    return [Pad((pads.left, pads.right, pads.top, pads.bottom), value), window]


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
    return [Pad((pads.left, pads.right, pads.top, pads.bottom), 0.0),
            nn.AvgPool2d(layer["pool"], stride=layer["stride"]), _Rescale(factor)]
