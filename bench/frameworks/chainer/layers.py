"""A workload spec's layers as Chainer links and functions, the same in both eras (Chainer 7 and 4.5.0).

Written with what both versions have (CPython 3.6-clean, payload gate images/compat.py): links define
`forward`, which Link.__call__ dispatches to in Chainer 7 and already in 4.5.0; arrays are moved and
inspected with chainer.backends.cuda (get_array_module, to_gpu, to_cpu), not Chainer 6+'s device objects, so
nothing here knows which era runs it. Images are float32 NCHW (Chainer's only layout).

Sequences: every LSTM is links.NStepLSTM fed a *list of variable-length sequences* (the real tokens of each
row) - Chainer's way of passing real lengths: NStepLSTM sorts them by length itself and its final hidden
state hy is each sequence's state after its own last real token. On a GPU it runs cuDNN's fused RNN; on the
CPU chainer.functions.n_step_lstm loops over time steps in NumPy with a batch that shrinks as sequences end.
NStepLSTM (and NStepGRU) keep two bias vectors per gate (b_ih and b_hh, as cuDNN does): 4 * units more
parameters than Keras' LSTM, the same computation (the two only ever appear as their sum). The real tokens
are gathered with integer indices worked out on the host, where the lengths live.

Sequence outputs (language models, decoders) stay in that form, as in Chainer's seq2seq example: the per-step
dense layer is one links.Linear over the concatenated real steps (one GEMM over (sum of lengths, units)). An
encoder-decoder passes the encoder NStepLSTM's final (hy, cy) - each source's state after its last real token -
as the decoder NStepLSTM's (hx, cx), and the decoder reads only the counted steps of x_dec (the first y_len):
an LSTM never looks ahead, so the later steps change nothing that is counted.

Padding: the amounts bench/modelplan.py planned (TensorFlow's 'same' rule) - symmetric padding goes to the
link's own `pad`, an asymmetric one (even windows, strides) is an explicit F.pad before it (zeros for
convolutions and average pooling, -inf for max pooling, as TensorFlow does). max_pooling_2d runs with
cover_all=False: Chainer's default cover_all=True rounds the output size up, which is not Keras' 'valid'.
"""

import functools
from typing import Any, List, Optional, Tuple

import chainer
import chainer.functions as F  # noqa: N812 (Chainer's own convention)
import chainer.links as L  # noqa: N812
import numpy as np
from chainer.backends import cuda

from bench import modelplan

ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh, "sigmoid": F.sigmoid}


def _explicit_pad(x: Any, pads: modelplan.Pads, value: float) -> Any:
    return F.pad(x, ((0, 0), (0, 0), (pads.top, pads.bottom), (pads.left, pads.right)), "constant",
                 constant_values=value)


class Conv2D(chainer.Chain):
    """links.Convolution2D with the plan's padding (an asymmetric 'same' padded by hand)."""

    def __init__(self, c_in: int, filters: int, kernel: int, stride: int, pads: modelplan.Pads,
                 bias: bool = True) -> None:
        super().__init__()
        self.pads = pads
        with self.init_scope():
            self.conv = L.Convolution2D(c_in, filters, kernel, stride=stride,
                                        pad=(pads.top, pads.left) if pads.symmetric else 0, nobias=not bias)

    def forward(self, x: Any) -> Any:
        if not self.pads.symmetric:
            x = _explicit_pad(x, self.pads, 0.0)
        return self.conv(x)


class _MaxPool2D:
    """F.max_pooling_2d with Keras' semantics: cover_all=False, 'same' padding with -inf."""

    def __init__(self, pool: int, stride: int, pads: modelplan.Pads) -> None:
        # Chainer pads max pooling with -inf itself; only an asymmetric pad needs doing by hand.
        self.pool, self.stride, self.pads = pool, stride, pads

    def __call__(self, x: Any) -> Any:
        if self.pads.symmetric:
            pad = (self.pads.top, self.pads.left)
        else:
            x, pad = _explicit_pad(x, self.pads, -np.inf), 0
        return F.max_pooling_2d(x, self.pool, stride=self.stride, pad=pad, cover_all=False)


