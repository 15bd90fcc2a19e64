"""Chainer 4.5.0 (the paper era, DLBench Table 2): a workload spec as a chainer.Chain and a
define-by-run training loop, written with Chainer 4.5's own APIs.

Runs inside the paper-era chainer environment (CPython 3.6, NumPy 1.14-1.16; the tests also run it
on 3.11 with NumPy 1.23). It keeps the current-era module's choices (bench/frameworks/chainer/
current.py), so the two eras differ by the framework version, not by the model or the loop:
images are float32 NCHW, converted once; each split lives on the device as one array and batches
are rows picked by a seeded permutation; the step is model.cleargrads(), loss.backward(),
optimizer.update(); every LSTM is links.NStepLSTM(n_layers, in_size, out_size, dropout) fed a
*list of variable-length sequences* (the real tokens of each row), so its final hidden state hy is
each sequence's state after its own last real token. NStepLSTM sorts the list by length itself
(argsort_list_descent) and restores the order. On a GPU it runs cuDNN's fused RNN; on the CPU
functions.n_step_lstm loops over time steps in NumPy with a batch that shrinks as sequences end.
NStepLSTM keeps two bias vectors per gate (b_ih and b_hh, as cuDNN does): 4 * units more
parameters than Keras' LSTM, the same computation.

Sequence outputs stay lists of real steps, as in Chainer's seq2seq example: the per-step dense
layer is one links.Linear over the concatenated real steps, softmax_cross_entropy's mean over those
rows is the loss. An encoder-decoder passes the encoder NStepLSTM's final (hy, cy) as the decoder
NStepLSTM's (hx, cx); the decoder reads the counted steps of x_dec (the first y_len).

Padding: what bench/modelplan.py planned (TensorFlow's 'same' rule): symmetric padding is the
link's own `pad`, an asymmetric one an explicit functions.pad before it (zeros for convolutions,
-inf for max pooling). functions.max_pooling_2d runs with cover_all=False (its default True rounds
the output size up, which is not Keras' 'valid').

What Chainer 4.5 lacks, against the current module (Chainer 7.8):
- no device objects (chainer.get_device, Link.to_device, device.send, chainer.backend: v6-v7):
  models move with Link.to_gpu(0), arrays with backends.cuda.to_gpu / to_cpu, the array module
  comes from backends.cuda.get_array_module;
- Link.forward is the v5 idiom (4.5.0 has only a late back-port): links define __call__, 4.x's;
- the real tokens are gathered with integer indices worked out on the host (np.flatnonzero of
  the post-padding mask), where the current module indexes with a boolean mask on the device;
- AdaDelta has no learning rate (as in 7.8): Keras' lr 1.0 only, anything else is a SpecError;
- no threadpoolctl in the paper image: OpenBLAS' thread count is what the entrypoint pinned
  (OPENBLAS_NUM_THREADS, set before NumPy loads) and the trainer sets and reads it again through
  OpenBLAS' own C API (openblas_set_num_threads / openblas_get_num_threads, ctypes), recording
  when no OpenBLAS is loaded (a BLAS whose threads it then cannot set).
Optimizer hooks with timing 'pre' and call_for_each_param exist in 4.5: weight decay is the same
decoupled hook. type_check is off in the loops; on a GPU cuDNN is used ('auto') and its
convolution autotuning is on (chainer.config.autotune, 4.x). iDeep stays off (use_ideep 'never').
"""

import ctypes
import functools
import platform
from typing import Any, Dict, List, Optional, Tuple

import chainer
import chainer.functions as F  # noqa: N812 (Chainer's own convention)
import chainer.links as L  # noqa: N812
import numpy as np
from chainer.backends import cuda

from bench import modelplan
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.chainer import CAPABILITIES
from bench.gpu import probe as gpu_probe
from bench.gpu import run_device_index

