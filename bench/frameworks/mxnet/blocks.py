"""A workload's planned model (bench/modelplan.py) as Gluon HybridBlocks, written with the Gluon API that MXNet 1.3.0
(the paper era) and today's MXNet share; CPython 3.6-clean. The era modules (current.py, paper.py) say what differs.

Choices an MXNet user would make: one HybridBlock compiled with hybridize (one cached graph instead of per-operator
Python dispatch), images float32 NCHW (MXNet's native layout), recurrent layers fed time-major (TNC, their native
layout) to Gluon's fused RNN operator (rnn.LSTM, rnn.GRU: oneDNN or MKL-DNN on the CPU where the build has it, cuDNN
on a GPU).

Real sequence lengths: where the fused operator reads them (today's MXNet on cuDNN: use_sequence_length=True, the
padding skipped) they go to it; elsewhere (every CPU kernel, and MXNet 1.3.0, whose RNN operator has no
use_sequence_length) the whole padded batch is run and SequenceLast takes each sequence's output at its last real
step (with post-padding that is the same value: an LSTM never looks ahead). An encoder also needs the cell state c
at that step, which the fused operator then only gives after the last (padding) step: the encoder LSTM's own
parameters run as an LSTMCell stepped by F.contrib.foreach, which yields (h, c) at every step for SequenceLast to
pick from.

Sequence outputs (language models, decoders): the dense layer runs once over every step (nn.Dense(flatten=False),
one GEMM over (N*T, units)).

Blocks are called with symbols only (the top-level net is hybridized), so an absent input may be None inside; the
top-level net's own inputs are all given (MXNet 1.3.0's cached graph takes no None input).
"""

from typing import List, Optional

import numpy as np

from bench import modelplan, switches
from bench.frameworks.mxnet.library import gluon, nn, rnn

ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}


def _activation(name: Optional[str]) -> Optional[str]:
    """Gluon's act_type for a planned activation; None for none or linear."""
    return ACTIVATIONS.get(name) if name not in (None, "linear") else None


class _Pad(gluon.HybridBlock):
    """Explicit (possibly asymmetric) spatial padding of an NCHW tensor with a constant."""

    def __init__(self, top: int, bottom: int, left: int, right: int, value: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.pad_width = (0, 0, 0, 0, top, bottom, left, right)
        self.value = value

    def hybrid_forward(self, F, x):  # noqa: N803 (Gluon's signature)
        return F.pad(x, mode="constant", pad_width=self.pad_width, constant_value=self.value)


class _Rescale(gluon.HybridBlock):
    """Multiplies by a constant (1, 1, H, W) map: an average pool's full-window divisor -> real-value count."""

    def __init__(self, factor: np.ndarray, **kwargs) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.factor = self.params.get_constant("factor", factor)  # grad_req null: not trainable

    def hybrid_forward(self, F, x, factor):  # noqa: N803
        return F.broadcast_mul(x, factor)


class _Residual(gluon.HybridBlock):
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: gluon.HybridBlock, shortcut: gluon.HybridBlock, activation: Optional[str],
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.branch = branch
        self.shortcut = shortcut
        self.activation = _activation(activation)

    def hybrid_forward(self, F, x):  # noqa: N803
        out = self.branch(x) + self.shortcut(x)
        return F.Activation(out, act_type=self.activation) if self.activation else out


class _Concat(gluon.HybridBlock):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: axis 1)."""

    def __init__(self, branches: List[gluon.HybridBlock], **kwargs) -> None:
        super().__init__(**kwargs)
        self.branches = branches
        for branch in branches:
            self.register_child(branch)

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.concat(*[branch(x) for branch in self.branches], dim=1)


class _LRN(gluon.HybridBlock):
    """MXNet's LRN operator across the channels (NCHW: axis 1). MXNet divides alpha by the window (nsize), the
    plan (TensorFlow) does not: the operator gets the plan's alpha times the window."""

    def __init__(self, layer: modelplan.Layer, **kwargs) -> None:
        super().__init__(**kwargs)
        self.nsize = modelplan.lrn_size(layer)
        self.alpha, self.beta, self.knorm = layer["alpha"] * self.nsize, layer["beta"], layer["bias"]

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.LRN(x, alpha=self.alpha, beta=self.beta, knorm=self.knorm, nsize=self.nsize)


