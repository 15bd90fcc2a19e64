"""MXNet 1.3.0 (Gluon), the paper era: a workload spec as a hybridized HybridBlock trained with gluon.Trainer.

Written with the APIs of MXNet 1.3.0 (DLBench's version) for CPython 3.6, with the fairness choices
of the current-era module (bench/frameworks/mxnet/current.py): a HybridBlock compiled with
hybridize(static_alloc=True, static_shape=True), float32 NCHW images converted once, the whole
split on the context as NDArrays with batches gathered by nd.take in a seeded order, the Gluon step
(autograd.record, loss.backward(), trainer.step(count)), Glorot-uniform weights, losses on logits,
per-token 0/1 weights for sequence outputs and the spec's optimizer with decoupled weight decay.

What MXNet 1.3.0 makes different:
- gluon.rnn.LSTM reads no sequence lengths (use_sequence_length came in 2019), on the CPU and on
  cuDNN alike: the fused RNN operator runs over the whole padded batch and nd.SequenceLast takes
  each sequence's output at its last real step (with post-padding that is the output the sequence
  alone gives: an LSTM never looks ahead); SequenceMask zeroes the padding of returned sequences.
- An encoder's final (h, c) must be taken at each source's last real step, which the fused
  operator does not return: the encoder LSTM's own parameters run as Gluon's unfused LSTMCell,
  unrolled over the padded width with unroll(valid_length=lengths), which picks both states there
  with SequenceLast. The unrolled graph has a fixed width (the data's): shorter id arrays given
  to outputs() are post-padded to it.
- SequenceLast/SequenceMask want their lengths in the data's dtype: lengths travel as float32.
- No mx.runtime.Features (1.5) and no nd.multi_all_finite (1.4): the build (CPU or CUDA, MKL-DNN)
  is read from the installed distribution's name (mxnet, mxnet-mkl, mxnet-cu90, ...), and the
  parameters are checked for NaN through one sum each.
- AdaDelta(rho, epsilon) has no learning rate (weight -= delta): only Keras' lr 1.0 is that rule.
- NumPy 1.14: shuffling uses np.random.RandomState(seed).

Threads: MXNet reads OMP_NUM_THREADS and MXNET_CPU_WORKER_NTHREADS when it is imported; they are
set before `import mxnet` (bench.threads.pin: the OpenMP pool from $DLREPRO_THREADS, one engine
worker, since two hang in this wheel's bundled OpenBLAS), and MXSetNumOMPThreads is called as
well, which holds even if MXNet was imported earlier.
"""

import ctypes
import os
import platform
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from bench import modelplan, threads
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.mxnet import CAPABILITIES

# Before `import mxnet`: its engine and OpenMP pool read these variables once, at import.
threads.pin(common.threads_from_env())

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402

NAME = "mxnet"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves
# The loss is read back to the host every this many steps: each read waits on MXNet's asynchronous
# engine. A NaN is still caught within that many steps.
CHECK_EVERY = 20

_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}
_LOSS_NAMES = {
    "categorical": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)",
    "binary": "gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)",
    "sequence": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True) per token (logits as (N*T, classes), "
    "sample_weight = the 0/1 token mask; batch loss = sum / counted tokens)",
}


def _distribution() -> str:
    """The name of the installed MXNet distribution (mxnet, mxnet-mkl, mxnet-cu90, ...), from its
    metadata folder beside the package (CPython 3.6 has no importlib.metadata)."""
    site = Path(mx.__file__).resolve().parent.parent
    for meta in sorted(site.glob("mxnet*.dist-info")) + sorted(site.glob("mxnet*.egg-info")):
        name = meta.name.split("-")[0].replace("_", "-").lower()
        if re.match(r"mxnet(-cu\d+)?(mkl)?$", name):
            return name
    return "mxnet"


