"""Keras 2.2.4, the paper era: a workload spec as a Keras model trained with train_on_batch.

Written with Keras 2.2.4's APIs (DLBench's version, CPython 3.6) on its TensorFlow 1.11 backend,
DLBench's configuration and the paper image's; info() and versions() record the backend really
used. The fairness choices are the current-era module's (bench/frameworks/keras/current.py):

- A keras.models.Sequential for a stack of layers (an InputLayer first), the functional API for an
  encoder-decoder (inputs "x" and "x_dec"; the encoder LSTM's return_state=True gives the decoder
  LSTM its initial_state) and for residual blocks and concats (Add then Activation; Concatenate on
  channels). channels_last images (pixels / 255, float32), Keras' initializers.
- The residual vocabulary is Keras 2.2.4's own: BatchNormalization (the plan's momentum is Keras'
  convention; on images it is TensorFlow's fused kernel, which raises an epsilon under 1.001e-5 to that),
  Activation, AveragePooling2D (TensorFlow's 'same' average counts real values only, as the plan
  defines), GlobalAveragePooling2D, Conv2D(use_bias=False). lrn is a Lambda over the backend's
  tf.nn.local_response_normalization, the plan's convention itself.
- A gru is keras.layers.GRU(reset_after=True, recurrent_activation='sigmoid'): cuDNN's form and
  gates, the parameters of the current module's GRU. On a GPU (rnn_kernel "fused", the default)
  it is keras.layers.CuDNNGRU, the same weights in cuDNN's kernel (Keras 2.2.4's fused GRU is
  GPU-only); on a CPU both switch values run GRU's loop (Keras 3's use_cudnn="auto" has no fused
  CPU kernel either).
- LSTMs see real lengths through Embedding(mask_zero=True) (post-padding: the state after the last
  real token). keras.layers.LSTM, not CuDNNLSTM: Keras 2.2.4's CuDNNLSTM refuses masks ("Masking is
  not supported for CuDNN RNNs"). recurrent_activation='sigmoid' (Keras 2's default is
  'hard_sigmoid', an approximation no other framework uses: the spec's LSTM is the standard one).
- The last dense layer gives logits; the losses take them (from_logits=True through the backend's
  K.sparse_categorical_crossentropy / K.binary_crossentropy), sequence logits as one
  (N*T, classes) matrix. Sequence labels past y_len get sample weight 0 (sample_weight_mode
  'temporal'); Keras 2.2.4 divides a weighted batch loss by its counted tokens, and the epoch's loss
  and accuracy are weighted here by each batch's counted tokens, so both are means over counted
  tokens.
- One train_on_batch per batch over a seeded permutation (np.random.RandomState(seed)), with the
  loss checked after every step (NonFiniteLoss); test_on_batch for test accuracy (learning phase
  0: dropout off). The training and test functions are built at setup (compile time is setup).
  step() is one train_on_batch, infer() one predict_on_batch (learning phase 0: moving batchnorm
  statistics, dropout off), on common.StepRing's batches. A features model (model.output =
  "features") is not compiled: Keras 2.2.4 predicts with an uncompiled model, and its predict
  function is built at setup.

What Keras 2.2.4 makes different:
- Optimizers take `lr=`; their `decay=` is learning-rate decay, not weight decay, and they have no
  weight decay of their own. The decoupled rule (common.WEIGHT_DECAY_RULE) goes through the hook
  every Keras 2.2.4 optimizer applies to the updated value of a weight, its constraint:
  new_w -> new_w - lr * weight_decay * w (w the value before the step), i.e.
  w = w (1 - lr wd) + step(gradient at w), exactly.
- Adam's and Adadelta's epsilon default to K.epsilon() (1e-7); the spec's values are passed.
- Its losses take no from_logits argument (the backend functions do) and its
  metrics.sparse_categorical_accuracy flattens the labels, which breaks per-step labels: the loss
  and accuracy functions here are written on the backend (K) functions.
"""

import math
import os
import platform
import random
import time
from typing import Any, Dict, List, Optional, Tuple

# Before Keras is first imported: the backend is chosen at import (an unset KERAS_BACKEND would
# let ~/.keras/keras.json choose it) and TF's C++ logging level is read once.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench import modelplan, switches, threads  # noqa: E402
from bench.frameworks import NonFiniteLoss, common  # noqa: E402
from bench.frameworks.keras import CAPABILITIES  # noqa: E402