def _avgpool(layer: modelplan.Layer) -> List[gluon.HybridBlock]:
    """An average over the real values only (TensorFlow's 'same' rule): count_include_pad=False where the
    padding is symmetric; otherwise zeros padded explicitly, a full-window average, rescaled by the plan's counts."""
    pads = layer.pads
    if pads.symmetric:
        return [nn.AvgPool2D(pool_size=layer["pool"], strides=layer["stride"], padding=(pads.top, pads.left),
                             count_include_pad=False, layout="NCHW")]
    rows, cols = modelplan.pool_counts(layer)
    window = layer["pool"] * layer["pool"]
    factor = np.array([[window / (r * c) for c in cols] for r in rows], dtype=np.float32)[None, None]
    return [_Pad(*pads, 0.0), nn.AvgPool2D(pool_size=layer["pool"], strides=layer["stride"], padding=0, layout="NCHW"),
            _Rescale(factor)]


def _zero_state(F, x, units: int):  # noqa: N803
    """Zeros (1, N, units) on x's context for a time-major x; works on symbols (no shapes) too."""
    first = F.slice_axis(F.slice_axis(x, axis=0, begin=0, end=1), axis=2, begin=0, end=1)  # (1, N, 1)
    return F.broadcast_axis(F.zeros_like(first), axis=2, size=units)


class _LSTM(gluon.HybridBlock):
    """Gluon's fused rnn.LSTM on a time-major (T, N, C) batch that reads real lengths.

    returns_state (an encoder's last LSTM): returns its final (h, c), each (N, units), taken at each sequence's last
    real step. takes_state (a decoder's LSTM): starts from a given (h0, c0). cudnn_lengths: the fused operator reads
    the lengths itself (today's MXNet on cuDNN).
    """

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool, cudnn_lengths: bool,
                 returns_state: bool = False, takes_state: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.returns_state = returns_state
        self.takes_state = takes_state
        # Switched on only where it does something (MXNet 1.9's CPU kernel ignores it; 1.3.0 has no such option).
        self.cudnn_lengths = use_lengths and cudnn_lengths
        lengths = {"use_sequence_length": True} if self.cudnn_lengths else {}
        with self.name_scope():
            self.lstm = rnn.LSTM(units, layout="TNC", input_size=input_size, **lengths)
        # The fused kernel's final c is the state after the padding, and c is not among its per-step outputs:
        # step the same parameters (Gluon's own unfused form of the layer) instead.
        self.cell = self.lstm._unfuse() if returns_state and use_lengths and not self.cudnn_lengths else None

    def hybrid_forward(self, F, x, lengths=None, h0=None, c0=None):  # noqa: N803
        if self.cell is not None:
            return self._stepped_final_state(F, x, lengths)
        if self.returns_state or self.takes_state:
            return self._fused_with_state(F, x, lengths, h0, c0)
        out = self.lstm(x, None, lengths) if self.cudnn_lengths else self.lstm(x)
        if not self.use_lengths:
            return out if self.return_sequences else F.SequenceLast(out, axis=0)
        if self.return_sequences:  # zeros after each sequence's end
            return F.SequenceMask(out, sequence_length=lengths, use_sequence_length=True, value=0.0, axis=0)
        return F.SequenceLast(out, sequence_length=lengths, use_sequence_length=True, axis=0)

    def _fused_with_state(self, F, x, lengths, h0, c0):  # noqa: N803
        """The fused kernel with an explicit begin state, returning its final state if asked.

        With cuDNN's sequence lengths the final state is each sequence's state at its last real step.
        """
        if self.takes_state:
            begin = [F.expand_dims(h0, axis=0), F.expand_dims(c0, axis=0)]  # (layers=1, N, units)
        else:
            begin = [_zero_state(F, x, self.units), _zero_state(F, x, self.units)]
        args = (lengths,) if self.cudnn_lengths else ()
        out, (h, c) = self.lstm(x, begin, *args)
        if self.returns_state:
            return F.squeeze(h, axis=0), F.squeeze(c, axis=0)
        if self.use_lengths and self.return_sequences:
            return F.SequenceMask(out, sequence_length=lengths, use_sequence_length=True, value=0.0, axis=0)
        return out if self.return_sequences else F.SequenceLast(out, axis=0)

    def _stepped_final_state(self, F, x, lengths):  # noqa: N803
        """(h, c) at each sequence's last real step, from the cell stepped over the whole padded batch."""

        def step(x_t, states):
            out, states = self.cell(x_t, states)
            return [out, states[1]], states  # h_t and c_t of every step

        begin = [F.squeeze(_zero_state(F, x, self.units), axis=0) for _ in range(2)]
        (hs, cs), _ = F.contrib.foreach(step, x, begin)
        return tuple(F.SequenceLast(s, sequence_length=lengths, use_sequence_length=True, axis=0) for s in (hs, cs))