class _AvgPool2D:
    """F.average_pooling_2d over the real values only (TensorFlow's 'same' rule): Chainer divides by the
    whole window, padding included, so a padded pool is rescaled by the plan's counts of real values."""

    def __init__(self, layer: modelplan.Layer) -> None:
        self.pool, self.stride, self.pads = layer["pool"], layer["stride"], layer.pads
        self.factor = None
        if any(self.pads):
            rows, cols = modelplan.pool_counts(layer)
            window = self.pool * self.pool
            self.factor = np.array([[window / (r * c) for c in cols] for r in rows], dtype=np.float32)[None, None]

    def __call__(self, x: Any) -> Any:
        if self.factor is None:
            return F.average_pooling_2d(x, self.pool, stride=self.stride)
        out = F.average_pooling_2d(_explicit_pad(x, self.pads, 0.0), self.pool, stride=self.stride)
        return out * cuda.get_array_module(out.array).asarray(self.factor)


class Residual(chainer.Chain):
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: "SpecChain", shortcut: "SpecChain", activation: Optional[str]) -> None:
        super().__init__()
        with self.init_scope():
            self.branch = branch
            self.shortcut = shortcut
        self.activation = ACTIVATIONS[activation] if activation not in (None, "linear") else None

    def forward(self, x: Any) -> Any:
        out = self.branch(x) + self.shortcut(x)
        return self.activation(out) if self.activation else out


class Concat(chainer.ChainList):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: axis 1)."""

    def __init__(self, branches: List["SpecChain"]) -> None:
        super().__init__(*branches)

    def forward(self, x: Any) -> Any:
        return F.concat([branch(x) for branch in self], axis=1)


def _real_steps(shape: Tuple[int, int], lengths: np.ndarray) -> np.ndarray:
    """Flat (row-major) indices of each row's first `lengths` steps: sequence after sequence."""
    return np.flatnonzero(np.arange(shape[1])[None, :] < lengths[:, None])