threads.pin(common.threads_from_env())

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402

BACKEND = K.backend()
if BACKEND != "tensorflow":
    raise RuntimeError(f"Keras runs on the {BACKEND!r} backend; this module supports tensorflow (DLBench's), chosen "
                       "by KERAS_BACKEND")
import tensorflow as tf  # noqa: E402
from tensorflow.python.client import device_lib  # noqa: E402

NAME = "keras"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves

# Set here, not read from ~/.keras/keras.json: a user's file must not change the model.
K.set_floatx("float32")
K.set_epsilon(1e-7)
K.set_image_data_format("channels_last")


def versions() -> Dict[str, str]:
    """Versions of what this module really imported, and the backend Keras runs on."""
    return {"keras": keras.__version__, "keras_backend": BACKEND, "numpy": np.__version__,
            "python": platform.python_version(), "tensorflow": tf.__version__,
            "tensorflow_cuda_build": str(bool(tf.test.is_built_with_cuda()))}


# -- the model ---------------------------------------------------------------------------------
def build_model(model: modelplan.ModelPlan, steps: Optional[int], gpu: bool = False) -> Any:
    """Translate planned layers into a Keras model (Keras infers the shapes it passes on).

    A stack is a Sequential over images of the plan's input shape or `steps` token ids; an
    encoder-decoder is a functional Model (build_seq2seq), and so is a stack with residual blocks or
    concats (build_residual). gpu: the model runs on a GPU (a gru may be CuDNNGRU there).
    """
    if model.encoder is not None:
        return build_seq2seq(model)
    if any(layer.type in ("residual", "concat") for layer in model.layers):
        return build_residual(model)
    layers = keras.layers
    if model.input_shape is not None:
        stack = [layers.InputLayer(input_shape=model.input_shape, dtype="float32")]
    else:
        stack = [layers.InputLayer(input_shape=(steps,), dtype="int32")]
    mask_zero = _reads_lengths(model.layers, "layer")
    stack += [_layer(layer, mask_zero, gpu=gpu) for layer in model.layers]
    return keras.models.Sequential(stack)


def build_residual(model: modelplan.ModelPlan) -> Any:
    """A stack with residual blocks or concats, as a functional Model: each block adds its branch's output
    to its shortcut's (the input itself where the shortcut is the identity), then the activation; a
    concat stacks its branches' outputs on channels (channels_last: the last axis)."""
    image = keras.layers.Input(shape=model.input_shape, dtype="float32")
    return keras.models.Model(image, _apply(model.layers, image), name="residual")


def _apply(layers: List[modelplan.Layer], h: Any) -> Any:
    """Planned layers called in order on a functional tensor, residual blocks and concats recursively."""
    for layer in layers:
        if layer.type == "residual":
            added = keras.layers.Add()([_apply(layer.branch, h), _apply(layer.shortcut, h)])
            h = keras.layers.Activation(layer["activation"] or "linear")(added)
        elif layer.type == "concat":
            h = keras.layers.Concatenate(axis=-1)([_apply(branch, h) for branch in layer.branches])
        else:
            h = _layer(layer, False)(h)
    return h


def build_seq2seq(model: modelplan.ModelPlan) -> Any:
    """The encoder-decoder of the Keras seq2seq example (lstm_seq2seq.py), with the functional API.

    Inputs "x" (source ids) and "x_dec" (decoder input ids), any length. The encoder's last LSTM
    returns its state (return_state=True); with the source embedding's mask (mask_zero=True) that
    is the state at each sentence's last real token. The decoder LSTM starts from it
    (initial_state) and the output dense layer runs on every step of its sequence output.
    """
    layers = keras.layers
    source = layers.Input(shape=(None,), dtype="int32", name="x")
    target = layers.Input(shape=(None,), dtype="int32", name="x_dec")
    h = source
    state = None
    mask_zero = _reads_lengths(model.encoder, "encoder layer")
    for i, layer in enumerate(model.encoder):
        if i == len(model.encoder) - 1:  # the LSTM whose final state starts the decoder
            outputs = _layer(layer, mask_zero, return_state=True)(h)
            h, state = outputs[0], outputs[1:]
        else:
            h = _layer(layer, mask_zero)(h)
    # No mask on the decoder side: its steps past y_len get sample weight 0 instead.
    h = target
    for layer in model.layers:
        if layer.get("initial_state") == "encoder":
            h = _layer(layer, False)(h, initial_state=state)
        else:
            h = _layer(layer, False)(h)
    return keras.models.Model([source, target], h, name="seq2seq")


