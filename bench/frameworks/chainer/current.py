"""Chainer 7: translates a workload spec into a chainer.Chain and a define-by-run training loop.

Runs inside the chainer environment. Choices a Chainer user would make: images are float32 NCHW
(Chainer's only layout, converted once at setup), the whole split lives on the device as one
array and batches are rows picked by a seeded permutation (no per-step host feeding), the
training step is the Chainer idiom (model.cleargrads(), loss.backward(), optimizer.update()),
and the LSTM is links.NStepLSTM fed a *list of variable-length sequences* — Chainer's way of
passing real lengths: the embedded real tokens are split per sequence, NStepLSTM sorts them by
length itself and its final hidden state hy is each sequence's state after its last real token.
On a GPU NStepLSTM runs cuDNN's fused RNN; on the CPU chainer.functions.n_step_lstm loops over
time steps in NumPy with a batch that shrinks as sequences end. NStepLSTM keeps two bias vectors
per gate (b_ih and b_hh, as cuDNN does): 4 * units more parameters than Keras' LSTM, the same
computation (the two only ever appear as their sum).

Sequence outputs (language models, decoders) stay in that form, as in Chainer's seq2seq example:
the per-step dense layer is one links.Linear over the concatenated real steps (one GEMM over
(sum of lengths, units)) and softmax_cross_entropy's mean over those rows is the loss. An
encoder-decoder passes the encoder NStepLSTM's final (hy, cy) - each source's state after its
last real token - as the decoder NStepLSTM's (hx, cx), and the decoder reads only the counted
steps of x_dec (the first y_len): an LSTM never looks ahead, so the later steps change nothing
that is counted. outputs() runs the decoder over every step instead, for (N, T, classes) logits.

Padding: the amounts bench/modelplan.py planned (TensorFlow's 'same' rule) — symmetric padding
goes to the link's own `pad`, an asymmetric one (even windows, strides) is an explicit F.pad
before it (zeros for convolutions, -inf for max pooling, as TensorFlow does). max_pooling_2d runs
with cover_all=False: Chainer's default cover_all=True rounds the output size up, which is not
Keras' 'valid'.

Threads: on the CPU Chainer's work is NumPy, i.e. OpenBLAS GEMMs (convolutions are im2col +
tensordot, the LSTM and dense layers are dot products) plus single-threaded NumPy elementwise
loops. OpenBLAS reads OPENBLAS_NUM_THREADS only when NumPy is loaded, which in the entrypoint and
the probe happens before this module is imported, so the trainer sets the thread count at run
time with threadpoolctl and reports what OpenBLAS really uses.

Performance switches from Chainer's performance guide: type checking is off in the training and
evaluation loops (chainer.config.type_check=False); on a GPU cuDNN is used ('auto') with its
convolution autotuning on (chainer.config.autotune=True). iDeep (Chainer's oneDNN backend for
the CPU) has no build for Python 3.11, so the CPU path is plain NumPy.
"""

from __future__ import annotations

import functools
import math
import os
import platform
from typing import Any

from bench import modelplan, switches
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.chainer import CAPABILITIES

# Honoured only if NumPy is not loaded yet (a plain `python -c` caller); see the docstring.
_REQUESTED_THREADS = common.threads_from_env()
if _REQUESTED_THREADS is not None:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(_REQUESTED_THREADS)

import chainer  # noqa: E402
import chainer.functions as F  # noqa: E402, N812 (Chainer's own convention)
import chainer.links as L  # noqa: E402, N812
import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402
from chainer.backends import cuda  # noqa: E402

NAME = "chainer"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# On a GPU the loss is read back every this many steps rather than every step (a host read is a
# device sync). A NaN is still caught within that many steps. On the CPU every step is checked.
GPU_CHECK_EVERY = 20

_ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh, "sigmoid": F.sigmoid}
# Lengths stay on the host: they size the split of a batch into sequences.
_HOST_ROLES = ("len", "y_len")
_LOSS_NAMES = {
    "categorical": "softmax_cross_entropy",
    "binary": "sigmoid_cross_entropy",
    "sequence": "softmax_cross_entropy over the counted tokens' rows (mean = sum / counted tokens)",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


def _blas() -> list[dict]:
    return [lib for lib in threadpoolctl.threadpool_info() if lib.get("user_api") == "blas"]


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and CuPy/cuDNN where a GPU build is present)."""
    out = {"chainer": chainer.__version__, "numpy": np.__version__, "python": platform.python_version()}
    blas = _blas()
    if blas:
        out["blas"] = f"{blas[0].get('internal_api')} {blas[0].get('version')}"
    if cuda.available:
        out["cupy"] = cuda.cupy.__version__
        if cuda.cudnn_enabled:
            out["cudnn"] = str(cuda.cuda.cudnn.getVersion())
    return out


def _explicit_pad(x: Any, pads: modelplan.Pads, value: float) -> Any:
    return F.pad(x, ((0, 0), (0, 0), (pads.top, pads.bottom), (pads.left, pads.right)), "constant",
                 constant_values=value)


class _Conv2D(chainer.Chain):
    """links.Convolution2D with the plan's padding (an asymmetric 'same' padded by hand)."""

    def __init__(self, c_in: int, filters: int, kernel: int, stride: int, pads: modelplan.Pads, bias: bool = True):
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

    def __init__(self, pool: int, stride: int, pads: modelplan.Pads):
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

    def __init__(self, layer: modelplan.Layer):
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
        return out * chainer.backend.get_array_module(out.array).asarray(self.factor)


class _Residual(chainer.Chain):
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: SpecChain, shortcut: SpecChain, activation: str | None):
        super().__init__()
        with self.init_scope():
            self.branch = branch
            self.shortcut = shortcut
        self.activation = _ACTIVATIONS[activation] if activation not in (None, "linear") else None

    def forward(self, x: Any) -> Any:
        out = self.branch(x) + self.shortcut(x)
        return self.activation(out) if self.activation else out


class _Concat(chainer.ChainList):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: axis 1)."""

    def __init__(self, branches: list[SpecChain]):
        super().__init__(*branches)

    def forward(self, x: Any) -> Any:
        return F.concat([branch(x) for branch in self], axis=1)


class _Embed(chainer.Chain):
    """links.EmbedID over each sequence's real tokens; returns a list of (length, dim) sequences."""

    def __init__(self, vocab: int, dim: int):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(vocab, dim)

    def forward(self, ids: Any, lengths: np.ndarray) -> list:
        # One embedding call over all real tokens (row-major = sequence after sequence), then split:
        # the sequence_embed idiom of Chainer's text examples.
        xp = chainer.backend.get_array_module(ids)
        real = xp.arange(ids.shape[1])[None, :] < xp.asarray(lengths)[:, None]
        flat = self.embed(ids[real])
        return list(F.split_axis(flat, np.cumsum(lengths)[:-1], axis=0))


class _LSTM(chainer.Chain):
    """links.NStepLSTM over a list of variable-length sequences (one layer, no dropout).

    returns_state (an encoder's last LSTM): returns its final (hy, cy); takes_state (a decoder's
    LSTM): starts from a given (hx, cx). Both are (layers=1, batch, units), in batch order.
    """

    def __init__(self, input_size: int, units: int, return_sequences: bool, returns_state: bool = False,
                 takes_state: bool = False):
        super().__init__()
        self.return_sequences = return_sequences
        self.returns_state = returns_state
        self.takes_state = takes_state
        with self.init_scope():
            self.lstm = L.NStepLSTM(1, input_size, units, 0.0)

    def forward(self, xs: list, hx: Any = None, cx: Any = None) -> Any:
        hy, cy, ys = self.lstm(hx, cx, xs)
        # hy, cy: (layers, batch, units), each sequence's state after its own last element.
        if self.returns_state:
            return hy, cy
        return list(ys) if self.return_sequences else hy[-1]


