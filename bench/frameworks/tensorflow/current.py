"""TensorFlow 2: translates a workload spec into a model trained by TensorFlow's own training loop.

Runs inside the tensorflow environment. Idiomatic TensorFlow 2 without Keras' fit(): a
tf.data pipeline over the shared prepared arrays (a seeded shuffle of row indices, batched, then
one vectorized gather and cast per batch, prefetched), a tf.function train step with
tf.GradientTape, and tf.keras layers and optimizers as building blocks (TensorFlow 2's layer
API; Keras' default initializers, so the model is the Keras module's model). Images stay NHWC,
TensorFlow's native layout. No XLA (tf.function's default).

The LSTM reads real lengths, derived from the post-padded ids (check_post_padded guards the
contract). On a GPU it is tf.keras.layers.LSTM given the right-padded mask, the form that runs
TensorFlow's cuDNN kernel (CudnnRNNV3 with sequence lengths). On the CPU it runs the same weights
through one of two forms, both over the padded batch up to its longest sequence, reading each
sequence's state at its last real step (an LSTM never looks ahead, so the padding after it cannot
change that state):
- TensorFlow's fused LSTM kernel, tf.raw_ops.BlockLSTM, up to BLOCK_LSTM_MAX_UNITS units. BlockLSTM
  (not BlockLSTMV2, which takes Keras' gate order directly) because BlockLSTMV2's gradient is wrong in
  TensorFlow 2.21 (it disagrees with autodiff of the same cell; BlockLSTM's agrees): the gates are
  reordered to BlockLSTM's i, c, f, o and its forget_bias is 0, which is the same cell.
- Above that, a split recurrence (_recurrence): the input projection of all steps is one matmul
  before the loop, a tf.while_loop runs only h @ recurrent_kernel and the gates, and its
  tf.custom_gradient runs the loop backwards for the gate gradients, then the recurrent kernel's
  gradient is one matmul over all steps. BlockLSTM's gradient kernel adds a batch-sized outer
  product into the whole weight gradient at every step, which makes it slower as the layer widens
  (forward + backward of one layer and batch, one thread: 1024 units, lstm-ptb: 7.5 s vs 0.6 s;
  256 units, seq2seq-manythings: 0.38 s vs 0.30 s); on long narrow sequences (lstm-imdb, 500
  steps x 100 units: 0.39 s vs 0.98 s) BlockLSTM's fused steps beat the loop's per-op cost.

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
from bench.frameworks import NonFiniteLoss, common  # noqa: E402
from bench.frameworks.keras.current_optimizers import make_optimizer  # noqa: E402
from bench.frameworks.tensorflow import CAPABILITIES  # noqa: E402

NAME = "tensorflow"
PACKAGE = CAPABILITIES.package  # whose version is the framework's (the lock pins tensorflow-cpu)
# On a GPU the losses are read back every this many steps rather than every step: a host read
# waits for the device. A NaN is still caught within that many steps. On the CPU every step.
GPU_CHECK_EVERY = 20
# CPU LSTMs up to this many units run TensorFlow's fused BlockLSTM, wider ones the split
# recurrence (see the module docstring: measured crossover, one thread).
BLOCK_LSTM_MAX_UNITS = 128

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


def _recurrence(xw: tf.Tensor, h0: tf.Tensor, c0: tf.Tensor, r: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The LSTM recurrence over time-major input projections xw (T, N, 4U), Keras' gates i, f, c, o.

    Returns every step's h and c, (T, N, U) each. Its gradient runs the steps backwards with only
    the batch-sized matmul by r's transpose inside the loop; r's gradient is one matmul after it.
    """

    @tf.custom_gradient
    def run(xw: tf.Tensor, h0: tf.Tensor, c0: tf.Tensor, r: tf.Tensor):
        steps = tf.shape(xw)[0]

        def step(t, h, c, hs, cs, gates):
            i, f, g, o = tf.split(xw[t] + tf.matmul(h, r), 4, axis=1)
            i, f, g, o = tf.sigmoid(i), tf.sigmoid(f), tf.tanh(g), tf.sigmoid(o)
            c = f * c + i * g
            h = o * tf.tanh(c)
            return t + 1, h, c, hs.write(t, h), cs.write(t, c), gates.write(t, tf.concat([i, f, g, o], 1))

        def arrays():
            return tf.TensorArray(xw.dtype, size=steps)

        loop = tf.while_loop(lambda t, *_: t < steps, step, (0, h0, c0, arrays(), arrays(), arrays()))
        hs, cs, gates = (a.stack() for a in loop[3:])

        def grad(d_hs: tf.Tensor, d_cs: tf.Tensor):
            h_prev = tf.concat([h0[None], hs[:-1]], 0)
            c_prev = tf.concat([c0[None], cs[:-1]], 0)
            tanh_c = tf.tanh(cs)
            # Transposed once: matmul(..., transpose_b=True) re-packs the whole kernel at every step (~3x slower).
            r_t = tf.transpose(r)

            def back(t, dh, dc, dzs):
                i, f, g, o = tf.split(gates[t], 4, axis=1)
                dh = dh + d_hs[t]
                dc = dc + d_cs[t] + dh * o * (1.0 - tanh_c[t] ** 2)
                dz = tf.concat(
                    [dc * g * i * (1.0 - i), dc * c_prev[t] * f * (1.0 - f), dc * i * (1.0 - g * g),
                     dh * tanh_c[t] * o * (1.0 - o)], 1,
                )
                return t - 1, tf.matmul(dz, r_t), dc * f, dzs.write(t, dz)

            start = (steps - 1, tf.zeros_like(h0), tf.zeros_like(c0), arrays())
            _, dh0, dc0, dzs = tf.while_loop(lambda t, *_: t >= 0, back, start)
            dz = dzs.stack()
            d_r = tf.matmul(tf.reshape(h_prev, [-1, tf.shape(r)[0]]), tf.reshape(dz, [-1, tf.shape(r)[1]]),
                            transpose_a=True)
            return dz, dh0, dc0, d_r

        return (hs, cs), grad

    return run(xw, h0, c0, r)


