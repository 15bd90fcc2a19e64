"""TensorFlow 1.11 (graph mode): translates a workload spec into a tf.Graph trained in a tf.Session.

Runs inside the paper-era tensorflow image (CPython 3.6). The TensorFlow 1.x idiom the DLBench
authors' notebooks use: one graph built once, placeholders fed with NumPy batches
(feed_dict), a seeded NumPy permutation of the rows each epoch, a tf.train optimizer's
minimize step (gradients, then apply_gradients) run by Session.run, and a tf.Session whose
ConfigProto carries the thread counts the entrypoint asked for. Layers are tf.layers (conv2d,
max_pooling2d, dense, dropout, batch_normalization...) with TensorFlow's own 'valid'/'same' padding,
which is the plan's definition: every planned output shape is checked against the graph's static
shape. The graph of every planned layer type (the residual vocabulary, concat, lrn, gru) is built by
paper_layers.py. Images are fed as uint8 NHWC (TensorFlow's native layout; TensorFlow 1.11's CPU conv
and pool kernels take no other) and scaled to [0, 1] inside the graph.

step() runs the same train op on common.StepRing's batches (the training set in order, wrapping
around), infer() the output tensor with `training` False (batchnorm's moving statistics, dropout off)
on the same batches. A features model (model.output = "features") has no loss and no train op: its
graph ends at the last layer's vector, which infer() fetches.

The LSTM is tf.nn.dynamic_rnn over tf.nn.rnn_cell.LSTMCell, with sequence_length when the spec
reads real lengths (what the authors' notebook does): dynamic_rnn stops its loop at the batch's
longest sequence, zeros the outputs after each sequence's end and carries the state through, so
the final state is the one after each sequence's last real token. TensorFlow 1.11's cuDNN LSTM
(tf.contrib.cudnn_rnn.CudnnLSTM) takes no sequence lengths (tensorflow#23269), so on a GPU the
same dynamic_rnn runs the cell's matmuls and gates as CUDA kernels, step by step. LSTMCell has
one bias per gate (plus a constant forget bias of 1.0, Keras' unit_forget_bias at initialization),
so parameter counts are Keras'.

Sequence labels (lstm-ptb, seq2seq-manythings): the output dense layer runs on every step as one
matmul over (N*T, units); the loss is the sum of per-token cross-entropy over the counted tokens
(common.token_mask, fed as 0/1 weights) divided by their number. The encoder-decoder hands the
encoder's final LSTMStateTuple (c, h) to the decoder's dynamic_rnn as its initial_state.

Weight decay is decoupled (common.WEIGHT_DECAY_RULE): after the gradients are computed, every
trainable weight (batchnorm's gamma and beta included, as Keras 3 decays them; not its moving
statistics) is scaled by 1 - lr * weight_decay, then the optimizer applies the gradients, and the
batchnorm layers' moving-statistics updates (tf.GraphKeys.UPDATE_OPS) run in the same step. Embedding
gradients (IndexedSlices) are made dense before they are applied, so every optimizer applies its
dense update rule to every row, as the other frameworks do.
"""

import math
import os
import platform
from typing import Any, Dict, Optional, Tuple

# Read once, when TensorFlow is first imported: quiet its C++ notices.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench import modelplan  # noqa: E402
from bench.frameworks import NonFiniteLoss, common  # noqa: E402
from bench.frameworks.tensorflow import CAPABILITIES  # noqa: E402
from bench.frameworks.tensorflow.paper_layers import kernels, stack  # noqa: E402