NAME = "chainer"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves
# On a GPU the loss is read back every this many steps rather than every step (a host read is a
# device sync). A NaN is still caught within that many steps. On the CPU every step is checked.
GPU_CHECK_EVERY = 20
# CuPy releases Chainer 4.5 accepts (its setup.py): the GPU build is cupy-cuda92 4.5.0.
CUPY_RANGE = ">=4.4.0,<5.0.0"

_ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh, "sigmoid": F.sigmoid}
# Lengths stay on the host: they size the split of a batch into sequences.
_HOST_ROLES = ("len", "y_len")
_LOSS_NAMES = {
    "categorical": "softmax_cross_entropy",
    "binary": "sigmoid_cross_entropy",
    "sequence": "softmax_cross_entropy over the counted tokens' rows (mean = sum / counted tokens)",
}


# -- OpenBLAS, through its own C API (what threadpoolctl does, without it) ----------------------
@functools.lru_cache(maxsize=None)
def _openblas() -> Optional[Tuple[Any, str]]:
    """(the OpenBLAS library this process loaded, its symbol suffix), or None.

    NumPy's wheels bundle OpenBLAS; NumPy >= 1.22 builds it with 64-bit integers and the symbol
    suffix '64_' (openblas_get_num_threads64_), older ones without. Found in /proc/self/maps.
    """
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split(None, 5)[-1].strip() for line in fh
                            if "openblas" in line.rsplit("/", 1)[-1].lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle
        except OSError:
            continue
        for suffix in ("", "64_"):
            if hasattr(lib, "openblas_get_num_threads" + suffix):
                return lib, suffix
    return None


def _blas_call(name: str, *args: int) -> Any:
    found = _openblas()
    if found is None:
        return None
    lib, suffix = found
    fn = getattr(lib, name + suffix)
    if name == "openblas_get_config":
        fn.restype = ctypes.c_char_p
        return fn().decode("ascii", "replace")
    return fn(*args)


def _blas_name() -> Optional[str]:
    """OpenBLAS' own description ('OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64')."""
    return _blas_call("openblas_get_config")


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (and CuPy/cuDNN where a GPU build is present)."""
    out = {"chainer": chainer.__version__, "numpy": np.__version__, "python": platform.python_version()}
    blas = _blas_name()
    if blas:
        out["blas"] = blas
    if cuda.available:
        out["cupy"] = cuda.cupy.__version__
        if cuda.cudnn_enabled:
            out["cudnn"] = str(cuda.cuda.cudnn.getVersion())
    return out


# -- layers --------------------------------------------------------------------------------------
def _explicit_pad(x: Any, pads: modelplan.Pads, value: float) -> Any:
    return F.pad(x, ((0, 0), (0, 0), (pads.top, pads.bottom), (pads.left, pads.right)), "constant",
                 constant_values=value)


class _Conv2D(chainer.Chain):
    """links.Convolution2D with the plan's padding (an asymmetric 'same' padded by hand)."""

    def __init__(self, c_in: int, filters: int, kernel: int, stride: int, pads: modelplan.Pads) -> None:
        super().__init__()
        self.pads = pads
        with self.init_scope():
            self.conv = L.Convolution2D(c_in, filters, kernel, stride=stride,
                                        pad=(pads.top, pads.left) if pads.symmetric else 0)

    def __call__(self, x: Any) -> Any:
        if not self.pads.symmetric:
            x = _explicit_pad(x, self.pads, 0.0)
        return self.conv(x)


class _MaxPool2D:
    """functions.max_pooling_2d with Keras' semantics: cover_all=False, 'same' padding with -inf."""

    def __init__(self, pool: int, stride: int, pads: modelplan.Pads) -> None:
        # Chainer pads max pooling with -inf itself; only an asymmetric pad needs doing by hand.
        self.pool, self.stride, self.pads = pool, stride, pads

    def __call__(self, x: Any) -> Any:
        if self.pads.symmetric:
            pad = (self.pads.top, self.pads.left)
        else:
            x, pad = _explicit_pad(x, self.pads, -np.inf), 0
        return F.max_pooling_2d(x, self.pool, stride=self.stride, pad=pad, cover_all=False)