class _Embed(chainer.Chain):
    """links.EmbedID over each sequence's real tokens; returns a list of (length, dim) sequences."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(vocab, dim)

    def forward(self, ids: Any, lengths: np.ndarray) -> List[Any]:
        # One embedding call over all real tokens (row-major = sequence after sequence), then split:
        # the sequence_embed idiom of Chainer's text examples.
        xp = cuda.get_array_module(ids)
        flat = self.embed(ids.reshape(-1)[xp.asarray(_real_steps(ids.shape, lengths))])
        return list(F.split_axis(flat, np.cumsum(lengths)[:-1], axis=0))


class _LSTM(chainer.Chain):
    """links.NStepLSTM over a list of variable-length sequences (one layer, no dropout).

    returns_state (an encoder's last LSTM): returns its final (hy, cy); takes_state (a decoder's
    LSTM): starts from a given (hx, cx). Both are (layers=1, batch, units), in batch order.
    """

    def __init__(self, input_size: int, units: int, return_sequences: bool, returns_state: bool = False,
                 takes_state: bool = False) -> None:
        super().__init__()
        self.return_sequences = return_sequences
        self.returns_state = returns_state
        self.takes_state = takes_state
        with self.init_scope():
            self.lstm = L.NStepLSTM(1, input_size, units, 0.0)

    def forward(self, xs: List[Any], hx: Any = None, cx: Any = None) -> Any:
        hy, cy, ys = self.lstm(hx, cx, xs)
        # hy, cy: (layers, batch, units), each sequence's state after its own last element.
        if self.returns_state:
            return hy, cy
        return list(ys) if self.return_sequences else hy[-1]


class _GRU(chainer.Chain):
    """links.NStepGRU (cuDNN's form: b_ih and b_hh per gate) over a list of sequences (one layer, no dropout)."""

    def __init__(self, input_size: int, units: int, return_sequences: bool) -> None:
        super().__init__()
        self.return_sequences = return_sequences
        with self.init_scope():
            self.gru = L.NStepGRU(1, input_size, units, 0.0)

    def forward(self, xs: List[Any]) -> Any:
        hy, ys = self.gru(None, xs)  # hy: (layers, batch, units), each sequence's state after its last element
        return list(ys) if self.return_sequences else hy[-1]


class SpecChain(chainer.Chain):
    """A stack of links and functions built from a spec; token ids and lengths go to the embedding.

    Calling it returns logits as a Variable in the current chainer.config - for a model that
    predicts every step, (sum of lengths, classes): the real steps, sequence after sequence. Called
    with `training=True/False` it runs in that mode and returns the logits as a host NumPy array
    (inference convenience, like a Keras model called with training=False). `state` (hx, cx)
    starts the LSTM marked takes_state (a decoder).
    """

    def __init__(self, steps: List[Tuple[str, Any]], takes_ids: bool, use_lengths: bool,
                 caller_lengths: bool = False) -> None:
        super().__init__()
        with self.init_scope():
            # The links in order; `steps` refers to the same objects, so moving the chain moves both.
            self.layers = chainer.ChainList(*[fn for _, fn in steps if isinstance(fn, chainer.Link)])
        self.steps = steps
        self.takes_ids = takes_ids
        self.use_lengths = use_lengths or caller_lengths
        self.caller_lengths = caller_lengths  # lengths None = every step (not the count of non-zero ids)

    def forward(self, x: Any, lengths: Optional[np.ndarray] = None, training: Optional[bool] = None,
                state: Optional[Tuple[Any, Any]] = None) -> Any:
        if training is not None:
            if isinstance(x, np.ndarray) and self.xp is not np:
                x = cuda.to_gpu(x)  # to the current device, the one the trainer put the model on
            with chainer.using_config("train", training), chainer.using_config("enable_backprop", training):
                out = self.forward(x, lengths, state=state)
            return cuda.to_cpu(out.array)
        if self.takes_ids:
            if not self.use_lengths or (lengths is None and self.caller_lengths):
                lengths = np.full(x.shape[0], x.shape[1], dtype=np.int64)
            elif lengths is None:  # post-padded ids: the real length is the count of non-zero ids
                lengths = cuda.to_cpu((x != 0).sum(axis=1))
            lengths = np.asarray(lengths, dtype=np.int64)
        for kind, fn in self.steps:
            if kind == "embedding":
                x = fn(x, lengths)
            elif kind == "lstm":  # takes the whole list of sequences
                x = fn(x, *state) if fn.takes_state else fn(x)
            elif kind == "gru":  # takes the whole list of sequences
                x = fn(x)
            elif isinstance(x, list) and kind == "dense":  # every step at once: one GEMM over the real steps
                x = fn(F.concat(x, axis=0))
            elif isinstance(x, list):  # elementwise steps on a list of sequences
                x = [fn(s) for s in x]
            else:
                x = fn(x)
        return x


class EncoderDecoder(chainer.Chain):
    """Encoder over the source (reading its lengths); its final (hy, cy) starts the decoder's NStepLSTM."""

    def __init__(self, encoder: SpecChain, decoder: SpecChain) -> None:
        super().__init__()
        with self.init_scope():
            self.encoder = encoder
            self.decoder = decoder

    def forward(self, x: Any, lengths: np.ndarray, x_dec: Any, dec_steps: Optional[np.ndarray] = None) -> Any:
        """Logits of the decoder's first dec_steps steps of each row (all steps if None), teacher forcing."""
        return self.decoder(x_dec, dec_steps, state=self.encoder(x, lengths))


def build_model(model: modelplan.ModelPlan) -> chainer.Chain:
    """Translate planned layers into Chainer links/functions: a SpecChain, or an EncoderDecoder of two."""
    if model.encoder is None:
        return _build_stack(model.layers)
    encoder = _build_stack(model.encoder, returns_state=True)
    # The decoder's steps are chosen by the caller (dec_steps), not by its ids' zeros.
    return EncoderDecoder(encoder, _build_stack(model.layers, caller_lengths=True))


def _dropout(rate: float) -> Any:
    return lambda x: F.dropout(x, rate)  # off when chainer.config.train is False


def _flatten(x: Any) -> Any:
    return F.reshape(x, (x.shape[0], -1))


def _batchnorm(layer: modelplan.Layer) -> chainer.Link:
    """links.BatchNormalization: Chainer's decay is the plan's (Keras') momentum; mode: chainer.config.train.

    Its moving variance starts at 1, as Keras' and Chainer 7's do: Chainer 4.5.0 started it at 0, so a model
    evaluated before its statistics have moved far (a features model, never trained) would divide by
    sqrt(eps) at every batchnorm and overflow.
    """
    bn = L.BatchNormalization(layer.input.features, decay=layer["momentum"], eps=layer["epsilon"])
    bn.avg_var.fill(1)  # on the host still: the trainer moves the model afterwards
    return bn


def _global_avgpool(x: Any) -> Any:
    return F.mean(x, axis=(2, 3))


def _image_step(layer: modelplan.Layer) -> Any:
    """The link or function of a layer over images (or a vector: dense aside), None for a sequence layer."""
    kind = layer.type
    if kind == "conv2d":
        return Conv2D(layer.input.features, layer["filters"], layer["kernel"], layer["stride"], layer.pads,
                      layer["bias"])
    if kind == "avgpool2d":
        return _AvgPool2D(layer)
    if kind == "lrn":  # Chainer's alpha is TensorFlow's (not divided by the window n)
        return functools.partial(F.local_response_normalization, n=modelplan.lrn_size(layer), k=layer["bias"],
                                 alpha=layer["alpha"], beta=layer["beta"])
    if kind == "global_avgpool":
        return _global_avgpool
    if kind == "batchnorm":
        return _batchnorm(layer)
    if kind == "residual":
        return Residual(_build_stack(layer.branch), _build_stack(layer.shortcut), layer["activation"])
    if kind == "concat":
        return Concat([_build_stack(branch) for branch in layer.branches])
    if kind == "maxpool2d":
        return _MaxPool2D(layer["pool"], layer["stride"], layer.pads)
    if kind == "dropout":
        return _dropout(layer["rate"])
    if kind == "flatten":
        return _flatten
    return None


def build_layers(layers: List[modelplan.Layer]) -> SpecChain:
    """One planned list of image layers (e.g. a detector's trunk or head, bench/detection/detector.py) as a
    SpecChain; no fixed height or width: the plan's pads hold wherever its planning did."""
    return _build_stack(layers)


def _build_stack(layers: List[modelplan.Layer], returns_state: bool = False,
                 caller_lengths: bool = False) -> SpecChain:
    """One planned layer list as a SpecChain; input sizes and padding come from the plan.

    returns_state: the list is an encoder, whose last LSTM returns its final (hy, cy).
    caller_lengths: the lengths passed in are used as given (None = every step).
    """
    steps = []  # type: List[Tuple[str, Any]]
    # Token sequences are lists of variable-length sequences until a per-step dense layer
    # concatenates their real steps into one array.
    concatenated = False
    use_lengths = False
    for layer in layers:
        i, kind = layer.index, layer.type
        step = _image_step(layer)
        if step is not None:
            steps.append((kind, step))
            if kind == "residual":
                continue  # its activation is after the add
        elif kind == "dense":
            steps.append((kind, L.Linear(layer.input.features, layer["units"])))
            concatenated = concatenated or layer.input.kind == modelplan.SEQUENCE
        elif kind == "embedding":
            if i != 0:
                raise modelplan.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            steps.append((kind, _Embed(layer["input_dim"], layer["output_dim"])))
        elif kind in ("lstm", "gru"):
            if concatenated:
                raise modelplan.SpecError(f"layer {i}: {kind} needs a list of sequences "
                                          "(not the output of a per-step dense layer)")
            steps.append((kind, _recurrent(layer, steps, returns_state and i == len(layers) - 1)))
            use_lengths = use_lengths or (kind == "lstm" and layer["use_lengths"])
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            steps.append(("activation", ACTIVATIONS[activation]))
    takes_ids = bool(steps) and steps[0][0] == "embedding"
    if takes_ids and any(layer.type == "gru" or (layer.type == "lstm" and not layer["use_lengths"])
                         for layer in layers):
        use_lengths = False  # one LSTM (or a GRU) reading the padding means the sequences are the padded rows
    return SpecChain(steps, takes_ids, use_lengths, caller_lengths)


def _recurrent(layer: modelplan.Layer, steps: List[Tuple[str, Any]], state_out: bool) -> chainer.Chain:
    """An lstm layer's _LSTM (state_out: an encoder's last, returning its final state) or a gru layer's _GRU."""
    if layer.type == "gru":
        return _GRU(layer.input.features, layer["units"], layer["return_sequences"])
    if layer["use_lengths"] and not (steps and steps[0][0] == "embedding"):
        raise modelplan.SpecError(f"layer {layer.index}: use_lengths needs an embedding before the lstm")
    return _LSTM(layer.input.features, layer["units"], layer["return_sequences"], returns_state=state_out,
                 takes_state=layer["initial_state"] == "encoder")
