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

Padding: Keras' 'same' rule (_common) — symmetric padding goes to the link's own `pad`, an
asymmetric one (even windows, strides) is an explicit F.pad before it (zeros for convolutions,
-inf for max pooling, as TensorFlow does). max_pooling_2d runs with cover_all=False: Chainer's
default cover_all=True rounds the output size up, which is not Keras' 'valid'.

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

import os
import platform
from typing import Any

from bench.frameworks import NonFiniteLoss, _common

# Honoured only if NumPy is not loaded yet (a plain `python -c` caller); see the docstring.
_REQUESTED_THREADS = _common.threads_from_env()
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
PACKAGE = "chainer"  # whose version is the framework's version
# On a GPU the loss is read back every this many steps rather than every step (a host read is a
# device sync). A NaN is still caught within that many steps. On the CPU every step is checked.
GPU_CHECK_EVERY = 20

_ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh, "sigmoid": F.sigmoid}


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


def _same_pads(size: int, window: int, stride: int) -> tuple[int, int, int]:
    """TensorFlow's 'same' rule along one axis: (output size, pad before, pad after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2, total - total // 2


def _pads(layer: dict, h: int, w: int, window: int, stride: int) -> tuple[int, int, tuple[int, int, int, int]]:
    """Output (H, W) and (top, bottom, left, right) padding of a conv or pool layer."""
    if layer["padding"] == "valid":
        if h < window or w < window:
            raise _common.SpecError(f"{layer['type']} window {window} is larger than its input {h}x{w}")
        return (h - window) // stride + 1, (w - window) // stride + 1, (0, 0, 0, 0)
    out_h, top, bottom = _same_pads(h, window, stride)
    out_w, left, right = _same_pads(w, window, stride)
    return out_h, out_w, (top, bottom, left, right)


def _explicit_pad(x: Any, pads: tuple[int, int, int, int], value: float) -> Any:
    top, bottom, left, right = pads
    return F.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), "constant", constant_values=value)


class _Conv2D(chainer.Chain):
    """links.Convolution2D with Keras' 'valid'/'same' padding (asymmetric 'same' padded by hand)."""

    def __init__(self, c_in: int, filters: int, kernel: int, stride: int, pads: tuple[int, int, int, int]):
        super().__init__()
        top, bottom, left, right = pads
        self.symmetric = top == bottom and left == right
        self.pads = pads
        with self.init_scope():
            self.conv = L.Convolution2D(c_in, filters, kernel, stride=stride, pad=(top, left) if self.symmetric else 0)

    def forward(self, x: Any) -> Any:
        if not self.symmetric:
            x = _explicit_pad(x, self.pads, 0.0)
        return self.conv(x)


class _MaxPool2D:
    """F.max_pooling_2d with Keras' semantics: cover_all=False, 'same' padding with -inf."""

    def __init__(self, pool: int, stride: int, pads: tuple[int, int, int, int]):
        top, bottom, left, right = pads
        self.pool, self.stride, self.pads = pool, stride, pads
        # Chainer pads max pooling with -inf itself; only an asymmetric pad needs doing by hand.
        self.symmetric = top == bottom and left == right

    def __call__(self, x: Any) -> Any:
        if self.symmetric:
            pad = (self.pads[0], self.pads[2])
        else:
            x, pad = _explicit_pad(x, self.pads, -np.inf), 0
        return F.max_pooling_2d(x, self.pool, stride=self.stride, pad=pad, cover_all=False)


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
    """links.NStepLSTM over a list of variable-length sequences (one layer, no dropout)."""

    def __init__(self, input_size: int, units: int, return_sequences: bool):
        super().__init__()
        self.return_sequences = return_sequences
        with self.init_scope():
            self.lstm = L.NStepLSTM(1, input_size, units, 0.0)

    def forward(self, xs: list) -> Any:
        hy, _, ys = self.lstm(None, None, xs)
        # hy: (layers, batch, units), each sequence's state after its own last element.
        return list(ys) if self.return_sequences else hy[-1]


class SpecChain(chainer.Chain):
    """A stack of links and functions built from a spec; token ids and lengths go to the embedding.

    Calling it returns logits as a Variable in the current chainer.config; called with
    `training=True/False` it runs in that mode and returns the logits as a host NumPy array
    (inference convenience, like a Keras model called with training=False).
    """

    def __init__(self, steps: list[tuple[str, Any]], takes_ids: bool, use_lengths: bool):
        super().__init__()
        with self.init_scope():
            # The links in order; `steps` refers to the same objects, so to_device moves both.
            self.layers = chainer.ChainList(*[fn for _, fn in steps if isinstance(fn, chainer.Link)])
        self.steps = steps
        self.takes_ids = takes_ids
        self.use_lengths = use_lengths

    def forward(self, x: Any, lengths: np.ndarray | None = None, training: bool | None = None) -> Any:
        if training is not None:
            with chainer.using_config("train", training), chainer.using_config("enable_backprop", training):
                out = self.forward(self.device.send(np.asarray(x)) if isinstance(x, np.ndarray) else x, lengths)
            return cuda.to_cpu(out.array)
        if self.takes_ids:
            if not self.use_lengths:
                lengths = np.full(x.shape[0], x.shape[1], dtype=np.int64)
            elif lengths is None:  # post-padded ids: the real length is the count of non-zero ids
                lengths = cuda.to_cpu((x != 0).sum(axis=1))
            lengths = np.asarray(lengths, dtype=np.int64)
        for kind, fn in self.steps:
            if kind == "embedding":
                x = fn(x, lengths)
            elif kind == "lstm":  # takes the whole list of sequences
                x = fn(x)
            elif isinstance(x, list):  # elementwise steps on a list of sequences
                x = [fn(s) for s in x]
            else:
                x = fn(x)
        return x