class _GRU(chainer.Chain):
    """links.NStepGRU (cuDNN's form: b_ih and b_hh per gate) over a list of sequences (one layer, no dropout)."""

    def __init__(self, input_size: int, units: int, return_sequences: bool):
        super().__init__()
        self.return_sequences = return_sequences
        with self.init_scope():
            self.gru = L.NStepGRU(1, input_size, units, 0.0)

    def forward(self, xs: list) -> Any:
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

    def __init__(self, steps: list[tuple[str, Any]], takes_ids: bool, use_lengths: bool, caller_lengths: bool = False):
        super().__init__()
        with self.init_scope():
            # The links in order; `steps` refers to the same objects, so to_device moves both.
            self.layers = chainer.ChainList(*[fn for _, fn in steps if isinstance(fn, chainer.Link)])
        self.steps = steps
        self.takes_ids = takes_ids
        self.use_lengths = use_lengths or caller_lengths
        self.caller_lengths = caller_lengths  # lengths None = every step (not the count of non-zero ids)

    def forward(self, x: Any, lengths: np.ndarray | None = None, training: bool | None = None,
                state: tuple[Any, Any] | None = None) -> Any:
        if training is not None:
            with chainer.using_config("train", training), chainer.using_config("enable_backprop", training):
                out = self.forward(self.device.send(np.asarray(x)) if isinstance(x, np.ndarray) else x, lengths,
                                   state=state)
            return cuda.to_cpu(out.array)
        if self.takes_ids:
            if not self.use_lengths:
                lengths = np.full(x.shape[0], x.shape[1], dtype=np.int64)
            elif lengths is None and self.caller_lengths:
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

    def __init__(self, encoder: SpecChain, decoder: SpecChain):
        super().__init__()
        with self.init_scope():
            self.encoder = encoder
            self.decoder = decoder

    def forward(self, x: Any, lengths: np.ndarray, x_dec: Any, dec_steps: np.ndarray | None = None) -> Any:
        """Logits of the decoder's first dec_steps steps of each row (all steps if None), teacher forcing."""
        return self.decoder(x_dec, dec_steps, state=self.encoder(x, lengths))


def build_model(model: modelplan.ModelPlan) -> SpecChain | EncoderDecoder:
    """Translate planned layers into Chainer links/functions: a SpecChain, or an EncoderDecoder of two."""
    if model.encoder is None:
        return _build_stack(model.layers)
    encoder = _build_stack(model.encoder, returns_state=True)
    # The decoder's steps are chosen by the caller (dec_steps), not by its ids' zeros.
    return EncoderDecoder(encoder, _build_stack(model.layers, caller_lengths=True))


