"""TensorFlow 2: translates a workload spec into a model trained by TensorFlow's own training loop.

Runs inside the tensorflow environment. Idiomatic TensorFlow 2 without Keras' fit(): a
tf.data pipeline over the shared prepared arrays (a seeded shuffle of row indices, batched, then
one vectorized gather and cast per batch, prefetched), a tf.function train step with
tf.GradientTape, and tf.keras layers and optimizers as building blocks (TensorFlow 2's layer
API; Keras' default initializers, so the model is the Keras module's model). Images stay NHWC,
TensorFlow's native layout. No XLA (tf.function's default).

The LSTM reads real lengths, derived from the post-padded ids (check_post_padded guards the
contract). On a GPU it is tf.keras.layers.LSTM given the right-padded mask, the form that runs
TensorFlow's cuDNN kernel (CudnnRNNV3 with sequence lengths). On the CPU it is TensorFlow's fused
LSTM kernel, tf.raw_ops.BlockLSTM, on the same weights: it runs the padded batch up to its longest
sequence and each sequence's hidden state at its last real step is read. BlockLSTM (not
BlockLSTMV2, which takes Keras' gate order directly) because BlockLSTMV2's gradient is wrong in
TensorFlow 2.21 (it disagrees with autodiff of the same cell; BlockLSTM's agrees): the gates are
reordered to BlockLSTM's i, c, f, o and its forget_bias is 0, which is the same cell.
"""

from __future__ import annotations

import os
import platform
from typing import Any

# Read once, when TensorFlow is first imported: quiet its C++ notices.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.frameworks import NonFiniteLoss, _common  # noqa: E402

NAME = "tensorflow"
PACKAGE = "tensorflow"  # whose version is the framework's version (the lock pins tensorflow-cpu)
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


def _icfo(w: tf.Tensor) -> tf.Tensor:
    """Gate blocks along the last axis from Keras' order (i, f, c, o) to BlockLSTM's (i, c, f, o)."""
    i, f, c, o = tf.split(w, 4, axis=-1)
    return tf.concat([i, c, f, o], axis=-1)


class _LSTM:
    """An LSTM whose weights are a tf.keras.layers.LSTM's, run by cuDNN (GPU) or BlockLSTM (CPU)."""

    def __init__(self, units: int, use_lengths: bool, return_sequences: bool, fused_cpu: bool):
        # Default activations, no recurrent dropout, unroll=False: the cuDNN-eligible settings.
        self.lstm = keras.layers.LSTM(units, return_sequences=return_sequences)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.fused_cpu = fused_cpu

    @property
    def trainable_variables(self) -> list:
        return self.lstm.trainable_variables

    def __call__(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False) -> tf.Tensor:
        if not self.lstm.built:
            self.lstm.build(tuple(x.shape))
        lengths = lengths if self.use_lengths else None
        return self.fused(x, lengths) if self.fused_cpu else self.masked(x, lengths, training)

    def masked(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False) -> tf.Tensor:
        """tf.keras.layers.LSTM with a right-padded mask: cuDNN on a GPU (TF's loop elsewhere)."""
        mask = None if lengths is None else tf.sequence_mask(lengths, tf.shape(x)[1])
        out = self.lstm(x, mask=mask, training=training)
        if self.return_sequences and mask is not None:  # zeros after the end, on every path
            out = out * tf.cast(mask, out.dtype)[:, :, None]
        return out

    def fused(self, x: tf.Tensor, lengths: tf.Tensor | None) -> tf.Tensor:
        """tf.raw_ops.BlockLSTM over the padded batch, then each sequence's last real step (CPU).

        An LSTM never looks ahead, so the padding after a sequence's last real step cannot change
        the state read there (the probe and the tests check both paths agree).
        """
        cell = self.lstm.cell
        batch, steps = tf.shape(x)[0], tf.shape(x)[1]
        # Steps past the batch's longest sequence are not computed (BlockLSTM leaves zeros there).
        run_steps = steps if lengths is None else tf.reduce_max(lengths)
        zeros = tf.zeros([batch, self.units], x.dtype)
        no_peephole = tf.zeros([self.units], x.dtype)
        outputs = tf.raw_ops.BlockLSTM(
            seq_len_max=tf.cast(run_steps, tf.int64),
            x=tf.transpose(x, [1, 0, 2]),  # time-major
            cs_prev=zeros,
            h_prev=zeros,
            w=_icfo(tf.concat([cell.kernel, cell.recurrent_kernel], axis=0)),
            wci=no_peephole, wcf=no_peephole, wco=no_peephole,
            b=_icfo(cell.bias),
            forget_bias=0.0,
            cell_clip=-1.0,  # no clipping
            use_peephole=False,
        )
        h = outputs[6]  # (time, batch, units)
        if self.return_sequences:
            out = tf.transpose(h, [1, 0, 2])
            if lengths is not None:
                out = out * tf.cast(tf.sequence_mask(lengths, steps), out.dtype)[:, :, None]
            return out
        if lengths is None:
            return h[-1]
        return tf.gather_nd(h, tf.stack([lengths - 1, tf.range(batch, dtype=lengths.dtype)], axis=1))


