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
(with post-padding that is the same value: an LSTM never looks ahead). An encoder also needs the
cell state c at that step, which the fused CPU kernel only gives after the last (padding) step:
there the encoder LSTM's own parameters run as an LSTMCell stepped by F.contrib.foreach, which
yields (h, c) at every step for nd.SequenceLast to pick from.

Sequence outputs (language models, decoders): the dense layer runs once over every step
(nn.Dense(flatten=False), one GEMM over (N*T, units)), and the per-token loss is weighted by
0/1 token weights (gluon losses' sample_weight) so padding counts nowhere.

Threads: MXNet reads OMP_NUM_THREADS and MXNET_CPU_WORKER_NTHREADS when it is imported. The
entrypoint (bench.threads.pin) sets them before importing this module: the OpenMP pool from the
request, one engine worker (bench.threads.UNSET_VARS says why); this module pins them again before
its own `import mxnet` (for the probe and other callers), and calls MXSetNumOMPThreads as well,
which holds even if MXNet was imported earlier.
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import re
from dataclasses import dataclass
from typing import Any

from bench import modelplan, switches, threads
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.mxnet import CAPABILITIES

# Before `import mxnet`: its engine and OpenMP pool read these once, at import.
threads.pin(common.threads_from_env())

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402

NAME = "mxnet"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
# The loss is read back to the host every this many steps rather than every step: a read is a
# wait on MXNet's asynchronous engine, and waiting each step would stop Python from queueing the
# next step while the current one computes (on the CPU too). A NaN is still caught within that
# many steps.
CHECK_EVERY = 20

_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}
_LOSS_NAMES = {
    "categorical": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)",
    "binary": "gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)",
    "sequence": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True) per token (logits as (N*T, classes), "
    "sample_weight = the 0/1 token mask; batch loss = sum / counted tokens)",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


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


class _Pad(gluon.HybridBlock):
    """Explicit (possibly asymmetric) spatial padding of an NCHW tensor with a constant."""

    def __init__(self, top: int, bottom: int, left: int, right: int, value: float, **kwargs):
        super().__init__(**kwargs)
        self.pad_width = (0, 0, 0, 0, top, bottom, left, right)
        self.value = value

    def hybrid_forward(self, F, x):  # noqa: N803 (Gluon's signature)
        return F.pad(x, mode="constant", pad_width=self.pad_width, constant_value=self.value)


class _Rescale(gluon.HybridBlock):
    """Multiplies by a constant (1, 1, H, W) map: an average pool's full-window divisor -> real-value count."""

    def __init__(self, factor: np.ndarray, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.factor = self.params.get_constant("factor", factor)  # grad_req null: not trainable

    def hybrid_forward(self, F, x, factor):  # noqa: N803
        return F.broadcast_mul(x, factor)


class _Residual(gluon.HybridBlock):
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: gluon.HybridBlock, shortcut: gluon.HybridBlock, activation: str | None, **kwargs):
        super().__init__(**kwargs)
        self.branch = branch
        self.shortcut = shortcut
        self.activation = _ACTIVATIONS.get(activation) if activation not in (None, "linear") else None

    def hybrid_forward(self, F, x):  # noqa: N803
        out = self.branch(x) + self.shortcut(x)
        return F.Activation(out, act_type=self.activation) if self.activation else out


class _Concat(gluon.HybridBlock):
    """Parallel branches from one input, their outputs stacked on channels (NCHW: axis 1)."""

    def __init__(self, branches: list[gluon.HybridBlock], **kwargs):
        super().__init__(**kwargs)
        self.branches = branches
        for branch in branches:
            self.register_child(branch)

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.concat(*[branch(x) for branch in self.branches], dim=1)


class _LRN(gluon.HybridBlock):
    """MXNet's LRN operator across the channels (NCHW: axis 1). MXNet divides alpha by the window (nsize), the
    plan (TensorFlow) does not: the operator gets the plan's alpha times the window."""

    def __init__(self, layer: modelplan.Layer, **kwargs):
        super().__init__(**kwargs)
        self.nsize = modelplan.lrn_size(layer)
        self.alpha, self.beta, self.knorm = layer["alpha"] * self.nsize, layer["beta"], layer["bias"]

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.LRN(x, alpha=self.alpha, beta=self.beta, knorm=self.knorm, nsize=self.nsize)


def _avgpool(layer: modelplan.Layer) -> list[gluon.HybridBlock]:
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

    returns_state (an encoder's last LSTM): returns its final (h, c), each (N, units), taken at
    each sequence's last real step. takes_state (a decoder's LSTM): starts from a given (h0, c0).
    """

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool, cudnn_lengths: bool,
                 returns_state: bool = False, takes_state: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.returns_state = returns_state
        self.takes_state = takes_state
        # cuDNN honours sequence_length (padding skipped); MXNet's CPU kernel ignores it, so the
        # option is only switched on where it does something.
        self.cudnn_lengths = use_lengths and cudnn_lengths
        with self.name_scope():
            self.lstm = rnn.LSTM(units, layout="TNC", input_size=input_size, use_sequence_length=self.cudnn_lengths)
        # The CPU kernel's final c is the state after the padding, and c is not among its per-step
        # outputs: step the same parameters (Gluon's own unfused form of the layer) instead.
        self.cell = self.lstm._unfuse() if returns_state and use_lengths and not self.cudnn_lengths else None

    def hybrid_forward(self, F, x, lengths=None, h0=None, c0=None):  # noqa: N803
        if self.cell is not None:
            return self._stepped_final_state(F, x, lengths)
        if self.returns_state or self.takes_state:
            return self._fused_with_state(F, x, lengths, h0, c0)
        if self.cudnn_lengths:
            out = self.lstm(x, None, lengths)
        else:
            out = self.lstm(x)
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

    def __init__(self, input_size: int, units: int, return_sequences: bool, plain: bool = False, **kwargs):
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

    def __init__(self, blocks: list[gluon.HybridBlock], time_major_ids: bool, takes_lengths: bool, **kwargs):
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

    def __init__(self, encoder: SpecNet, decoder: SpecNet, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.takes_lengths = True
        self.static_shape = not any(_steps_a_cell(b) for b in encoder.blocks)

    def hybrid_forward(self, F, x, lengths, x_dec):  # noqa: N803
        h, c = self.encoder(x, lengths)
        return self.decoder(x_dec, None, h, c)  # (N, T, classes) logits, teacher forcing


def build_model(model: modelplan.ModelPlan, gpu: bool) -> SpecNet | EncoderDecoder:
    """Translate planned layers into Gluon blocks: a SpecNet, or an EncoderDecoder of two."""
    if model.encoder is None:
        return _build_stack(model.layers, gpu)
    encoder = _build_stack(model.encoder, gpu, returns_state=True)
    return EncoderDecoder(encoder, _build_stack(model.layers, gpu))


def _build_stack(layers: list[modelplan.Layer], gpu: bool, returns_state: bool = False) -> SpecNet:
    """Gluon blocks for one planned layer list, each given its input size and padding from the plan.

    Every block gets its input size, so parameters have shapes (and a count) before any forward.
    returns_state: the list is an encoder, whose last LSTM returns its final (h, c).
    """
    blocks: list[gluon.HybridBlock] = []
    # Token sequences run time-major (T, N, C) from the embedding on; a per-step dense layer makes
    # them batch-major (N, T, C), like the labels.
    batch_major = False
    takes_lengths = False
    for layer in layers:
        i, kind = layer.index, layer.type
        activation = layer.get("activation")
        act = _ACTIVATIONS.get(activation) if activation not in (None, "linear") else None
        if kind == "conv2d":
            pads, padding = layer.pads, 0
            if pads.symmetric:
                padding = (pads.top, pads.left)  # the convolution pads by itself
            else:  # TensorFlow puts the odd pixel after (even kernels, some strides)
                blocks.append(_Pad(*pads, 0.0))
            blocks.append(nn.Conv2D(layer["filters"], layer["kernel"], strides=layer["stride"], padding=padding,
                                    activation=act, layout="NCHW", in_channels=layer.input.features,
                                    use_bias=layer["bias"]))
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
            blocks.append(_Residual(_build_stack(layer.branch, gpu), _build_stack(layer.shortcut, gpu), act))
            act = None  # applied after the add
        elif kind == "concat":
            blocks.append(_Concat([_build_stack(branch, gpu) for branch in layer.branches]))
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
            if batch_major:
                raise modelplan.SpecError(f"layer {i}: lstm needs a time-major sequence input "
                                          "(not the output of a per-step dense layer)")
            state_out = returns_state and i == len(layers) - 1
            blocks.append(_LSTM(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                                gpu, returns_state=state_out, takes_state=layer["initial_state"] == "encoder"))
            takes_lengths = takes_lengths or layer["use_lengths"]
        elif kind == "gru":
            if batch_major:
                raise modelplan.SpecError(f"layer {i}: gru needs a time-major sequence input "
                                          "(not the output of a per-step dense layer)")
            blocks.append(_GRU(layer.input.features, layer["units"], layer["return_sequences"],
                               plain=switches.value(switches.RNN_KERNEL) == "plain"))
        if act is not None:
            blocks.append(nn.Activation(act))
    time_major = bool(layers) and layers[0].type == "embedding"
    return SpecNet(blocks, time_major_ids=time_major, takes_lengths=takes_lengths)


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
    n = common.threads_from_env()
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

    Called like a Keras model, `model(x, training=False)`, so the generic path of the tests' probe
    (tests/bench/frameworks/probe.py) can compare outputs; lengths default to the count of non-zero
    ids (the post-padding contract that common.check_post_padded enforces on the data). Returns
    NumPy logits.
    """

    def __init__(self, trainer: MXNetTrainer):
        self.trainer = trainer

    def __call__(self, x: np.ndarray, training: bool = False, lengths: np.ndarray | None = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        batch = {"x": x}
        if x.ndim == 2 and self.trainer.net.takes_lengths:
            batch["len"] = (np.asarray(x) != 0).sum(axis=1) if lengths is None else lengths
        return self.trainer.outputs(batch)


@dataclass
class _Split:
    """One split on the context: role arrays (ids int32, labels float32, token weights w) and,
    on the host, how many loss terms each row holds (1, or its counted tokens), so a batch's
    count never waits on the device."""

    arrays: dict[str, nd.NDArray]
    counts: np.ndarray

    def rows(self, idx: nd.NDArray) -> dict[str, nd.NDArray]:
        """A batch of the rows idx (gathered on the context)."""
        return {role: nd.take(arr, idx, axis=0) for role, arr in self.arrays.items()}

    def slice(self, start: int, stop: int) -> dict[str, nd.NDArray]:
        """A batch of the consecutive rows start:stop."""
        return {role: arr[start:stop] for role, arr in self.arrays.items()}


class MXNetTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for MXNet Gluon."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.ctx = _resolve_context(device)
        self.gpu = self.ctx.device_type == "gpu"
        self.threads = _set_threads()
        mx.random.seed(seed)  # initialization and dropout, on every context
        # Shuffling has its own generator so its order depends on the seed alone.
        self.rng = np.random.default_rng(seed)
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.net = build_model(self.spec_model, self.gpu)
        # Xavier(uniform, avg, 3) = Glorot uniform, Keras' default kernel initializer and the one
        # Gluon's examples pass (Gluon's own fallback, Uniform(0.07), ignores layer sizes); biases zero.
        self.net.initialize(mx.init.Xavier(), ctx=self.ctx)
        self.net.hybridize(static_alloc=True, static_shape=self.net.static_shape)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.params = [p for p in self.net.collect_params().values() if p.grad_req != "null"]
        self.trainer = self._make_trainer(self.opt_settings)
        if self.kind == "binary":
            self.loss_fn = gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)
        else:  # from logits; per example, or per token for "sequence" (logits flattened to (N*T, C))
            self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)
        self.train = self._split(data.train)
        self.test = self._split(data.test)
        self.model = InferenceModel(self)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring: common.StepRing | None = None  # step()'s batch order, made on its first call
        self._ring_nd: nd.NDArray | None = None  # its rows on the context

    # -- setup ---------------------------------------------------------------------------------
    def _make_trainer(self, opt: dict) -> gluon.Trainer:
        # wd=0: Gluon's 'wd' is coupled L2 (added to the gradient); the spec's weight decay is
        # applied decoupled in _decay(), as Keras 3 does (see common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            args = {"learning_rate": opt["lr"], "momentum": opt["momentum"], "wd": 0.0}
        elif opt["name"] == "adadelta":
            # MXNet 1.9's AdaDelta has no learning rate (weight -= delta): only Keras' lr 1.0 is
            # the same rule. learning_rate is still passed so trainer.learning_rate (used by
            # _decay) reads 1.0 rather than the Optimizer base class' 0.01.
            if opt["lr"] != 1.0:
                raise modelplan.SpecError(f"adadelta lr {opt['lr']}: MXNet's AdaDelta has no learning rate (1.0 only)")
            args = {"learning_rate": opt["lr"], "rho": opt["rho"], "epsilon": opt["epsilon"], "wd": 0.0}
        else:
            args = {"learning_rate": opt["lr"], "beta1": opt["beta1"], "beta2": opt["beta2"],
                    "epsilon": opt["epsilon"], "wd": 0.0}
        # kvstore=None: one device, the optimizer updates the parameters in place.
        return gluon.Trainer(self.params, opt["name"], args, kvstore=None)

    def _images(self, x: np.ndarray) -> nd.NDArray:
        # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes to copy).
        xs = nd.array(np.ascontiguousarray(x), ctx=self.ctx, dtype="uint8")
        return (xs.transpose((0, 3, 1, 2)).astype("float32") / 255.0)

    def _inputs(self, split: dict) -> dict[str, nd.NDArray]:
        """The model's input roles (x, len, x_dec) as NDArrays on the context."""
        x = split["x"]
        if x.ndim == 4:
            return {"x": self._images(x)}
        out = {}
        for role in ("x", "len", "x_dec"):
            if role in split and (role != "len" or self.net.takes_lengths):
                out[role] = nd.array(np.asarray(split[role], dtype=np.int32), ctx=self.ctx, dtype="int32")
        return out

    def _split(self, split: dict) -> _Split:
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])  # the same contract Keras' mask needs
        arrays = self._inputs(split)
        y = np.asarray(split["y"])
        arrays["y"] = nd.array(y, ctx=self.ctx, dtype="float32")  # Gluon losses take float labels
        if self.kind == "binary":
            arrays["y"] = arrays["y"].reshape((-1, 1))
        if self.kind == "sequence":
            mask = common.token_mask(y, split.get("y_len"))
            arrays["w"] = nd.array(mask, ctx=self.ctx, dtype="float32")  # 1 = the token counts
            return _Split(arrays, mask.sum(axis=1))
        return _Split(arrays, np.ones(len(y), dtype=np.int64))

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (gluon.rnn.LSTM has two bias vectors, i2h and h2h, where Keras has one)."""
        return int(sum(int(np.prod(p.shape)) for p in self.params))

    def _logits(self, batch: dict[str, nd.NDArray]) -> nd.NDArray:
        if "x_dec" in batch:
            return self.net(batch["x"], batch["len"], batch["x_dec"])
        return self.net(batch["x"], batch["len"]) if self.net.takes_lengths else self.net(batch["x"])

    def _losses(self, logits: nd.NDArray, batch: dict[str, nd.NDArray]) -> nd.NDArray:
        """Loss terms to sum: per example, or per token weighted 0/1 (padding counts nowhere)."""
        if self.kind == "sequence":
            flat = logits.reshape((-3, 0))  # (N*T, classes): one softmax per step
            # sample_weight (N*T, 1): it multiplies the loss before pick's class axis is dropped.
            return self.loss_fn(flat, batch["y"].reshape((-1,)), batch["w"].reshape((-1, 1)))
        return self.loss_fn(logits, batch["y"])

    def _correct(self, logits: nd.NDArray, batch: dict[str, nd.NDArray]) -> nd.NDArray:
        y = batch["y"]
        if self.kind == "binary":
            return ((logits > 0) == y).sum()
        if self.kind == "sequence":
            return ((logits.argmax(axis=-1) == y) * batch["w"]).sum()
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

    def _train_batch(self, batch: dict[str, nd.NDArray], count: int) -> tuple[nd.NDArray, nd.NDArray]:
        """One update on a batch of `count` loss terms; (logits, the loss terms), on the context."""
        with autograd.record():  # train_mode: dropout on
            logits = self._logits(batch)
            loss = self._losses(logits, batch)
        loss.backward()
        self._decay()
        self.trainer.step(count)  # gradients are sums of loss terms: rescale by 1/count = the mean
        return logits, loss

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss.

        Only the loss is checked: train_epoch's parameter check (oneDNN's ReLU) reads every weight,
        which would be timed with the step; check_finite() does it once the timed steps are over.
        """
        self._start_ring()
        rows = self._ring.take()
        count = int(self.train.counts[self._ring.ring[rows]].sum())  # examples, or counted tokens
        _, loss = self._train_batch(self.train.rows(self._ring_nd[rows]), count)
        self.steps += 1
        value = float(loss.sum().asscalar()) / count
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def _start_ring(self) -> None:
        """step()'s and infer()'s batch order (common.StepRing) and its rows on the context, made once."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train.counts), self.batch_size)
            self._ring_nd = nd.array(self._ring.ring, ctx=self.ctx, dtype="int32")

    def infer(self) -> np.ndarray:
        """One forward pass of the hybridized net outside autograd.record (Gluon's inference mode: batchnorm's
        moving statistics, dropout off, no gradient) on the next batch of the training set in order, wrapping
        around as step() does; its outputs copied to the host (N, output values), as ilkarman's feature
        extraction does."""
        self._start_ring()
        return self._logits(self.train.rows(self._ring_nd[self._ring.take()])).asnumpy()

    def check_finite(self) -> None:
        """Raise NonFiniteLoss if a parameter is NaN or infinite (after step()s; untimed)."""
        weights = [p.data(self.ctx) for p in self.params]
        if not nd.multi_all_finite(*weights, num_arrays=len(weights)).asscalar():
            raise NonFiniteLoss(f"parameters became nan/inf by step {self.steps} (Trainer.step; the loss "
                                "stayed finite: oneDNN's ReLU maps NaN to 0)")

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train.counts)
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        order_nd = nd.array(order, ctx=self.ctx, dtype="int32")
        starts = common.batches(n, self.batch_size)
        pending: list[nd.NDArray] = []  # per-step summed losses not yet checked, on the device
        total = nd.zeros((1,), ctx=self.ctx)
        correct = nd.zeros((1,), ctx=self.ctx)
        checked = 0
        for b, start in enumerate(starts):
            stop = start + self.batch_size
            batch = self.train.rows(order_nd[start:stop])
            count = int(self.train.counts[order[start:stop]].sum())  # examples, or counted tokens
            logits, loss = self._train_batch(batch, count)
            step_loss = loss.sum()
            pending.append(step_loss.reshape((1,)))
            total += step_loss
            correct += self._correct(logits, batch)
            if (b + 1) % CHECK_EVERY == 0 or b == len(starts) - 1:
                self._check_finite(pending, checked)
                checked, pending = b + 1, []
        counted = int(self.train.counts.sum())
        return float(total.asscalar()) / counted, float(correct.asscalar()) / counted

    def evaluate(self) -> float:
        """Test accuracy (per example or counted token) in inference mode (outside autograd.record:
        dropout off), training batch size."""
        n = len(self.test.counts)
        correct = nd.zeros((1,), ctx=self.ctx)
        for start in common.batches(n, self.batch_size):
            batch = self.test.slice(start, start + self.batch_size)
            correct += self._correct(self._logits(batch), batch)
        return float(correct.asscalar()) / int(self.test.counts.sum())

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays (x, len, x_dec; others ignored), in inference mode, as NumPy.

        Sequence outputs are (N, T, classes), batch-major like the labels.
        """
        return self._logits(self._inputs(batch)).asnumpy()

    def synchronize(self) -> None:
        """Wait for everything MXNet's asynchronous engine has queued (CPU and GPU alike)."""
        nd.waitall()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        features = mx.runtime.Features()
        onednn = features.is_enabled("MKLDNN") and os.environ.get("MXNET_MKLDNN_ENABLED", "1") != "0"
        layers = self.spec_model.all_layers
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("gluon.nn.BatchNorm (batch statistics inside autograd.record, moving ones in "
                                    "evaluation)")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 Conv2D(use_bias=False) + BN"
        if "concat" in types:
            kernels["concat"] = "F.concat of the branches' outputs on channels (dim 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("F.LRN across channels (NCHW; nsize = 2 * depth_radius + 1, alpha = the plan's alpha * "
                              "nsize: MXNet divides by the window, TensorFlow does not; knorm = bias" +
                              (", oneDNN)" if onednn and not self.gpu else ")"))
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
                lengths = "cuDNN use_sequence_length=True (padding skipped); nd.SequenceLast at each last real step"
            else:
                rnn_onednn = onednn and os.environ.get("MXNET_USE_MKLDNN_RNN", "1") != "0"
                kernels["lstm"] = "gluon.rnn.LSTM, TNC (fused RNN operator, CPU" + (", oneDNN)" if rnn_onednn else ")")
                lengths = "whole padded batch; nd.SequenceLast at each sequence's last real step"
            if any(layer["type"] == "lstm" and layer["use_lengths"] for layer in layers):
                kernels["lstm_lengths"] = lengths
            if self.spec_model.encoder is not None:
                kernels["lstm_encoder_state"] = (
                    "fused LSTM, cuDNN use_sequence_length=True: final (h, c) at each source's last real step"
                    if self.gpu else "the encoder LSTM's parameters as rnn.LSTMCell stepped by F.contrib.foreach "
                    "over the padded batch; nd.SequenceLast picks (h, c) at each source's last real step"
                )
                kernels["lstm_decoder"] = "fused gluon.rnn.LSTM from begin_state = the encoder's (h, c)"
        if "gru" in types:
            if switches.value(switches.RNN_KERNEL) == "plain":
                kernels["gru"] = "gluon.rnn.GRUCell stepped over time by contrib.foreach, TNC (plain)"
            else:
                kernels["gru"] = "gluon.rnn.GRU, TNC (fused RNN operator, " + ("cuDNN)" if self.gpu else "CPU" + (
                    ", oneDNN)" if onednn and os.environ.get("MXNET_USE_MKLDNN_RNN", "1") != "0" else ")"))
        if self.kind == "sequence":
            kernels["dense"] = "gluon.nn.Dense(flatten=False) at every step: one GEMM over (N*T, units)"
        if self.gpu:
            from bench.gpu import probe, run_device_index

            status = probe()
            index = run_device_index()
            names = [d["name"] for d in status.devices if d["index"] == index] or [str(self.ctx)]
            device_name = names[0]
        else:
            device_name = common.cpu_name()
        intra = self.threads or _default_threads()
        inter = int(os.environ.get("MXNET_CPU_WORKER_NTHREADS", "1"))
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.ctx),
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": kernels,
            "hybridize": f"static_alloc=True, static_shape={self.net.static_shape} (cached graph)",
            "initializer": "mx.init.Xavier() (Glorot uniform) weights, zero biases",
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else (
                "ids (N, T), transposed to time-major (T, N) for the embedding and LSTM"
            ),
            "input_pipeline": "whole split as NDArrays on the context, rows gathered with nd.take by a seeded "
            "permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "optimizer_impl": f"gluon.Trainer(kvstore=None) with mx.optimizer '{self.opt_settings['name']}'"
            + (" (AdaDelta(rho, epsilon): no learning rate, i.e. Keras' lr 1.0)"
               if self.opt_settings["name"] == "adadelta" else ""),
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> MXNetTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return MXNetTrainer(spec, data, device, seed)
