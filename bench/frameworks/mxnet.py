"""MXNet 1.9 (Gluon): translates a workload spec into a hybridized HybridBlock trained with gluon.Trainer.

Runs inside the mxnet environment. Choices an MXNet user would make: the model is a HybridBlock
compiled with hybridize(static_alloc=True, static_shape=True) (one cached graph instead of
per-operator Python dispatch), images are float32 NCHW (MXNet's native layout, converted once at
setup), the whole split lives on the context as NDArrays and batches are rows gathered with
nd.take by a seeded permutation (no per-step host feeding), the training step is the Gluon idiom
(autograd.record, per-example loss.backward(), trainer.step(batch_size)), and the LSTM is Gluon's
fused rnn.LSTM (oneDNN on the CPU, cuDNN on a GPU) fed time-major (TNC, its native layout).

Real sequence lengths: on a GPU the cuDNN kernel runs with use_sequence_length=True and skips the
padding; MXNet 1.9's CPU RNN kernel silently ignores sequence lengths, so on the CPU the whole
padded batch is run and nd.SequenceLast takes each sequence's output at its last real step
(with post-padding that is the same value: an LSTM never looks ahead).

Threads: MXNet reads OMP_NUM_THREADS and MXNET_CPU_WORKER_NTHREADS when it is imported. The
entrypoint (bench.threads.pin) sets them before importing this module; this module also sets
them from $DLREPRO_THREADS before its own `import mxnet` (for the probe and other callers), and
calls MXSetNumOMPThreads as well, which holds even if MXNet was imported earlier.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
from typing import Any

from bench.frameworks import NonFiniteLoss, _common

# Before `import mxnet`: its engine and OpenMP pool read these once, at import.
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS")
_REQUESTED_THREADS = _common.threads_from_env()
if _REQUESTED_THREADS is not None:
    for _var in _THREAD_VARS:
        os.environ[_var] = str(_REQUESTED_THREADS)

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402

NAME = "mxnet"
PACKAGE = "mxnet"  # whose version is the framework's version
# The loss is read back to the host every this many steps rather than every step: a read is a
# wait on MXNet's asynchronous engine, and waiting each step would stop Python from queueing the
# next step while the current one computes (on the CPU too). A NaN is still caught within that
# many steps.
CHECK_EVERY = 20

_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and whether MXNet was built with CUDA)."""
    from importlib import metadata

    out = {"mxnet": mx.__version__, "numpy": np.__version__, "python": platform.python_version()}
    # The distribution name tells the build: mxnet (CPU) or mxnet-cuXYZ (built for CUDA XY.Z).
    names = (d.metadata["Name"] or "" for d in metadata.distributions())
    dists = sorted(name for name in names if re.fullmatch(r"mxnet(-cu\d+|-mkl|-native)?", name.lower()))
    if dists:
        out["mxnet_distribution"] = dists[0]
    features = mx.runtime.Features()
    cuda = re.fullmatch(r"mxnet-cu(\d+)(\d)", dists[0].lower()) if dists else None
    if cuda and features.is_enabled("CUDA"):
        out["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}"
    out["mxnet_cuda"] = "yes" if features.is_enabled("CUDA") else "no"
    out["mxnet_cudnn"] = "yes" if features.is_enabled("CUDNN") else "no"
    out["mxnet_onednn"] = "yes" if features.is_enabled("MKLDNN") else "no"
    return out


def _same_pads(size: int, window: int, stride: int) -> tuple[int, int, int]:
    """TensorFlow's 'same' rule: (out, pad before, pad after) along one spatial axis."""
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2, total - total // 2


class _Pad(gluon.HybridBlock):
    """Explicit (possibly asymmetric) spatial padding of an NCHW tensor with a constant."""

    def __init__(self, top: int, bottom: int, left: int, right: int, value: float, **kwargs):
        super().__init__(**kwargs)
        self.pad_width = (0, 0, 0, 0, top, bottom, left, right)
        self.value = value

    def hybrid_forward(self, F, x):  # noqa: N803 (Gluon's signature)
        return F.pad(x, mode="constant", pad_width=self.pad_width, constant_value=self.value)


class _LSTM(gluon.HybridBlock):
    """Gluon's fused rnn.LSTM on a time-major (T, N, C) batch that reads real lengths."""

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool, cudnn_lengths: bool,
                 **kwargs):
        super().__init__(**kwargs)
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        # cuDNN honours sequence_length (padding skipped); MXNet's CPU kernel ignores it, so the
        # option is only switched on where it does something.
        self.cudnn_lengths = use_lengths and cudnn_lengths
        with self.name_scope():
            self.lstm = rnn.LSTM(units, layout="TNC", input_size=input_size, use_sequence_length=self.cudnn_lengths)

    def hybrid_forward(self, F, x, lengths=None):  # noqa: N803
        if self.cudnn_lengths:
            out = self.lstm(x, None, lengths)
        else:
            out = self.lstm(x)
        if not self.use_lengths:
            return out if self.return_sequences else F.SequenceLast(out, axis=0)
        if self.return_sequences:  # zeros after each sequence's end
            return F.SequenceMask(out, sequence_length=lengths, use_sequence_length=True, value=0.0, axis=0)
        return F.SequenceLast(out, sequence_length=lengths, use_sequence_length=True, axis=0)


