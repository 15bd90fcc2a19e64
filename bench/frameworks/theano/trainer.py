"""The Trainer protocol (bench.frameworks.Trainer) for Theano, era-neutral: the model's graph (graph.py) and its
optimizer's updates (optimizers.py) compiled by theano.function once, at setup, into a training step, an
evaluation step and, for infer() and a features model, an inference step.

The data live in shared variables in Theano's native layout (NCHW, 'bc01'); a compiled step takes only the
batch's row indices, so no batch is fed from the host (the tutorials' `givens` idiom). Sequence losses
(language model, encoder-decoder) fold the logits of every step into one (N*T, classes) matrix, so the output
dense layer and the fused softmax-cross-entropy run once per batch; they count only each row's first y_len
steps (common.token_mask).

What differs between the eras is an era module's subclass of TheanoTrainer (bench/frameworks/theano/<era>.py):
how it shuffles (shuffler()), which loop Theano's scan runs (scan_loop()) and the flags it set before Theano
was imported (flags_set_here). CPython 3.6-clean; imported after THEANO_FLAGS is set (flags.configure).
"""

import math
import sys
import time
from typing import Any, Dict, Optional, Set, Tuple

import numpy as np
import theano
import theano.tensor as T

from bench import modelplan
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.theano import optimizers, runtime
from bench.frameworks.theano.graph import FLOATX, SpecNet