def _reads_lengths(layers: List[modelplan.Layer], what: str) -> bool:
    """Whether an LSTM of the list reads real lengths, which the embedding's mask then carries."""
    for i, layer in enumerate(layers):
        if layer["type"] == "lstm" and layer["use_lengths"] and not any(p["type"] == "embedding" for p in layers[:i]):
            raise modelplan.SpecError(f"{what} {i}: use_lengths needs an embedding before the lstm")
    return any(layer["type"] == "lstm" and layer["use_lengths"] for layer in layers)


def _layer(layer: modelplan.Layer, mask_zero: bool, return_state: bool = False, gpu: bool = False) -> Any:
    """The Keras 2.2.4 layer for one planned layer; mask_zero: the embedding masks id 0 (padding); gpu: the
    model runs on a GPU."""
    layers = keras.layers
    kind = layer["type"]
    if kind == "conv2d":
        return layers.Conv2D(layer["filters"], layer["kernel"], strides=layer["stride"], padding=layer["padding"],
                             activation=layer["activation"], use_bias=layer["bias"], data_format="channels_last")
    if kind == "maxpool2d":
        return layers.MaxPooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"],
                                   data_format="channels_last")
    if kind == "avgpool2d":
        return layers.AveragePooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"],
                                       data_format="channels_last")
    if kind == "global_avgpool":
        return layers.GlobalAveragePooling2D(data_format="channels_last")
    if kind == "batchnorm":  # the plan's momentum is Keras' own convention
        return layers.BatchNormalization(momentum=layer["momentum"], epsilon=layer["epsilon"])
    if kind == "activation":
        return layers.Activation(layer["activation"])
    if kind == "lrn":
        return _lrn(layer)
    if kind == "gru":
        return _gru(layer, gpu and not mask_zero)
    if kind == "dropout":
        return layers.Dropout(layer["rate"])
    if kind == "flatten":
        return layers.Flatten()
    if kind == "dense":
        # On a sequence Keras 2.2.4's Dense contracts the last axis (K.dot): every time step.
        return layers.Dense(layer["units"], activation=layer["activation"])
    if kind == "embedding":
        return layers.Embedding(layer["input_dim"], layer["output_dim"], mask_zero=mask_zero)
    # tanh cell, sigmoid gates (see the module docstring), one bias per gate, forget bias 1.
    return layers.LSTM(layer["units"], recurrent_activation="sigmoid", return_sequences=layer["return_sequences"],
                       return_state=return_state)


def _lrn(layer: modelplan.Layer) -> Any:
    """A Lambda over TensorFlow's local response normalization, whose convention the plan's is."""
    radius, bias, alpha, beta = int(layer["depth_radius"]), layer["bias"], layer["alpha"], layer["beta"]
    return keras.layers.Lambda(lambda x: tf.nn.local_response_normalization(
        x, depth_radius=radius, bias=bias, alpha=alpha, beta=beta))


def _gru(layer: modelplan.Layer, on_gpu: bool) -> Any:
    """cuDNN's GRU (reset_after, sigmoid gates): CuDNNGRU on a GPU unless the rnn_kernel switch asks for the
    plain kernel (or a mask is on: CuDNNGRU refuses masks), else GRU (one step at a time: K.rnn)."""
    if on_gpu and switches.value(switches.RNN_KERNEL) == "fused":
        return keras.layers.CuDNNGRU(layer["units"], return_sequences=layer["return_sequences"])
    return keras.layers.GRU(layer["units"], recurrent_activation="sigmoid", reset_after=True,
                            return_sequences=layer["return_sequences"])


# -- losses and metrics on logits, backend-neutral ---------------------------------------------
def _categorical_loss(y_true: Any, y_pred: Any) -> Any:
    """Cross-entropy of integer labels (N, 1) against logits (N, classes)."""
    return K.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)


def _binary_loss(y_true: Any, y_pred: Any) -> Any:
    """Binary cross-entropy of labels (N, 1) against one logit per row."""
    return K.mean(K.binary_crossentropy(y_true, y_pred, from_logits=True), axis=-1)