def build_model(model: _common.Model) -> SpecChain:
    """Translate validated spec layers into Chainer links/functions, tracking shapes (C, H, W) or (features,)."""
    steps: list[tuple[str, Any]] = []
    # Images: (C, H, W). Token sequences: ("seq", features) while time steps remain, then (features,).
    shape: tuple[Any, ...] = ()
    if model.input_shape:
        h, w, c = model.input_shape
        shape = (c, h, w)
    use_lengths = False
    for i, layer in enumerate(model.layers):
        kind = layer["type"]
        if kind == "conv2d":
            c, h, w = _image_shape(shape, i, kind)
            k, stride = layer["kernel"], layer["stride"]
            out_h, out_w, pads = _pads(layer, h, w, k, stride)
            steps.append((kind, _Conv2D(c, layer["filters"], k, stride, pads)))
            shape = (layer["filters"], out_h, out_w)
        elif kind == "maxpool2d":
            c, h, w = _image_shape(shape, i, kind)
            out_h, out_w, pads = _pads(layer, h, w, layer["pool"], layer["stride"])
            steps.append((kind, _MaxPool2D(layer["pool"], layer["stride"], pads)))
            shape = (c, out_h, out_w)
        elif kind == "dropout":
            rate = layer["rate"]
            steps.append((kind, lambda x, rate=rate: F.dropout(x, rate)))  # off when chainer.config.train is False
        elif kind == "flatten":
            flat = int(np.prod(_image_shape(shape, i, kind)))
            steps.append((kind, lambda x: F.reshape(x, (x.shape[0], -1))))
            shape = (flat,)
        elif kind == "dense":
            if len(shape) != 1:
                raise _common.SpecError(f"layer {i}: dense needs flat input (add a flatten; got {shape})")
            steps.append((kind, L.Linear(shape[0], layer["units"])))
            shape = (layer["units"],)
        elif kind == "embedding":
            if i != 0:
                raise _common.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            steps.append((kind, _Embed(layer["input_dim"], layer["output_dim"])))
            shape = ("seq", layer["output_dim"])
        elif kind == "lstm":
            if len(shape) != 2:
                raise _common.SpecError(f"layer {i}: lstm needs a sequence input (got {shape})")
            if layer["use_lengths"] and not (steps and steps[0][0] == "embedding"):
                raise _common.SpecError(f"layer {i}: use_lengths needs an embedding before the lstm")
            use_lengths = use_lengths or layer["use_lengths"]
            steps.append((kind, _LSTM(shape[1], layer["units"], layer["return_sequences"])))
            shape = ("seq", layer["units"]) if layer["return_sequences"] else (layer["units"],)
        activation = layer.get("activation")
        if activation not in (None, "linear"):
            steps.append(("activation", _ACTIVATIONS[activation]))
    takes_ids = bool(steps) and steps[0][0] == "embedding"
    if takes_ids and any(layer["type"] == "lstm" and not layer["use_lengths"] for layer in model.layers):
        use_lengths = False  # one LSTM reading the padding means the sequences are the padded rows
    return SpecChain(steps, takes_ids, use_lengths)