def versions() -> Dict[str, str]:
    """Versions of what this module really imported, and the build the distribution name states."""
    dist = _distribution()
    cuda = re.match(r"mxnet-cu(\d+)(\d)", dist)
    out = {"mxnet": mx.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "mxnet_distribution": dist, "mxnet_cuda": "yes" if cuda else "no",
           "mxnet_mkldnn": "yes" if dist.endswith("mkl") else "no"}
    if cuda:
        out["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}"
    return out


class _Pad(gluon.HybridBlock):
    """Explicit (possibly asymmetric) spatial padding of an NCHW tensor with a constant."""

    def __init__(self, top: int, bottom: int, left: int, right: int, value: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.pad_width = (0, 0, 0, 0, top, bottom, left, right)
        self.value = value

    def hybrid_forward(self, F, x):  # noqa: N803 (Gluon's signature)
        return F.pad(x, mode="constant", pad_width=self.pad_width, constant_value=self.value)


class _LSTM(gluon.HybridBlock):
    """Gluon's fused rnn.LSTM on a time-major (T, N, C) batch, over the whole padded width.

    use_lengths: the output is taken at each sequence's last real step (SequenceLast), or the
    returned sequence is zero after it (SequenceMask). takes_state: starts from a given (h0, c0).
    returns_state (an encoder's last LSTM): returns the final (h, c), each (N, units), from the
    unfused cell unrolled over `steps`; with lengths, taken at each sequence's last real step.
    """

    def __init__(self, input_size: int, units: int, use_lengths: bool, return_sequences: bool,
                 returns_state: bool = False, takes_state: bool = False, steps: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.returns_state = returns_state
        self.takes_state = takes_state
        self.steps = steps
        with self.name_scope():
            self.lstm = rnn.LSTM(units, layout="TNC", input_size=input_size)
        # An encoder's LSTM runs as Gluon's unfused form of the layer (a stack holding one LSTMCell
        # on the same parameters): its unroll returns (h, c) at each sequence's last real step.
        self.cell = self.lstm._unfuse() if returns_state else None

    def hybrid_forward(self, F, x, *args):  # noqa: N803
        lengths = args[0] if self.use_lengths else None
        if self.cell is not None:
            _, (h, c) = self.cell.unroll(self.steps, x, layout="TNC", merge_outputs=True, valid_length=lengths)
            return h, c
        if self.takes_state:
            h0, c0 = args[-2:]
            out, _ = self.lstm(x, [F.expand_dims(h0, axis=0), F.expand_dims(c0, axis=0)])
        else:
            out = self.lstm(x)
        if self.return_sequences:
            if not self.use_lengths:
                return out
            return F.SequenceMask(out, sequence_length=lengths, use_sequence_length=True, value=0.0, axis=0)
        if not self.use_lengths:
            return F.SequenceLast(out, axis=0)
        return F.SequenceLast(out, sequence_length=lengths, use_sequence_length=True, axis=0)


class _BatchMajor(gluon.HybridBlock):
    """(T, N, C) -> (N, T, C): per-step outputs leave the model batch-major, like the labels."""

    def hybrid_forward(self, F, x):  # noqa: N803
        return F.swapaxes(x, dim1=0, dim2=1)


class SpecNet(gluon.HybridBlock):
    """A stack of Gluon blocks built from a spec: net(x), net(x, lengths) or, for a decoder,
    net(x, h0, c0). Lengths (and the begin state) go to the LSTMs that read them."""

    def __init__(self, blocks: List[gluon.HybridBlock], time_major_ids: bool, takes_lengths: bool,
                 takes_state: bool, **kwargs) -> None:
        super().__init__(**kwargs)
        self.blocks = blocks
        for block in blocks:
            self.register_child(block)
        self.time_major_ids = time_major_ids  # token ids arrive (N, T); the LSTM wants (T, N, C)
        self.takes_lengths = takes_lengths
        self.takes_state = takes_state

    def hybrid_forward(self, F, x, *args):  # noqa: N803
        lengths = args[:1] if self.takes_lengths else ()
        state = tuple(args[-2:]) if self.takes_state else ()
        if self.time_major_ids:
            x = F.transpose(x)  # (N, T) ids -> (T, N): the embedding then yields TNC directly
        for block in self.blocks:
            if isinstance(block, _LSTM):
                x = block(x, *((lengths if block.use_lengths else ()) + (state if block.takes_state else ())))
            else:
                x = block(x)
        return x


class EncoderDecoder(gluon.HybridBlock):
    """Encoder over the source (reading its lengths); its final (h, c) starts the decoder LSTM."""

    def __init__(self, encoder: SpecNet, decoder: SpecNet, **kwargs) -> None:
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.takes_lengths = encoder.takes_lengths

    def hybrid_forward(self, F, x, *args):  # noqa: N803
        lengths, x_dec = args if self.takes_lengths else ((), args[0])
        h, c = self.encoder(x, *([lengths] if self.takes_lengths else []))
        return self.decoder(x_dec, h, c)  # (N, T, classes) logits, teacher forcing


def build_model(model: modelplan.ModelPlan, steps: int) -> gluon.HybridBlock:
    """Translate planned layers into Gluon blocks: a SpecNet, or an EncoderDecoder of two.

    steps: the padded width of token sequences (the unrolled encoder cell's length).
    """
    if model.encoder is None:
        return _build_stack(model.layers, steps)
    encoder = _build_stack(model.encoder, steps, returns_state=True)
    return EncoderDecoder(encoder, _build_stack(model.layers, steps))


def _build_stack(layers: List[modelplan.Layer], steps: int, returns_state: bool = False) -> SpecNet:
    """Gluon blocks for one planned layer list, each given its input size and padding from the plan,
    so parameters have shapes (and a count) before any forward."""
    blocks: List[gluon.HybridBlock] = []
    batch_major = False  # token sequences run time-major (T, N, C) until a per-step dense layer
    takes_lengths = takes_state = False
    for layer in layers:
        kind = layer.type
        activation = layer.get("activation")
        act = _ACTIVATIONS.get(activation) if activation not in (None, "linear") else None
        if kind == "conv2d":
            pads, padding = layer.pads, 0
            if pads.symmetric:
                padding = (pads.top, pads.left)  # the convolution pads by itself
            else:  # TensorFlow puts the odd pixel after (even kernels, some strides)
                blocks.append(_Pad(pads.top, pads.bottom, pads.left, pads.right, 0.0))
            blocks.append(nn.Conv2D(layer["filters"], layer["kernel"], strides=layer["stride"], padding=padding,
                                    activation=act, layout="NCHW", in_channels=layer.input.features))
            act = None
        elif kind == "maxpool2d":
            if any(layer.pads):  # Gluon pools pad symmetrically only; -inf never wins a max, as in TensorFlow
                blocks.append(_Pad(layer.pads.top, layer.pads.bottom, layer.pads.left, layer.pads.right,
                                   float("-inf")))
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
            if layer.index != 0:
                raise modelplan.SpecError(f"layer {layer.index}: embedding must be the first layer (it reads ids)")
            blocks.append(nn.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            if batch_major:
                raise modelplan.SpecError(f"layer {layer.index}: lstm needs a time-major sequence input "
                                          "(not the output of a per-step dense layer)")
            block = _LSTM(layer.input.features, layer["units"], layer["use_lengths"], layer["return_sequences"],
                          returns_state=returns_state and layer.index == len(layers) - 1,
                          takes_state=layer["initial_state"] == "encoder", steps=steps)
            blocks.append(block)
            takes_lengths = takes_lengths or block.use_lengths
            takes_state = takes_state or block.takes_state
        if act is not None:
            blocks.append(nn.Activation(act))
    time_major = bool(layers) and layers[0].type == "embedding"
    return SpecNet(blocks, time_major_ids=time_major, takes_lengths=takes_lengths, takes_state=takes_state)


def _resolve_context(device: str) -> mx.Context:
    if device == "cpu":
        return mx.cpu()
    if device == "gpu":
        try:
            n = mx.context.num_gpus()
        except mx.base.MXNetError:  # a CPU-only build cannot count GPUs
            n = 0
        if n < 1:
            raise RuntimeError(
                f"device 'gpu' requested but MXNet sees no CUDA device (mxnet {mx.__version__}, distribution "
                f"{_distribution()}; a GPU needs the mxnet-cuXX package matching the driver)")
        return mx.gpu(0)
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def _set_threads() -> Optional[int]:
    """Apply $DLREPRO_THREADS to MXNet's OpenMP pool (also when MXNet was imported earlier)."""
    n = common.threads_from_env()
    if n is not None:
        mx.base.check_call(mx.base._LIB.MXSetNumOMPThreads(ctypes.c_int(n)))
    return n


class _Split:
    """One split on the context: role arrays (ids and lengths, labels and token weights w as
    float32) and, on the host, how many loss terms each row holds (1, or its counted tokens), so a
    batch's count never waits on the device."""

    def __init__(self, arrays: Dict[str, nd.NDArray], counts: np.ndarray) -> None:
        self.arrays = arrays
        self.counts = counts

    def rows(self, idx: nd.NDArray) -> Dict[str, nd.NDArray]:
        """A batch of the rows idx (gathered on the context)."""
        return {role: nd.take(arr, idx, axis=0) for role, arr in self.arrays.items()}

    def slice(self, start: int, stop: int) -> Dict[str, nd.NDArray]:
        """A batch of the consecutive rows start:stop."""
        return {role: arr[start:stop] for role, arr in self.arrays.items()}


class MXNetTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for MXNet 1.3.0 Gluon."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.ctx = _resolve_context(device)
        self.gpu = self.ctx.device_type == "gpu"
        self.threads = _set_threads()
        mx.random.seed(seed)  # initialization and dropout, on every context
        self.rng = np.random.RandomState(seed)  # shuffling: its order depends on the seed alone
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        x = data.train["x"]
        self.steps = int(x.shape[1]) if x.ndim == 2 else 0  # padded width of token sequences
        self.net = build_model(self.spec_model, self.steps)
        # Xavier(uniform, avg, 3) = Glorot uniform, Keras' default kernel initializer; biases zero
        # (every Gluon layer's own bias initializer).
        self.net.initialize(mx.init.Xavier(), ctx=self.ctx)
        self.net.hybridize(static_alloc=True, static_shape=True)
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
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    def _make_trainer(self, opt: dict) -> gluon.Trainer:
        # wd=0: Gluon's 'wd' is coupled L2 (added to the gradient); the spec's weight decay is
        # applied decoupled in _decay() (common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            args = {"learning_rate": opt["lr"], "momentum": opt["momentum"], "wd": 0.0}
        elif opt["name"] == "adadelta":
            # MXNet's AdaDelta has no learning rate (weight -= delta): Keras' lr 1.0 only. It is
            # still passed so trainer.learning_rate (used by _decay) reads 1.0, not the base 0.01.
            if opt["lr"] != 1.0:
                raise modelplan.SpecError(f"adadelta lr {opt['lr']}: MXNet's AdaDelta has no learning rate (1.0 only)")
            args = {"learning_rate": opt["lr"], "rho": opt["rho"], "epsilon": opt["epsilon"], "wd": 0.0}
        else:
            args = {"learning_rate": opt["lr"], "beta1": opt["beta1"], "beta2": opt["beta2"],
                    "epsilon": opt["epsilon"], "wd": 0.0}
        # kvstore=None: one device, the optimizer updates the parameters in place.
        return gluon.Trainer(self.params, opt["name"], args, kvstore=None)

    def _inputs(self, split: dict) -> Dict[str, nd.NDArray]:
        """The model's input roles (x, len, x_dec) as NDArrays on the context."""
        x = np.asarray(split["x"])
        if x.ndim == 4:  # uint8 NHWC -> float32 NCHW in [0, 1], once; moved as uint8 (4x fewer bytes)
            xs = nd.array(np.ascontiguousarray(x), ctx=self.ctx, dtype="uint8")
            return {"x": xs.transpose((0, 3, 1, 2)).astype("float32") / 255.0}
        out = {}
        for role in ("x", "len", "x_dec"):
            if role in split and (role != "len" or self.net.takes_lengths):
                # float32: SequenceLast and SequenceMask take lengths in the data's dtype (exact below 2**24).
                dtype = "float32" if role == "len" else "int32"
                out[role] = nd.array(np.asarray(split[role]), ctx=self.ctx, dtype=dtype)
        return out

    def _split(self, split: dict) -> _Split:
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])  # lengths = the non-zero ids
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

    def _logits(self, batch: Dict[str, nd.NDArray]) -> nd.NDArray:
        lengths = [batch["len"]] if self.net.takes_lengths else []
        decoder = [batch["x_dec"]] if "x_dec" in batch else []
        return self.net(batch["x"], *(lengths + decoder))

    def _losses(self, logits: nd.NDArray, batch: Dict[str, nd.NDArray]) -> nd.NDArray:
        """Loss terms to sum: per example, or per token weighted 0/1 (padding counts nowhere)."""
        if self.kind == "sequence":
            flat = logits.reshape((-3, 0))  # (N*T, classes): one softmax per step
            return self.loss_fn(flat, batch["y"].reshape((-1,)), batch["w"].reshape((-1, 1)))
        return self.loss_fn(logits, batch["y"])

    def _correct(self, logits: nd.NDArray, batch: Dict[str, nd.NDArray]) -> nd.NDArray:
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

    def _check_finite(self, losses: List[nd.NDArray], first: int) -> None:
        """Raise NonFiniteLoss if a step's loss, or any parameter, is NaN or infinite.

        The parameters are checked too: ReLU maps NaN to 0, so a model whose weights have diverged
        can keep a finite loss. One sum per parameter (1.3.0 has no multi_all_finite): a NaN or
        inf anywhere makes its sum non-finite.
        """
        values = nd.concat(*losses, dim=0).asnumpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")
        sums = nd.concat(*[p.data(self.ctx).sum() for p in self.params], dim=0).asnumpy()
        if not np.isfinite(sums).all():
            raise NonFiniteLoss(f"parameters became nan/inf by step {first + len(values)} of epoch {self.epoch} "
                                f"(the loss stayed finite, last {values[-1]}: ReLU maps NaN to 0)")

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train.counts)
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        order_nd = nd.array(order, ctx=self.ctx, dtype="int32")
        starts = common.batches(n, self.batch_size)
        pending: List[nd.NDArray] = []  # per-step summed losses not yet checked, on the device
        total = nd.zeros((1,), ctx=self.ctx)
        correct = nd.zeros((1,), ctx=self.ctx)
        checked = 0
        for b, start in enumerate(starts):
            stop = min(start + self.batch_size, n)  # 1.3.0's NDArray slices refuse to run past the end
            batch = self.train.rows(order_nd[start:stop])
            count = int(self.train.counts[order[start:stop]].sum())  # examples, or counted tokens
            with autograd.record():  # train_mode: dropout on
                logits = self._logits(batch)
                loss = self._losses(logits, batch)
            loss.backward()
            self._decay()
            self.trainer.step(count)  # gradients are sums of loss terms: rescale by 1/count = the mean
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
            batch = self.test.slice(start, min(start + self.batch_size, n))
            correct += self._correct(self._logits(batch), batch)
        return float(correct.asscalar()) / int(self.test.counts.sum())

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays (x, len, x_dec; others ignored), in inference mode, as NumPy.

        An encoder-decoder's source ids narrower than the training data are post-padded with 0 to its
        width (the unrolled encoder has a fixed width). Sequence outputs are (N, T, classes), batch-major
        like the labels.
        """
        batch = dict(batch)
        width = np.shape(batch["x"])[1] if np.ndim(batch["x"]) == 2 else self.steps
        if self.spec_model.encoder is not None and width < self.steps:
            batch["x"] = np.pad(batch["x"], ((0, 0), (0, self.steps - width)), "constant")
        return self._logits(self._inputs(batch)).asnumpy()

    def synchronize(self) -> None:
        """Wait for everything MXNet's asynchronous engine has queued (CPU and GPU alike)."""
        nd.waitall()

    def _kernels(self) -> Dict[str, str]:
        build = versions()
        layers = self.spec_model.all_layers
        types = {layer["type"] for layer in layers}
        kernels = {}
        if "conv2d" in types:
            if self.gpu:
                autotune = os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1")
                kernels["conv2d"] = f"gluon.nn.Conv2D NCHW (cuDNN, MXNET_CUDNN_AUTOTUNE_DEFAULT={autotune})"
            elif build["mxnet_mkldnn"] == "yes":
                kernels["conv2d"] = "gluon.nn.Conv2D NCHW (CPU, MKL-DNN)"
            else:
                kernels["conv2d"] = "gluon.nn.Conv2D NCHW (CPU: im2col + OpenBLAS GEMM; no MKL-DNN in this build)"
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "gluon.nn.MaxPool2D; 'same' = nd.pad(-inf) with TensorFlow's asymmetric rule"
        if "lstm" in types:
            kernels["lstm"] = "gluon.rnn.LSTM, TNC (fused RNN operator, " + ("cuDNN)" if self.gpu else "CPU)")
            if any(layer["type"] == "lstm" and layer["use_lengths"] for layer in layers):
                kernels["lstm_lengths"] = ("no sequence lengths in MXNet 1.3.0's fused RNN operator: the whole "
                                           "padded batch; nd.SequenceLast at each sequence's last real step")
            if self.spec_model.encoder is not None:
                kernels["lstm_encoder_state"] = (
                    f"the encoder LSTM's parameters as gluon.rnn.LSTMCell unrolled over the padded width "
                    f"({self.steps} steps) with unroll(valid_length=lengths): SequenceLast picks (h, c) at each "
                    "source's last real step")
                kernels["lstm_decoder"] = "fused gluon.rnn.LSTM from begin_state = the encoder's (h, c)"
        if self.kind == "sequence":
            kernels["dense"] = "gluon.nn.Dense(flatten=False) at every step: one GEMM over (N*T, units)"
        return kernels

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        if self.gpu:
            from bench.gpu import probe, run_device_index

            index = run_device_index()
            names = [d["name"] for d in probe().devices if d["index"] == index] or [str(self.ctx)]
            device_name = names[0]
        else:
            device_name = common.cpu_name()
        omp = os.environ.get("OMP_NUM_THREADS", "").strip()
        return {
            "framework": NAME,
            "versions": versions(),
            "device": str(self.ctx),
            "device_name": device_name,
            "threads": {"intra_op": self.threads or (int(omp) if omp.isdigit() else os.cpu_count()),
                        "inter_op": int(os.environ.get("MXNET_CPU_WORKER_NTHREADS", "1"))},
            "kernels": self._kernels(),
            "hybridize": "static_alloc=True, static_shape=True (cached graph)",
            "initializer": "mx.init.Xavier() (Glorot uniform) weights, zero biases",
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else (
                "ids (N, T), transposed to time-major (T, N) for the embedding and LSTM; lengths float32"
            ),
            "input_pipeline": "whole split as NDArrays on the context, rows gathered with nd.take by a seeded "
            "permutation (np.random.RandomState) each epoch",
            "loss": _LOSS_NAMES[self.kind] + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "optimizer_impl": f"gluon.Trainer(kvstore=None) with mx.optimizer '{self.opt_settings['name']}'"
            + (" (AdaDelta(rho, epsilon): no learning rate, i.e. Keras' lr 1.0)"
               if self.opt_settings["name"] == "adadelta" else ""),
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> MXNetTrainer:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed."""
    return MXNetTrainer(spec, data, device, seed)