def _sequence_loss_fn(classes: int) -> Any:
    def sequence_loss(y_true: Any, y_pred: Any) -> Any:
        """Per-step cross-entropy (N, T) of labels (N, T, 1) against logits (N, T, classes), computed on
        the logits as one (N*T, classes) matrix."""
        shape = K.shape(y_pred)
        flat = K.reshape(y_pred, (-1, classes))
        nll = K.sparse_categorical_crossentropy(K.flatten(y_true), flat, from_logits=True)
        return K.reshape(nll, (shape[0], shape[1]))

    return sequence_loss


def _sparse_accuracy(y_true: Any, y_pred: Any) -> Any:
    """Right when the largest logit is the label: labels (N, 1) or (N, T, 1) against logits (N, classes) or
    (N, T, classes). (Keras 2.2.4's sparse_categorical_accuracy flattens y_true: wrong for per-step labels.)"""
    return K.cast(K.equal(K.max(y_true, axis=-1), K.cast(K.argmax(y_pred, axis=-1), K.floatx())), K.floatx())


def _binary_accuracy(y_true: Any, y_pred: Any) -> Any:
    """Right when the logit's sign matches the label (logit 0 = probability 0.5)."""
    return K.mean(K.cast(K.equal(y_true, K.cast(K.greater(y_pred, 0.0), K.floatx())), K.floatx()), axis=-1)


