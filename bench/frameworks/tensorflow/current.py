"""TensorFlow 2: translates a workload spec into a model trained by TensorFlow's own training loop.

Runs inside the tensorflow environment. Idiomatic TensorFlow 2 without Keras' fit(): a
tf.data pipeline over the shared prepared arrays (a seeded shuffle of row indices, batched, then
one vectorized gather and cast per batch, prefetched), a tf.function train step with
tf.GradientTape, and tf.keras layers and optimizers as building blocks (TensorFlow 2's layer
API; Keras' default initializers, so the model is the Keras module's model). Images stay NHWC,
TensorFlow's native layout. No XLA (tf.function's default).

The model is built by current_layers.py (the LSTM's CPU and GPU forms: current_lstm.py).

Sequence labels (lstm-ptb, seq2seq-manythings): the output dense layer runs on every step as one
matmul over (N*T, units); the loss is the sum of per-token cross-entropy over the counted tokens
(each row's first y_len) divided by their number. The encoder-decoder runs the encoder LSTM's final
(h, c) into the decoder LSTM as its initial state.
"""

from __future__ import annotations

import math
import os
import platform
from typing import Any

# Read once, when TensorFlow is first imported: quiet its C++ notices.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench import modelplan, switches  # noqa: E402
from bench.detection.detector import is_detector  # noqa: E402
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import NonFiniteLoss, common  # noqa: E402
from bench.frameworks.keras.current_optimizers import make_optimizer  # noqa: E402
from bench.frameworks.tensorflow import CAPABILITIES  # noqa: E402
from bench.frameworks.tensorflow.current_layers import build_model  # noqa: E402
from bench.frameworks.tensorflow.current_lstm import LSTM  # noqa: E402

NAME = "tensorflow"
PACKAGE = CAPABILITIES.package  # whose version is the framework's (the lock pins tensorflow-cpu)
# On a GPU the losses are read back every this many steps rather than every step: a host read
# waits for the device. A NaN is still caught within that many steps. On the CPU every step.
GPU_CHECK_EVERY = 20

keras = tf.keras  # TensorFlow 2's layer and optimizer API (Keras 3 in TensorFlow 2.21)


def versions() -> dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN TF was built with)."""
    out = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    build = tf.sysconfig.get_build_info()
    for key in ("cuda_version", "cudnn_version"):
        if build.get(key):
            out[key.replace("_version", "")] = str(build[key])
    return out


def _configure_runtime(device: str) -> int | None:
    """Threads and device visibility; TensorFlow accepts both only before its runtime starts."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
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
    return n


class TFTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for TensorFlow 2 with its own training loop."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.threads = _configure_runtime(device)
        self.device = device
        self.gpu = device == "gpu"
        keras.utils.set_random_seed(seed)  # Python, NumPy, TensorFlow and Keras generators
        self.seed = seed
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.seq2seq = self.spec_model.encoder is not None
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.images = self.spec_model.input_shape is not None
        with tf.device("/CPU:0"):  # the arrays live on the host; tf.data feeds the device
            self.train = self._tensors(data.train)
            self.test = self._tensors(data.test)
        self.model = build_model(self.spec_model, device)
        # Build every layer now, outside tf.function: one example through the model.
        self._logits(self._prepare({role: t[:1] for role, t in self.train.items()}), training=False)
        self.variables = self.model.trainable_variables
        self.optimizer = make_optimizer(keras.optimizers, self.opt_settings)
        self.optimizer.build(self.variables)
        # What the dataset yields: the roles' tensors, images already cast to float32.
        signature = [{role: tf.TensorSpec((None, *t.shape[1:]), t.dtype) for role, t in self.train.items()}]
        if self.images:
            signature[0]["x"] = tf.TensorSpec((None, *self.train["x"].shape[1:]), tf.float32)
        self.train_step = tf.function(self._train_step, input_signature=signature)
        self.eval_step = tf.function(self._eval_step, input_signature=signature)
        self.infer_step = tf.function(self._infer_step, input_signature=signature)
        if self.seq2seq:  # any source and target length (the probe cuts the source padding)
            ids = tf.TensorSpec((None, None), tf.int32)
            self.predict_step = tf.function(self._predict_step, input_signature=[{"x": ids, "x_dec": ids}])
        # Built once; each pass over train_ds draws a new order (reshuffle_each_iteration).
        self.train_ds = self._dataset(self.train, shuffle=self.shuffle)
        self.test_ds = self._dataset(self.test, shuffle=False)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._step_batches: Any = None  # step()'s batches (an endless in-order dataset), made on its first call

    # -- setup ---------------------------------------------------------------------------------
    def _tensors(self, split: dict) -> dict[str, tf.Tensor]:
        """The role arrays the model and the loss read, as host tensors (len only checks the ids)."""
        x = split["x"]
        if x.ndim == 4:
            out = {"x": tf.constant(np.ascontiguousarray(x, dtype=np.uint8))}  # NHWC uint8; /255 per batch
        else:
            if "len" in split:
                common.check_post_padded(x, split["len"])  # the lengths the model derives must be len
            out = {"x": tf.constant(np.asarray(x, dtype=np.int32))}
        if "x_dec" in split:
            out["x_dec"] = tf.constant(np.asarray(split["x_dec"], dtype=np.int32))
        out["y"] = tf.constant(np.asarray(split["y"], dtype=np.float32 if self.kind == "binary" else np.int64))
        if self.kind == "sequence" and "y_len" in split:
            out["y_len"] = tf.constant(np.asarray(split["y_len"], dtype=np.int32))
        return out

    def _prepare(self, batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """Images to float32 in [0, 1]; everything else as it is."""
        if self.images:
            return {**batch, "x": tf.cast(batch["x"], tf.float32) / 255.0}
        return batch

    def _dataset(self, tensors: dict[str, tf.Tensor], shuffle: bool, ring: bool = False) -> tf.data.Dataset:
        """Row indices (shuffled each epoch with a seeded order), batched, gathered, prefetched.

        ring: Trainer.step()'s endless batches instead, the rows in order wrapping around at the end
        (every batch full: batch_size rows, or the whole set when it is smaller; common.StepRing's order).
        """

        def take(idx: tf.Tensor) -> dict[str, tf.Tensor]:
            return self._prepare({role: tf.gather(t, idx) for role, t in tensors.items()})

        n = int(tensors["y"].shape[0])
        ds = tf.data.Dataset.range(n)
        if shuffle:
            ds = ds.shuffle(n, seed=self.seed, reshuffle_each_iteration=True)
        batch_size = self.batch_size
        if ring:
            ds, batch_size = ds.repeat(), min(self.batch_size, n)
        ds = ds.batch(batch_size).map(take, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        ds = ds.prefetch(tf.data.AUTOTUNE)
        options = tf.data.Options()
        options.deterministic = True
        if self.threads is not None:
            options.threading.private_threadpool_size = self.threads
            options.threading.max_intra_op_parallelism = 1
        return ds.with_options(options)

    # -- compiled steps ------------------------------------------------------------------------
    def _logits(self, batch: dict[str, tf.Tensor], training: bool) -> tf.Tensor:
        out = self.model(batch if self.seq2seq else batch["x"], training=training)
        return tf.squeeze(out, axis=1) if self.kind == "binary" else out

    def _sums(self, logits: tf.Tensor, batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(summed loss, number of counted labels, number of hits) of a batch.

        A label is an example, or for sequence labels a token among each row's first y_len steps
        (every step without y_len).
        """
        y = batch["y"]
        if self.kind == "binary":
            losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)
            hits = tf.equal(tf.cast(logits > 0, y.dtype), y)  # logit 0 = p 0.5
        else:  # the class axis is last: (N, C) or, per step, (N, T, C)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            hits = tf.equal(tf.argmax(logits, axis=-1, output_type=y.dtype), y)
        if "y_len" in batch:
            counted = tf.sequence_mask(batch["y_len"], tf.shape(y)[1], dtype=losses.dtype)
        else:
            counted = tf.ones_like(losses)
        return (tf.reduce_sum(losses * counted), tf.reduce_sum(counted),
                tf.reduce_sum(tf.cast(hits, tf.int64) * tf.cast(counted, tf.int64)))

    def _train_step(self, batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = self._logits(batch, training=True)
            loss_sum, count, hits = self._sums(logits, batch)
            loss = loss_sum / count  # mean per example, or per counted token
        grads = tape.gradient(loss, self.variables)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        return loss_sum, count, hits

    def _eval_step(self, batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        _, count, hits = self._sums(self._logits(batch, training=False), batch)
        return count, hits

    def _infer_step(self, batch: dict[str, tf.Tensor]) -> tf.Tensor:
        return self._logits(batch, training=False)

    def _predict_step(self, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
        return self.model(inputs, training=False)

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (keras.layers.LSTM's weights: one bias vector per gate set)."""
        return int(sum(int(np.prod(v.shape)) for v in self.variables))

    def step(self) -> float:
        """One update (the compiled train_step of train_epoch) on the next batch of the training set in
        order, wrapping around; its mean loss per example or counted token."""
        if self._step_batches is None:
            self._step_batches = iter(self._dataset(self.train, shuffle=False, ring=True))
        loss_sum, count, _ = self.train_step(next(self._step_batches))
        self.steps += 1
        value = float(loss_sum) / float(count)
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One forward pass (the compiled infer_step: model(x, training=False), no tape, batchnorm's moving
        statistics) on the next batch of the training set in order, wrapping around as step() does; its outputs
        copied to the host (N, output values), as ilkarman's feature extraction does."""
        if self._step_batches is None:
            self._step_batches = iter(self._dataset(self.train, shuffle=False, ring=True))
        return self.infer_step(next(self._step_batches)).numpy()

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss, training accuracy) per example or counted token."""
        self.epoch += 1
        summed, counts, correct = [], [], []
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        checked = 0
        for b, batch in enumerate(self.train_ds):
            loss_sum, count, hits = self.train_step(batch)
            summed.append(loss_sum)
            counts.append(count)
            correct.append(hits)
            if (b + 1) % check_every == 0:
                self._check_finite(summed, checked)
                checked = b + 1
        self._check_finite(summed, checked)
        total = float(tf.add_n(counts))
        return float(tf.add_n(summed)) / total, int(tf.add_n(correct)) / total

    def _check_finite(self, summed: list[tf.Tensor], first: int) -> None:
        if first >= len(summed):
            return
        values = tf.stack(summed[first:]).numpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            b = int(bad[0])
            raise NonFiniteLoss(f"loss became {values[b]} at step {first + b + 1} of epoch {self.epoch}")

    def evaluate(self) -> float:
        """Test accuracy (over counted tokens for sequences) in inference mode, batches of the training size."""
        counts, correct = zip(*(self.eval_step(batch) for batch in self.test_ds))
        return int(tf.add_n(correct)) / float(tf.add_n(counts))

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits of a batch of token-id role arrays in inference mode: (N, T, classes) for sequence labels (an
        encoder-decoder's through predict_step, which takes any source and target length)."""
        if self.seq2seq:
            inputs = {role: tf.constant(np.asarray(batch[role], dtype=np.int32)) for role in ("x", "x_dec")}
            return self.predict_step(inputs).numpy()
        return self._logits({"x": tf.constant(np.asarray(batch["x"], dtype=np.int32))}, training=False).numpy()

    def synchronize(self) -> None:
        """Wait for queued device work (the epoch's host reads already waited for it)."""
        if self.gpu:
            tf.test.experimental.sync_devices()

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        gpus = tf.config.list_logical_devices("GPU")
        if self.gpu and gpus:
            details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
            device_name = details.get("device_name", gpus[0].name)
        else:
            device_name = common.cpu_name()
        cores = os.cpu_count() or 1
        intra = tf.config.threading.get_intra_op_parallelism_threads() or cores  # 0 = TF's default
        inter = tf.config.threading.get_inter_op_parallelism_threads() or cores
        pool = f"private pool of {self.threads} thread(s)" if self.threads else "TensorFlow's shared pool"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "GPU:0" if self.gpu else "CPU",
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": self._kernels(),
            "jit_compile": False,
            "data_layout": self._layout(),
            "input_pipeline": (
                "tf.data: seeded shuffle of row indices each epoch, batch, vectorized gather"
                + (" and /255 cast" if self.images else "") + f", prefetch (AUTOTUNE; {pool})"
            ),
            "training_loop": "Python loop over tf.data batches calling a tf.function step (tf.GradientTape)",
            "loss": self._loss_description(),
            "optimizer": self.opt_settings,
            "optimizer_impl": "tf.keras.optimizers."
            + {"sgd": "SGD", "adam": "Adam", "adadelta": "Adadelta"}[self.opt_settings["name"]],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    def _kernels(self) -> dict[str, str]:
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("tf.keras.layers.BatchNormalization (training=True in the train step, moving "
                                    "statistics in evaluation)")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 Conv2D(use_bias=False) + BN"
        if "concat" in types:
            kernels["concat"] = "tf.concat of the branches' outputs on channels (the last axis, NHWC)"
        if "lrn" in types:
            kernels["lrn"] = "tf.nn.local_response_normalization on the last axis (NHWC), the plan's own parameters"
        if "conv2d" in types:
            onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") != "0"
            kernels["conv2d"] = "tf.keras.layers.Conv2D (" + (
                "cuDNN" if self.gpu else f"TensorFlow CPU{', oneDNN' if onednn else ''}"
            ) + ")"
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "tf.keras.layers.MaxPooling2D (TensorFlow's 'same' rule)"
        lstms = [layer for layer in self.model.layers if isinstance(layer, LSTM)]
        if lstms:
            lengths = any(layer.use_lengths for layer in lstms)
            if self.gpu:
                kernels["lstm"] = "tf.keras.layers.LSTM (cuDNN CudnnRNNV3: default activations, right-padded mask)"
                if lengths:
                    kernels["lstm_lengths"] = "mask from the ids' real lengths -> cuDNN sequence_lengths"
            else:
                cpu = {
                    "BlockLSTM": "tf.raw_ops.BlockLSTM (TensorFlow's fused CPU LSTM kernel; Keras' weights)",
                    "split": "split recurrence: one input-projection matmul, tf.while_loop over h @ recurrent_kernel, "
                    "tf.custom_gradient with the recurrent kernel's gradient as one matmul (Keras' weights)",
                }
                kernels["lstm"] = "; ".join(dict.fromkeys(cpu[layer.cpu_kernel] for layer in lstms))
                if lengths:
                    kernels["lstm_lengths"] = "padded batch up to its longest sequence; output at each last real step"
            if self.seq2seq:
                kernels["lstm_state"] = "encoder LSTM's final (h, c) at the last real step -> decoder initial state"
        if "gru" in types:
            use_cudnn = switches.keras_use_cudnn()
            kernels["gru"] = f"tf.keras.layers.GRU(reset_after=True, use_cudnn={use_cudnn!r}) " + (
                "(Keras' loop over all steps, padding included: the plain kernel)" if use_cudnn is False
                else "(cuDNN: default activations, no mask)" if self.gpu
                else "(Keras' CPU loop over all steps, padding included)")
        if self.kind == "sequence":
            kernels["dense"] = "tf.keras.layers.Dense on (N, T, units): one matmul over (N*T, units)"
        return kernels

    def _layout(self) -> str:
        if self.spec_model.input_shape:
            return "NHWC (TensorFlow's native layout)"
        return "token ids (N, T): x and x_dec" if self.seq2seq else "token ids (N, T)"

    def _loss_description(self) -> str:
        if self.kind == modelplan.FEATURES:
            return "none: a features model (model.output = 'features') is only run forward (infer)"
        if self.kind == "sequence":
            return ("tf.nn.sparse_softmax_cross_entropy_with_logits per step (output activation folded into "
                    "the loss), summed over counted tokens / their number")
        name = ("tf.nn.sparse_softmax_cross_entropy_with_logits" if self.kind == "categorical"
                else "tf.nn.sigmoid_cross_entropy_with_logits")
        return name + " (output activation folded into the loss), batch mean"


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TFTrainer | DetectionTrainer:
    """Build the spec's model and optimizer for `device` ('cpu' or 'gpu') with the given seed: a TFTrainer, or
    for a detector (Faster R-CNN) current_detection.py's network in bench/detection's DetectionTrainer."""
    if is_detector(spec):
        # Imported here: current_detection imports this module's helpers.
        from bench.frameworks.tensorflow import current_detection

        return current_detection.make_trainer(spec, data, device, seed)
    return TFTrainer(spec, data, device, seed)
