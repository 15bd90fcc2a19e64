"""Keras 3 on TensorFlow: translates a workload spec into a keras.Sequential trained with fit().

Runs inside the keras environment. Idiomatic Keras: arrays go straight to model.fit (Keras'
own tf.data pipeline, channels_last images), one fit(epochs=1) call per epoch so the entrypoint
owns the epoch clock, evaluate() for test accuracy, and Keras' defaults elsewhere (initializers,
XLA where Keras turns it on by itself). The LSTM sees real lengths through Embedding(mask_zero=
True); with post-padding the mask stays right-padded, which keeps TensorFlow's cuDNN LSTM path
eligible on a GPU.
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

from bench.frameworks import NonFiniteLoss, _common  # noqa: E402

NAME = "keras"
PACKAGE = "keras"  # whose version is the framework's version


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


def build_model(model: _common.Model, input_shape: tuple[int, ...], input_dtype: str) -> keras.Sequential:
    """Translate validated spec layers into Keras layers (shapes are inferred by Keras)."""
    layers = keras.layers
    # The embedding masks id 0 (padding) when an LSTM reads real lengths.
    mask_zero = any(layer["type"] == "lstm" and layer["use_lengths"] for layer in model.layers)
    stack: list[Any] = [keras.Input(shape=input_shape, dtype=input_dtype)]
    for i, layer in enumerate(model.layers):
        kind = layer["type"]
        if kind == "conv2d":
            stack.append(
                layers.Conv2D(
                    layer["filters"], layer["kernel"], strides=layer["stride"],
                    padding=layer["padding"], activation=layer["activation"],
                )
            )
        elif kind == "maxpool2d":
            stack.append(layers.MaxPooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"]))
        elif kind == "dropout":
            stack.append(layers.Dropout(layer["rate"]))
        elif kind == "flatten":
            stack.append(layers.Flatten())
        elif kind == "dense":
            stack.append(layers.Dense(layer["units"], activation=layer["activation"]))
        elif kind == "embedding":
            stack.append(layers.Embedding(layer["input_dim"], layer["output_dim"], mask_zero=mask_zero))
        elif kind == "lstm":
            if layer["use_lengths"] and not any(p["type"] == "embedding" for p in model.layers[:i]):
                raise _common.SpecError(f"layer {i}: use_lengths needs an embedding before the lstm")
            # Default activations, no recurrent dropout, unroll=False: the cuDNN-eligible settings.
            stack.append(layers.LSTM(layer["units"], return_sequences=layer["return_sequences"]))
    return keras.Sequential(stack)


def _configure_runtime(device: str) -> None:
    """Threads and device visibility; TensorFlow accepts both only before its runtime starts."""
    n = _common.threads_from_env()
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
        _configure_runtime(device)
        self.device = device
        keras.utils.set_random_seed(seed)  # Python, NumPy and TensorFlow generators
        self.spec_model = _common.model_layers(spec)
        self.kind = self.spec_model.kind
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = _common.optimizer_settings(spec)
        self.x_train, self.y_train = self._arrays(data.train)
        self.x_test, self.y_test = self._arrays(data.test)
        dtype = "float32" if self.x_train.ndim == 4 else "int32"
        self.model = build_model(self.spec_model, self.x_train.shape[1:], dtype)
        if self.kind == "categorical":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            metric = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
        else:
            loss = keras.losses.BinaryCrossentropy(from_logits=True)
            metric = keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)  # logit 0 = p 0.5
        # On a CPU run Keras' "auto" would still pick XLA if the machine has a GPU; keep what it
        # picks on a CPU-only machine (no XLA) so CPU runs are the same everywhere.
        self.model.compile(
            optimizer=self._make_optimizer(self.opt_settings),
            loss=loss,
            metrics=[metric],
            jit_compile="auto" if device == "gpu" else False,
        )
        self.epoch = 0

    def _make_optimizer(self, opt: dict) -> keras.optimizers.Optimizer:
        # Keras applies weight_decay decoupled (w -= lr * wd * w before each update): the rule
        # every framework module follows (_common.WEIGHT_DECAY_RULE).
        wd = opt["weight_decay"] or None
        if opt["name"] == "sgd":
            return keras.optimizers.SGD(learning_rate=opt["lr"], momentum=opt["momentum"], weight_decay=wd)
        return keras.optimizers.Adam(
            learning_rate=opt["lr"], beta_1=opt["beta1"], beta_2=opt["beta2"],
            epsilon=opt["epsilon"], weight_decay=wd,
        )

    def _arrays(self, split: dict) -> tuple[np.ndarray, np.ndarray]:
        x = split["x"]
        if x.ndim == 4:
            x = x.astype(np.float32) / np.float32(255.0)  # NHWC stays: Keras' channels_last
        else:
            _common.check_post_padded(x, split["len"])  # the mask Keras derives must match len
            x = np.asarray(x, dtype=np.int32)
        y = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "binary":
            y = y.astype(np.float32).reshape(-1, 1)
        return x, y

    def param_count(self) -> int:
        """Trainable parameters (keras.layers.LSTM has one bias vector per gate set)."""
        return int(sum(int(np.prod(w.shape)) for w in self.model.trainable_weights))

    def train_epoch(self) -> tuple[float, float | None]:
        """One fit() epoch; (mean loss per example, training accuracy over the epoch)."""
        self.epoch += 1
        guard = _StopOnNonFinite()
        history = self.model.fit(
            self.x_train, self.y_train, batch_size=self.batch_size, epochs=1,
            shuffle=self.shuffle, verbose=0, callbacks=[guard],
        ).history
        loss = float(history["loss"][-1])
        if guard.bad is not None or not math.isfinite(loss):
            step, value = guard.bad if guard.bad is not None else (None, loss)
            where = f"at step {step + 1} " if step is not None else ""
            raise NonFiniteLoss(f"loss became {value} {where}of epoch {self.epoch}")
        return loss, float(history["accuracy"][-1])

    def evaluate(self) -> float:
        """Test accuracy from model.evaluate (inference mode: dropout off)."""
        result = self.model.evaluate(
            self.x_test, self.y_test, batch_size=self.batch_size, verbose=0, return_dict=True
        )
        return float(result["accuracy"])

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
            device_name = _common.cpu_name()
        cores = os.cpu_count() or 1
        intra = tf.config.threading.get_intra_op_parallelism_threads() or cores  # 0 = TF's default
        inter = tf.config.threading.get_inter_op_parallelism_threads() or cores
        types = {layer["type"] for layer in self.spec_model.layers}
        kernels = {}
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
            kernels["lstm_lengths"] = "Embedding(mask_zero=True): state after the last real token"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "GPU:0" if gpu else "CPU",
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": kernels,
            "jit_compile": bool(getattr(self.model, "jit_compile", False)),
            "data_layout": "NHWC (channels_last)" if self.spec_model.input_shape else "token ids (N, T)",
            "input_pipeline": "NumPy arrays to model.fit (Keras' tf.data adapter, shuffled each epoch)",
            "loss": ("SparseCategoricalCrossentropy" if self.kind == "categorical" else "BinaryCrossentropy")
            + "(from_logits=True) (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "weight_decay_rule": _common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> KerasTrainer:
    """Build and compile the spec's model for `device` ('cpu' or 'gpu') with the given seed."""
    return KerasTrainer(spec, data, device, seed)