class SpecNet(gluon.HybridBlock):
    """A stack of Gluon blocks built from a spec; sequence lengths go to the LSTM layers."""

    def __init__(self, blocks: list[gluon.HybridBlock], time_major_ids: bool, takes_lengths: bool, **kwargs):
        super().__init__(**kwargs)
        self.blocks = blocks
        for block in blocks:
            self.register_child(block)
        self.time_major_ids = time_major_ids  # token ids arrive (N, T); the LSTM wants (T, N, C)
        self.takes_lengths = takes_lengths

    def hybrid_forward(self, F, x, lengths=None):  # noqa: N803
        if self.time_major_ids:
            x = F.transpose(x)  # (N, T) ids -> (T, N): the embedding then yields TNC directly
        for block in self.blocks:
            x = block(x, lengths) if isinstance(block, _LSTM) else block(x)
        return x


def build_model(model: _common.Model, gpu: bool) -> SpecNet:
    """Translate validated spec layers into Gluon blocks, tracking shapes (C, H, W) or (features,).

    Every block gets its input size, so parameters have shapes (and a count) before any forward.
    """
    blocks: list[gluon.HybridBlock] = []
    # Images: (C, H, W). Token sequences: ("seq", features) while time steps remain, then (features,).
    shape: tuple[Any, ...] = ()
    if model.input_shape:
        h, w, c = model.input_shape
        shape = (c, h, w)
    takes_lengths = False
    for i, layer in enumerate(model.layers):
        kind = layer["type"]
        activation = layer.get("activation")
        act = _ACTIVATIONS.get(activation) if activation not in (None, "linear") else None
        if kind == "conv2d":
            c, h, w = _image_shape(shape, i, kind)
            k, stride = layer["kernel"], layer["stride"]
            padding = 0
            if layer["padding"] == "valid":
                h, w = (h - k) // stride + 1, (w - k) // stride + 1
            else:
                h, top, bottom = _same_pads(h, k, stride)
                w, left, right = _same_pads(w, k, stride)
                if (top, left) == (bottom, right):
                    padding = (top, left)  # symmetric: the convolution pads by itself
                else:  # TensorFlow puts the odd pixel after (even kernels, some strides)
                    blocks.append(_Pad(top, bottom, left, right, 0.0))
            blocks.append(nn.Conv2D(layer["filters"], k, strides=stride, padding=padding, activation=act,
                                    layout="NCHW", in_channels=c))
            shape = (layer["filters"], h, w)
            act = None
        elif kind == "maxpool2d":
            c, h, w = _image_shape(shape, i, kind)
            pool, stride = layer["pool"], layer["stride"]
            if layer["padding"] == "valid":  # floor, as Keras' 'valid'
                h, w = (h - pool) // stride + 1, (w - pool) // stride + 1
            else:
                h, top, bottom = _same_pads(h, pool, stride)
                w, left, right = _same_pads(w, pool, stride)
                if top or bottom or left or right:
                    # Gluon pools pad symmetrically only; -inf never wins a max, as in TensorFlow.
                    blocks.append(_Pad(top, bottom, left, right, float("-inf")))
            if h < 1 or w < 1:
                raise _common.SpecError(f"layer {i}: maxpool2d leaves an empty image")
            blocks.append(nn.MaxPool2D(pool_size=pool, strides=stride, padding=0, layout="NCHW"))
            shape = (c, h, w)
        elif kind == "dropout":
            blocks.append(nn.Dropout(layer["rate"]))
        elif kind == "flatten":
            blocks.append(nn.Flatten())
            shape = (int(np.prod(_image_shape(shape, i, kind))),)
        elif kind == "dense":
            if len(shape) != 1:
                raise _common.SpecError(f"layer {i}: dense needs flat input (add a flatten; got {shape})")
            blocks.append(nn.Dense(layer["units"], activation=act, in_units=shape[0]))
            shape = (layer["units"],)
            act = None
        elif kind == "embedding":
            if i != 0:
                raise _common.SpecError(f"layer {i}: embedding must be the first layer (it reads token ids)")
            blocks.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
            shape = ("seq", layer["output_dim"])
        elif kind == "lstm":
            if len(shape) != 2:
                raise _common.SpecError(f"layer {i}: lstm needs a sequence input (got {shape})")
            blocks.append(_LSTM(shape[1], layer["units"], layer["use_lengths"], layer["return_sequences"], gpu))
            takes_lengths = takes_lengths or layer["use_lengths"]
            shape = ("seq", layer["units"]) if layer["return_sequences"] else (layer["units"],)
        if act is not None:
            blocks.append(nn.Activation(act))
    if len(shape) == 2:
        raise _common.SpecError("the model ends on a sequence; the last lstm needs return_sequences = false")
    time_major = bool(model.layers) and model.layers[0]["type"] == "embedding"
    return SpecNet(blocks, time_major_ids=time_major, takes_lengths=takes_lengths)