def _image_shape(shape: tuple[Any, ...], i: int, kind: str) -> tuple[int, int, int]:
    if len(shape) != 3:
        raise _common.SpecError(f"layer {i}: {kind} needs an image input (got {shape})")
    return shape  # type: ignore[return-value]


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
    """Optimizer hook: w -= lr * weight_decay * w before each update (Keras 3 / _common rule).

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
            chainer.config.autotune = True  # cuDNN convolution autotuning: the input shapes are fixed
        self._thread_limit = self._set_threads()
        np.random.seed(seed)  # Chainer's initializers and CPU dropout draw from NumPy's global generator
        if self.gpu:
            cuda.cupy.random.seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone.
        self.order_rng = np.random.RandomState(seed)
        self.spec_model = _common.model_layers(spec)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model)
        self.model.to_device(self.device)
        self.device.use()
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = _common.optimizer_settings(spec)
        self.optimizer = self._make_optimizer(self.opt_settings)
        self.x_train, self.len_train, self.y_train = self._arrays(data.train)
        self.x_test, self.len_test, self.y_test = self._arrays(data.test)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    @staticmethod
    def _set_threads() -> threadpoolctl.threadpool_limits | None:
        n = _common.threads_from_env()
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
        else:
            optimizer = chainer.optimizers.Adam(
                alpha=opt["lr"], beta1=opt["beta1"], beta2=opt["beta2"], eps=opt["epsilon"]
            )
        optimizer.setup(self.model)
        if opt["weight_decay"]:
            optimizer.add_hook(_DecoupledWeightDecay(opt["lr"], opt["weight_decay"]))
        return optimizer

    def _arrays(self, split: dict) -> tuple[Any, np.ndarray | None, Any]:
        x = split["x"]
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once (Chainer's layout).
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)
        else:
            x = np.ascontiguousarray(x, dtype=np.int32)  # token ids, EmbedID takes int32
        lengths = None
        if "len" in split:
            _common.check_post_padded(split["x"], split["len"])
            lengths = np.asarray(split["len"], dtype=np.int64)  # host: they size the split
        y = np.asarray(split["y"], dtype=np.int32)
        if self.kind == "binary":
            y = y.reshape(-1, 1)  # sigmoid_cross_entropy wants t shaped like the logits
        return self.device.send(x), lengths, self.device.send(y)

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (links.NStepLSTM has two bias vectors per gate where Keras has one)."""
        return int(sum(p.size for p in self.model.params()))

    def _loss(self, logits: chainer.Variable, y: Any) -> chainer.Variable:
        if self.kind == "categorical":
            return F.softmax_cross_entropy(logits, y)
        return F.sigmoid_cross_entropy(logits, y)

    def _correct(self, logits: Any, y: Any) -> Any:
        if self.kind == "binary":
            return ((logits > 0).astype(np.int32) == y).sum()
        return (logits.argmax(axis=1) == y).sum()

    def _check_finite(self, losses: list, first: int) -> None:
        values = cuda.to_cpu(self.xp.stack(losses)) if self.gpu else np.asarray(losses)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss per example, training accuracy over the epoch)."""
        self.epoch += 1
        n = len(self.y_train)
        order = self.order_rng.permutation(n) if self.shuffle else np.arange(n)
        order_dev = self.device.send(order)
        weighted, correct = [], []
        pending: list = []  # losses not yet checked (GPU)
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        starts = _common.batches(n, self.batch_size)
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for b, start in enumerate(starts):
                stop = start + self.batch_size
                idx = order_dev[start:stop]
                lengths = None if self.len_train is None else self.len_train[order[start:stop]]
                y = self.y_train[idx]
                logits = self.model(self.x_train[idx], lengths)
                loss = self._loss(logits, y)
                pending.append(loss.array)
                if len(pending) == check_every or b == len(starts) - 1:
                    self._check_finite(pending, b + 1 - len(pending))
                    pending = []
                self.model.cleargrads()
                loss.backward()
                self.optimizer.update()
                weighted.append(loss.array * len(idx))
                correct.append(self._correct(logits.array, y))
        total = float(self.xp.stack(weighted).sum())
        return total / n, int(self.xp.stack(correct).sum()) / n

    def evaluate(self) -> float:
        """Test accuracy with chainer.config.train False (dropout off), no graph kept."""
        n = len(self.y_test)
        correct = []
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False), \
                chainer.using_config("type_check", False):
            for start in _common.batches(n, self.batch_size):
                stop = start + self.batch_size
                lengths = None if self.len_test is None else self.len_test[start:stop]
                logits = self.model(self.x_test[start:stop], lengths)
                correct.append(self._correct(logits.array, self.y_test[start:stop]))
        return int(self.xp.stack(correct).sum()) / n

    def synchronize(self) -> None:
        """Wait for queued CUDA work; Chainer's NumPy path is synchronous."""
        if self.gpu:
            cuda.Stream.null.synchronize()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        types = {layer["type"] for layer in self.spec_model.layers}
        blas = _blas()
        blas_threads = min((lib["num_threads"] for lib in blas), default=1)
        blas_name = (
            f"{blas[0].get('internal_api')} {blas[0].get('version')} ({blas[0].get('threading_layer')})"
            if blas else "none found"
        )
        cudnn = self.gpu and cuda.cudnn_enabled
        kernels = {}
        if "conv2d" in types:
            kernels["conv2d"] = (
                "links.Convolution2D (cuDNN, autotune on)" if cudnn
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
        if self.gpu:
            props = cuda.cupy.cuda.runtime.getDeviceProperties(self.device.device.id)
            name = props["name"]
            device_name = name.decode() if isinstance(name, bytes) else str(name)
        else:
            device_name = _common.cpu_name()
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
                "autotune": bool(self.gpu),
                "use_ideep": chainer.config.use_ideep,
            },
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape
            else "token ids (N, T) -> list of real-length sequences",
            "input_pipeline": "whole split as device arrays, rows picked by a seeded permutation each epoch",
            "loss": ("softmax_cross_entropy" if self.kind == "categorical" else "sigmoid_cross_entropy")
            + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "weight_decay_rule": _common.WEIGHT_DECAY_RULE + " (a 'pre' optimizer hook, not WeightDecay's L2)",
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> ChainerTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return ChainerTrainer(spec, data, device, seed)
