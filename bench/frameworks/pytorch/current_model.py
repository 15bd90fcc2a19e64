"""PyTorch (today's): the spec's nn.Module, built from the planned layers (bench/modelplan.py); current.py trains it.

The fused torch.nn.LSTM is fed packed sequences on CUDA (cuDNN skips the padding) and the whole padded batch on
the CPU (oneDNN's fused kernel; each sequence's last real step picked after), so the state is the one after each
sequence's last real token either way; a residual block, a concat and TensorFlow's 'same' padding and averaging
are built from PyTorch's own modules with every size taken from the plan.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bench import modelplan, switches

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}

class _LSTM(nn.Module):
    """torch.nn.LSTM that reads real lengths: the state after each sequence's last real token."""

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool,
                 takes_state: bool = False):
        super().__init__()
        self.lstm = nn.LSTM(input_size, units, batch_first=True)
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.takes_state = takes_state  # starts from an encoder's (h, c) instead of zeros

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None,
                state: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        if state is not None or not self.use_lengths or lengths is None:
            out, (h_n, _) = self.lstm(x, state)
            return out if self.return_sequences else h_n[-1]
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


class _GRU(nn.Module):
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
        h = x.new_zeros(x.shape[0], self.units)
        steps = []
        for t in range(x.shape[1]):
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

    def __init__(self, branch: list[nn.Module], shortcut: list[nn.Module], activation: str | None):
        super().__init__()
        self.branch = nn.Sequential(*branch)
        self.shortcut = nn.Sequential(*shortcut)
        self.activation = _ACTIVATIONS[activation]() if activation not in (None, "linear") else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.branch(x) + self.shortcut(x))


class _Concat(nn.Module):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: dim 1)."""

    def __init__(self, branches: list[list[nn.Module]]):
        super().__init__()
        self.branches = nn.ModuleList(nn.Sequential(*branch) for branch in branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], dim=1)


class SpecNet(nn.Module):
    """A stack of layers built from a spec; sequence lengths (or an initial state) go to the LSTMs."""

    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None,
                state: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        for layer in self.layers:
            if isinstance(layer, _LSTM):
                x = layer(x, lengths, state if layer.takes_state else None)
            else:
                x = layer(x)
        return x

    def encode(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """An encoder's final (h, c): every layer but the last, then the last LSTM's state."""
        *body, last = self.layers
        for layer in body:
            x = layer(x, lengths) if isinstance(layer, _LSTM) else layer(x)
        return last.final_state(x, lengths)


class EncoderDecoder(nn.Module):
    """The encoder's final (h, c) starts the decoder LSTM; the decoder reads x_dec (teacher forcing)."""

    def __init__(self, encoder: SpecNet, decoder: SpecNet):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, x_dec: torch.Tensor) -> torch.Tensor:
        return self.decoder(x_dec, None, self.encoder.encode(x, lengths))


def build_model(model: modelplan.ModelPlan) -> SpecNet | EncoderDecoder:
    """The spec's model: one stack, or an encoder stack and a decoder stack."""
    if model.encoder is None:
        return build_stack(model.layers)
    return EncoderDecoder(build_stack(model.encoder), build_stack(model.layers))


def build_stack(layers: list[modelplan.Layer]) -> SpecNet:
    """Translate planned layers into torch modules; every size and padding amount comes from the plan."""
    return SpecNet(_modules(layers))


def _modules(layers: list[modelplan.Layer]) -> list[nn.Module]:
    """The torch modules of planned layers, in order (a residual block recurses into its branch and shortcut,
    a concat into its branches)."""
    mods: list[nn.Module] = []
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
            mods += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        elif kind == "dropout":
            mods.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            mods.append(nn.Flatten())
        elif kind == "dense":  # on a sequence nn.Linear maps the last axis: every time step
            mods.append(nn.Linear(layer.input.features, layer["units"]))
        elif kind == "embedding":
            mods.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            mods.append(_LSTM(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                              takes_state=layer["initial_state"] == "encoder"))
        elif kind == "gru":
            mods.append(_GRU(layer.input.features, layer["units"], layer["return_sequences"],
                             plain=switches.value(switches.RNN_KERNEL) == "plain"))
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            mods.append(_ACTIVATIONS[activation]())
    return mods


def _windowed(layer: modelplan.Layer) -> list[nn.Module]:
    """A conv2d or pool (NCHW) with the plan's padding: the module's own symmetric `padding`, or,
    where TensorFlow's 'same' is asymmetric (the extra row/column goes after), an explicit pad first."""
    pads = layer.pads
    padding = (pads.top, pads.left) if pads.symmetric else 0
    if layer.type == "conv2d":
        window = nn.Conv2d(layer.input.features, layer["filters"], layer["kernel"], stride=layer["stride"],
                           padding=padding, bias=layer["bias"])
    elif layer.type == "avgpool2d":
        return _avgpool(layer)
    else:  # floor mode; its implicit padding is -inf
        window = nn.MaxPool2d(layer["pool"], stride=layer["stride"], padding=padding)
    if pads.symmetric:
        return [window]
    explicit = (pads.left, pads.right, pads.top, pads.bottom)
    # PyTorch has no 'same' pooling: pad with -inf (never the max) to TensorFlow's amounts, then pool.
    pad = nn.ZeroPad2d(explicit) if layer.type == "conv2d" else nn.ConstantPad2d(explicit, float("-inf"))
    return [pad, window]


def _avgpool(layer: modelplan.Layer) -> list[nn.Module]:
    """An average over the real values only (TensorFlow's 'same' rule): count_include_pad=False where the
    padding is symmetric; otherwise zeros padded explicitly, a full-window average, rescaled by the plan's counts."""
    pads = layer.pads
    if pads.symmetric:
        return [nn.AvgPool2d(layer["pool"], stride=layer["stride"], padding=(pads.top, pads.left),
                             count_include_pad=False)]
    rows, cols = modelplan.pool_counts(layer)
    window = layer["pool"] * layer["pool"]
    factor = torch.tensor([[window / (r * c) for c in cols] for r in rows], dtype=torch.float32)[None, None]
    return [nn.ZeroPad2d((pads.left, pads.right, pads.top, pads.bottom)),
            nn.AvgPool2d(layer["pool"], stride=layer["stride"]), _Rescale(factor)]