def _real_steps(shape: Tuple[int, int], lengths: np.ndarray) -> np.ndarray:
    """Flat (row-major) indices of each row's first `lengths` steps: sequence after sequence."""
    return np.flatnonzero(np.arange(shape[1])[None, :] < lengths[:, None])


class _Embed(chainer.Chain):
    """links.EmbedID over each sequence's real tokens; returns a list of (length, dim) sequences."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(vocab, dim)

    def __call__(self, ids: Any, lengths: np.ndarray) -> List[Any]:
        # One embedding call over all real tokens, then split: the sequence_embed idiom of
        # Chainer's text examples. The indices are worked out on the host (lengths live there).
        xp = cuda.get_array_module(ids)
        flat = self.embed(ids.reshape(-1)[xp.asarray(_real_steps(ids.shape, lengths))])
        return list(F.split_axis(flat, np.cumsum(lengths)[:-1], axis=0))


class _LSTM(chainer.Chain):
    """links.NStepLSTM(1, in, units, 0.0) over a list of variable-length sequences.

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

    def __call__(self, xs: List[Any], hx: Any = None, cx: Any = None) -> Any:
        hy, cy, ys = self.lstm(hx, cx, xs)
        # hy, cy: (layers, batch, units), each sequence's state after its own last element.
        if self.returns_state:
            return hy, cy
        return list(ys) if self.return_sequences else hy[-1]


class SpecChain(chainer.Chain):
    """A stack of links and functions built from a spec; token ids and lengths go to the embedding.

    Calling it returns logits as a Variable in the current chainer.config (for a model that predicts
    every step, (sum of lengths, classes): the real steps, sequence after sequence). Called with
    `training=True/False` it runs in that mode and returns the logits as a host NumPy array.
    `state` (hx, cx) starts the LSTM marked takes_state (a decoder).
    """

    def __init__(self, steps: List[Tuple[str, Any]], takes_ids: bool, use_lengths: bool,
                 caller_lengths: bool = False) -> None:
        super().__init__()
        with self.init_scope():
            # The links in order; `steps` refers to the same objects, so to_gpu moves both.
            self.layers = chainer.ChainList(*[fn for _, fn in steps if isinstance(fn, chainer.Link)])
        self.steps = steps
        self.takes_ids = takes_ids
        self.use_lengths = use_lengths or caller_lengths
        self.caller_lengths = caller_lengths  # lengths None = every step (not the count of non-zero ids)

    def __call__(self, x: Any, lengths: Optional[np.ndarray] = None, training: Optional[bool] = None,
                 state: Optional[Tuple[Any, Any]] = None) -> Any:
        if training is not None:
            if isinstance(x, np.ndarray) and self.xp is not np:
                x = cuda.to_gpu(x)
            with chainer.using_config("train", training), chainer.using_config("enable_backprop", training):
                out = self(x, lengths, state=state)
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

    def __call__(self, x: Any, lengths: np.ndarray, x_dec: Any, dec_steps: Optional[np.ndarray] = None) -> Any:
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


