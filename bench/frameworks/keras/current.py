"""Keras 3 on TensorFlow: translates a workload spec into a Keras model trained with fit().

Runs inside the keras environment. Idiomatic Keras: a keras.Sequential for a stack of layers, the
functional API for an encoder-decoder (inputs "x" and "x_dec"; the encoder LSTM's
return_state=True gives the decoder LSTM its initial_state); arrays go straight to model.fit
(Keras' own tf.data pipeline, channels_last images), one fit(epochs=1) call per epoch so the
entrypoint owns the epoch clock, evaluate() for test accuracy, and Keras' defaults elsewhere
(initializers, XLA where Keras turns it on by itself). The LSTM sees real lengths through
Embedding(mask_zero=True); with post-padding the mask stays right-padded, which keeps
TensorFlow's cuDNN LSTM path eligible on a GPU.

Sequence labels: Dense on the (N, T, units) LSTM output (one matmul over all steps), integer
targets (N, T), and the tokens past y_len get sample weight 0 (a temporal sample_weight array
given to fit and evaluate). Keras 3.15 reduces a weighted loss with "sum_over_batch_size" by
dividing by all N*T steps, and its fit() loss averages batches by rows; the loss here uses
reduction "mean_with_sample_weight" (divides by the counted tokens) and the epoch's loss and
accuracy are weighted metrics, so both are means over counted tokens, as the contract says.
"""

from __future__ import annotations

import math
import os
import platform
from typing import Any

# Both must be set before TensorFlow is first imported: the backend is chosen at import and
# TF's C++ logging level is read once.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench import modelplan, switches  # noqa: E402
from bench.detection import detector  # noqa: E402
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import NonFiniteLoss, common  # noqa: E402
from bench.frameworks.keras import CAPABILITIES  # noqa: E402
from bench.frameworks.keras.current_optimizers import make_optimizer  # noqa: E402

NAME = "keras"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN TF was built with)."""
    out = {
        "keras": keras.__version__,
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "keras_backend": keras.backend.backend(),
    }
    build = tf.sysconfig.get_build_info()
    for key in ("cuda_version", "cudnn_version"):
        if build.get(key):
            out[key.replace("_version", "")] = str(build[key])
    return out


class LocalResponseNormalization(keras.layers.Layer):
    """Local response normalization in the plan's (TensorFlow's) convention, written with keras.ops: Keras 3 has
    no such layer. Channels last: each value divided by (bias + alpha * the sum of the squares of the
    2 * depth_radius + 1 channels around it, zeros past the first and the last)**beta."""

    def __init__(self, depth_radius: int, bias: float, alpha: float, beta: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.depth_radius, self.bias, self.alpha, self.beta = depth_radius, bias, alpha, beta

    def call(self, x: Any) -> Any:
        ops, r = keras.ops, self.depth_radius
        channels = x.shape[-1]
        squares = ops.pad(ops.square(x), [(0, 0)] * (len(x.shape) - 1) + [(r, r)])
        # The window's sum: the padded squares shifted by each of its 2r + 1 offsets, added.
        total = squares[..., :channels]
        for offset in range(1, 2 * r + 1):
            total = total + squares[..., offset : offset + channels]
        return x / ops.power(self.bias + self.alpha * total, self.beta)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "depth_radius": self.depth_radius, "bias": self.bias, "alpha": self.alpha,
                "beta": self.beta}


def build_model(model: modelplan.ModelPlan, steps: int | None) -> keras.Model:
    """Translate planned layers into a Keras model (Keras infers the shapes it passes on).

    A stack is a keras.Sequential over images of the plan's input shape or `steps` token ids; an
    encoder-decoder is a functional keras.Model (build_seq2seq).
    """
    if model.encoder is not None:
        return build_seq2seq(model)
    if any(layer.type in ("residual", "concat") for layer in model.layers):
        return build_residual(model)
    if model.input_shape is not None:
        stack: list[Any] = [keras.Input(shape=model.input_shape, dtype="float32")]
    else:
        stack = [keras.Input(shape=(steps,), dtype="int32")]
    mask_zero = _reads_lengths(model.layers, "layer")
    stack += [_layer(layer, mask_zero) for layer in model.layers]
    return keras.Sequential(stack)


def build_seq2seq(model: modelplan.ModelPlan) -> keras.Model:
    """The encoder-decoder of the Keras seq2seq examples, with the functional API.

    Inputs "x" (source ids) and "x_dec" (decoder input ids), any length. The encoder's last LSTM
    returns its state (return_state=True); with the source embedding's mask (mask_zero=True) that
    is the state at each sentence's last real token. The decoder LSTM starts from it
    (initial_state) and the output dense layer runs on every step of its sequence output.
    """
    source = keras.Input(shape=(None,), dtype="int32", name="x")
    target = keras.Input(shape=(None,), dtype="int32", name="x_dec")
    h: Any = source
    mask_zero = _reads_lengths(model.encoder, "encoder layer")
    for i, layer in enumerate(model.encoder):
        if i == len(model.encoder) - 1:  # the LSTM whose final state starts the decoder
            h, *state = _layer(layer, mask_zero, return_state=True)(h)
        else:
            h = _layer(layer, mask_zero)(h)
    # No mask on the decoder side: its steps past y_len get sample weight 0 instead (KerasTrainer).
    h = target
    for layer in model.layers:
        if layer.get("initial_state") == "encoder":
            h = _layer(layer, False)(h, initial_state=state)
        else:
            h = _layer(layer, False)(h)
    return keras.Model({"x": source, "x_dec": target}, h, name="seq2seq")


def build_residual(model: modelplan.ModelPlan) -> keras.Model:
    """A stack with residual blocks or concats, as a functional keras.Model: each block adds its branch's
    output to its shortcut's (the input itself where the shortcut is the identity), then the activation;
    a concat stacks its branches' outputs on channels (channels_last: the last axis)."""
    return build_functional(model.layers, model.input_shape, "residual")