class _LSTM:
    """An LSTM whose weights are a tf.keras.layers.LSTM's, run by cuDNN (GPU), BlockLSTM or the split
    recurrence (CPU).

    Called as (x, lengths, training, initial_state=[h, c] or None); returns the output, or
    [output, h, c] (the state at each sequence's last real step) with return_state.
    """

    def __init__(self, units: int, use_lengths: bool, return_sequences: bool, fused_cpu: bool,
                 return_state: bool = False):
        # Default activations, no recurrent dropout, unroll=False: the cuDNN-eligible settings.
        self.lstm = keras.layers.LSTM(units, return_sequences=return_sequences, return_state=return_state)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.fused_cpu = fused_cpu  # the CPU forms below, rather than Keras' layer (cuDNN on a GPU)
        self.cpu_kernel = "BlockLSTM" if units <= BLOCK_LSTM_MAX_UNITS else "split"

    @property
    def trainable_variables(self) -> list:
        return self.lstm.trainable_variables

    def __call__(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False,
                 initial_state: list | None = None) -> Any:
        if not self.lstm.built:
            self.lstm.build(tuple(x.shape))
        lengths = lengths if self.use_lengths else None
        if not self.fused_cpu:
            return self.masked(x, lengths, training, initial_state)
        if self.cpu_kernel == "BlockLSTM":
            return self.fused(x, lengths, initial_state)
        return self.split(x, lengths, initial_state)

    def masked(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False,
               initial_state: list | None = None) -> Any:
        """tf.keras.layers.LSTM with a right-padded mask: cuDNN on a GPU (TF's loop elsewhere)."""
        mask = None if lengths is None else tf.sequence_mask(lengths, tf.shape(x)[1])
        result = self.lstm(x, mask=mask, training=training, initial_state=initial_state)
        out, state = (result[0], list(result[1:])) if self.return_state else (result, [])
        if self.return_sequences and mask is not None:  # zeros after the end, on every path
            out = out * tf.cast(mask, out.dtype)[:, :, None]
        return [out, *state] if self.return_state else out

    def fused(self, x: tf.Tensor, lengths: tf.Tensor | None, initial_state: list | None = None) -> Any:
        """tf.raw_ops.BlockLSTM over the padded batch, then each sequence's last real step (CPU)."""
        cell = self.lstm.cell
        h0, c0 = self._initial(x, initial_state)
        no_peephole = tf.zeros([self.units], x.dtype)
        outputs = tf.raw_ops.BlockLSTM(
            seq_len_max=tf.cast(self._run_steps(x, lengths), tf.int64),
            x=tf.transpose(x, [1, 0, 2]),  # time-major
            cs_prev=c0,
            h_prev=h0,
            w=_icfo(tf.concat([cell.kernel, cell.recurrent_kernel], axis=0)),
            wci=no_peephole, wcf=no_peephole, wco=no_peephole,
            b=_icfo(cell.bias),
            forget_bias=0.0,
            cell_clip=-1.0,  # no clipping
            use_peephole=False,
        )
        # Steps past the batch's longest sequence are not computed (BlockLSTM leaves zeros there).
        return self._read(outputs[6], outputs[1], lengths)

    def split(self, x: tf.Tensor, lengths: tf.Tensor | None, initial_state: list | None = None) -> Any:
        """The split recurrence (_recurrence) over the padded batch, then each sequence's last real step."""
        cell = self.lstm.cell
        steps, run_steps = tf.shape(x)[1], self._run_steps(x, lengths)
        # One matmul projects every step's input; the loop only adds h @ recurrent_kernel.
        xw = tf.transpose(tf.tensordot(x[:, :run_steps], cell.kernel, 1) + cell.bias, [1, 0, 2])
        # The kernel's value, not the variable: the tape takes its gradient through the read.
        r = tf.convert_to_tensor(cell.recurrent_kernel)
        hs, cs = _recurrence(xw, *self._initial(x, initial_state), r)
        after = [[0, steps - run_steps], [0, 0], [0, 0]]  # zeros past the longest sequence, as BlockLSTM
        return self._read(tf.pad(hs, after), tf.pad(cs, after), lengths)

    def _initial(self, x: tf.Tensor, initial_state: list | None) -> tuple[tf.Tensor, tf.Tensor]:
        if initial_state is not None:
            return initial_state[0], initial_state[1]
        zeros = tf.zeros([tf.shape(x)[0], self.units], x.dtype)
        return zeros, zeros

    @staticmethod
    def _run_steps(x: tf.Tensor, lengths: tf.Tensor | None) -> tf.Tensor:
        return tf.shape(x)[1] if lengths is None else tf.reduce_max(lengths)

    def _read(self, hs: tf.Tensor, cs: tf.Tensor, lengths: tf.Tensor | None) -> Any:
        """The layer's result from every step's h and c, time-major (T, N, U)."""
        steps, batch = tf.shape(hs)[0], tf.shape(hs)[1]
        last = tf.fill([batch], steps - 1) if lengths is None else lengths - 1
        where = tf.stack([last, tf.range(batch, dtype=last.dtype)], axis=1)
        h_last = tf.gather_nd(hs, where)
        if self.return_sequences:
            out = tf.transpose(hs, [1, 0, 2])
            if lengths is not None:
                out = out * tf.cast(tf.sequence_mask(lengths, steps), out.dtype)[:, :, None]
        else:
            out = h_last
        return [out, h_last, tf.gather_nd(cs, where)] if self.return_state else out


