"""frcnn-voc2012's detector (bench/detection/detector.py's drawing) in Keras 3 on TensorFlow.

Keras models for the layers, keras.ops for the rest:
- the trunk and the head are keras/current.py's functional builders (build_functional over `_apply`/`_layer`)
  on the planned layer lists; the trunk's input is (None, None, 3), so it takes any padded image size;
- the RPN (3x3 Conv2D 'same' + ReLU, 1x1 Conv2D of A logits, 1x1 Conv2D of 4A deltas) and the two Dense
  outputs are keras layers in functional models of their own;
- RoIAlign is the two-matrix product of bench/detection/roialign.py with keras.ops.matmul (Keras has no RoI
  op; the product is exact, and differentiable in the features);
- the four losses of detector.losses are keras.ops;
- set_weights takes bench/detection/weights.py's neutral layout: conv kernels (out, in, kh, kw) transposed to
  Keras' HWIO (kh, kw, in, out) (Keras' Conv2D is TensorFlow's cross-correlation: no flip), dense kernels
  (out, in) to (in, out), batchnorms as [gamma, beta, moving_mean, moving_variance] (the variance itself; the
  plan's epsilon is the layer's). The RPN's 4A delta channels need no permutation: the neutral channel 4a + k
  is (anchor a, coordinate k), which is what the channels_last reshape to (-1, 4) in _rpn reads.

Keras' model.fit cannot stop on the host in the middle of a step (the proposals and the sampled RoIs are
NumPy, bench/detection/step.py), so the step is the custom training loop Keras 3 documents for its TensorFlow
backend: the models called eagerly under a tf.GradientTape (training=True: batchnorm's batch statistics),
the RPN's outputs read to the host in the middle (so the RoIs are constants to the gradient, approximate joint
training), tape.gradient, and optimizer.apply_gradients with the optimizer keras/current.py's trainer builds
for the spec (current_optimizers.make_optimizer: Adam, weight decay decoupled as Keras applies it). detect
calls the same models with training=False (moving statistics) and no tape.

Era: current only (Keras 3, CPython 3.11). Keras 2.2.4 (the paper era) has neither keras.ops nor eager
models; keras/paper.py would need the host stop as a tf.py_func inside one TensorFlow 1.11 graph (the
proposals and RoI sampling as a py_func between the RPN and the RoI op), which this module does not attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.step import RoiBatch, RpnBatch
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.keras import current
from bench.frameworks.keras.current_optimizers import make_optimizer

ops = keras.ops
ROI_OP = "RoIAlign as two matrix products (bench/detection/roialign.py) with keras.ops.matmul"
# The Keras layer class each weighted plan layer type builds (keras/current.py's _layer).
WEIGHTED = {"conv2d": keras.layers.Conv2D, "batchnorm": keras.layers.BatchNormalization,
            "dense": keras.layers.Dense}


def planned_layers(model: keras.Model, layers: list) -> list:
    """The Keras layers that `model` (keras/current.py's build_functional of the planned `layers`) built for
    each planned layer, in the plan's order: a residual's branch, then its shortcut; a concat's branches in order
    (bench/detection/weights.py's order).

    model.layers is not that order (Keras sorts a functional model's layers by their depth in the graph, which
    interleaves a block's shortcut with its branch), so the graph is walked backwards from the output along each
    layer's inputs, beside the plan: a residual is Activation(Add([branch, shortcut])), a concat
    Concatenate(branches), any other planned layer one Keras layer. Raises where the graph and the plan differ.
    """
    producers = {id(layer.output): layer for layer in model.layers}

    def walk(planned: list, tensor: Any) -> tuple:
        ordered: list = []
        for layer in reversed(planned):
            op = producers[id(tensor)]
            if layer.type in ("residual", "concat"):
                merge = producers[id(op.input)] if layer.type == "residual" else op
                expected = keras.layers.Add if layer.type == "residual" else keras.layers.Concatenate
                if not isinstance(merge, expected):
                    raise ValueError(f"planned {layer.type} {layer.index}: the graph has a {type(merge).__name__}")
                parts = [layer.branch, layer.shortcut or []] if layer.type == "residual" else list(layer.branches)
                if len(merge.input) != len(parts):
                    raise ValueError(f"planned {layer.type} {layer.index}: {len(merge.input)} inputs in the graph, "
                                     f"{len(parts)} in the plan")
                walked = [walk(part, t) for part, t in zip(parts, merge.input)]
                if any(start is not walked[0][1] for _, start in walked):
                    raise ValueError(f"planned {layer.type} {layer.index}: its paths start from different tensors")
                ordered = [keras_layer for inner, _ in walked for keras_layer in inner] + ordered
                tensor = walked[0][1]
            else:
                if layer.type in WEIGHTED and not isinstance(op, WEIGHTED[layer.type]):
                    raise ValueError(f"planned {layer.type} {layer.index}: the graph has a {type(op).__name__}")
                ordered.insert(0, op)
                tensor = op.input
        return ordered, tensor

    ordered, start = walk(layers, model.outputs[0])
    if start is not model.inputs[0]:
        raise ValueError(f"{model.name}: walking the plan back from the output does not reach the input")
    return ordered


def roi_align(features: Any, rows: Any, cols: Any) -> Any:
    """RoIAlign as rows @ features @ cols^T: features (1, H, W, C), rows (R, out, H), cols (R, out, W) ->
    (R, out, out, C) channels_last (the head's input)."""
    _, height, width, channels = features.shape
    rows, cols = ops.convert_to_tensor(rows, "float32"), ops.convert_to_tensor(cols, "float32")
    # Contract the rows: (R, out, H) @ (H, W * C) -> (R, out_i, W, C).
    by_rows = ops.matmul(rows, ops.reshape(features, (height, width * channels)))
    out = rows.shape[1]
    by_rows = ops.reshape(by_rows, (-1, out, width, channels))
    # Then the columns: (R, out_j, W) @ (R, W, out_i * C) -> (R, out_j, out_i, C), back to (R, out_i, out_j, C).
    by_cols = ops.matmul(cols, ops.reshape(ops.transpose(by_rows, (0, 2, 1, 3)), (-1, width, out * channels)))
    return ops.transpose(ops.reshape(by_cols, (-1, out, out, channels)), (0, 2, 1, 3))


def smooth_l1(d: Any, beta: float) -> Any:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (detector.smooth_l1 in keras.ops)."""
    a = ops.abs(d)
    return ops.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


class KerasDetector:
    """The Network (bench/detection/trainer.py) of a planned detector in Keras 3: four keras.Models (trunk,
    RPN, head, outputs), the RoI op and the losses in keras.ops, and a tf.GradientTape training step."""

    def __init__(self, detector: det.DetectorPlan, opt_settings: dict, device: str) -> None:
        self.detector = detector
        self.device = device
        self.opt_settings = opt_settings
        channels, anchors = detector.trunk_channels, detector.num_anchors
        self.trunk = current.build_functional(detector.trunk, (None, None, 3), "trunk")
        # The RPN's and the outputs' layers, kept by name for set_weights (weights.py's rpn_conv ... boxes).
        self.rpn_conv = keras.layers.Conv2D(detector.settings["rpn"]["channels"], 3, padding="same",
                                            activation="relu")
        self.rpn_logits, self.rpn_deltas = keras.layers.Conv2D(anchors, 1), keras.layers.Conv2D(4 * anchors, 1)
        c4 = keras.Input(shape=(None, None, channels), dtype="float32")
        hidden = self.rpn_conv(c4)
        self.rpn = keras.Model(c4, [self.rpn_logits(hidden), self.rpn_deltas(hidden)], name="rpn")
        out = detector.settings["roi"]["output"]
        self.head = current.build_functional(detector.head, (out, out, channels), "head")
        self.classes = keras.layers.Dense(detector.num_classes)
        self.boxes = keras.layers.Dense(4 * detector.num_classes)
        pooled = keras.Input(shape=(detector.features,), dtype="float32")
        self.outputs = keras.Model(pooled, [self.classes(pooled), self.boxes(pooled)], name="outputs")
        self.models = (self.trunk, self.rpn, self.head, self.outputs)
        # Every weighted layer in bench/detection/weights.owners' order.
        self.weighted = [layer for model, planned in ((self.trunk, detector.trunk), (self.head, detector.head))
                         for layer in planned_layers(model, planned) if isinstance(layer, tuple(WEIGHTED.values()))]
        self.weighted += [self.rpn_conv, self.rpn_logits, self.rpn_deltas, self.classes, self.boxes]
        self.optimizer = make_optimizer(keras.optimizers, opt_settings)

    def _rpn(self, pixels: np.ndarray, training: bool) -> tuple:
        """(C4 features, objectness (A,), deltas (A, 4)), the RPN's outputs read in (y, x, anchor) order: the
        4A channels of a cell are (anchor, 4), so a channels_last reshape is that order."""
        features = self.trunk(ops.convert_to_tensor(pixels, "float32"), training=training)
        objectness, deltas = self.rpn(features, training=training)
        return features, ops.reshape(objectness, (-1,)), ops.reshape(deltas, (-1, 4))

    def _head(self, features: Any, batch: RoiBatch, training: bool) -> tuple:
        """(class logits (R, classes), box deltas (R, 4 * classes)) of the RoIs."""
        pooled = self.head(roi_align(features, batch.rows, batch.cols), training=training)
        return self.outputs(pooled, training=training)

    def _losses(self, objectness: Any, rpn_deltas: Any, rpn: RpnBatch, logits: Any, box_deltas: Any,
                roi: RoiBatch) -> dict[str, Any]:
        """detector.losses' four losses (scalar tensors) in keras.ops."""
        settings = self.detector.settings
        rpn_class = ops.sum(ops.binary_crossentropy(rpn.labels, objectness, from_logits=True) * rpn.sampled)
        rpn_box = ops.sum(smooth_l1(rpn_deltas - rpn.box_targets, settings["rpn"]["box_beta"]) * rpn.box_mask)
        head_class = ops.mean(ops.sparse_categorical_crossentropy(roi.labels, logits, from_logits=True))
        head_box = ops.sum(smooth_l1(box_deltas - roi.box_targets, settings["roi"]["box_beta"]) * roi.box_mask)
        return {"rpn_class": rpn_class / rpn.count, "rpn_box": rpn_box / rpn.count, "head_class": head_class,
                "head_box": head_box / len(roi.rois)}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's neutral layout (module docstring for the conversions):
        every weighted layer beside weights.owners, in the plan's order, the batchnorms' moving statistics
        included; raises on any count or shape difference (assign is never left to broadcast)."""
        # Conv2D/Dense: [kernel, bias?]; BatchNormalization: [gamma, beta, moving_mean, moving_variance].
        for target, value in neutral.placed(self.detector, weights, self.weighted, lambda layer: layer.weights,
                                            lambda t: tuple(t.shape), neutral.channels_last):
            target.assign(value)

    def train_step(self, pixels: np.ndarray, rpn: RpnBatch,
                   rois_for: Callable[[Any, Any], RoiBatch]) -> dict[str, float]:
        """One image in training mode: forward, the RoIs from the host, the losses, one Adam update; the four
        losses (detector.LOSS_NAMES) as computed before the update."""
        variables = self.trainable_weights()
        with tf.GradientTape() as tape:
            features, objectness, deltas = self._rpn(pixels, True)
            # The host stop: the RoIs come from NumPy and are constants to the gradient.
            batch = rois_for(ops.convert_to_numpy(objectness), ops.convert_to_numpy(deltas))
            logits, box_deltas = self._head(features, batch, True)
            parts = self._losses(objectness, deltas, rpn, logits, box_deltas, batch)
            loss = parts["rpn_class"] + parts["rpn_box"] + parts["head_class"] + parts["head_box"]
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return {name: float(ops.convert_to_numpy(value)) for name, value in parts.items()}

    def detect(self, pixels: np.ndarray, rois_for: Callable[[Any, Any], RoiBatch]) -> tuple:
        """The forward pass in inference mode: (class logits, box deltas) as NumPy arrays."""
        features, objectness, deltas = self._rpn(pixels, False)
        batch = rois_for(ops.convert_to_numpy(objectness), ops.convert_to_numpy(deltas))
        if not len(batch.rois):  # no proposal survived: nothing for the head
            classes = self.detector.num_classes
            return np.zeros((0, classes), np.float32), np.zeros((0, 4 * classes), np.float32)
        logits, box_deltas = self._head(features, batch, False)
        return ops.convert_to_numpy(logits), ops.convert_to_numpy(box_deltas)

    def roi_features(self, features: np.ndarray, batch: RoiBatch) -> np.ndarray:
        """The RoI op alone on (1, H, W, C) features: (R, C, out, out) as NumPy (the parity probe's layout)."""
        pooled = roi_align(ops.convert_to_tensor(features, "float32"), batch.rows, batch.cols)
        return np.transpose(ops.convert_to_numpy(pooled), (0, 3, 1, 2))

    def trainable_weights(self) -> list:
        """Every trainable variable of the four models."""
        return [w for model in self.models for w in model.trainable_weights]

    def param_count(self) -> int:
        """Trainable parameters of the four models."""
        return int(sum(int(np.prod(w.shape)) for w in self.trainable_weights()))

    def synchronize(self) -> None:
        """Nothing to wait for: each step ends with a host read of its loss (detect with its outputs)."""

    def info(self) -> dict:
        """What was really used (keras/current.py's trainer's keys that apply, and the RoI op)."""
        gpu = self.device == "gpu"
        return {
            "framework": current.NAME,
            "versions": current.versions(),
            "device": "GPU:0" if gpu else "CPU",
            "device_name": tf.config.list_logical_devices("GPU")[0].name if gpu else common.cpu_name(),
            "threads": {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                        "inter_op": tf.config.threading.get_inter_op_parallelism_threads()},  # 0: TF's default
            "kernels": {
                "trunk_head": "keras/current.py's functional builders (Conv2D, BatchNormalization, residual Add)",
                "rpn": "keras.layers.Conv2D 3x3 'same' + ReLU, 1x1 objectness, 1x1 deltas",
                "batchnorm": "train_step: batch statistics (training=True); detect: moving ones",
                "step": "eager keras.Models under tf.GradientTape, host stop for the RoIs, optimizer.apply_gradients",
            },
            "roi_op": ROI_OP,
            "data_layout": "NHWC (channels_last), one image per step",
            "loss": "sum of detector.losses' four in keras.ops (sigmoid BCE, smooth L1, softmax CE, smooth L1)",
            "optimizer": self.opt_settings,
            "optimizer_impl": f"keras.optimizers.{type(self.optimizer).__name__}",
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> DetectionTrainer:
    """The detector's DetectionTrainer, with threads, device and seeds set as keras/current.py's trainer sets
    them."""
    current.configure_runtime(device)
    keras.utils.set_random_seed(seed)  # Python, NumPy and TensorFlow generators
    detector = det.plan(spec)
    network = KerasDetector(detector, common.optimizer_settings(spec), device)
    return DetectionTrainer(network, detector, data, seed)