def build_functional(layers: list[modelplan.Layer], input_shape: tuple, name: str) -> keras.Model:
    """Planned image layers (residual blocks and concats included) as a functional keras.Model on float32
    inputs of `input_shape` (H, W, C); H and W may be None (a detector's trunk takes any padded size)."""
    image = keras.Input(shape=tuple(input_shape), dtype="float32")
    return keras.Model(image, _apply(layers, image), name=name)


def _apply(layers: list[modelplan.Layer], h: Any) -> Any:
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


def _reads_lengths(layers: list[modelplan.Layer], what: str) -> bool:
    """Whether an LSTM of the list reads real lengths, which the embedding's mask then carries."""
    for i, layer in enumerate(layers):
        if layer["type"] == "lstm" and layer["use_lengths"] and not any(p["type"] == "embedding" for p in layers[:i]):
            raise modelplan.SpecError(f"{what} {i}: use_lengths needs an embedding before the lstm")
    return any(layer["type"] == "lstm" and layer["use_lengths"] for layer in layers)


def _layer(layer: modelplan.Layer, mask_zero: bool, return_state: bool = False) -> keras.layers.Layer:
    """The Keras layer for one planned layer; mask_zero: the embedding masks id 0 (padding)."""
    layers = keras.layers
    kind = layer["type"]
    if kind == "conv2d":
        return layers.Conv2D(
            layer["filters"], layer["kernel"], strides=layer["stride"],
            padding=layer["padding"], activation=layer["activation"], use_bias=layer["bias"],
        )
    if kind == "maxpool2d":
        return layers.MaxPooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"])
    if kind == "avgpool2d":  # TensorFlow's 'same' average counts the real values only, as the plan defines
        return layers.AveragePooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"])
    if kind == "lrn":  # the plan's parameters as given: the layer computes TensorFlow's formula
        return LocalResponseNormalization(layer["depth_radius"], layer["bias"], layer["alpha"], layer["beta"])
    if kind == "global_avgpool":
        return layers.GlobalAveragePooling2D()
    if kind == "batchnorm":  # the plan's momentum is Keras' own convention
        return layers.BatchNormalization(momentum=layer["momentum"], epsilon=layer["epsilon"])
    if kind == "activation":
        return layers.Activation(layer["activation"])
    if kind == "dropout":
        return layers.Dropout(layer["rate"])
    if kind == "flatten":
        return layers.Flatten()
    if kind == "dense":
        # On a sequence Keras' Dense contracts the last axis: one (N*T, units) matmul for all steps.
        return layers.Dense(layer["units"], activation=layer["activation"])
    if kind == "embedding":
        return layers.Embedding(layer["input_dim"], layer["output_dim"], mask_zero=mask_zero)
    if kind == "gru":  # reset_after (Keras 3's default, said here): cuDNN's form, two bias vectors per gate set
        return layers.GRU(layer["units"], return_sequences=layer["return_sequences"], reset_after=True,
                          use_cudnn=switches.keras_use_cudnn())
    # Default activations, no recurrent dropout, unroll=False: the cuDNN-eligible settings.
    return layers.LSTM(layer["units"], return_sequences=layer["return_sequences"], return_state=return_state)


