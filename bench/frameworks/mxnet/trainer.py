"""The Trainer protocol (bench.frameworks.Trainer) for a Gluon model (blocks.py), written with the Gluon API that
MXNet 1.3.0 (the paper era) and today's MXNet share; CPython 3.6-clean. Each era module subclasses MXNetTrainer
with what its MXNet does differently (the hooks below: build facts, the finite check, lengths' dtype, shuffling).

Choices an MXNet user would make: the whole split lives on the context as NDArrays and batches are rows gathered
with nd.take by a seeded permutation (no per-step host feeding); the training step is the Gluon idiom
(autograd.record, per-example loss.backward(), trainer.step(count)); losses on logits; per-token 0/1 weights
(gluon losses' sample_weight) for sequence outputs, so padding counts nowhere; the spec's optimizer with decoupled
weight decay (common.WEIGHT_DECAY_RULE).
"""

import math
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from bench import modelplan, switches
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.mxnet import blocks
from bench.frameworks.mxnet.library import autograd, gluon, mx, nd, set_threads

NAME = "mxnet"
# The loss is read back to the host every this many steps rather than every step: a read is a
# wait on MXNet's asynchronous engine, and waiting each step would stop Python from queueing the
# next step while the current one computes (on the CPU too). A NaN is still caught within that
# many steps.
CHECK_EVERY = 20

LOSS_NAMES = {
    "categorical": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)",
    "binary": "gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)",
    "sequence": "gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True) per token (logits as (N*T, classes), "
    "sample_weight = the 0/1 token mask; batch loss = sum / counted tokens)",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