class _Stack:
    """Layers applied in order; the lengths (from the post-padded ids) go to the LSTM layers.

    An LSTM built with return_state hands its final [h, c] out; one marked takes_state starts from
    the state given to the stack.
    """

    def __init__(self, layers: list[Any], reads_lengths: bool, takes_state: Any = None):
        self.layers = layers
        self.reads_lengths = reads_lengths
        self.takes_state = takes_state  # the layer that starts from the given state

    @property
    def trainable_variables(self) -> list:
        return [v for layer in self.layers for v in layer.trainable_variables]

    def __call__(self, x: Any, training: bool, initial_state: list | None = None) -> tuple[tf.Tensor, list | None]:
        x = tf.convert_to_tensor(x)
        lengths = None
        if self.reads_lengths:  # post-padded ids: the real length is the number of non-zero ids
            lengths = tf.math.count_nonzero(x, axis=1, dtype=tf.int32)
        state = None
        for layer in self.layers:
            if isinstance(layer, _LSTM):
                x = layer(x, lengths, training, initial_state if layer is self.takes_state else None)
                if layer.return_state:
                    x, *state = x
            elif isinstance(layer, _TRAINING_AWARE):
                x = layer(x, training=training)
            else:
                x = layer(x)  # Dense on (N, T, units): one matmul over (N*T, units)
        return x, state