class SpecNet:
    """A stack of layers built from a spec; sequence lengths (from the ids) go to the LSTM layers."""

    def __init__(self, layers: list[Any], reads_lengths: bool):
        self.layers = layers
        self.reads_lengths = reads_lengths

    @property
    def trainable_variables(self) -> list:
        return [v for layer in self.layers for v in layer.trainable_variables]

    def __call__(self, x: Any, training: bool = False) -> tf.Tensor:
        x = tf.convert_to_tensor(x)
        lengths = None
        if self.reads_lengths:  # post-padded ids: the real length is the number of non-zero ids
            lengths = tf.math.count_nonzero(x, axis=1, dtype=tf.int32)
        for layer in self.layers:
            if isinstance(layer, _LSTM):
                x = layer(x, lengths, training)
            elif isinstance(layer, keras.layers.Dropout):
                x = layer(x, training=training)
            else:
                x = layer(x)
        return x


def build_model(model: _common.Model, device: str) -> SpecNet:
    """Translate validated spec layers into tf.keras layers (shapes are inferred when first called)."""
    layers = keras.layers
    stack: list[Any] = []
    for i, layer in enumerate(model.layers):
        kind = layer["type"]
        if kind == "conv2d":
            stack.append(layers.Conv2D(
                layer["filters"], layer["kernel"], strides=layer["stride"],
                padding=layer["padding"], activation=layer["activation"],
            ))
        elif kind == "maxpool2d":
            # TensorFlow's own 'same' rule (out = ceil(in / stride)) is the spec's definition.
            stack.append(layers.MaxPooling2D(layer["pool"], strides=layer["stride"], padding=layer["padding"]))
        elif kind == "dropout":
            stack.append(layers.Dropout(layer["rate"]))
        elif kind == "flatten":
            stack.append(layers.Flatten())
        elif kind == "dense":
            stack.append(layers.Dense(layer["units"], activation=layer["activation"]))
        elif kind == "embedding":
            stack.append(layers.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "lstm":
            if layer["use_lengths"] and not any(p["type"] == "embedding" for p in model.layers[:i]):
                raise _common.SpecError(f"layer {i}: use_lengths needs an embedding before the lstm")
            stack.append(_LSTM(layer["units"], layer["use_lengths"], layer["return_sequences"], device == "cpu"))
    reads_lengths = any(layer["type"] == "lstm" and layer["use_lengths"] for layer in model.layers)
    return SpecNet(stack, reads_lengths)


def _configure_runtime(device: str) -> int | None:
    """Threads and device visibility; TensorFlow accepts both only before its runtime starts."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
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
    return n


class TFTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for TensorFlow 2 with its own training loop."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.threads = _configure_runtime(device)
        self.device = device
        self.gpu = device == "gpu"
        keras.utils.set_random_seed(seed)  # Python, NumPy, TensorFlow and Keras generators
        self.seed = seed
        self.spec_model = _common.model_layers(spec)
        self.kind = self.spec_model.kind
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = _common.optimizer_settings(spec)
        self.images = data.train["x"].ndim == 4
        with tf.device("/CPU:0"):  # the arrays live on the host; tf.data feeds the device
            self.train = self._tensors(data.train)
            self.test = self._tensors(data.test)
        self.n_train = int(self.train[1].shape[0])
        self.n_test = int(self.test[1].shape[0])
        self.model = build_model(self.spec_model, device)
        # Build every layer now, outside tf.function: one example through the model.
        x0 = self.train[0][:1]
        self.model(tf.cast(x0, tf.float32) / 255.0 if self.images else x0, training=False)
        self.variables = self.model.trainable_variables
        self.optimizer = self._make_optimizer(self.opt_settings)
        self.optimizer.build(self.variables)
        x_spec = tf.TensorSpec((None, *self.train[0].shape[1:]), tf.float32 if self.images else tf.int32)
        y_spec = tf.TensorSpec((None,), self.train[1].dtype)
        self.train_step = tf.function(self._train_step, input_signature=[x_spec, y_spec])
        self.eval_step = tf.function(self._eval_step, input_signature=[x_spec, y_spec])
        # Built once; each pass over train_ds draws a new order (reshuffle_each_iteration).
        self.train_ds = self._dataset(*self.train, shuffle=self.shuffle)
        self.test_ds = self._dataset(*self.test, shuffle=False)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    def _make_optimizer(self, opt: dict) -> keras.optimizers.Optimizer:
        # weight_decay here is decoupled (w -= lr * wd * w before each update), the rule every
        # framework module follows (_common.WEIGHT_DECAY_RULE).
        wd = opt["weight_decay"] or None
        if opt["name"] == "sgd":
            return keras.optimizers.SGD(learning_rate=opt["lr"], momentum=opt["momentum"], weight_decay=wd)
        return keras.optimizers.Adam(
            learning_rate=opt["lr"], beta_1=opt["beta1"], beta_2=opt["beta2"],
            epsilon=opt["epsilon"], weight_decay=wd,
        )

    def _tensors(self, split: dict) -> tuple[tf.Tensor, tf.Tensor]:
        x = split["x"]
        if x.ndim == 4:
            x = tf.constant(np.ascontiguousarray(x, dtype=np.uint8))  # NHWC uint8; /255 per batch
        else:
            _common.check_post_padded(x, split["len"])  # the lengths the model derives must be len
            x = tf.constant(np.asarray(x, dtype=np.int32))
        y = np.asarray(split["y"], dtype=np.float32 if self.kind == "binary" else np.int64)
        return x, tf.constant(y)

    def _dataset(self, x: tf.Tensor, y: tf.Tensor, shuffle: bool) -> tf.data.Dataset:
        """Row indices (shuffled each epoch with a seeded order), batched, gathered, prefetched."""
        images = self.images

        def take(idx: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            xb = tf.gather(x, idx)
            if images:
                xb = tf.cast(xb, tf.float32) / 255.0
            return xb, tf.gather(y, idx)

        n = int(y.shape[0])
        ds = tf.data.Dataset.range(n)
        if shuffle:
            ds = ds.shuffle(n, seed=self.seed, reshuffle_each_iteration=True)
        ds = ds.batch(self.batch_size).map(take, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        ds = ds.prefetch(tf.data.AUTOTUNE)
        options = tf.data.Options()
        options.deterministic = True
        if self.threads is not None:
            options.threading.private_threadpool_size = self.threads
            options.threading.max_intra_op_parallelism = 1
        return ds.with_options(options)

    # -- compiled steps ------------------------------------------------------------------------
    def _logits(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        out = self.model(x, training=training)
        return tf.squeeze(out, axis=1) if self.kind == "binary" else out

    def _loss(self, logits: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        if self.kind == "binary":
            return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    def _correct(self, logits: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        if self.kind == "binary":
            hit = tf.equal(tf.cast(logits > 0, y.dtype), y)  # logit 0 = p 0.5
        else:
            hit = tf.equal(tf.argmax(logits, axis=1, output_type=y.dtype), y)
        return tf.reduce_sum(tf.cast(hit, tf.int64))

    def _train_step(self, x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = self._logits(x, training=True)
            loss = self._loss(logits, y)
        grads = tape.gradient(loss, self.variables)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        # The batch's summed loss (the last batch may be short) and its number of hits.
        return loss * tf.cast(tf.shape(y)[0], loss.dtype), self._correct(logits, y)

    def _eval_step(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return self._correct(self._logits(x, training=False), y)

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (keras.layers.LSTM's weights: one bias vector per gate set)."""
        return int(sum(int(np.prod(v.shape)) for v in self.variables))

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss per example, training accuracy over the epoch)."""
        self.epoch += 1
        weighted, correct = [], []
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        checked = 0
        for b, (xb, yb) in enumerate(self.train_ds):
            loss_sum, hits = self.train_step(xb, yb)
            weighted.append(loss_sum)
            correct.append(hits)
            if (b + 1) % check_every == 0:
                self._check_finite(weighted, checked)
                checked = b + 1
        self._check_finite(weighted, checked)
        return float(tf.add_n(weighted)) / self.n_train, int(tf.add_n(correct)) / self.n_train

    def _check_finite(self, weighted: list[tf.Tensor], first: int) -> None:
        if first >= len(weighted):
            return
        values = tf.stack(weighted[first:]).numpy()
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            b = int(bad[0])
            raise NonFiniteLoss(f"loss became {values[b]} at step {first + b + 1} of epoch {self.epoch}")

    def evaluate(self) -> float:
        """Test accuracy in inference mode (dropout off), batches of the training batch size."""
        correct = [self.eval_step(xb, yb) for xb, yb in self.test_ds]
        return int(tf.add_n(correct)) / self.n_test

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
            device_name = _common.cpu_name()
        cores = os.cpu_count() or 1
        intra = tf.config.threading.get_intra_op_parallelism_threads() or cores  # 0 = TF's default
        inter = tf.config.threading.get_inter_op_parallelism_threads() or cores
        types = {layer["type"] for layer in self.spec_model.layers}
        kernels = {}
        if "conv2d" in types:
            onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") != "0"
            kernels["conv2d"] = "tf.keras.layers.Conv2D (" + (
                "cuDNN" if self.gpu else f"TensorFlow CPU{', oneDNN' if onednn else ''}"
            ) + ")"
        if "maxpool2d" in types:
            kernels["maxpool2d"] = "tf.keras.layers.MaxPooling2D (TensorFlow's 'same' rule)"
        if "lstm" in types:
            if self.gpu:
                kernels["lstm"] = "tf.keras.layers.LSTM (cuDNN CudnnRNNV3: default activations, right-padded mask)"
                kernels["lstm_lengths"] = "mask from the ids' real lengths -> cuDNN sequence_lengths"
            else:
                kernels["lstm"] = "tf.raw_ops.BlockLSTM (TensorFlow's fused CPU LSTM kernel; Keras' weights)"
                kernels["lstm_lengths"] = "padded batch up to its longest sequence; output at each last real step"
        pool = f"private pool of {self.threads} thread(s)" if self.threads else "TensorFlow's shared pool"
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "GPU:0" if self.gpu else "CPU",
            "device_name": device_name,
            "threads": {"intra_op": intra, "inter_op": inter},
            "kernels": kernels,
            "jit_compile": False,
            "data_layout": "NHWC (TensorFlow's native layout)" if self.spec_model.input_shape else "token ids (N, T)",
            "input_pipeline": (
                "tf.data: seeded shuffle of row indices each epoch, batch, vectorized gather"
                + (" and /255 cast" if self.images else "") + f", prefetch (AUTOTUNE; {pool})"
            ),
            "training_loop": "Python loop over tf.data batches calling a tf.function step (tf.GradientTape)",
            "loss": ("tf.nn.sparse_softmax_cross_entropy_with_logits" if self.kind == "categorical"
                     else "tf.nn.sigmoid_cross_entropy_with_logits")
            + " (output activation folded into the loss), batch mean",
            "optimizer": self.opt_settings,
            "optimizer_impl": f"tf.keras.optimizers.{'SGD' if self.opt_settings['name'] == 'sgd' else 'Adam'}",
            "weight_decay_rule": _common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TFTrainer:
    """Build the spec's model and optimizer for `device` ('cpu' or 'gpu') with the given seed."""
    return TFTrainer(spec, data, device, seed)