NAME = "theano"
RECURSION_LIMIT = 50_000  # see TheanoTrainer.__init__
_LOSS_NAMES = {
    "categorical": "T.nnet.crossentropy_softmax_1hot",
    "binary": "softplus(z) - y * z",
    "sequence": "T.nnet.crossentropy_softmax_1hot over the (N*T, classes) logits, sum over counted tokens "
    "/ their number",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


class InferenceModel:
    """The trained network as a plain function of NumPy inputs, in inference mode (dropout off).

    Called like a Keras model, `model(x, training=False)`, so the tests' probe (its generic
    path) can compare outputs; outputs(batch) takes a dict of role arrays (an encoder-decoder's x, len,
    x_dec). x: uint8 NHWC images or post-padded int token ids; lengths default to the count of
    non-zero ids (the contract common.check_post_padded enforces on the data). The whole sequence
    is fed, padding included: the mask alone must keep the state. Compiled on first use (only the
    probe calls it; training and evaluation run their own compiled steps).
    """

    def __init__(self, trainer: "TheanoTrainer") -> None:
        self.trainer = trainer
        self.fn = None

    def __call__(self, x: np.ndarray, training: bool = False, lengths: Optional[np.ndarray] = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        return self.outputs({"x": x} if lengths is None else {"x": x, "len": lengths})

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays: (N, classes), or (N, T, classes) for a sequence loss."""
        inputs = self.trainer.inputs
        if self.fn is None:
            self.fn = theano.function(list(inputs.values()), self.trainer.logits_eval, name="predict")
        args = []
        for role in inputs:
            if role == "x" and np.ndim(batch["x"]) == 4:
                args.append(images(batch["x"]))
            elif role == "len" and "len" not in batch:
                args.append((np.asarray(batch["x"]) != 0).sum(axis=1).astype(np.int32))
            else:
                args.append(np.asarray(batch[role], dtype=np.int32))
        return np.asarray(self.fn(*args))


def images(x: np.ndarray) -> np.ndarray:
    """uint8 NHWC -> float32 NCHW ('bc01', Theano's layout) in [0, 1]."""
    out = np.ascontiguousarray(np.asarray(x).transpose(0, 3, 1, 2), dtype=FLOATX)
    out /= np.asarray(255.0, dtype=FLOATX)  # in place: the converted split is the only copy
    return out


def device_info(device: str, threads: dict) -> dict:
    """What every Theano run's info() opens with: the framework, versions, device, its name and the threads."""
    return {"framework": NAME, "versions": runtime.versions(), "device": device, "device_name": common.cpu_name(),
            "threads": threads}


class TheanoTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Theano; an era module subclasses it with what its era
    does its own way (shuffler, scan_loop, flags_set_here)."""

    flags_set_here = {}  # type: Dict[str, str]  # the THEANO_FLAGS the era module set (flags.configure)

    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.device = runtime.resolve_device(device)
        runtime.check_toolchain()
        self.threads = runtime.set_threads()
        self.rng = self.shuffler(seed)  # shuffling: depends on the seed alone
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.net = SpecNet(self.spec_model, seed)
        self.params = self.net.params
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.inputs, self.labels = self._symbolic_inputs(data.train)
        self.train_data = self._to_shared(data.train, "train")
        self.test_data = self._to_shared(data.test, "test")
        self.n_train = int(data.train["y"].shape[0])
        self.n_test = int(data.test["y"].shape[0])
        # What each row adds to the means: its counted tokens (sequence labels) or 1.
        self.train_weights = self._row_weights(data.train)
        self.test_weight = int(self._row_weights(data.test).sum())
        started = time.perf_counter()
        # Theano's gradient and graph optimizer recurse once per op along the graph: a deep network
        # (ResNet-56's ~500 ops per path) passes Python's default limit of 1,000 frames.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        self._compile()  # graph optimization and g++ (cached per environment): part of setup
        self.compile_seconds = round(time.perf_counter() - started, 2)
        self.model = InferenceModel(self)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s batch order, made on its first call

    # -- what an era does its own way --------------------------------------------------------------
    def shuffler(self, seed: int) -> Any:
        """The generator whose permutation(n) orders each epoch's rows, seeded with the run's seed alone."""
        raise NotImplementedError

    def scan_loop(self) -> Tuple[str, str]:
        """Which inner loop Theano's scan runs, and why, for info()'s kernels: ("Cython loop", "") or
        ("Python loop", the reason)."""
        raise NotImplementedError

    # -- setup ---------------------------------------------------------------------------------
    def _symbolic_inputs(self, split: dict) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """The graph's inputs by role, ({x, len?, x_dec?}, {y, y_len?}): only the roles the model reads."""
        images = self.spec_model.input_shape is not None
        inputs = {"x": T.tensor4("x", dtype=FLOATX) if images else T.matrix("x", dtype="int32")}
        if self.net.uses_lengths:
            inputs["len"] = T.vector("len", dtype="int32")
        if self.net.encoder_steps is not None:
            inputs["x_dec"] = T.matrix("x_dec", dtype="int32")
        if self.kind == "sequence":
            labels = {"y": T.matrix("y", dtype="int32")}
            if "y_len" in split:
                labels["y_len"] = T.vector("y_len", dtype="int32")
        else:
            labels = {"y": T.vector("y", dtype=FLOATX if self.kind == "binary" else "int32")}
        return inputs, labels

    def _to_shared(self, split: dict, name: str) -> Dict[str, Any]:
        """The roles the graph reads, as shared variables converted once (the tutorials' load_data)."""
        out = {}  # type: Dict[str, Any]
        for role in (*self.inputs, *self.labels):
            if role not in split:
                raise modelplan.SpecError(f"the model reads '{role}' but the {name} data has no such array")
            arr = np.asarray(split[role])
            if role == "x" and arr.ndim == 4:
                arr = images(arr)
            elif role == "y" and self.kind == "binary":
                arr = arr.astype(FLOATX)
            else:
                arr = arr.astype(np.int32)
            out[role] = theano.shared(arr, name=f"{name}.{role}", borrow=True)
        if "len" in out:
            common.check_post_padded(split["x"], split["len"])  # the mask and the batch cut rely on it
        return out

    def _row_weights(self, split: dict) -> np.ndarray:
        """Per row, how many predictions count: its counted tokens (sequence labels) or 1."""
        y = np.asarray(split["y"])
        if self.kind != "sequence":
            return np.ones(len(y), dtype=np.int64)
        return common.token_mask(y, split["y_len"] if "y_len" in self.labels else None).sum(axis=1)

    def _loss_and_correct(self, logits: T.TensorVariable, labels: Dict[str, Any]) -> Tuple[Any, Any]:
        """(mean loss over the batch's counted predictions, how many of them are right)."""
        y = labels["y"]
        if self.kind == "categorical":
            # Softmax and cross-entropy fused, from logits (CrossentropySoftmaxArgmax1HotWithBias).
            loss = T.nnet.crossentropy_softmax_1hot(logits, y)[0].mean()
            correct = T.eq(T.argmax(logits, axis=1), y).sum()
        elif self.kind == "sequence":
            loss, correct = sequence_loss(logits, y, labels.get("y_len"))
        else:
            z = logits.flatten()  # (N, 1) -> (N,)
            # -[y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))] = softplus(z) - y z, from logits
            # (Theano's softplus is overflow-safe). T.nnet.sigmoid_binary_crossentropy computes the
            # same but its gradient override is broken in Theano 1.0.5 (ValueError in grad).
            loss = (T.nnet.softplus(z) - y * z).mean()
            correct = T.eq(T.gt(z, 0), y).sum()  # logit 0 = probability 0.5
        return loss, correct

    def _batch_givens(self, split: dict, rows: Any) -> dict:
        """Each graph input -> the batch's rows of the split's shared variable, padding cut off.

        Post-padded sources are cut to the batch's longest sequence (the steps after it are all
        padding); a decoder's input and its labels to the longest counted target (later steps
        count nowhere, and a left-to-right LSTM never reads ahead).
        """
        batch = {role: split[role][rows] for role in (*self.inputs, *self.labels)}
        if "len" in batch:
            batch["x"] = batch["x"][:, : T.max(batch["len"])]
        if "x_dec" in batch and "y_len" in batch:
            steps = T.max(batch["y_len"])
            batch["x_dec"], batch["y"] = batch["x_dec"][:, :steps], batch["y"][:, :steps]
        return {var: batch[role] for role, var in (*self.inputs.items(), *self.labels.items())}

    def _compile(self) -> None:
        """Build the two graphs and compile the training step and the evaluation step."""
        forward_inputs = (self.inputs["x"], self.inputs.get("len"))
        logits_train = self.net.forward(*forward_inputs, deterministic=False, x_dec=self.inputs.get("x_dec"))
        self.logits_eval = self.net.forward(*forward_inputs, deterministic=True, x_dec=self.inputs.get("x_dec"))
        if self.kind == modelplan.FEATURES:  # only run forward (infer): no loss, no updates, no test pass
            self._infer = self._compile_infer()
            return
        loss, correct = self._loss_and_correct(logits_train, self.labels)
        _, correct_eval = self._loss_and_correct(self.logits_eval, self.labels)
        idx = T.vector("idx", dtype="int64")  # the batch's rows of the shuffled epoch
        updates = optimizers.training_updates(self.params, loss, self.opt_settings) + self.net.state_updates
        self._train = theano.function([idx], [loss, correct], updates=updates,
                                      givens=self._batch_givens(self.train_data, idx), name="train_step")
        start, stop = T.lscalar("start"), T.lscalar("stop")
        self._eval = theano.function([start, stop], correct_eval,
                                     givens=self._batch_givens(self.test_data, slice(start, stop)), name="eval_step")

    def _compile_infer(self) -> Any:
        """The forward graph on rows of the training set (inference mode), compiled."""
        rows = T.vector("rows", dtype="int64")
        givens = {var: self.train_data[role][rows] for role, var in self.inputs.items()}
        return theano.function([rows], self.logits_eval, givens=givens, name="infer_step")

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (the LSTM has one bias per gate, as Keras)."""
        return int(sum(p.get_value(borrow=True).size for p in self.params))

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss."""
        if self._ring is None:
            self._ring = common.StepRing(self.n_train, self.batch_size)
        loss, _ = self._train(self._ring.ring[self._ring.take()])
        self.steps += 1
        value = float(loss)
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One call of the compiled forward graph (deterministic: batchnorm's moving statistics, dropout off; no
        gradient or update in it) on the next batch of the training set in order, wrapping around as step()
        does; its outputs, on the host (N, output values). A features model compiles it with its graphs (_compile),
        a classifier on its first call (a training run never pays for it)."""
        if self._ring is None:
            self._ring = common.StepRing(self.n_train, self.batch_size)
        if getattr(self, "_infer", None) is None:
            self._infer = self._compile_infer()
        return np.asarray(self._infer(self._ring.ring[self._ring.take()]))

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), both per example or per counted token."""
        self.epoch += 1
        order = self.rng.permutation(self.n_train) if self.shuffle else np.arange(self.n_train)
        total, correct, seen = 0.0, 0, 0
        for b, start in enumerate(common.batches(self.n_train, self.batch_size)):
            rows = order[start : start + self.batch_size]
            loss, right = self._train(rows)
            loss = float(loss)  # on the CPU the value is already on the host: check every step
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"loss became {loss} at step {b + 1} of epoch {self.epoch}")
            weight = int(self.train_weights[rows].sum())
            total += loss * weight
            correct += int(right)
            seen += weight
        return total / seen, correct / seen

    def evaluate(self) -> float:
        """Test accuracy (per example or per counted token) from the deterministic graph (dropout off),
        in batches of the training batch size."""
        correct = 0
        for start in common.batches(self.n_test, self.batch_size):
            correct += int(self._eval(start, min(start + self.batch_size, self.n_test)))
        return correct / self.test_weight

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits (N, T, classes) for a batch of role arrays (x, len, x_dec), in inference mode."""
        return self.model.outputs(batch)

    def synchronize(self) -> None:
        """Nothing to wait for: a compiled Theano function returns when its CPU work is done."""

    def _ops(self) -> Set[str]:
        compiled = self._infer if self.kind == modelplan.FEATURES else self._train  # the graph a run builds
        return {type(node.op).__name__ for node in compiled.maker.fgraph.toposort()}

    def _kernels(self) -> Dict[str, str]:
        """Each layer type -> the op that ran it, read from the compiled training graph."""
        ops = self._ops()
        blas = runtime.blas_name()
        loop, why = self.scan_loop()
        kernels = {}
        types = {layer.type for layer in self.spec_model.flat_layers}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("elementwise T ops: batch mean/variance in the training graph (moving statistics "
                                    "updated with it, Keras' rule), moving ones in the evaluation graph")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 conv2d (no bias) + batchnorm"
        if "concat" in types:
            kernels["concat"] = "T.concatenate of the branches' outputs on channels (axis 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("elementwise T ops (Theano has no LRN op): squares zero-padded on the channel axis, the "
                              "2 * depth_radius + 1 shifted slices added, x / (bias + alpha * sum) ** beta")
        if "conv2d" in types:
            conv_ops = sorted(o for o in ops if o.startswith(("CorrMM", "Conv", "AbstractConv")))
            kernels["conv2d"] = f"theano.tensor.nnet.conv2d -> {', '.join(conv_ops)} (im2col + {blas} gemm, C)"
        if "maxpool2d" in types:
            pool_ops = sorted(o for o in ops if "Pool" in o)
            kernels["maxpool2d"] = f"theano.tensor.signal.pool.pool_2d -> {', '.join(pool_ops)} (C)"
        if "dense" in types:
            dots = sorted(o for o in ops if o in ("Gemm", "Dot22", "Dot22Scalar", "Gemv", "Ger"))
            per_step = " at every step as one product over (N*T, units)" if self.kind == "sequence" else ""
            kernels["dense"] = f"T.dot{per_step} -> {', '.join(dots)} ({blas})"
        if "lstm" in types:
            kernels["lstm"] = (f"theano.scan over time steps ({loop}{': ' + why if why else ''}), Keras gates (i, f, "
                               "c, o), one bias per gate")
            if self.net.uses_lengths:
                kernels["lstm_lengths"] = (
                    "mask from real lengths keeps h, c after the last real token; each batch cut to its longest "
                    "sequence"
                )
            if self.net.encoder_steps is not None:
                kernels["lstm_initial_state"] = "the decoder's scan starts from the encoder's final (h, c)"
        if "gru" in types:
            kernels["gru"] = (f"theano.scan over every time step, padding included ({loop}), Keras' GRU(reset_after="
                              "True) gates (z, r, h), an input and a recurrent bias per gate")
        return kernels

    def info(self) -> dict:
        """What was really used: device, threads, kernels (read from the compiled graph), layout, ..."""
        return {
            **device_info(self.device, self.threads),
            "kernels": self._kernels(),
            "data_layout": "NCHW ('bc01', converted once at setup)" if self.spec_model.input_shape else "ids (N, T)",
            "input_pipeline": (
                "whole split in Theano shared variables; each compiled step takes the batch's row indices "
                "(seeded permutation each epoch) and gathers inside the graph (givens)"
            ),
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "theano_config": runtime.config_info(self.flags_set_here),
            "compile_seconds": self.compile_seconds,
        }


def sequence_loss(logits: T.TensorVariable, y: T.TensorVariable,
                   y_len: Optional[T.TensorVariable]) -> Tuple[Any, Any]:
    """Per-token cross-entropy summed over counted tokens / their number; and how many are right.

    The (N, T, classes) logits are one (N*T, classes) matrix, so the fused softmax-cross-entropy
    op runs once per batch. Counted: each row's first y_len steps (all steps without y_len).
    """
    n, steps = y.shape
    flat = logits.reshape((n * steps, logits.shape[2]))
    targets = y.flatten()
    nll = T.nnet.crossentropy_softmax_1hot(flat, targets)[0]
    hits = T.eq(T.argmax(flat, axis=1), targets)
    if y_len is None:
        return nll.mean(), hits.sum()
    counted = T.lt(T.arange(steps).dimshuffle("x", 0), y_len.dimshuffle(0, "x")).flatten()
    weights = T.cast(counted, FLOATX)
    return (nll * weights).sum() / weights.sum(), (hits * counted).sum()