def _build_stack(layers: List[modelplan.Layer], returns_state: bool = False,
                 caller_lengths: bool = False) -> SpecChain:
    """One planned layer list as a SpecChain; input sizes and padding come from the plan."""
    steps: List[Tuple[str, Any]] = []
    concatenated = False  # a per-step dense layer has joined the sequences' real steps into one array
    use_lengths = False
    for layer in layers:
        i, kind = layer.index, layer.type
        if kind == "conv2d":
            step = _Conv2D(layer.input.features, layer["filters"], layer["kernel"], layer["stride"], layer.pads)
        elif kind == "maxpool2d":
            step = _MaxPool2D(layer["pool"], layer["stride"], layer.pads)
        elif kind == "dropout":
            step = _dropout(layer["rate"])
        elif kind == "flatten":
            step = _flatten
        elif kind == "dense":
            step = L.Linear(layer.input.features, layer["units"])
            concatenated = concatenated or layer.input.kind == modelplan.SEQUENCE
        elif kind == "embedding":
            if i != 0:
                raise modelplan.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            step = _Embed(layer["input_dim"], layer["output_dim"])
        else:  # lstm (the plan admits nothing else)
            if concatenated:
                raise modelplan.SpecError(f"layer {i}: lstm needs a list of sequences (not the output of a "
                                          "per-step dense layer)")
            if layer["use_lengths"] and not (steps and steps[0][0] == "embedding"):
                raise modelplan.SpecError(f"layer {i}: use_lengths needs an embedding before the lstm")
            use_lengths = use_lengths or layer["use_lengths"]
            step = _LSTM(layer.input.features, layer["units"], layer["return_sequences"],
                         returns_state=returns_state and i == len(layers) - 1,
                         takes_state=layer["initial_state"] == "encoder")
        steps.append((kind, step))
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            steps.append(("activation", _ACTIVATIONS[activation]))
    takes_ids = bool(steps) and steps[0][0] == "embedding"
    if takes_ids and any(layer.type == "lstm" and not layer["use_lengths"] for layer in layers):
        use_lengths = False  # one LSTM reading the padding means the sequences are the padded rows
    return SpecChain(steps, takes_ids, use_lengths, caller_lengths)


def _check_device(device: str) -> bool:
    """True for 'gpu' once CuPy and a CUDA device are there; False for 'cpu'."""
    if device == "cpu":
        return False
    if device != "gpu":
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
    if not cuda.available:
        raise RuntimeError(
            f"device 'gpu' requested but Chainer has no CUDA backend (chainer {chainer.__version__}: CuPy is not "
            f"installed in this environment; chainer 4.5 asks for CuPy {CUPY_RANGE}, e.g. cupy-cuda92 4.5.0)")
    if cuda.cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("device 'gpu' requested but CuPy sees no CUDA device")
    return True


class _DecoupledWeightDecay:
    """Optimizer hook: w -= lr * weight_decay * w before each update (common.WEIGHT_DECAY_RULE).

    chainer.optimizer_hooks.WeightDecay adds rate * w to the gradient (coupled L2), which Adam
    would rescale; this one shrinks the weights themselves, before the update rule runs.
    """

    name = "DecoupledWeightDecay"
    call_for_each_param = True
    timing = "pre"

    def __init__(self, lr: float, weight_decay: float) -> None:
        self.factor = 1.0 - lr * weight_decay

    def __call__(self, rule: Any, param: chainer.Parameter) -> None:
        weights = param.array
        if weights is not None and param.grad is not None:
            weights *= self.factor  # in place, on the parameter's device


class ChainerTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Chainer 4.5."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.gpu = _check_device(device)
        self.xp = cuda.cupy if self.gpu else np
        if self.gpu:
            cuda.get_device_from_id(0).use()
            chainer.config.autotune = True  # cuDNN convolution autotuning: the input shapes are fixed
        self.blas_threads_set = self._set_threads()
        np.random.seed(seed)  # Chainer's initializers and CPU dropout draw from NumPy's global generator
        if self.gpu:
            cuda.cupy.random.seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone.
        self.order_rng = np.random.RandomState(seed)
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model)
        if self.gpu:
            self.model.to_gpu(0)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = self._make_optimizer(self.opt_settings)
        self.train = self._arrays(data.train)
        self.test = self._arrays(data.test)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    @staticmethod
    def _set_threads() -> Optional[int]:
        """OpenBLAS' thread count set to $DLREPRO_THREADS through its C API; None if not asked or
        no OpenBLAS is loaded (then only OPENBLAS_NUM_THREADS, read when NumPy loaded, applies)."""
        n = common.threads_from_env()
        if n is None or _openblas() is None:
            return None
        _blas_call("openblas_set_num_threads", n)
        return n

    def _send(self, array: np.ndarray) -> Any:
        return cuda.to_gpu(array) if self.gpu else array

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
                    "adadelta lr {}: Chainer's AdaDelta has no learning rate (1.0 only)".format(opt["lr"]))
            optimizer = chainer.optimizers.AdaDelta(rho=opt["rho"], eps=opt["epsilon"])
        else:
            optimizer = chainer.optimizers.Adam(alpha=opt["lr"], beta1=opt["beta1"], beta2=opt["beta2"],
                                                eps=opt["epsilon"])
        optimizer.setup(self.model)
        if opt["weight_decay"]:
            optimizer.add_hook(_DecoupledWeightDecay(opt["lr"], opt["weight_decay"]))
        return optimizer

    def _inputs(self, split: Dict[str, np.ndarray]) -> Dict[str, Any]:
        """The model's input roles: x and x_dec on the device, lengths (len, y_len) on the host."""
        x = split["x"]
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once (Chainer's layout).
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)
        else:
            x = np.ascontiguousarray(x, dtype=np.int32)  # token ids, EmbedID takes int32
        out = {"x": self._send(x)}
        if "x_dec" in split:
            out["x_dec"] = self._send(np.ascontiguousarray(split["x_dec"], dtype=np.int32))
        for role in _HOST_ROLES:
            if role in split:
                out[role] = np.asarray(split[role], dtype=np.int64)
        return out

    def _arrays(self, split: Dict[str, np.ndarray]) -> Dict[str, Any]:
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])
        arrays = self._inputs(split)
        y = np.asarray(split["y"], dtype=np.int32)
        if self.kind == "binary":
            y = y.reshape(-1, 1)  # sigmoid_cross_entropy wants t shaped like the logits
        arrays["y"] = self._send(y)
        return arrays

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (links.NStepLSTM has two bias vectors per gate where Keras has one)."""
        return int(sum(p.size for p in self.model.params()))

    def _logits(self, batch: Dict[str, Any], every_step: bool = False) -> chainer.Variable:
        """The model's logits; for sequences only the counted steps (y_len), unless every_step."""
        if "x_dec" in batch:
            return self.model(batch["x"], batch["len"], batch["x_dec"], None if every_step else batch.get("y_len"))
        return self.model(batch["x"], batch.get("len"))

    def _targets(self, batch: Dict[str, Any]) -> Any:
        """The labels the logits' rows stand for: per example, or the counted tokens in row-major order."""
        y = batch["y"]
        if self.kind != "sequence":
            return y
        if "y_len" not in batch:
            return y.reshape(-1)
        counted = np.flatnonzero(common.token_mask(y, batch["y_len"]))  # the mask's shape only: no device read
        return y.reshape(-1)[self.xp.asarray(counted)]

    def _loss(self, logits: chainer.Variable, t: Any) -> chainer.Variable:
        if self.kind == "binary":
            return F.sigmoid_cross_entropy(logits, t)
        # Mean over the rows: examples, or counted tokens (sequence after sequence).
        return F.softmax_cross_entropy(logits, t)

    def _correct(self, logits: Any, t: Any) -> Any:
        if self.kind == "binary":
            return ((logits > 0).astype(np.int32) == t).sum()
        return (logits.argmax(axis=1) == t).sum()

    def _check_finite(self, losses: List[Any], first: int) -> None:
        values = cuda.to_cpu(self.xp.stack(losses))
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")

    @staticmethod
    def _rows(split: Dict[str, Any], host_idx: Any, device_idx: Any) -> Dict[str, Any]:
        """A batch of a split: rows host_idx of its lengths (host), device_idx of its arrays (device)."""
        return {role: arr[host_idx if role in _HOST_ROLES else device_idx] for role, arr in split.items()}

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train["y"])
        order = self.order_rng.permutation(n) if self.shuffle else np.arange(n)
        order_dev = self._send(order)
        weighted, correct, counts = [], [], []
        pending: List[Any] = []  # losses not yet checked (GPU)
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        starts = common.batches(n, self.batch_size)
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for b, start in enumerate(starts):
                stop = start + self.batch_size
                batch = self._rows(self.train, order[start:stop], order_dev[start:stop])
                t = self._targets(batch)
                logits = self._logits(batch)
                loss = self._loss(logits, t)
                pending.append(loss.array)
                if len(pending) == check_every or b == len(starts) - 1:
                    self._check_finite(pending, b + 1 - len(pending))
                    pending = []
                self.model.cleargrads()
                loss.backward()
                self.optimizer.update()
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

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
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

    def _kernels(self, cudnn: bool, blas_name: str) -> Dict[str, str]:
        types = {layer["type"] for layer in self.spec_model.all_layers}
        kernels = {}
        if "conv2d" in types:
            kernels["conv2d"] = (
                "links.Convolution2D (cuDNN, autotune on)" if cudnn
                else f"links.Convolution2D (CPU: NumPy im2col + {blas_name} GEMM; no iDeep)"
            )
            kernels["maxpool2d"] = "functions.max_pooling_2d(cover_all=False); asymmetric 'same' via F.pad(-inf)"
        if "lstm" in types:
            kernels["lstm"] = (
                "links.NStepLSTM (Chainer 4.5, cuDNN fused RNN)" if cudnn
                else "links.NStepLSTM (Chainer 4.5, CPU: functions.n_step_lstm, a NumPy loop over time steps, "
                "batch shrinking as sequences end)"
            )
            kernels["lstm_lengths"] = ("list of variable-length sequences (real lengths; NStepLSTM sorts them "
                                       "itself); final hidden state hy")
            if self.spec_model.encoder is not None:
                kernels["lstm_encoder_state"] = (
                    "NStepLSTM's final (hy, cy): each source's state after its last real token"
                )
                kernels["lstm_decoder"] = (
                    "NStepLSTM from (hx, cx) = the encoder's (hy, cy), over each row's first y_len steps of x_dec"
                )
        if self.kind == "sequence":
            kernels["dense"] = "links.Linear over the concatenated real steps: one GEMM over (sum of lengths, units)"
        return kernels

    def _device_name(self) -> str:
        if not self.gpu:
            return common.cpu_name()
        index = run_device_index()
        names = [d["name"] for d in gpu_probe().devices if d["index"] == index]
        return names[0] if names else "CUDA device 0 (NVML did not name it)"

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        blas_name = _blas_name() or "no OpenBLAS found"
        blas_threads = _blas_call("openblas_get_num_threads")
        cudnn = self.gpu and cuda.cudnn_enabled
        if blas_threads is None:
            blas_how = "unknown: no OpenBLAS loaded, its threads could not be read or set"
        elif self.blas_threads_set is None:
            blas_how = "OpenBLAS' own count (no DLREPRO_THREADS)"
        else:
            blas_how = "openblas_set_num_threads (ctypes; no threadpoolctl in the paper image)"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "@cupy:0" if self.gpu else "@numpy",
            "device_name": self._device_name(),
            # One Python thread issues every op; OpenBLAS (CPU) is the only thread pool.
            "threads": {"intra_op": 1 if self.gpu else blas_threads, "inter_op": 1, "blas": blas_name,
                        "blas_threads_set_by": blas_how},
            "kernels": self._kernels(cudnn, blas_name),
            "config": {
                "type_check": False,
                "use_cudnn": chainer.config.use_cudnn if self.gpu else "n/a (CPU)",
                "autotune": bool(self.gpu),
                "use_ideep": chainer.config.use_ideep,
            },
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape
            else "ids (N, T) -> list of real-length sequences",
            "input_pipeline": "whole split as device arrays, rows picked by a seeded permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "optimizer_impl": {"sgd": "optimizers.SGD / MomentumSGD", "adam": "optimizers.Adam(alpha=lr, eps)",
                               "adadelta": "optimizers.AdaDelta(rho, eps): no learning rate, i.e. Keras' lr 1.0"}
            [self.opt_settings["name"]],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE + " (a 'pre' optimizer hook, not WeightDecay's L2)",
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> ChainerTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return ChainerTrainer(spec, data, device, seed)