def _build_stack(layers: list[modelplan.Layer], returns_state: bool = False, caller_lengths: bool = False) -> SpecChain:
    """One planned layer list as a SpecChain; input sizes and padding come from the plan.

    returns_state: the list is an encoder, whose last LSTM returns its final (hy, cy).
    caller_lengths: the lengths passed in are used as given (None = every step).
    """
    steps: list[tuple[str, Any]] = []
    # Token sequences are lists of variable-length sequences until a per-step dense layer
    # concatenates their real steps into one array.
    concatenated = False
    use_lengths = False
    for layer in layers:
        i, kind = layer.index, layer.type
        if kind == "conv2d":
            steps.append((kind, _Conv2D(layer.input.features, layer["filters"], layer["kernel"], layer["stride"],
                                        layer.pads, layer["bias"])))
        elif kind == "avgpool2d":
            steps.append((kind, _AvgPool2D(layer)))
        elif kind == "lrn":  # Chainer's alpha is TensorFlow's (not divided by the window n)
            steps.append((kind, functools.partial(F.local_response_normalization, n=modelplan.lrn_size(layer),
                                                  k=layer["bias"], alpha=layer["alpha"], beta=layer["beta"])))
        elif kind == "global_avgpool":
            steps.append((kind, lambda x: F.mean(x, axis=(2, 3))))
        elif kind == "batchnorm":  # Chainer's decay is the plan's (Keras') momentum; mode: chainer.config.train
            steps.append((kind, L.BatchNormalization(layer.input.features, decay=layer["momentum"],
                                                     eps=layer["epsilon"])))
        elif kind == "residual":
            steps.append((kind, _Residual(_build_stack(layer.branch), _build_stack(layer.shortcut),
                                          layer["activation"])))
            continue  # its activation is after the add
        elif kind == "concat":
            steps.append((kind, _Concat([_build_stack(branch) for branch in layer.branches])))
        elif kind == "maxpool2d":
            steps.append((kind, _MaxPool2D(layer["pool"], layer["stride"], layer.pads)))
        elif kind == "dropout":
            rate = layer["rate"]
            steps.append((kind, lambda x, rate=rate: F.dropout(x, rate)))  # off when chainer.config.train is False
        elif kind == "flatten":
            steps.append((kind, lambda x: F.reshape(x, (x.shape[0], -1))))
        elif kind == "dense":
            steps.append((kind, L.Linear(layer.input.features, layer["units"])))
            concatenated = concatenated or layer.input.kind == modelplan.SEQUENCE
        elif kind == "embedding":
            if i != 0:
                raise modelplan.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            steps.append((kind, _Embed(layer["input_dim"], layer["output_dim"])))
        elif kind == "lstm":
            if concatenated:
                raise modelplan.SpecError(f"layer {i}: lstm needs a list of sequences "
                                          "(not the output of a per-step dense layer)")
            if layer["use_lengths"] and not (steps and steps[0][0] == "embedding"):
                raise modelplan.SpecError(f"layer {i}: use_lengths needs an embedding before the lstm")
            use_lengths = use_lengths or layer["use_lengths"]
            state_out = returns_state and i == len(layers) - 1
            steps.append((kind, _LSTM(layer.input.features, layer["units"], layer["return_sequences"],
                                      returns_state=state_out, takes_state=layer["initial_state"] == "encoder")))
        elif kind == "gru":
            if concatenated:
                raise modelplan.SpecError(f"layer {i}: gru needs a list of sequences "
                                          "(not the output of a per-step dense layer)")
            steps.append((kind, _GRU(layer.input.features, layer["units"], layer["return_sequences"])))
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            steps.append(("activation", _ACTIVATIONS[activation]))
    takes_ids = bool(steps) and steps[0][0] == "embedding"
    if takes_ids and any(layer.type == "gru" or (layer.type == "lstm" and not layer["use_lengths"])
                         for layer in layers):
        use_lengths = False  # one LSTM (or a GRU) reading the padding means the sequences are the padded rows
    return SpecChain(steps, takes_ids, use_lengths, caller_lengths)


def _resolve_device(device: str) -> Any:
    if device == "cpu":
        return chainer.get_device("@numpy")
    if device == "gpu":
        if not cuda.available:
            raise RuntimeError(
                f"device 'gpu' requested but Chainer has no CUDA backend (chainer {chainer.__version__}: "
                "CuPy is not installed in this environment; chainer 7.8.1 asks for CuPy >=7.7,<8)"
            )
        if cuda.cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("device 'gpu' requested but CuPy sees no CUDA device")
        return chainer.get_device("@cupy:0")
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


class _DecoupledWeightDecay:
    """Optimizer hook: w -= lr * weight_decay * w before each update (common.WEIGHT_DECAY_RULE, Keras 3's).

    chainer.optimizer_hooks.WeightDecay adds rate * w to the gradient (coupled L2), which Adam
    would rescale; this one shrinks the weights themselves, before the update rule runs.
    """

    name = "DecoupledWeightDecay"
    call_for_each_param = True
    timing = "pre"

    def __init__(self, lr: float, weight_decay: float):
        self.factor = 1.0 - lr * weight_decay

    def __call__(self, rule: Any, param: chainer.Parameter) -> None:
        weights = param.array
        if weights is not None and param.grad is not None:
            weights *= self.factor  # in place, on the parameter's device


class ChainerTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Chainer."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.device = _resolve_device(device)
        self.gpu = device == "gpu"
        self.xp = self.device.xp
        if self.gpu:
            # cuDNN convolution autotuning (the input shapes are fixed) unless the cudnn_autotune sweep turned it off.
            chainer.config.autotune = switches.value(switches.AUTOTUNE) == "on"
        self._thread_limit = self._set_threads()
        np.random.seed(seed)  # Chainer's initializers and CPU dropout draw from NumPy's global generator
        if self.gpu:
            cuda.cupy.random.seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone.
        self.order_rng = np.random.RandomState(seed)
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model)
        self.model.to_device(self.device)
        self.device.use()
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = self._make_optimizer(self.opt_settings)
        self.train = self._arrays(data.train)
        self.test = self._arrays(data.test)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring: common.StepRing | None = None  # step()'s batch order, made on its first call
        self._ring_dev: Any = None  # its rows on the device

    # -- setup ---------------------------------------------------------------------------------
    @staticmethod
    def _set_threads() -> threadpoolctl.threadpool_limits | None:
        n = common.threads_from_env()
        if n is None:
            return None
        # Kept referenced: the limit holds until restored (never, in a run).
        return threadpoolctl.threadpool_limits(limits=n)

    def _make_optimizer(self, opt: dict) -> chainer.Optimizer:
        if opt["name"] == "sgd":
            if opt["momentum"]:
                optimizer = chainer.optimizers.MomentumSGD(lr=opt["lr"], momentum=opt["momentum"])
            else:
                optimizer = chainer.optimizers.SGD(lr=opt["lr"])
        elif opt["name"] == "adadelta":
            # Zeiler's rule has no learning rate, and Chainer's AdaDelta none either: Keras' lr 1.0 only.
            if opt["lr"] != 1.0:
                raise modelplan.SpecError(
                    f"adadelta lr {opt['lr']}: Chainer's AdaDelta has no learning rate (1.0 only)")
            optimizer = chainer.optimizers.AdaDelta(rho=opt["rho"], eps=opt["epsilon"])
        else:
            optimizer = chainer.optimizers.Adam(
                alpha=opt["lr"], beta1=opt["beta1"], beta2=opt["beta2"], eps=opt["epsilon"]
            )
        optimizer.setup(self.model)
        if opt["weight_decay"]:
            optimizer.add_hook(_DecoupledWeightDecay(opt["lr"], opt["weight_decay"]))
        return optimizer

    def _inputs(self, split: dict) -> dict[str, Any]:
        """The model's input roles: x and x_dec on the device, lengths (len, y_len) on the host."""
        x = split["x"]
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once (Chainer's layout).
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)
        else:
            x = np.ascontiguousarray(x, dtype=np.int32)  # token ids, EmbedID takes int32
        out = {"x": self.device.send(x)}
        if "x_dec" in split:
            out["x_dec"] = self.device.send(np.ascontiguousarray(split["x_dec"], dtype=np.int32))
        for role in _HOST_ROLES:
            if role in split:
                out[role] = np.asarray(split[role], dtype=np.int64)
        return out

    def _arrays(self, split: dict) -> dict[str, Any]:
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])
        arrays = self._inputs(split)
        y = np.asarray(split["y"], dtype=np.int32)
        if self.kind == "binary":
            y = y.reshape(-1, 1)  # sigmoid_cross_entropy wants t shaped like the logits
        arrays["y"] = self.device.send(y)
        return arrays

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (links.NStepLSTM has two bias vectors per gate where Keras has one)."""
        return int(sum(p.size for p in self.model.params()))

    def _logits(self, batch: dict[str, Any], every_step: bool = False) -> chainer.Variable:
        """The model's logits; for sequences only the counted steps (y_len), unless every_step."""
        if "x_dec" in batch:
            return self.model(batch["x"], batch["len"], batch["x_dec"], None if every_step else batch.get("y_len"))
        return self.model(batch["x"], batch.get("len"))

    def _targets(self, batch: dict[str, Any]) -> Any:
        """The labels the logits' rows stand for: per example, or the counted tokens in row-major order."""
        y = batch["y"]
        if self.kind != "sequence":
            return y
        if "y_len" not in batch:
            return y.reshape(-1)
        return y[self.xp.asarray(common.token_mask(y, batch["y_len"]))]

    def _loss(self, logits: chainer.Variable, t: Any) -> chainer.Variable:
        if self.kind == "binary":
            return F.sigmoid_cross_entropy(logits, t)
        # Mean over the rows: examples, or counted tokens (sequence after sequence).
        return F.softmax_cross_entropy(logits, t)

    def _correct(self, logits: Any, t: Any) -> Any:
        if self.kind == "binary":
            return ((logits > 0).astype(np.int32) == t).sum()
        return (logits.argmax(axis=1) == t).sum()

    def _check_finite(self, losses: list, first: int) -> None:
        values = cuda.to_cpu(self.xp.stack(losses)) if self.gpu else np.asarray(losses)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")

    @staticmethod
    def _rows(split: dict[str, Any], host_idx: Any, device_idx: Any) -> dict[str, Any]:
        """A batch of a split: rows host_idx of its lengths (host), device_idx of its arrays (device)."""
        return {role: arr[host_idx if role in _HOST_ROLES else device_idx] for role, arr in split.items()}

    def _forward(self, batch: dict[str, Any]) -> tuple[Any, chainer.Variable, chainer.Variable]:
        """(targets, logits, mean loss) of a training batch; call it in train mode."""
        t = self._targets(batch)
        logits = self._logits(batch)
        return t, logits, self._loss(logits, t)

    def _update(self, loss: chainer.Variable) -> None:
        """Backward from a batch's loss and one optimizer update."""
        self.model.cleargrads()
        loss.backward()
        self.optimizer.update()

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss,
        checked before the update as train_epoch checks it."""
        self._start_ring()
        rows = self._ring.take()
        batch = self._rows(self.train, self._ring.ring[rows], self._ring_dev[rows])
        self.steps += 1
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            _, _, loss = self._forward(batch)
            value = float(loss.array)
            if not math.isfinite(value):
                raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
            self._update(loss)
        return value

    def _start_ring(self) -> None:
        """step()'s and infer()'s batch order (common.StepRing) and its rows on the device, made once."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train["y"]), self.batch_size)
            self._ring_dev = self.device.send(self._ring.ring)

    def infer(self) -> np.ndarray:
        """One forward pass with chainer.config.train False (batchnorm's moving statistics, dropout off) and
        enable_backprop False (no graph kept) on the next batch of the training set in order, wrapping around as
        step() does; its outputs copied to the host (N, output values), as ilkarman's feature extraction does."""
        self._start_ring()
        rows = self._ring.take()
        batch = self._rows(self.train, self._ring.ring[rows], self._ring_dev[rows])
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False), \
                chainer.using_config("type_check", False):
            return cuda.to_cpu(self._logits(batch).array)

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train["y"])
        order = self.order_rng.permutation(n) if self.shuffle else np.arange(n)
        order_dev = self.device.send(order)
        weighted, correct, counts = [], [], []
        pending: list = []  # losses not yet checked (GPU)
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        starts = common.batches(n, self.batch_size)
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for b, start in enumerate(starts):
                stop = start + self.batch_size
                batch = self._rows(self.train, order[start:stop], order_dev[start:stop])
                t, logits, loss = self._forward(batch)
                pending.append(loss.array)
                if len(pending) == check_every or b == len(starts) - 1:
                    self._check_finite(pending, b + 1 - len(pending))
                    pending = []
                self._update(loss)
                weighted.append(loss.array * len(t))
                correct.append(self._correct(logits.array, t))
                counts.append(len(t))
        total = float(self.xp.stack(weighted).sum())
        return total / sum(counts), int(self.xp.stack(correct).sum()) / sum(counts)

    def evaluate(self) -> float:
        """Test accuracy (per example or counted token) with chainer.config.train False (dropout off), no graph kept."""
        n = len(self.test["y"])
        correct, count = [], 0
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False), \
                chainer.using_config("type_check", False):
            for start in common.batches(n, self.batch_size):
                rows = slice(start, start + self.batch_size)
                batch = self._rows(self.test, rows, rows)
                t = self._targets(batch)
                correct.append(self._correct(self._logits(batch).array, t))
                count += len(t)
        return int(self.xp.stack(correct).sum()) / count

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays (x, len, x_dec; others ignored), in inference mode, as NumPy.

        Sequence outputs are (N, T, classes), every decoder step included.
        """
        inputs = self._inputs(batch)
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False):
            logits = cuda.to_cpu(self._logits(inputs, every_step=True).array)
        if self.kind != "sequence":
            return logits
        steps = inputs["x_dec"] if "x_dec" in inputs else inputs["x"]
        return logits.reshape(steps.shape[0], steps.shape[1], -1)

    def synchronize(self) -> None:
        """Wait for queued CUDA work; Chainer's NumPy path is synchronous."""
        if self.gpu:
            cuda.Stream.null.synchronize()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        types = {layer.type for layer in self.spec_model.flat_layers}
        blas = _blas()
        blas_threads = min((lib["num_threads"] for lib in blas), default=1)
        blas_name = (
            f"{blas[0].get('internal_api')} {blas[0].get('version')} ({blas[0].get('threading_layer')})"
            if blas else "none found"
        )
        cudnn = self.gpu and cuda.cudnn_enabled
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("links.BatchNormalization (decay = the plan's momentum; batch statistics while "
                                    "chainer.config.train, moving ones in evaluation)")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 Convolution2D(nobias) + BN"
        if "concat" in types:
            kernels["concat"] = "functions.concat of the branches' outputs on channels (axis 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("functions.local_response_normalization across channels (NCHW; n = 2 * depth_radius + 1, "
                              "k = bias, alpha and beta as the plan's: Chainer does not divide alpha by n)")
        if "conv2d" in types:
            kernels["conv2d"] = (
                f"links.Convolution2D (cuDNN, autotune {'on' if chainer.config.autotune else 'off'})" if cudnn
                else f"links.Convolution2D (CPU: NumPy im2col + {blas_name} GEMM; no iDeep)"
            )
            kernels["maxpool2d"] = "functions.max_pooling_2d(cover_all=False); asymmetric 'same' via F.pad(-inf)"
        if "lstm" in types:
            kernels["lstm"] = (
                "links.NStepLSTM (cuDNN fused RNN)" if cudnn
                else "links.NStepLSTM (CPU: functions.n_step_lstm, a NumPy loop over time steps, batch "
                "shrinking as sequences end)"
            )
            kernels["lstm_lengths"] = "list of variable-length sequences (real lengths); final hidden state hy"
            if self.spec_model.encoder is not None:
                kernels["lstm_encoder_state"] = (
                    "NStepLSTM's final (hy, cy): each source's state after its last real token"
                )
                kernels["lstm_decoder"] = (
                    "NStepLSTM from (hx, cx) = the encoder's (hy, cy), over each row's first y_len steps of x_dec"
                )
        if "gru" in types:
            kernels["gru"] = ("links.NStepGRU (cuDNN fused RNN)" if cudnn else "links.NStepGRU (CPU: functions."
                              "n_step_gru, a NumPy loop over time steps)") + ", every step including padding"
        if self.kind == "sequence":
            kernels["dense"] = "links.Linear over the concatenated real steps: one GEMM over (sum of lengths, units)"
        if self.gpu:
            props = cuda.cupy.cuda.runtime.getDeviceProperties(self.device.device.id)
            name = props["name"]
            device_name = name.decode() if isinstance(name, bytes) else str(name)
        else:
            device_name = common.cpu_name()
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.device),
            "device_name": device_name,
            # One Python thread issues every op; OpenBLAS (CPU) is the only thread pool.
            "threads": {"intra_op": blas_threads if not self.gpu else 1, "inter_op": 1, "blas": blas_name},
            "kernels": kernels,
            "config": {
                "type_check": False,
                "use_cudnn": chainer.config.use_cudnn if self.gpu else "n/a (CPU)",
                "autotune": bool(chainer.config.autotune) if self.gpu else False,
                "use_ideep": chainer.config.use_ideep,
            },
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape
            else "ids (N, T) -> list of real-length sequences",
            "input_pipeline": "whole split as device arrays, rows picked by a seeded permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "optimizer_impl": {"sgd": "optimizers.SGD / MomentumSGD", "adam": "optimizers.Adam(alpha=lr, eps)",
                               "adadelta": "optimizers.AdaDelta(rho, eps): no learning rate, i.e. Keras' lr 1.0"}
            [self.opt_settings["name"]],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE + " (a 'pre' optimizer hook, not WeightDecay's L2)",
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> ChainerTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return ChainerTrainer(spec, data, device, seed)