def _image_shape(shape: tuple[Any, ...], i: int, kind: str) -> tuple[int, int, int]:
    if len(shape) != 3:
        raise _common.SpecError(f"layer {i}: {kind} needs an image input (got {shape})")
    return shape  # type: ignore[return-value]


def _resolve_context(device: str) -> mx.Context:
    if device == "cpu":
        return mx.cpu()
    if device == "gpu":
        n = mx.context.num_gpus()
        if n < 1:
            build = "a CUDA build" if mx.runtime.Features().is_enabled("CUDA") else "a CPU-only build (pip 'mxnet')"
            raise RuntimeError(
                f"device 'gpu' requested but MXNet sees no CUDA device (mxnet {mx.__version__}, {build}; "
                "a GPU needs the mxnet-cuXXX package matching the driver)"
            )
        return mx.gpu(0)
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def _set_threads() -> int | None:
    """Apply $DLREPRO_THREADS to MXNet's OpenMP pool (also when MXNet was imported earlier)."""
    n = _common.threads_from_env()
    if n is not None:
        mx.base.check_call(mx.base._LIB.MXSetNumOMPThreads(ctypes.c_int(n)))
    return n


def _default_threads() -> int:
    """MXNet's OpenMP pool when $DLREPRO_THREADS is unset: $OMP_NUM_THREADS, else the physical cores."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        import psutil

        return int(psutil.cpu_count(logical=False) or os.cpu_count() or 1)
    except ImportError:
        return os.cpu_count() or 1


class InferenceModel:
    """The trained network as a plain function of NumPy inputs, in inference mode.

    Called like a Keras model, `model(x, training=False)`, so bench.frameworks._probe's generic
    path can compare outputs; lengths default to the count of non-zero ids (the post-padding
    contract that _common.check_post_padded enforces on the data). Returns NumPy logits.
    """

    def __init__(self, trainer: MXNetTrainer):
        self.trainer = trainer

    def __call__(self, x: np.ndarray, training: bool = False, lengths: np.ndarray | None = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        t = self.trainer
        if x.ndim == 4:
            xs = t._images(x)
        else:
            xs = nd.array(np.asarray(x, dtype=np.int32), ctx=t.ctx, dtype="int32")
            if lengths is None:
                lengths = (np.asarray(x) != 0).sum(axis=1)
        lens = None if lengths is None else nd.array(np.asarray(lengths), ctx=t.ctx, dtype="int32")
        return t._logits(xs, lens).asnumpy()


class MXNetTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for MXNet Gluon."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.ctx = _resolve_context(device)
        self.gpu = self.ctx.device_type == "gpu"
        self.threads = _set_threads()
        mx.random.seed(seed)  # initialization and dropout, on every context
        # Shuffling has its own generator so its order depends on the seed alone.
        self.rng = np.random.default_rng(seed)
        self.spec_model = _common.model_layers(spec)
        self.kind = self.spec_model.kind
        self.net = build_model(self.spec_model, self.gpu)
        # Xavier(uniform, avg, 3) = Glorot uniform, Keras' default kernel initializer and the one
        # Gluon's examples pass (Gluon's own fallback, Uniform(0.07), ignores layer sizes); biases zero.
        self.net.initialize(mx.init.Xavier(), ctx=self.ctx)
        self.net.hybridize(static_alloc=True, static_shape=True)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = _common.optimizer_settings(spec)
        self.params = [p for p in self.net.collect_params().values() if p.grad_req != "null"]
        self.trainer = self._make_trainer(self.opt_settings)
        if self.kind == "categorical":
            self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)  # from logits
        else:
            self.loss_fn = gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)
        self.x_train, self.len_train, self.y_train = self._to_arrays(data.train)
        self.x_test, self.len_test, self.y_test = self._to_arrays(data.test)
        self.model = InferenceModel(self)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    def _make_trainer(self, opt: dict) -> gluon.Trainer:
        # wd=0: Gluon's 'wd' is coupled L2 (added to the gradient); the spec's weight decay is
        # applied decoupled in _decay(), as Keras 3 does (see _common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            args = {"learning_rate": opt["lr"], "momentum": opt["momentum"], "wd": 0.0}
        else:
            args = {"learning_rate": opt["lr"], "beta1": opt["beta1"], "beta2": opt["beta2"],
                    "epsilon": opt["epsilon"], "wd": 0.0}
        # kvstore=None: one device, the optimizer updates the parameters in place.
        return gluon.Trainer(self.params, opt["name"], args, kvstore=None)

    def _images(self, x: np.ndarray) -> nd.NDArray:
        # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
        xs = nd.array(np.ascontiguousarray(x), ctx=self.ctx, dtype="uint8")
        return (xs.transpose((0, 3, 1, 2)).astype("float32") / 255.0)

    def _to_arrays(self, split: dict) -> tuple[nd.NDArray, nd.NDArray | None, nd.NDArray]:
        x = split["x"]
        lengths = None
        if x.ndim == 4:
            xs = self._images(x)
        else:
            xs = nd.array(np.asarray(x, dtype=np.int32), ctx=self.ctx, dtype="int32")
            if "len" in split:
                _common.check_post_padded(x, split["len"])  # the same contract Keras' mask needs
                lengths = nd.array(np.asarray(split["len"], dtype=np.int32), ctx=self.ctx, dtype="int32")
        y = nd.array(np.asarray(split["y"]), ctx=self.ctx, dtype="float32")  # Gluon losses take float labels
        if self.kind == "binary":
            y = y.reshape((-1, 1))
        return xs, lengths, y

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (gluon.rnn.LSTM has two bias vectors, i2h and h2h, where Keras has one)."""
        return int(sum(int(np.prod(p.shape)) for p in self.params))

    def _logits(self, x: nd.NDArray, lengths: nd.NDArray | None) -> nd.NDArray:
        return self.net(x, lengths) if self.net.takes_lengths else self.net(x)

    def _correct(self, logits: nd.NDArray, y: nd.NDArray) -> nd.NDArray:
        if self.kind == "binary":
            return ((logits > 0) == y).sum()
        return (logits.argmax(axis=1) == y).sum()

    def _decay(self) -> None:
        wd = self.opt_settings["weight_decay"]
        if wd:
            factor = 1.0 - self.trainer.learning_rate * wd
            for p in self.params:
                w = p.data(self.ctx)
                w *= factor

    def _check_finite(self, losses: list[nd.NDArray], first: int) -> None:
        """Raise NonFiniteLoss if a step's loss, or any parameter, is NaN or infinite.

        The parameters are checked too: oneDNN's fused ReLU turns NaN into 0, so a model whose
        weights have diverged to NaN can keep a finite loss in MXNet (seen with lr=1e30).
        """
        values = nd.concat(*losses, dim=0).asnumpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")
        weights = [p.data(self.ctx) for p in self.params]
        if not nd.multi_all_finite(*weights, num_arrays=len(weights)).asscalar():
            last = first + len(values)
            raise NonFiniteLoss(
                f"parameters became nan/inf by step {last} of epoch {self.epoch} "
                f"(the loss stayed finite, last {values[-1]}: oneDNN's ReLU maps NaN to 0)"
            )

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss per example, training accuracy over the epoch)."""
        self.epoch += 1
        n = self.y_train.shape[0]
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        order_nd = nd.array(order, ctx=self.ctx, dtype="int32")
        starts = _common.batches(n, self.batch_size)
        pending: list[nd.NDArray] = []  # per-step summed losses not yet checked, on the device
        total = nd.zeros((1,), ctx=self.ctx)
        correct = nd.zeros((1,), ctx=self.ctx)
        checked = 0
        for b, start in enumerate(starts):
            idx = order_nd[start : start + self.batch_size]
            count = idx.shape[0]
            x = nd.take(self.x_train, idx, axis=0)
            y = nd.take(self.y_train, idx, axis=0)
            lengths = None if self.len_train is None else nd.take(self.len_train, idx, axis=0)
            with autograd.record():  # train_mode: dropout on
                logits = self._logits(x, lengths)
                loss = self.loss_fn(logits, y)  # per example
            loss.backward()
            self._decay()
            self.trainer.step(count)  # gradients are sums over the batch: rescale by 1/count = mean loss
            step_loss = loss.sum()
            pending.append(step_loss.reshape((1,)))
            total += step_loss
            correct += self._correct(logits, y)
            if (b + 1) % CHECK_EVERY == 0 or b == len(starts) - 1:
                self._check_finite(pending, checked)
                checked, pending = b + 1, []
        return float(total.asscalar()) / n, float(correct.asscalar()) / n

    def evaluate(self) -> float:
        """Test accuracy in inference mode (outside autograd.record: dropout off), training batch size."""
        n = self.y_test.shape[0]
        correct = nd.zeros((1,), ctx=self.ctx)
        for start in _common.batches(n, self.batch_size):
            stop = start + self.batch_size
            lengths = None if self.len_test is None else self.len_test[start:stop]
            correct += self._correct(self._logits(self.x_test[start:stop], lengths), self.y_test[start:stop])
        return float(correct.asscalar()) / n

    def synchronize(self) -> None:
        """Wait for everything MXNet's asynchronous engine has queued (CPU and GPU alike)."""
        nd.waitall()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        features = mx.runtime.Features()
        onednn = features.is_enabled("MKLDNN") and os.environ.get("MXNET_MKLDNN_ENABLED", "1") != "0"
        types = {layer["type"] for layer in self.spec_model.layers}
        kernels = {}
        if "conv2d" in types:
            if self.gpu:
                autotune = os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1")
                kernels["conv2d"] = f"gluon.nn.Conv2D NCHW (cuDNN, MXNET_CUDNN_AUTOTUNE_DEFAULT={autotune})"
            else:
                kernels["conv2d"] = "gluon.nn.Conv2D NCHW (CPU" + (", oneDNN)" if onednn else ")")
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "gluon.nn.MaxPool2D; 'same' = nd.pad(-inf) with TensorFlow's asymmetric rule"
        if "lstm" in types:
            if self.gpu:
                kernels["lstm"] = "gluon.rnn.LSTM, TNC (fused RNN operator, cuDNN)"
                kernels["lstm_lengths"] = (
                    "cuDNN use_sequence_length=True (padding skipped); nd.SequenceLast at each last real step"
                )
            else:
                rnn_onednn = onednn and os.environ.get("MXNET_USE_MKLDNN_RNN", "1") != "0"
                kernels["lstm"] = "gluon.rnn.LSTM, TNC (fused RNN operator, CPU" + (", oneDNN)" if rnn_onednn else ")")
                kernels["lstm_lengths"] = "whole padded batch; nd.SequenceLast at each sequence's last real step"
        if self.gpu:
            from bench.gpu import probe, run_device_index

            status = probe()
            index = run_device_index()
            names = [d["name"] for d in status.devices if d["index"] == index] or [str(self.ctx)]
            device_name = names[0]
        else:
            device_name = _common.cpu_name()
        intra = self.threads or _default_threads()
        inter = int(os.environ.get("MXNET_CPU_WORKER_NTHREADS", "1"))
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.ctx),
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": kernels,
            "hybridize": "static_alloc=True, static_shape=True (cached graph)",
            "initializer": "mx.init.Xavier() (Glorot uniform) weights, zero biases",
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else (
                "ids (N, T), transposed to time-major (T, N) for the embedding and LSTM"
            ),
            "input_pipeline": "whole split as NDArrays on the context, rows gathered with nd.take by a seeded "
            "permutation each epoch",
            "loss": ("gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)" if self.kind == "categorical"
                     else "gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)")
            + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "weight_decay_rule": _common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> MXNetTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return MXNetTrainer(spec, data, device, seed)