NAME = "tensorflow"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (and whether this TensorFlow is a CUDA build)."""
    return {
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        # TensorFlow 1.11 exposes no CUDA/cuDNN version numbers: its build_info holds only is_cuda_build.
        "cuda_build": "yes" if tf.test.is_built_with_cuda() else "no",
    }


class _Inputs:
    """The placeholders one batch is fed through, and whether the graph runs on a GPU (paper_layers.stack)."""

    def __init__(self, model: modelplan.ModelPlan, lengths: bool, x_dec: bool, gpu: bool):
        self.gpu = gpu
        if model.input_shape is not None:
            self.x = tf.placeholder(tf.uint8, [None] + list(model.input_shape), name="x")  # NHWC
        else:
            self.x = tf.placeholder(tf.int32, [None, None], name="x")  # token ids (N, T)
        self.lengths = tf.placeholder(tf.int32, [None], name="len") if lengths else None
        self.x_dec = tf.placeholder(tf.int32, [None, None], name="x_dec") if x_dec else None
        if model.kind == "binary":
            self.y = tf.placeholder(tf.float32, [None], name="y")
        elif model.kind == "sequence":
            self.y = tf.placeholder(tf.int64, [None, None], name="y")
        else:
            self.y = tf.placeholder(tf.int64, [None], name="y")
        # 0/1 weights of the counted label steps (common.token_mask); sequence labels only.
        self.weights = tf.placeholder(tf.float32, [None, None], name="weights") if model.kind == "sequence" else None
        self.training = tf.placeholder_with_default(False, shape=(), name="training")


def _make_optimizer(opt: dict) -> tf.train.Optimizer:
    """The spec's optimizer with every hyper-parameter it sets (TensorFlow 1.x's tf.train optimizers)."""
    if opt["name"] == "sgd":
        if opt["momentum"]:
            return tf.train.MomentumOptimizer(opt["lr"], opt["momentum"])
        return tf.train.GradientDescentOptimizer(opt["lr"])
    if opt["name"] == "adadelta":  # Keras 2's Adadelta update, given its rho and epsilon
        return tf.train.AdadeltaOptimizer(learning_rate=opt["lr"], rho=opt["rho"], epsilon=opt["epsilon"])
    return tf.train.AdamOptimizer(learning_rate=opt["lr"], beta1=opt["beta1"], beta2=opt["beta2"],
                                  epsilon=opt["epsilon"])


def _session_config(device: str, threads: Optional[int]) -> tf.ConfigProto:
    """Thread pools from $DLREPRO_THREADS (0 = TensorFlow's default, one per core); no GPU for 'cpu'."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
    config = tf.ConfigProto(intra_op_parallelism_threads=threads or 0, inter_op_parallelism_threads=threads or 0)
    if device == "cpu":
        config.device_count["GPU"] = 0
    return config


class TF1Trainer:
    """The Trainer protocol (bench.frameworks.Trainer) for TensorFlow 1.11 in graph mode."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.threads = common.threads_from_env()
        self.device = device
        self.gpu = device == "gpu"
        self.config = _session_config(device, self.threads)
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        self.seq2seq = self.spec_model.encoder is not None
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.rng = np.random.RandomState(seed)  # the shuffling order depends on the seed alone
        self.train = self._arrays(data.train)
        self.test = self._arrays(data.test)
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(seed)  # graph-level seed: initializers and dropout
            self._build()
            init = tf.global_variables_initializer()
        self.graph.finalize()  # nothing may add ops after this: every step runs the same graph
        self.session = tf.Session(graph=self.graph, config=self.config)
        if self.gpu and not any(d.device_type == "GPU" for d in self.session.list_devices()):
            build = "CUDA build" if tf.test.is_built_with_cuda() else "CPU-only build"
            raise RuntimeError(f"device 'gpu' requested but TensorFlow sees no GPU ({tf.__version__}, {build})")
        self.session.run(init)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s and infer()'s batch order, made once

    # -- setup ---------------------------------------------------------------------------------
    def _arrays(self, split: dict) -> Dict[str, np.ndarray]:
        """The role arrays one batch feeds, as NumPy arrays of the placeholders' types."""
        x = split["x"]
        out = {}
        if x.ndim == 4:
            out["x"] = np.ascontiguousarray(x, dtype=np.uint8)  # NHWC uint8; /255 in the graph
        else:
            out["x"] = np.asarray(x, dtype=np.int32)
            if "len" in split:
                common.check_post_padded(x, split["len"])  # the lengths dynamic_rnn reads are the ids' own
                out["len"] = np.asarray(split["len"], dtype=np.int32)
        if "x_dec" in split:
            out["x_dec"] = np.asarray(split["x_dec"], dtype=np.int32)
        if self.kind == "binary":
            out["y"] = np.asarray(split["y"], dtype=np.float32)
        else:
            out["y"] = np.asarray(split["y"], dtype=np.int64)
        if self.kind == "sequence":
            out["weights"] = common.token_mask(out["y"], split.get("y_len")).astype(np.float32)
        return out

    def _build(self) -> None:
        """Placeholders, model, loss sums and the training op, in self.graph."""
        model = self.spec_model
        self.inputs = inputs = _Inputs(model, lengths="len" in self.train, x_dec=self.seq2seq, gpu=self.gpu)
        if model.input_shape is not None:
            x = tf.cast(inputs.x, tf.float32) / 255.0
        else:
            x = inputs.x
        if self.seq2seq:
            _, state = stack(model.encoder, x, inputs, "encoder_")
            logits, _ = stack(model.layers, inputs.x_dec, inputs, "decoder_", initial_state=state)
        else:
            logits, _ = stack(model.layers, x, inputs, "layer")
        if self.kind == "binary":
            logits = tf.squeeze(logits, axis=1)
        self.logits = logits  # a features model's features
        self.variables = tf.trainable_variables()
        if self.kind == modelplan.FEATURES:  # only run forward (infer): nothing to train or score
            self.train_op = None
            return
        self.loss_sum, self.count, self.hits = self._sums(logits, inputs)
        loss = self.loss_sum / self.count  # mean per example, or per counted token
        self.train_op = self._train_op(loss)

    def _sums(self, logits: tf.Tensor, inputs: _Inputs) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(summed loss, number of counted labels, number of hits) of a batch."""
        y = inputs.y
        if self.kind == "binary":
            losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)
            hits = tf.equal(tf.cast(logits > 0, tf.float32), y)  # logit 0 = p 0.5
        else:  # the class axis is last: (N, C) or, per step, (N, T, C)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            hits = tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int64), y)
        counted = inputs.weights if inputs.weights is not None else tf.ones_like(losses)
        return (tf.reduce_sum(losses * counted), tf.reduce_sum(counted),
                tf.reduce_sum(tf.cast(hits, tf.float32) * counted))

    def _train_op(self, loss: tf.Tensor) -> tf.Operation:
        """Gradients, then the decoupled weight decay, then the optimizer's update; with it the batchnorm layers'
        moving-statistics updates."""
        return tf.group(self._apply(loss), *tf.get_collection(tf.GraphKeys.UPDATE_OPS))

    def _apply(self, loss: tf.Tensor) -> tf.Operation:
        """Gradients, then the decoupled weight decay, then the optimizer's update."""
        optimizer = _make_optimizer(self.opt_settings)
        grads = tf.gradients(loss, self.variables)
        # IndexedSlices (embedding rows) -> dense: every row gets the optimizer's dense update.
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        wd = self.opt_settings["weight_decay"]
        if wd:
            scale = 1.0 - self.opt_settings["lr"] * wd
            with tf.control_dependencies(grads):  # decay after the gradients are read off the old weights
                decay = tf.group(*[tf.assign(v, v * scale) for v in self.variables])
            with tf.control_dependencies([decay]):
                return optimizer.apply_gradients(list(zip(grads, self.variables)))
        return optimizer.apply_gradients(list(zip(grads, self.variables)))

    def _feed(self, split: Dict[str, np.ndarray], rows: Any, training: bool) -> dict:
        """The feed_dict of the given rows (a slice or an index array) of a split."""
        inputs = self.inputs
        feed = {inputs.x: split["x"][rows], inputs.y: split["y"][rows], inputs.training: training}
        if inputs.lengths is not None:
            feed[inputs.lengths] = split["len"][rows]
        if inputs.x_dec is not None:
            feed[inputs.x_dec] = split["x_dec"][rows]
        if inputs.weights is not None:
            feed[inputs.weights] = split["weights"][rows]
        return feed

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (LSTMCell: one bias per gate, as Keras)."""
        return int(sum(int(np.prod(v.shape.as_list())) for v in self.variables))

    def _next_rows(self) -> np.ndarray:
        """The rows of step()'s (and infer()'s) next batch: common.StepRing's order."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train["y"]), self.batch_size)
        return self._ring.ring[self._ring.take()]

    def _trains(self) -> None:
        if self.train_op is None:
            raise modelplan.SpecError("a features model (model.output = \"features\") is only run forward (infer)")

    def step(self) -> float:
        """One Session.run of the train op on the next batch of the training set in order, wrapping around; the
        batch's mean loss per example or counted token."""
        self._trains()
        fetches = [self.train_op, self.loss_sum, self.count]
        _, loss_sum, count = self.session.run(fetches, feed_dict=self._feed(self.train, self._next_rows(), True))
        self.steps += 1
        value = float(loss_sum) / float(count)
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One Session.run of the output tensor, `training` False (batchnorm's moving statistics, dropout off), on
        the next batch of the training set in step()'s order; its outputs on the host (N, output values)."""
        return self.session.run(self.logits, feed_dict=self._feed(self.train, self._next_rows(), False))

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy) per example or counted token."""
        self._trains()
        self.epoch += 1
        split = self.train
        n = len(split["y"])
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        loss_total, counted, correct = 0.0, 0.0, 0.0
        fetches = [self.train_op, self.loss_sum, self.count, self.hits]
        for b, start in enumerate(common.batches(n, self.batch_size)):
            rows = order[start:start + self.batch_size]
            _, loss_sum, count, hits = self.session.run(fetches, feed_dict=self._feed(split, rows, True))
            if not np.isfinite(loss_sum):
                raise NonFiniteLoss(f"loss became {loss_sum / count} at step {b + 1} of epoch {self.epoch}")
            loss_total += float(loss_sum)
            counted += float(count)
            correct += float(hits)
        return loss_total / counted, correct / counted

    def evaluate(self) -> float:
        """Test accuracy (over counted tokens for sequences) with dropout off, batches of the training size."""
        self._trains()
        split = self.test
        counted, correct = 0.0, 0.0
        for start in common.batches(len(split["y"]), self.batch_size):
            rows = slice(start, start + self.batch_size)
            count, hits = self.session.run([self.count, self.hits], feed_dict=self._feed(split, rows, False))
            counted += float(count)
            correct += float(hits)
        return correct / counted

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays, dropout off (the probe's padding check)."""
        inputs = self.inputs
        feed = {inputs.x: batch["x"]}
        if inputs.lengths is not None:
            feed[inputs.lengths] = batch["len"]
        if inputs.x_dec is not None:
            feed[inputs.x_dec] = batch["x_dec"]
        return self.session.run(self.logits, feed_dict=feed)

    def synchronize(self) -> None:
        """Nothing queued: Session.run returns when the step's device work is done."""

    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        cores = os.cpu_count() or 1
        return {
            "framework": NAME,
            "versions": versions(),
            "device": "GPU:0" if self.gpu else "CPU",
            "device_name": self._gpu_name() if self.gpu else common.cpu_name(),
            "threads": {"intra_op": self.threads or cores, "inter_op": self.threads or cores},
            "kernels": kernels(self.spec_model, self.gpu),
            "data_layout": self._layout(),
            "input_pipeline": ("feed_dict of NumPy batches: rows picked by a seeded permutation each epoch"
                               + (", uint8 images cast and /255 in the graph" if self.spec_model.input_shape else "")),
            "training_loop": ("Python loop of tf.Session.run(train_op) over the batches (graph mode); step(): one "
                              "Session.run, infer(): Session.run of the output with training False"),
            "loss": self._loss_description(),
            "optimizer": self.opt_settings,
            "optimizer_impl": "tf.train." + self._make_optimizer_name(),
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "sparse_gradients": "embedding IndexedSlices made dense (the dense update on every row)",
        }

    def _make_optimizer_name(self) -> str:
        opt = self.opt_settings
        if opt["name"] == "sgd":
            return "MomentumOptimizer" if opt["momentum"] else "GradientDescentOptimizer"
        return {"adam": "AdamOptimizer", "adadelta": "AdadeltaOptimizer"}[opt["name"]]

    def _gpu_name(self) -> str:
        """The GPU's model name, from the device description TensorFlow logs ('..., name: Tesla P4, ...')."""
        from tensorflow.python.client import device_lib

        for dev in device_lib.list_local_devices(self.config):
            if dev.device_type == "GPU":
                for part in dev.physical_device_desc.split(","):
                    key, _, value = part.partition(":")
                    if key.strip() == "name":
                        return value.strip()
                return dev.physical_device_desc or dev.name
        return "GPU"

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


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TF1Trainer:
    """Build the spec's graph and optimizer for `device` ('cpu' or 'gpu') with the given seed."""
    return TF1Trainer(spec, data, device, seed)