class _GRU(gluon.HybridBlock):
    """A GRU in cuDNN's form (i2h and h2h biases) on a time-major (T, N, C) batch, every step read. Fused: Gluon's
    rnn.GRU, one RNN operator over the sequence; plain (the rnn_kernel switch): rnn.GRUCell stepped over time by
    contrib.foreach, the same parameters."""

    def __init__(self, input_size: int, units: int, return_sequences: bool, plain: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.return_sequences = return_sequences
        self.units = units
        self.plain = plain
        with self.name_scope():
            if plain:
                self.cell = rnn.GRUCell(units, input_size=input_size)
            else:
                self.gru = rnn.GRU(units, layout="TNC", input_size=input_size)

    def hybrid_forward(self, F, x):  # noqa: N803
        if self.plain:
            out, _ = F.contrib.foreach(self.cell, x, [F.squeeze(_zero_state(F, x, self.units), axis=0)])
        else:
            out = self.gru(x)
        if self.return_sequences:
            return out
        # The last step by slicing: F.SequenceLast without sequence lengths segfaults in the backward pass
        # here (MXNet 1.9.1 CPU, a (500, 64, 100) RNN output; it does for rnn.LSTM's too).
        return F.squeeze(F.slice_axis(out, axis=0, begin=-1, end=None), axis=0)


def _steps_a_cell(block: gluon.HybridBlock) -> bool:
    """Whether the block steps a cell by F.contrib.foreach: in a graph hybridized with static_shape=True, foreach
    computes wrong, run-to-run varying values (MXNet 1.9.1; the CPU encoder's stepped cell) and, under load, its
    backward fails ("We didn't record the computation for iteration ..."; the plain GRU); static_alloc alone is fine."""
    return (isinstance(block, _LSTM) and block.cell is not None) or (isinstance(block, _GRU) and block.plain)


class _BatchMajor(gluon.HybridBlock):
    """(T, N, C) -> (N, T, C): per-step outputs leave the model batch-major, like the labels."""

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.swapaxes(x, dim1=0, dim2=1)


class SpecNet(gluon.HybridBlock):
    """A stack of Gluon blocks built from a spec; sequence lengths (and a begin state) go to the LSTMs."""

    def __init__(self, blocks: List[gluon.HybridBlock], time_major_ids: bool, takes_lengths: bool, **kwargs) -> None:
        super().__init__(**kwargs)
        self.blocks = blocks
        for block in blocks:
            self.register_child(block)
        self.time_major_ids = time_major_ids  # token ids arrive (N, T); the LSTM wants (T, N, C)
        self.takes_lengths = takes_lengths
        self.static_shape = not any(_steps_a_cell(b) for b in blocks)

    def hybrid_forward(self, F, x, lengths=None, h0=None, c0=None):  # noqa: N803
        if self.time_major_ids:
            x = F.transpose(x)  # (N, T) ids -> (T, N): the embedding then yields TNC directly
        for block in self.blocks:
            if isinstance(block, _LSTM):
                x = block(x, lengths, h0, c0) if block.takes_state else block(x, lengths)
            else:
                x = block(x)
        return x


class EncoderDecoder(gluon.HybridBlock):
    """Encoder over the source (reading its lengths); its final (h, c) starts the decoder LSTM."""

    def __init__(self, encoder: SpecNet, decoder: SpecNet, **kwargs) -> None:
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.takes_lengths = True
        self.static_shape = not any(_steps_a_cell(b) for b in encoder.blocks)

    def hybrid_forward(self, F, x, lengths, x_dec):  # noqa: N803
        h, c = self.encoder(x, lengths)
        return self.decoder(x_dec, None, h, c)  # (N, T, classes) logits, teacher forcing


def build_model(model: modelplan.ModelPlan, cudnn_lengths: bool) -> gluon.HybridBlock:
    """Translate planned layers into Gluon blocks: a SpecNet, or an EncoderDecoder of two.

    cudnn_lengths: the fused LSTM reads sequence lengths itself (today's MXNet on a GPU).
    """
    if model.encoder is None:
        return _build_stack(model.layers, cudnn_lengths)
    encoder = _build_stack(model.encoder, cudnn_lengths, returns_state=True)
    return EncoderDecoder(encoder, _build_stack(model.layers, cudnn_lengths))


def build_images(layers: List[modelplan.Layer]) -> SpecNet:
    """A HybridBlock of one planned list of image layers (NCHW in and out), e.g. a detector's trunk or head
    (bench/detection/detector.py); its pads are the plan's, so it takes any input size the plan's pads hold for."""
    return _build_stack(layers, cudnn_lengths=False)


def _conv(layer: modelplan.Layer, act: Optional[str]) -> List[gluon.HybridBlock]:
    pads, padding, blocks = layer.pads, 0, []
    if pads.symmetric:
        padding = (pads.top, pads.left)  # the convolution pads by itself
    else:  # TensorFlow puts the odd pixel after (even kernels, some strides)
        blocks.append(_Pad(*pads, 0.0))
    blocks.append(nn.Conv2D(layer["filters"], layer["kernel"], strides=layer["stride"], padding=padding,
                            activation=act, layout="NCHW", in_channels=layer.input.features, use_bias=layer["bias"]))
    return blocks


def _time_major(layer: modelplan.Layer, batch_major: bool) -> None:
    if batch_major:
        raise modelplan.SpecError(f"layer {layer.index}: {layer.type} needs a time-major sequence input "
                                  "(not the output of a per-step dense layer)")


def _build_stack(layers: List[modelplan.Layer], cudnn_lengths: bool, returns_state: bool = False) -> SpecNet:
    """Gluon blocks for one planned layer list, each given its input size and padding from the plan.

    Every block gets its input size, so parameters have shapes (and a count) before any forward.
    returns_state: the list is an encoder, whose last LSTM returns its final (h, c).
    """
    blocks = []  # type: List[gluon.HybridBlock]
    # Token sequences run time-major (T, N, C) from the embedding on; a per-step dense layer makes
    # them batch-major (N, T, C), like the labels.
    batch_major = False
    takes_lengths = False
    for layer in layers:
        i, kind = layer.index, layer.type
        act = _activation(layer.get("activation"))
        if kind == "conv2d":
            blocks += _conv(layer, act)
            act = None
        elif kind == "avgpool2d":
            blocks += _avgpool(layer)
        elif kind == "lrn":
            blocks.append(_LRN(layer))
        elif kind == "global_avgpool":
            blocks += [nn.GlobalAvgPool2D(layout="NCHW"), nn.Flatten()]
        elif kind == "batchnorm":  # Gluon's momentum is Keras' (the moving statistics' weight), axis 1 = channels
            blocks.append(nn.BatchNorm(axis=1, momentum=layer["momentum"], epsilon=layer["epsilon"],
                                       in_channels=layer.input.features))
        elif kind == "residual":
            blocks.append(_Residual(_build_stack(layer.branch, cudnn_lengths),
                                    _build_stack(layer.shortcut, cudnn_lengths), act))
            act = None  # applied after the add
        elif kind == "concat":
            blocks.append(_Concat([_build_stack(branch, cudnn_lengths) for branch in layer.branches]))
        elif kind == "maxpool2d":
            if any(layer.pads):  # Gluon pools pad symmetrically only; -inf never wins a max, as in TensorFlow
                blocks.append(_Pad(*layer.pads, float("-inf")))
            blocks.append(nn.MaxPool2D(pool_size=layer["pool"], strides=layer["stride"], padding=0, layout="NCHW"))
        elif kind == "dropout":
            blocks.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            blocks.append(nn.Flatten())
        elif kind == "dense":
            per_step = layer.input.kind == modelplan.SEQUENCE  # one GEMM over (N*T, features)
            if per_step and not batch_major:
                blocks.append(_BatchMajor())
                batch_major = True
            blocks.append(nn.Dense(layer["units"], activation=act, flatten=not per_step, in_units=layer.input.features))
            act = None
        elif kind == "embedding":
            if i != 0:
                raise modelplan.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            blocks.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            _time_major(layer, batch_major)
            blocks.append(_LSTM(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                                cudnn_lengths, returns_state=returns_state and i == len(layers) - 1,
                                takes_state=layer["initial_state"] == "encoder"))
            takes_lengths = takes_lengths or layer["use_lengths"]
        elif kind == "gru":
            _time_major(layer, batch_major)
            blocks.append(_GRU(layer.input.features, layer["units"], layer["return_sequences"],
                               plain=switches.value(switches.RNN_KERNEL) == "plain"))
        if act is not None:
            blocks.append(nn.Activation(act))
    time_major = bool(layers) and layers[0].type == "embedding"
    return SpecNet(blocks, time_major_ids=time_major, takes_lengths=takes_lengths)