def configure_runtime(device: str) -> None:
    """Threads and device visibility; TensorFlow accepts both only before its runtime starts."""
    n = common.threads_from_env()
    try:
        if n is not None:
            tf.config.threading.set_intra_op_parallelism_threads(n)
            tf.config.threading.set_inter_op_parallelism_threads(n)
        if device == "cpu":
            tf.config.set_visible_devices([], "GPU")
    except RuntimeError:
        pass  # runtime already started (a second trainer in one process): keep what is in force
    if device == "gpu" and not tf.config.list_logical_devices("GPU"):
        build = "tensorflow-cpu build" if not tf.test.is_built_with_cuda() else "CUDA build"
        raise RuntimeError(f"device 'gpu' requested but TensorFlow sees no GPU ({tf.__version__}, {build})")
    if device not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


class _StopOnNonFinite(keras.callbacks.Callback):
    """Stops fit() at the first non-finite running loss (NaN in any batch makes the mean NaN)."""

    # Checked on Keras' callback thread, so the training loop never waits on a host read for it.
    async_safe = True

    def __init__(self) -> None:
        super().__init__()
        self.bad: tuple[int, float] | None = None

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = float((logs or {}).get("loss", 0.0))
        if self.bad is None and not math.isfinite(loss):
            self.bad = (batch, loss)
            self.model.stop_training = True


class KerasTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Keras 3 on TensorFlow."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        configure_runtime(device)
        self.device = device
        keras.utils.set_random_seed(seed)  # Python, NumPy and TensorFlow generators
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.seq2seq = self.spec_model.encoder is not None
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.x_train, self.y_train, self.w_train = self._arrays(data.train)
        self.x_test, self.y_test, self.w_test = self._arrays(data.test)
        steps = None if self.seq2seq or self.spec_model.input_shape else self.x_train.shape[1]  # token ids (N, T)
        self.model = build_model(self.spec_model, steps)
        loss, metrics = self._loss_and_metrics()
        # On a CPU run Keras' "auto" would still pick XLA if the machine has a GPU; keep what it
        # picks on a CPU-only machine (no XLA) so CPU runs are the same everywhere.
        self.model.compile(
            optimizer=make_optimizer(keras.optimizers, self.opt_settings),
            loss=loss,
            jit_compile="auto" if device == "gpu" else False,
            **metrics,
        )
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring: common.StepRing | None = None  # step()'s batch order, made on its first call

    def _loss_and_metrics(self) -> tuple[keras.losses.Loss, dict[str, list]]:
        """The compiled loss and the compile() metrics argument for the spec's kind of labels."""
        if self.kind == modelplan.FEATURES:  # only run forward (infer): nothing to train or score
            return None, {}
        if self.kind == "categorical":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            return loss, {"metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        if self.kind == "binary":
            loss = keras.losses.BinaryCrossentropy(from_logits=True)
            return loss, {"metrics": [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]}  # logit 0 = p 0.5
        # Sequence labels: the steps past y_len get sample weight 0. Keras' default reduction
        # ("sum_over_batch_size") would divide the weighted sum by all N*T steps; this one divides
        # by the sum of the weights, the number of counted tokens: the token mean of the contract.
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
        # fit()'s "loss" weights each batch by its rows; weighted Mean metrics add up the weights,
        # so these are token-weighted over the epoch (the loss again, and token accuracy).
        return loss, {"weighted_metrics": [
            keras.metrics.SparseCategoricalCrossentropy(from_logits=True, name="token_loss"),
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
        ]}

    def _arrays(self, split: dict) -> tuple[Any, np.ndarray, np.ndarray | None]:
        """(model inputs, labels, per-token sample weights or None) of one split's role arrays."""
        x = split["x"]
        if x.ndim == 4:
            x = x.astype(np.float32) / np.float32(255.0)  # NHWC stays: Keras' channels_last
        else:
            if "len" in split:
                common.check_post_padded(x, split["len"])  # the mask Keras derives must match len
            x = np.asarray(x, dtype=np.int32)
        if self.seq2seq:
            x = {"x": x, "x_dec": np.asarray(split["x_dec"], dtype=np.int32)}
        y = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "binary":
            y = y.astype(np.float32).reshape(-1, 1)
        weights = None
        if self.kind == "sequence" and "y_len" in split:
            weights = common.token_mask(y, split["y_len"]).astype(np.float32)
        return x, y, weights

    def param_count(self) -> int:
        """Trainable parameters (keras.layers.LSTM has one bias vector per gate set)."""
        return int(sum(int(np.prod(w.shape)) for w in self.model.trainable_weights))

    def _rows(self, x: Any, idx: np.ndarray) -> Any:
        """Rows idx of model inputs: an array, or each array of an encoder-decoder's dict."""
        return {role: arr[idx] for role, arr in x.items()} if isinstance(x, dict) else x[idx]

    def step(self) -> float:
        """One train_on_batch() (fit()'s compiled train function, on one batch) on the next batch of the
        training set in order, wrapping around; the batch's loss (token loss for sequences, as train_epoch)."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.y_train), self.batch_size)
        idx = self._ring.ring[self._ring.take()]
        weights = None if self.w_train is None else self.w_train[idx]
        logs = self.model.train_on_batch(self._rows(self.x_train, idx), self.y_train[idx], sample_weight=weights,
                                         return_dict=True)
        self.steps += 1
        value = float(logs["token_loss" if self.kind == "sequence" else "loss"])
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One predict_on_batch() (Keras' compiled predict function: model(x, training=False)) on the next
        batch of the training set in order, wrapping around as step() does; its outputs on the host
        (N, output values), as ilkarman's Keras feature extraction does."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.y_train), self.batch_size)
        idx = self._ring.ring[self._ring.take()]
        return np.asarray(self.model.predict_on_batch(self._rows(self.x_train, idx)))

    def train_epoch(self) -> tuple[float, float | None]:
        """One fit() epoch; (mean loss per example or per counted token, training accuracy over the epoch)."""
        self.epoch += 1
        guard = _StopOnNonFinite()
        history = self.model.fit(
            self.x_train, self.y_train, sample_weight=self.w_train, batch_size=self.batch_size, epochs=1,
            shuffle=self.shuffle, verbose=0, callbacks=[guard],
        ).history
        loss = float(history["token_loss" if self.kind == "sequence" else "loss"][-1])
        if guard.bad is not None or not math.isfinite(loss):
            step, value = guard.bad if guard.bad is not None else (None, loss)
            where = f"at step {step + 1} " if step is not None else ""
            raise NonFiniteLoss(f"loss became {value} {where}of epoch {self.epoch}")
        return loss, float(history["accuracy"][-1])

    def evaluate(self) -> float:
        """Test accuracy (token accuracy over counted tokens for sequences) from model.evaluate (dropout off)."""
        result = self.model.evaluate(
            self.x_test, self.y_test, sample_weight=self.w_test, batch_size=self.batch_size,
            verbose=0, return_dict=True,
        )
        return float(result["accuracy"])

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits of a batch of token-id role arrays in inference mode: (N, T, classes) for sequence labels."""
        x = np.asarray(batch["x"], dtype=np.int32)
        inputs = {"x": x, "x_dec": np.asarray(batch["x_dec"], dtype=np.int32)} if self.seq2seq else x
        return np.asarray(self.model.predict_on_batch(inputs))

    def synchronize(self) -> None:
        """Nothing to wait for: fit() and evaluate() return only when their work is done."""

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        gpu = self.device == "gpu"
        gpus = tf.config.list_logical_devices("GPU")
        if gpu and gpus:
            details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
            device_name = details.get("device_name", gpus[0].name)
        else:
            device_name = common.cpu_name()
        cores = os.cpu_count() or 1
        intra = tf.config.threading.get_intra_op_parallelism_threads() or cores  # 0 = TF's default
        inter = tf.config.threading.get_inter_op_parallelism_threads() or cores
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "GPU:0" if gpu else "CPU",
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": self._kernels(gpu),
            "jit_compile": bool(getattr(self.model, "jit_compile", False)),
            "data_layout": self._layout(),
            "input_pipeline": "NumPy arrays to model.fit (Keras' tf.data adapter, shuffled each epoch)",
            "loss": self._loss_description(),
            "optimizer": self.opt_settings,
            "optimizer_impl": f"keras.optimizers.{type(self.model.optimizer).__name__}",
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    def _kernels(self, gpu: bool) -> dict[str, str]:
        all_layers = self.spec_model.all_layers
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("keras.layers.BatchNormalization (fit/train_on_batch: batch statistics; "
                                    "evaluate: moving ones)")
        if "residual" in types:
            kernels["residual"] = ("functional keras.Model: Add()([branch, shortcut]) -> Activation; "
                                   "projection 1x1 Conv2D + BN")
        if "concat" in types:
            kernels["concat"] = "functional keras.Model: Concatenate(axis=-1)(branches) (channels_last)"
        if "lrn" in types:
            kernels["lrn"] = ("LocalResponseNormalization, a keras.layers.Layer of keras.ops (Keras 3 has none): "
                              "squares padded on the channel axis, the 2 * depth_radius + 1 shifted slices added")
        if "conv2d" in types:
            onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") != "0"
            kernels["conv2d"] = "keras.layers.Conv2D (" + (
                "cuDNN" if gpu else f"TensorFlow CPU{', oneDNN' if onednn else ''}"
            ) + ")"
        if "lstm" in types:
            kernels["lstm"] = (
                "keras.layers.LSTM (cuDNN path eligible: default activations, right-padded mask)"
                if gpu else "keras.layers.LSTM (TensorFlow CPU loop over all steps; cuDNN needs a GPU)"
            )
            if any(layer["type"] == "lstm" and layer["use_lengths"] for layer in all_layers):
                kernels["lstm_lengths"] = "Embedding(mask_zero=True): state after the last real token"
            if self.seq2seq:
                kernels["lstm_state"] = "encoder LSTM(return_state=True) -> decoder LSTM(initial_state=[h, c])"
        if "gru" in types:
            use_cudnn = switches.keras_use_cudnn()
            kernels["gru"] = f"keras.layers.GRU(reset_after=True, use_cudnn={use_cudnn!r}) " + (
                "(TensorFlow's loop over all steps: the plain kernel)" if use_cudnn is False
                else "(cuDNN path eligible: default activations, no mask)" if gpu
                else "(TensorFlow CPU loop over all steps; cuDNN needs a GPU)")
        if self.kind == "sequence":
            kernels["dense"] = "keras.layers.Dense on (N, T, units): one matmul over (N*T, units)"
        return kernels

    def _layout(self) -> str:
        if self.spec_model.input_shape:
            return "NHWC (channels_last)"
        return "token ids (N, T): x and x_dec, functional inputs" if self.seq2seq else "token ids (N, T)"

    def _loss_description(self) -> str:
        if self.kind == modelplan.FEATURES:
            return "none: a features model (model.output = 'features') is only run forward (infer)"
        if self.kind == "sequence":
            return (
                "SparseCategoricalCrossentropy(from_logits=True, reduction='mean_with_sample_weight') per step"
                + (" with sample weight 0 past y_len" if self.w_train is not None else "")
                + ": the mean over counted tokens (output activation folded into the loss)"
            )
        return ("SparseCategoricalCrossentropy" if self.kind == "categorical" else "BinaryCrossentropy") + (
            "(from_logits=True) (output activation folded into the loss)"
        )


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> KerasTrainer | DetectionTrainer:
    """Build and compile the spec's model for `device` ('cpu' or 'gpu') with the given seed; a detector
    (model.architecture "faster_rcnn") gets current_detection's DetectionTrainer instead."""
    if detector.is_detector(spec):
        # Imported here: current_detection imports this module for its builders.
        from bench.frameworks.keras import current_detection

        return current_detection.make_trainer(spec, data, device, seed)
    return KerasTrainer(spec, data, device, seed)