_LOSS_NAMES = {
    "categorical": "K.sparse_categorical_crossentropy(from_logits=True)",
    "binary": "K.binary_crossentropy(from_logits=True)",
    "sequence": "K.sparse_categorical_crossentropy(from_logits=True) on the (N*T, classes) logits, per step",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


class _DecoupledWeightDecay:
    """A weight's Keras 2.2.4 constraint that applies decoupled weight decay.

    Every Keras 2.2.4 optimizer ends its update of a weight w with new_w = w.constraint(new_w);
    this one returns new_w - lr * weight_decay * w (w: the value before the step), which is
    common.WEIGHT_DECAY_RULE. An existing constraint is applied after it.
    """

    def __init__(self, weight: Any, factor: float, then: Any = None) -> None:
        self.weight = weight
        self.factor = factor
        self.then = then

    def __call__(self, new_value: Any) -> Any:
        decayed = new_value - self.factor * self.weight
        return decayed if self.then is None else self.then(decayed)


def _add_weight_decay(model: Any, lr: float, weight_decay: float) -> None:
    """Attach _DecoupledWeightDecay to every trainable weight (as Keras' K.variable stores a constraint)."""
    if not weight_decay:
        return
    for weight in model.trainable_weights:
        constraint = _DecoupledWeightDecay(weight, lr * weight_decay, getattr(weight, "constraint", None))
        try:
            weight.constraint = constraint
        except AttributeError:  # tf.Variable's read-only property reads _constraint
            weight._constraint = constraint


def make_optimizer(opt: Dict[str, Any]) -> Any:
    """The spec's optimizer in Keras 2.2.4 (lr=; decay=0: no learning-rate decay)."""
    optimizers = keras.optimizers
    if opt["name"] == "sgd":
        return optimizers.SGD(lr=opt["lr"], momentum=opt["momentum"], decay=0.0, nesterov=False)
    if opt["name"] == "adadelta":
        return optimizers.Adadelta(lr=opt["lr"], rho=opt["rho"], epsilon=opt["epsilon"], decay=0.0)
    return optimizers.Adam(lr=opt["lr"], beta_1=opt["beta1"], beta_2=opt["beta2"], epsilon=opt["epsilon"],
                           decay=0.0, amsgrad=False)


# -- runtime: backend, device, threads -----------------------------------------------------------
def _configure_runtime(device: str, seed: int) -> Tuple[str, Dict[str, Any]]:
    """Device, threads and seeds of the backend in use: (device, threads) for info()."""
    random.seed(seed)
    np.random.seed(seed)  # Keras draws its initializers' and dropout's seeds from NumPy
    if device not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
    n = common.threads_from_env()
    K.clear_session()  # a fresh graph, whose seed is set next
    tf.set_random_seed(seed)
    config = tf.ConfigProto(intra_op_parallelism_threads=n or 0, inter_op_parallelism_threads=n or 0)
    if device == "cpu":
        config.device_count["GPU"] = 0
    elif not any(d.device_type == "GPU" for d in device_lib.list_local_devices()):
        build = "CUDA build" if tf.test.is_built_with_cuda() else "CPU-only build"
        raise RuntimeError(f"device 'gpu' requested but TensorFlow sees no GPU ({tf.__version__}, {build})")
    K.set_session(tf.Session(config=config))
    cores = os.cpu_count() or 1
    return device, {"intra_op": n or cores, "inter_op": n or cores}


class KerasTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Keras 2.2.4."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.device, self.threads = _configure_runtime(device, seed)
        self.rng = np.random.RandomState(seed)  # shuffling: depends on the seed alone
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        self.seq2seq = self.spec_model.encoder is not None
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.train = self._arrays(data.train)
        self.test = self._arrays(data.test)
        steps = None if self.seq2seq or self.spec_model.input_shape else self.train["x"][0].shape[1]
        self.model = build_model(self.spec_model, steps, gpu=self.device == "gpu")
        self.epoch = 0
        self.steps = 0  # step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s and infer()'s batch order, made once
        started = time.perf_counter()
        if self.kind == modelplan.FEATURES:  # only run forward (infer): nothing to train or score
            self.model._make_predict_function()
        else:
            self._compile()
        self.compile_seconds = round(time.perf_counter() - started, 2)

    def _compile(self) -> None:
        """Compile the model with the spec's loss, metrics and optimizer, and build the training and test
        functions now (Keras would on the first batch): the graph construction is setup, and info() reads it."""
        _add_weight_decay(self.model, self.opt_settings["lr"], self.opt_settings["weight_decay"])
        weighted = self.train["w"] is not None
        accuracy = _binary_accuracy if self.kind == "binary" else _sparse_accuracy
        if self.kind == "sequence":
            loss = _sequence_loss_fn(self.spec_model.layers[-1]["units"])
        else:
            loss = _binary_loss if self.kind == "binary" else _categorical_loss
        self.model.compile(
            optimizer=make_optimizer(self.opt_settings), loss=loss,
            metrics=None if weighted else [accuracy], weighted_metrics=[accuracy] if weighted else None,
            sample_weight_mode="temporal" if weighted else None,
        )
        self.model._make_train_function()
        self.model._make_test_function()

    def _arrays(self, split: dict) -> Dict[str, Any]:
        """{x: model inputs (a list), y: labels shaped like the output with one class axis, w: per-token
        weights or None, counts: per-row counted predictions} of one split's role arrays."""
        x = split["x"]
        if x.ndim == 4:
            x = x.astype(np.float32) / np.float32(255.0)  # NHWC stays: channels_last
        else:
            if "len" in split:
                common.check_post_padded(x, split["len"])  # the mask Keras derives must match len
            x = np.asarray(x, dtype=np.int32)
        inputs = [x, np.asarray(split["x_dec"], dtype=np.int32)] if self.seq2seq else [x]
        y = np.asarray(split["y"])
        weights = None
        if self.kind == "sequence":
            mask = common.token_mask(y, split.get("y_len"))
            if "y_len" in split:
                weights = mask.astype(np.float32)
            counts = mask.sum(axis=1)
        else:
            counts = np.ones(len(y), dtype=np.int64)
        # Targets: the output's rank with one class axis: (N, 1) or (N, T, 1), float32 as Keras' placeholder.
        return {"x": inputs, "y": y.astype(np.float32)[..., None], "w": weights, "counts": counts}

    @staticmethod
    def _rows(split: Dict[str, Any], rows: Any) -> Tuple[List[np.ndarray], np.ndarray, Optional[np.ndarray]]:
        w = split["w"]
        return [x[rows] for x in split["x"]], split["y"][rows], None if w is None else w[rows]

    def param_count(self) -> int:
        """Trainable parameters (keras.layers.LSTM has one bias vector per gate set)."""
        return int(sum(int(np.prod(K.int_shape(w))) for w in self.model.trainable_weights))

    def _next_rows(self) -> np.ndarray:
        """The rows of step()'s and infer()'s next batch: the training set in order, wrapping around."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train["y"]), self.batch_size)
        return self._ring.ring[self._ring.take()]

    def step(self) -> float:
        """One train_on_batch on the next batch of the training set in order, wrapping around; the batch's
        loss (per counted token for sequences, as train_epoch's)."""
        x, y, w = self._rows(self.train, self._next_rows())
        loss = float(self.model.train_on_batch(x, y, sample_weight=w)[0])
        self.steps += 1
        if not math.isfinite(loss):
            raise NonFiniteLoss(f"loss became {loss} at step {self.steps} (Trainer.step)")
        return loss

    def infer(self) -> np.ndarray:
        """One predict_on_batch (learning phase 0: moving batchnorm statistics, dropout off) on the next batch
        of the training set in step()'s order; its outputs on the host (N, output values)."""
        x, _, _ = self._rows(self.train, self._next_rows())
        return np.asarray(self.model.predict_on_batch(x))

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass of train_on_batch in a seeded order; (mean loss, training accuracy), per example or
        per counted token."""
        self.epoch += 1
        n = len(self.train["y"])
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        total, correct, seen = 0.0, 0.0, 0
        for b, start in enumerate(common.batches(n, self.batch_size)):
            rows = order[start:start + self.batch_size]
            x, y, w = self._rows(self.train, rows)
            loss, accuracy = (float(v) for v in self.model.train_on_batch(x, y, sample_weight=w))
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"loss became {loss} at step {b + 1} of epoch {self.epoch}")
            weight = int(self.train["counts"][rows].sum())
            total += loss * weight
            correct += accuracy * weight
            seen += weight
        return total / seen, correct / seen

    def evaluate(self) -> float:
        """Test accuracy (per example or per counted token) from test_on_batch (learning phase 0:
        dropout off), in batches of the training batch size."""
        n = len(self.test["y"])
        correct, seen = 0.0, 0
        for start in common.batches(n, self.batch_size):
            rows = np.arange(start, min(start + self.batch_size, n))
            x, y, w = self._rows(self.test, rows)
            accuracy = float(self.model.test_on_batch(x, y, sample_weight=w)[1])
            weight = int(self.test["counts"][rows].sum())
            correct += round(accuracy * weight)  # a batch's right predictions: a whole number
            seen += weight
        return correct / seen

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits of a batch of role arrays (x, x_dec for an encoder-decoder), in inference mode."""
        roles = ("x", "x_dec") if self.seq2seq else ("x",)
        inputs = [np.asarray(batch[role], dtype=np.int32) for role in roles]
        return np.asarray(self.model.predict_on_batch(inputs))

    def synchronize(self) -> None:
        """Nothing to wait for: train_on_batch and test_on_batch return when their work is done."""

    # -- what ran ----------------------------------------------------------------------------
    def _graph_ops(self) -> List[str]:
        """Op types of the session's graph (the built training and test functions')."""
        return sorted({op.type for op in K.get_session().graph.get_operations()})

    def _kernels(self) -> Dict[str, str]:
        ops = self._graph_ops()
        types = {layer.type for layer in self.spec_model.flat_layers}
        where = "TensorFlow {} {}".format(tf.__version__, "GPU (cuDNN)" if self.device == "gpu" else "CPU (Eigen)")
        conv_ops = [o for o in ops if o.startswith("Conv2D")]
        pool_ops = [o for o in ops if o.startswith("MaxPool")]
        dot_ops = [o for o in ops if o in ("MatMul", "BatchMatMul")]
        kernels = {}
        if "conv2d" in types:
            kernels["conv2d"] = "keras.layers.Conv2D -> {} ({})".format(", ".join(conv_ops), where)
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "keras.layers.MaxPooling2D -> {} ({})".format(", ".join(pool_ops), where)
        if "dense" in types:
            per_step = " on (N, T, units): every step" if self.kind == "sequence" else ""
            kernels["dense"] = "keras.layers.Dense{} -> {} ({})".format(per_step, ", ".join(dot_ops), where)
        if "lstm" in types:
            kernels["lstm"] = (
                "keras.layers.LSTM (implementation=1, recurrent_activation='sigmoid', one bias per gate) -> "
                f"K.rnn over time steps: tf.while_loop ({where}); CuDNNLSTM cannot take a mask in Keras 2.2.4")
            if any(layer.type == "lstm" and layer["use_lengths"] for layer in self.spec_model.all_layers):
                kernels["lstm_lengths"] = "Embedding(mask_zero=True): state after the last real token"
            if self.seq2seq:
                kernels["lstm_state"] = "encoder LSTM(return_state=True) -> decoder LSTM(initial_state=[h, c])"
        kernels.update(self._newer_kernels(types, ops, where))
        return kernels

    def _newer_kernels(self, types: set, ops: List[str], where: str) -> Dict[str, str]:
        """The kernels of the layers beyond DLBench's (the residual vocabulary, concat, lrn, gru)."""
        kernels = {}
        if "batchnorm" in types:
            norm = [o for o in ops if o.startswith("FusedBatchNorm")] or ["moments, batch_normalization"]
            kernels["batchnorm"] = (f"keras.layers.BatchNormalization -> {', '.join(norm)} ({where}; train_on_batch: "
                                    "batch statistics, test_on_batch and predict_on_batch: moving ones)")
        if "avgpool2d" in types:
            kernels["avgpool2d"] = f"keras.layers.AveragePooling2D -> AvgPool ({where}; 'same': real values only)"
        if "residual" in types:
            kernels["residual"] = ("functional keras.models.Model: Add()([branch, shortcut]) -> Activation; "
                                   "projection 1x1 Conv2D(use_bias=False) + BatchNormalization")
        if "concat" in types:
            kernels["concat"] = "functional keras.models.Model: Concatenate(axis=-1)(branches) (channels_last)"
        if "lrn" in types:
            kernels["lrn"] = f"keras.layers.Lambda(tf.nn.local_response_normalization) -> LRN ({where})"
        if "gru" in types:
            cudnn = any(isinstance(layer, keras.layers.CuDNNGRU) for layer in self.model.layers)
            gpu_only = "; CuDNNGRU is GPU-only in Keras 2.2.4" if self.device == "cpu" else ""
            kernels["gru"] = ("keras.layers.CuDNNGRU (cuDNN's fused GRU)" if cudnn else
                              "keras.layers.GRU (reset_after=True, recurrent_activation='sigmoid') -> K.rnn over "
                              f"time steps: tf.while_loop ({where}{gpu_only})")
        return kernels

    def _layout(self) -> str:
        if self.spec_model.input_shape:
            return "NHWC (channels_last)"
        return "token ids (N, T): x and x_dec, functional inputs" if self.seq2seq else "token ids (N, T)"

    def info(self) -> dict:
        """What was really used: backend, device, threads, kernels, layout, optimizer semantics, versions."""
        return {
            "framework": NAME,
            "versions": versions(),
            "backend": BACKEND,
            "device": self.device,
            "device_name": common.cpu_name() if self.device == "cpu" else self._gpu_name(),
            "threads": self.threads,
            "kernels": self._kernels(),
            "data_layout": self._layout(),
            "input_pipeline": "NumPy arrays, one train_on_batch per batch of a seeded permutation each epoch",
            "loss": self._loss_description(),
            "optimizer": self.opt_settings,
            "optimizer_impl": ("none: not compiled (a features model)" if self.model.optimizer is None else
                               f"keras.optimizers.{type(self.model.optimizer).__name__}(lr=...)"),
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "weight_decay_impl": (
                "each trainable weight's constraint (applied by Keras 2.2.4 optimizers to the updated value): "
                "new_w - lr * weight_decay * w" if self.opt_settings["weight_decay"] and self.model.optimizer
                else "none (weight_decay 0, or not compiled)"),
            "keras_config": {"floatx": K.floatx(), "epsilon": K.epsilon(), "image_data_format": K.image_data_format()},
            "compile_seconds": self.compile_seconds,
        }

    def _loss_description(self) -> str:
        if self.kind == modelplan.FEATURES:
            return _LOSS_NAMES[self.kind]
        weighted = " with sample weight 0 past y_len (sample_weight_mode='temporal')" if self.train["w"] is not None \
            else ""
        return _LOSS_NAMES[self.kind] + weighted + " (output activation folded into the loss)"

    def _gpu_name(self) -> str:
        for d in device_lib.list_local_devices():
            if d.device_type == "GPU":
                return d.physical_device_desc
        return "GPU"


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> KerasTrainer:
    """Build and compile the spec's model for `device` ('cpu' or 'gpu') with the given seed."""
    return KerasTrainer(spec, data, device, seed)