def default_threads() -> int:
    """MXNet's OpenMP pool when $DLREPRO_THREADS is unset: $OMP_NUM_THREADS, else the physical cores (the logical
    ones where psutil is not installed)."""
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

    def __init__(self, trainer: "MXNetTrainer") -> None:
        self.trainer = trainer

    def __call__(self, x: np.ndarray, training: bool = False, lengths: Optional[np.ndarray] = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        batch = {"x": x}
        if x.ndim == 2 and self.trainer.net.takes_lengths:
            batch["len"] = (np.asarray(x) != 0).sum(axis=1) if lengths is None else lengths
        return self.trainer.outputs(batch)


class _Split:
    """One split on the context: role arrays (ids, lengths, labels float32, token weights w) and,
    on the host, how many loss terms each row holds (1, or its counted tokens), so a batch's
    count never waits on the device."""

    def __init__(self, arrays: Dict[str, nd.NDArray], counts: np.ndarray) -> None:
        self.arrays = arrays
        self.counts = counts

    def rows(self, idx: nd.NDArray) -> Dict[str, nd.NDArray]:
        """A batch of the rows idx (gathered on the context)."""
        return {role: nd.take(arr, idx, axis=0) for role, arr in self.arrays.items()}

    def slice(self, start: int, stop: int) -> Dict[str, nd.NDArray]:
        """A batch of the consecutive rows start:stop (stop within the split: MXNet 1.3.0 refuses slices past
        the end)."""
        return {role: arr[start:stop] for role, arr in self.arrays.items()}


class MXNetTrainer:
    """The Trainer protocol for MXNet Gluon; an era module's subclass gives its MXNet's hooks."""

    # -- what an era's MXNet does differently (its subclass says) --------------------------------
    CUDNN_LENGTHS = True  # the fused LSTM reads sequence lengths on cuDNN (use_sequence_length)
    LENGTHS_DTYPE = "int32"  # the dtype SequenceLast/SequenceMask take lengths in
    SHUFFLER = ""  # how the shuffling generator is named in info() (after "permutation")
    RELU_NAN = "oneDNN's ReLU maps NaN to 0"  # why a diverged model's loss can stay finite

    def _shuffler(self, seed: int) -> Any:
        """The generator of each epoch's permutation: its order depends on the seed alone."""
        raise NotImplementedError

    def _all_finite(self, weights: List[nd.NDArray]) -> bool:
        """Whether every weight is finite (one host read)."""
        raise NotImplementedError

    def _cpu_library(self, op: str) -> str:
        """What follows "CPU" in a kernel's description of op ("conv", "rnn", "lrn"): ", oneDNN", ..., or ""."""
        raise NotImplementedError

    def _build(self) -> str:
        """This MXNet's build, for the message when a GPU was asked for and none is seen."""
        raise NotImplementedError

    def versions(self) -> Dict[str, str]:
        """The era module's versions()."""
        raise NotImplementedError

    # -- setup -----------------------------------------------------------------------------------
    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.ctx = self._context(device)
        self.gpu = self.ctx.device_type == "gpu"
        self.threads = set_threads()
        mx.random.seed(seed)  # initialization and dropout, on every context
        self.rng = self._shuffler(seed)
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.net = blocks.build_model(self.spec_model, self.gpu and self.CUDNN_LENGTHS)
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
        self._ring = None  # type: Optional[common.StepRing]  # step()'s batch order, made on its first call
        self._ring_nd = None  # type: Optional[nd.NDArray]  # its rows on the context

    def _context(self, device: str) -> mx.Context:
        if device == "cpu":
            return mx.cpu()
        if device == "gpu":
            try:
                n = mx.context.num_gpus()
            except mx.base.MXNetError:  # MXNet 1.3.0's CPU-only build cannot count GPUs
                n = 0
            if n < 1:
                raise RuntimeError(f"device 'gpu' requested but MXNet sees no CUDA device (mxnet {mx.__version__}, "
                                   f"{self._build()}; a GPU needs the mxnet-cuXXX package matching the driver)")
            return mx.gpu(0)
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")

    def _make_trainer(self, opt: dict) -> gluon.Trainer:
        # wd=0: Gluon's 'wd' is coupled L2 (added to the gradient); the spec's weight decay is
        # applied decoupled in _decay(), as Keras 3 does (see common.WEIGHT_DECAY_RULE).
        if opt["name"] == "sgd":
            args = {"learning_rate": opt["lr"], "momentum": opt["momentum"], "wd": 0.0}
        elif opt["name"] == "adadelta":
            # MXNet's AdaDelta has no learning rate (weight -= delta): only Keras' lr 1.0 is the same
            # rule. learning_rate is still passed so trainer.learning_rate (used by _decay) reads 1.0
            # rather than the Optimizer base class' 0.01.
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

    def _inputs(self, split: dict) -> Dict[str, nd.NDArray]:
        """The model's input roles (x, len, x_dec) as NDArrays on the context."""
        x = split["x"]
        if x.ndim == 4:
            return {"x": self._images(x)}
        out = {}
        for role in ("x", "len", "x_dec"):
            if role in split and (role != "len" or self.net.takes_lengths):
                dtype = self.LENGTHS_DTYPE if role == "len" else "int32"
                out[role] = nd.array(np.asarray(split[role], dtype=dtype), ctx=self.ctx, dtype=dtype)
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

    # -- protocol --------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (gluon.rnn.LSTM has two bias vectors, i2h and h2h, where Keras has one)."""
        return int(sum(int(np.prod(p.shape)) for p in self.params))

    def _logits(self, batch: Dict[str, nd.NDArray]) -> nd.NDArray:
        if "x_dec" in batch:
            return self.net(batch["x"], batch["len"], batch["x_dec"])
        return self.net(batch["x"], batch["len"]) if self.net.takes_lengths else self.net(batch["x"])

    def _losses(self, logits: nd.NDArray, batch: Dict[str, nd.NDArray]) -> nd.NDArray:
        """Loss terms to sum: per example, or per token weighted 0/1 (padding counts nowhere)."""
        if self.kind == "sequence":
            flat = logits.reshape((-3, 0))  # (N*T, classes): one softmax per step
            # sample_weight (N*T, 1): it multiplies the loss before pick's class axis is dropped.
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

        The parameters are checked too: ReLU (oneDNN's fused one) turns NaN into 0, so a model whose
        weights have diverged to NaN can keep a finite loss in MXNet (seen with lr=1e30).
        """
        values = nd.concat(*losses, dim=0).asnumpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")
        if not self._all_finite([p.data(self.ctx) for p in self.params]):
            last = first + len(values)
            raise NonFiniteLoss(
                f"parameters became nan/inf by step {last} of epoch {self.epoch} "
                f"(the loss stayed finite, last {values[-1]}: {self.RELU_NAN})"
            )

    def _train_batch(self, batch: Dict[str, nd.NDArray], count: int) -> Tuple[nd.NDArray, nd.NDArray]:
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
        if not self._all_finite([p.data(self.ctx) for p in self.params]):
            raise NonFiniteLoss(f"parameters became nan/inf by step {self.steps} (Trainer.step; the loss "
                                f"stayed finite: {self.RELU_NAN})")

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train.counts)
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        order_nd = nd.array(order, ctx=self.ctx, dtype="int32")
        starts = common.batches(n, self.batch_size)
        pending = []  # type: List[nd.NDArray]  # per-step summed losses not yet checked, on the device
        total = nd.zeros((1,), ctx=self.ctx)
        correct = nd.zeros((1,), ctx=self.ctx)
        checked = 0
        for b, start in enumerate(starts):
            stop = min(start + self.batch_size, n)  # MXNet 1.3.0's NDArray slices refuse to run past the end
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
            batch = self.test.slice(start, min(start + self.batch_size, n))
            correct += self._correct(self._logits(batch), batch)
        return float(correct.asscalar()) / int(self.test.counts.sum())

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays (x, len, x_dec; others ignored), in inference mode, as NumPy.

        Sequence outputs are (N, T, classes), batch-major like the labels.
        """
        return self._logits(self._inputs(batch)).asnumpy()

    def synchronize(self) -> None:
        """Wait for everything MXNet's asynchronous engine has queued (CPU and GPU alike)."""
        nd.waitall()

    def device_info(self) -> dict:
        """What every MXNet run's info() opens with: the framework, versions, device, its name and the threads."""
        if self.gpu:
            from bench.gpu import probe, run_device_index

            index = run_device_index()
            names = [d["name"] for d in probe().devices if d["index"] == index] or [str(self.ctx)]
            device_name = names[0]
        else:
            device_name = common.cpu_name()
        return {
            "framework": NAME,
            "versions": self.versions(),
            "device": str(self.ctx),
            "device_name": device_name,
            "threads": {"intra_op": self.threads or default_threads(),
                        "inter_op": int(os.environ.get("MXNET_CPU_WORKER_NTHREADS", "1"))},
        }

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        lengths = "" if self.LENGTHS_DTYPE == "int32" else f"; lengths {self.LENGTHS_DTYPE}"
        return {
            **self.device_info(),
            "kernels": self._kernels(),
            "hybridize": f"static_alloc=True, static_shape={self.net.static_shape} (cached graph)",
            "initializer": "mx.init.Xavier() (Glorot uniform) weights, zero biases",
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape else (
                "ids (N, T), transposed to time-major (T, N) for the embedding and LSTM" + lengths
            ),
            "input_pipeline": "whole split as NDArrays on the context, rows gathered with nd.take by a seeded "
            f"permutation{self.SHUFFLER} each epoch",
            "loss": LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                             else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "optimizer_impl": f"gluon.Trainer(kvstore=None) with mx.optimizer '{self.opt_settings['name']}'"
            + (" (AdaDelta(rho, epsilon): no learning rate, i.e. Keras' lr 1.0)"
               if self.opt_settings["name"] == "adadelta" else ""),
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    def _rnn_kernel(self, name: str) -> str:
        return f"gluon.rnn.{name}, TNC (fused RNN operator, " + (
            "cuDNN)" if self.gpu else "CPU" + self._cpu_library("rnn") + ")")

    def _kernels(self) -> Dict[str, str]:
        """The kernel of each layer type the model has, as run.json device_used.kernels records it."""
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
                              ("" if self.gpu else self._cpu_library("lrn")) + ")")
        if "conv2d" in types:
            if self.gpu:
                autotune = os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1")
                kernels["conv2d"] = f"gluon.nn.Conv2D NCHW (cuDNN, MXNET_CUDNN_AUTOTUNE_DEFAULT={autotune})"
            else:
                kernels["conv2d"] = "gluon.nn.Conv2D NCHW (CPU" + self._cpu_library("conv") + ")"
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "gluon.nn.MaxPool2D; 'same' = nd.pad(-inf) with TensorFlow's asymmetric rule"
        if "lstm" in types:
            kernels["lstm"] = self._rnn_kernel("LSTM")
            cudnn_lengths = self.gpu and self.CUDNN_LENGTHS
            if any(layer["type"] == "lstm" and layer["use_lengths"] for layer in layers):
                kernels["lstm_lengths"] = (
                    "cuDNN use_sequence_length=True (padding skipped); nd.SequenceLast at each last real step"
                    if cudnn_lengths else "whole padded batch; nd.SequenceLast at each sequence's last real step")
            if self.spec_model.encoder is not None:
                kernels["lstm_encoder_state"] = (
                    "fused LSTM, cuDNN use_sequence_length=True: final (h, c) at each source's last real step"
                    if cudnn_lengths else "the encoder LSTM's parameters as rnn.LSTMCell stepped by F.contrib.foreach "
                    "over the padded batch; nd.SequenceLast picks (h, c) at each source's last real step"
                )
                kernels["lstm_decoder"] = "fused gluon.rnn.LSTM from begin_state = the encoder's (h, c)"
        if "gru" in types:
            if switches.value(switches.RNN_KERNEL) == "plain":
                kernels["gru"] = "gluon.rnn.GRUCell stepped over time by contrib.foreach, TNC (plain)"
            else:
                kernels["gru"] = self._rnn_kernel("GRU")
        if self.kind == "sequence":
            kernels["dense"] = "gluon.nn.Dense(flatten=False) at every step: one GEMM over (N*T, units)"
        return kernels