class _Residual:
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: _Stack, shortcut: _Stack, activation: str | None):
        self.branch = branch
        self.shortcut = shortcut
        self.activation = keras.activations.get(activation)  # None -> linear

    @property
    def trainable_variables(self) -> list:
        return self.branch.trainable_variables + self.shortcut.trainable_variables

    def __call__(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        return self.activation(self.branch(x, training)[0] + self.shortcut(x, training)[0])


class _Concat:
    """Parallel branches from one input, their outputs stacked on channels (NHWC: the last axis)."""

    def __init__(self, branches: list[_Stack]):
        self.branches = branches

    @property
    def trainable_variables(self) -> list:
        return [v for branch in self.branches for v in branch.trainable_variables]

    def __call__(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        return tf.concat([branch(x, training)[0] for branch in self.branches], axis=-1)


class _LRN:
    """tf.nn.local_response_normalization over the channels (NHWC: the last axis), the plan's own convention."""

    def __init__(self, layer: modelplan.Layer):
        self.settings = {key: layer[key] for key in ("depth_radius", "bias", "alpha", "beta")}

    @property
    def trainable_variables(self) -> list:
        return []  # no parameters

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        return tf.nn.local_response_normalization(x, **self.settings)


# Layers whose call takes `training` (dropout on in training, batchnorm's batch statistics vs moving ones).
_TRAINING_AWARE = (keras.layers.Dropout, keras.layers.BatchNormalization, _Residual, _Concat)


class SpecNet:
    """A stack of layers built from a spec: model(x, training) -> outputs."""

    def __init__(self, stack: _Stack):
        self.stack = stack
        self.layers = stack.layers

    @property
    def trainable_variables(self) -> list:
        return self.stack.trainable_variables

    def __call__(self, x: Any, training: bool = False) -> tf.Tensor:
        return self.stack(x, training)[0]


class EncoderDecoderNet:
    """Encoder over inputs["x"]; its last LSTM's final (h, c) starts the decoder LSTM over inputs["x_dec"]."""

    def __init__(self, encoder: _Stack, decoder: _Stack):
        self.encoder = encoder
        self.decoder = decoder
        self.layers = encoder.layers + decoder.layers

    @property
    def trainable_variables(self) -> list:
        return self.encoder.trainable_variables + self.decoder.trainable_variables

    def __call__(self, inputs: dict, training: bool = False) -> tf.Tensor:
        _, state = self.encoder(inputs["x"], training)
        return self.decoder(inputs["x_dec"], training, initial_state=state)[0]


def build_model(model: modelplan.ModelPlan, device: str) -> SpecNet | EncoderDecoderNet:
    """Translate planned layers into tf.keras layers (Keras infers the shapes when they are first called)."""
    if model.encoder is None:
        return SpecNet(_build_stack(model.layers, device, "layer"))
    encoder = _build_stack(model.encoder, device, "encoder layer", state_out=True)
    return EncoderDecoderNet(encoder, _build_stack(model.layers, device, "layer"))


def _build_stack(spec_layers: list[modelplan.Layer], device: str, what: str, state_out: bool = False) -> _Stack:
    """The layers of one list; state_out: its last layer (an LSTM) also returns its final state."""
    layers = keras.layers
    stack: list[Any] = []
    takes_state = None
    for i, layer in enumerate(spec_layers):
        kind = layer["type"]
        if kind == "conv2d":
            stack.append(layers.Conv2D(
                layer["filters"], layer["kernel"], strides=layer["stride"],
                padding=layer["padding"], activation=layer["activation"], use_bias=layer["bias"],
            ))
        elif kind in modelplan.POOLS:
            # TensorFlow's own 'same' rule (out = ceil(in / stride); an average over real values only)
            # is the spec's definition.
            pool = layers.MaxPooling2D if kind == "maxpool2d" else layers.AveragePooling2D
            stack.append(pool(layer["pool"], strides=layer["stride"], padding=layer["padding"]))
        elif kind == "lrn":
            stack.append(_LRN(layer))
        elif kind == "global_avgpool":
            stack.append(layers.GlobalAveragePooling2D())
        elif kind == "batchnorm":  # the plan's momentum is Keras' (the moving statistics' weight)
            stack.append(layers.BatchNormalization(momentum=layer["momentum"], epsilon=layer["epsilon"]))
        elif kind == "activation":
            stack.append(layers.Activation(layer["activation"]))
        elif kind == "residual":
            stack.append(_Residual(_build_stack(layer.branch, device, f"{what} {i} branch layer"),
                                   _build_stack(layer.shortcut, device, f"{what} {i} shortcut layer"),
                                   layer["activation"]))
        elif kind == "concat":
            stack.append(_Concat([_build_stack(branch, device, f"{what} {i} branch {b} layer")
                                  for b, branch in enumerate(layer.branches)]))
        elif kind == "dropout":
            stack.append(layers.Dropout(layer["rate"]))
        elif kind == "flatten":
            stack.append(layers.Flatten())
        elif kind == "dense":
            stack.append(layers.Dense(layer["units"], activation=layer["activation"]))
        elif kind == "embedding":
            stack.append(layers.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "gru":  # the Keras module's layer: reset_after is cuDNN's form (two bias vectors per gate set)
            stack.append(layers.GRU(layer["units"], return_sequences=layer["return_sequences"], reset_after=True,
                                    use_cudnn=switches.keras_use_cudnn()))
        elif kind == "lstm":
            if layer["use_lengths"] and not any(p["type"] == "embedding" for p in spec_layers[:i]):
                raise modelplan.SpecError(f"{what} {i}: use_lengths needs an embedding before the lstm")
            lstm = _LSTM(layer["units"], layer["use_lengths"], layer["return_sequences"], device == "cpu",
                         return_state=state_out and i == len(spec_layers) - 1)
            if layer["initial_state"] == "encoder":
                takes_state = lstm
            stack.append(lstm)
    reads_lengths = any(layer["type"] == "lstm" and layer["use_lengths"] for layer in spec_layers)
    return _Stack(stack, reads_lengths, takes_state)


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
        """Logits (N, T, classes) of an encoder-decoder for a batch of role arrays, in inference mode."""
        inputs = {role: tf.constant(np.asarray(batch[role], dtype=np.int32)) for role in ("x", "x_dec")}
        return self.predict_step(inputs).numpy()

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
        lstms = [layer for layer in self.model.layers if isinstance(layer, _LSTM)]
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


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TFTrainer:
    """Build the spec's model and optimizer for `device` ('cpu' or 'gpu') with the given seed."""
    return TFTrainer(spec, data, device, seed)
