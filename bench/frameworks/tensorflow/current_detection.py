"""TensorFlow 2's Faster R-CNN (bench/detection/detector.py's drawing), the Network that
bench/detection/trainer.py's DetectionTrainer drives; current.py's make_trainer returns it for a detector spec.

- Trunk and head: current_layers.build_layers over the plan's trunk and head layer lists (the classifiers'
  tf.keras layers, Keras' default initializers). Keras infers shapes at the first call, so the trunk takes any
  padded image (a multiple of the size divisor), NHWC: TensorFlow's native layout, the pixels as they arrive.
- RPN: Conv2D 3x3 'same' + ReLU, then 1x1 Conv2Ds of A logits and 4A deltas. Reshaping (1, Hf, Wf, A) to (-1,)
  and (1, Hf, Wf, 4A) to (-1, 4) is the (y, x, anchor) order, the 4A channels read as (anchor, 4).
- RoI op: tf.image.crop_and_resize made equal to RoIAlign (aligned, fixed sampling ratio): the C4 map padded by
  one cell with tf.pad(mode="SYMMETRIC") (the edge repeated: RoIAlign's clamp to the edge for a sample within
  one cell outside; extrapolation_value=0 beyond it), each RoI's normalised box placed so that the
  corner-aligned crop of out*ratio points per axis lands on RoIAlign's sample points (crop_boxes), then a
  ratio x ratio average pool (the bin's mean). Checked against bench/detection/roialign.reference by the probe.
- Weights: set_weights takes bench/detection/weights.py's neutral layout and transposes it to Keras' (conv kernels
  (out, in, kh, kw) -> HWIO (kh, kw, in, out); dense (out, in) -> (in, out); both cross-correlation, as Conv2D
  computes, so nothing is flipped), walking the trunk's and head's Conv2D, BatchNormalization and Dense layers in
  the plan's order (a residual's branch then its shortcut, a concat's branches in order) beside weights.owners,
  then the RPN's three convs and the two outputs. The 4A delta channels need no reordering: the NHWC reshape to
  (-1, 4) reads channel 4a + k as (anchor a, coordinate k), the neutral order.
- Losses: detector.losses in tf ops, summed; one eager step with tf.GradientTape. The tape is held across the
  host stop: the RPN's outputs go to the host (.numpy()) for the proposals and the sampled RoIs
  (DetectionTrainer's rois_for), which come back as constants (approximate joint training), and the head and
  losses run under the same tape. Eager throughout (no tf.function): images differ in size and the step is
  split by a host call, and eager is the simplest correct form (one trunk forward per step).
- Optimizer, threads, device and seed: current.py's (make_optimizer over common.optimizer_settings: Keras'
  decoupled weight decay, common.WEIGHT_DECAY_RULE, on every trainable variable as TFTrainer applies it;
  _configure_runtime; keras.utils.set_random_seed). Batchnorm: batch statistics in train_step, moving ones in
  detect.

Paper era (TensorFlow 1.11) is not this module: it would build one graph with the trunk over a (1, None, None, 3)
placeholder, the host stop as tf.py_func (rois and their targets as outputs), crop_and_resize with `box_ind`
(1.11's name) instead of `box_indices`; crop_boxes is NumPy and would serve it as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.step import RoiBatch, RpnBatch
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.keras.current_optimizers import make_optimizer
from bench.frameworks.tensorflow import current
from bench.frameworks.tensorflow.current_layers import Concat, Residual, Stack, build_layers

keras = tf.keras
# Each weighted Keras layer's variables in bench/detection/weights.py's order of parts (weights.channels_last gives
# each neutral array's layout).
_PARTS = (
    (keras.layers.Conv2D, ("kernel", "bias")),
    (keras.layers.Dense, ("kernel", "bias")),
    (keras.layers.BatchNormalization, ("gamma", "beta", "moving_mean", "moving_variance")),
)


def _parts(layer: Any) -> tuple | None:
    """A weighted layer's variable names in the neutral order of parts; None for any other layer."""
    for kind, parts in _PARTS:
        if isinstance(layer, kind):
            return parts
    return None


def _variables(layer: Any) -> list:
    """A weighted layer's variables in the neutral order of parts; a conv without bias (use_bias=False) has none,
    and the plan then names no bias either."""
    return [getattr(layer, name) for name in _parts(layer) if getattr(layer, name) is not None]


ROI_OP = ("tf.image.crop_and_resize as RoIAlign (aligned, fixed sampling ratio): one-cell SYMMETRIC pad, boxes on "
          "the sample points, ratio x ratio average pool")


def crop_boxes(rois: np.ndarray, spatial_scale: float, output: int, ratio: int, height: int, width: int,
               aligned: bool = True) -> np.ndarray:
    """(R, 4) float32 normalised [y1, x1, y2, x2] boxes for tf.image.crop_and_resize on a `height` x `width`
    feature map padded by one cell each side, whose (output * ratio)-point corner-aligned crop of each (x1, y1,
    x2, y2) image-pixel RoI samples exactly RoIAlign's points (bench/detection/roialign.py's rule: sample k of a
    bin of size b starting at s is s + (k + 0.5) b / ratio, the RoI shifted by half a cell when aligned)."""
    rois = np.asarray(rois, np.float64).reshape(-1, 4)
    offset = 0.5 if aligned else 0.0
    points = output * ratio

    def axis(start, end, size):
        start = start * spatial_scale - offset
        extent = end * spatial_scale - offset - start
        if not aligned:
            extent = np.maximum(extent, 1.0)
        step = extent / points
        # Padded coordinates are one more; crop_and_resize maps a normalised y to y * (padded size - 1).
        first, last = start + 0.5 * step + 1.0, start + (points - 0.5) * step + 1.0
        return first / (size + 1), last / (size + 1)

    y1, y2 = axis(rois[:, 1], rois[:, 3], height)
    x1, x2 = axis(rois[:, 0], rois[:, 2], width)
    return np.stack([y1, x1, y2, x2], axis=1).astype(np.float32)


def smooth_l1(d: tf.Tensor, beta: float) -> tf.Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (detector.smooth_l1 in tf ops)."""
    a = tf.abs(d)
    return tf.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


class Network:
    """The detector's layers and one training step / detection (bench/detection/trainer.py's Network)."""

    def __init__(self, spec: dict, device: str, seed: int):
        self.threads = current._configure_runtime(device)  # before any op: TF takes threads only then
        self.device = device
        self.gpu = device == "gpu"
        keras.utils.set_random_seed(seed)  # Python, NumPy, TensorFlow and Keras generators, as TFTrainer
        self.detector = d = det.plan(spec)
        self.settings = d.settings
        layers = keras.layers
        self.trunk = build_layers(d.trunk, device, "trunk layer")
        self.head = build_layers(d.head, device, "head layer")
        self.rpn_conv = layers.Conv2D(d.settings["rpn"]["channels"], 3, padding="same", activation="relu")
        self.rpn_class = layers.Conv2D(d.num_anchors, 1)
        self.rpn_box = layers.Conv2D(4 * d.num_anchors, 1)
        self.class_out = layers.Dense(d.num_classes)
        self.box_out = layers.Dense(4 * d.num_classes)
        # Build every layer now (inference mode: the moving statistics untouched) on the smallest padded image
        # whose trunk output is 2 x 2 cells, and one RoI.
        side = 2 * d.settings["image"]["size_divisor"]
        self._rpn(self.trunk(tf.zeros((1, side, side, 3)), training=False))
        out = d.settings["roi"]["output"]
        self._head(tf.zeros((1, out, out, d.trunk_channels)), training=False)
        self.variables = (self.trunk.trainable_variables + self.rpn_conv.trainable_variables
                          + self.rpn_class.trainable_variables + self.rpn_box.trainable_variables
                          + self.head.trainable_variables + self.class_out.trainable_variables
                          + self.box_out.trainable_variables)
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = make_optimizer(keras.optimizers, self.opt_settings)
        self.optimizer.build(self.variables)

    # -- the network's pieces ------------------------------------------------------------------------
    def _rpn(self, features: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Objectness (Hf*Wf*A,) and deltas (Hf*Wf*A, 4) in (y, x, anchor) order from C4 (1, Hf, Wf, C)."""
        hidden = self.rpn_conv(features)
        return tf.reshape(self.rpn_class(hidden), [-1]), tf.reshape(self.rpn_box(hidden), [-1, 4])

    def _head(self, pooled: tf.Tensor, training: bool) -> tuple[tf.Tensor, tf.Tensor]:
        """Class logits (R, num_classes) and box deltas (R, 4 * num_classes) from RoI features (R, out, out, C)."""
        vector = self.head(pooled, training=training)
        return self.class_out(vector), self.box_out(vector)

    def _roi_align(self, features: tf.Tensor, rois: np.ndarray) -> tf.Tensor:
        """RoIAlign of C4 (1, Hf, Wf, C) at (R, 4) image-pixel RoIs -> (R, out, out, C) (module docstring)."""
        roi = self.settings["roi"]
        out, ratio = roi["output"], roi["sampling_ratio"]
        height, width = int(features.shape[1]), int(features.shape[2])
        boxes = crop_boxes(rois, 1.0 / self.settings["anchors"]["stride"], out, ratio, height, width,
                           roi["aligned"])
        padded = tf.pad(features, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="SYMMETRIC")
        crops = tf.image.crop_and_resize(padded, boxes, tf.zeros(len(boxes), tf.int32), [out * ratio, out * ratio],
                                         method="bilinear", extrapolation_value=0.0)
        return tf.nn.avg_pool2d(crops, ratio, ratio, "VALID")

    def _losses(self, objectness, rpn_deltas, rpn: RpnBatch, logits, box_deltas, roi: RoiBatch) -> dict:
        """detector.losses in tf ops: the four scalar losses by name (detector.LOSS_NAMES)."""
        beta_rpn, beta_roi = self.settings["rpn"]["box_beta"], self.settings["roi"]["box_beta"]
        bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(rpn.labels), logits=objectness)
        rpn_class = tf.reduce_sum(bce * rpn.sampled) / rpn.count
        rpn_box = tf.reduce_sum(smooth_l1(rpn_deltas - rpn.box_targets, beta_rpn) * rpn.box_mask) / rpn.count
        head_class = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant(roi.labels, tf.int64), logits=logits))
        head_box = tf.reduce_sum(smooth_l1(box_deltas - roi.box_targets, beta_roi) * roi.box_mask) / len(roi.labels)
        return {"rpn_class": rpn_class, "rpn_box": rpn_box, "head_class": head_class, "head_box": head_box}

    def _weighted(self) -> list:
        """The Keras layers that hold weights, in bench/detection/weights.owners' order: the trunk's and the
        head's (depth first, a residual's branch before its shortcut), then the RPN and the two outputs."""
        found: list = []

        def walk(stack: Stack) -> None:
            for layer in stack.layers:
                if isinstance(layer, Residual):
                    walk(layer.branch)
                    walk(layer.shortcut)
                elif isinstance(layer, Concat):
                    for branch in layer.branches:
                        walk(branch)
                elif _parts(layer) is not None:
                    found.append(layer)
                elif layer.trainable_variables:  # a weighted layer this walk does not know would be left unset
                    raise ValueError(f"the detector has a weighted {type(layer).__name__} that set_weights cannot set")

        walk(self.trunk.stack)
        walk(self.head.stack)
        return found + [self.rpn_conv, self.rpn_class, self.rpn_box, self.class_out, self.box_out]

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's neutral layout (batchnorm's moving statistics included):
        each weighted layer beside the plan's owner of the same place, each array in Keras' layout
        (weights.channels_last), every count and shape checked before any is assigned (no broadcast)."""
        for variable, value in neutral.placed(self.detector, weights, self._weighted(), _variables,
                                              lambda v: tuple(v.shape), neutral.channels_last):
            variable.assign(value)

    # -- the Network interface -----------------------------------------------------------------------
    def train_step(self, pixels: np.ndarray, rpn: RpnBatch,
                   rois_for: Callable[[Any, Any], RoiBatch]) -> dict[str, float]:
        """One image forward (training mode), the host's RoIs in the middle, backward of the four losses' sum, one
        optimizer update; the four losses (detector.LOSS_NAMES) as computed before the update."""
        with tf.GradientTape() as tape:
            features = self.trunk(tf.constant(pixels), training=True)
            objectness, deltas = self._rpn(features)
            roi = rois_for(objectness.numpy(), deltas.numpy())  # host stop: the RoIs are constants to the tape
            logits, box_deltas = self._head(self._roi_align(features, roi.rois), training=True)
            parts = self._losses(objectness, deltas, rpn, logits, box_deltas, roi)
            loss = parts["rpn_class"] + parts["rpn_box"] + parts["head_class"] + parts["head_box"]
        grads = tape.gradient(loss, self.variables)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        return {name: float(value) for name, value in parts.items()}

    def detect(self, pixels: np.ndarray, rois_for: Callable[[Any, Any], RoiBatch]) -> tuple[np.ndarray, np.ndarray]:
        """The forward pass in inference mode (moving statistics, no tape): (class logits, box deltas) as NumPy."""
        features = self.trunk(tf.constant(pixels), training=False)
        objectness, deltas = self._rpn(features)
        roi = rois_for(objectness.numpy(), deltas.numpy())
        logits, box_deltas = self._head(self._roi_align(features, roi.rois), training=False)
        return logits.numpy(), box_deltas.numpy()

    def roi_features(self, features: np.ndarray, batch: RoiBatch) -> np.ndarray:
        """The RoI op alone on NHWC (1, Hf, Wf, C) features: (R, C, out, out), the probe's layout."""
        return tf.transpose(self._roi_align(tf.constant(features), batch.rois), [0, 3, 1, 2]).numpy()

    def param_count(self) -> int:
        """Trainable parameters: trunk, RPN, head and the two outputs."""
        return int(sum(int(np.prod(v.shape)) for v in self.variables))

    def synchronize(self) -> None:
        """Wait for queued device work (every step already read its loss on the host)."""
        if self.gpu:
            tf.test.experimental.sync_devices()

    def info(self) -> dict:
        """What was really used: device, threads, layout, RoI op, loop, optimizer semantics, versions."""
        cores = os.cpu_count() or 1
        return {
            "framework": current.NAME,
            "versions": current.versions(),
            "device": "GPU:0" if self.gpu else "CPU",
            "device_name": common.cpu_name() if not self.gpu else tf.config.list_logical_devices("GPU")[0].name,
            "threads": {"intra_op": tf.config.threading.get_intra_op_parallelism_threads() or cores,
                        "inter_op": tf.config.threading.get_inter_op_parallelism_threads() or cores},
            "data_layout": "NHWC (TensorFlow's native layout)",
            "roi_op": ROI_OP,
            "training_loop": ("eager, one image per step: tf.GradientTape held across the host's proposals and "
                              "RoI sampling (bench/detection/step.py)"),
            "loss": "the sum of detector.losses' four terms in tf ops (sigmoid and softmax cross-entropy, smooth L1)",
            "optimizer": self.opt_settings,
            "optimizer_impl": "tf.keras.optimizers."
            + {"sgd": "SGD", "adam": "Adam", "adadelta": "Adadelta"}[self.opt_settings["name"]],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> DetectionTrainer:
    """The detector's Network on `device` ('cpu' or 'gpu') with the given seed, in the shared DetectionTrainer."""
    network = Network(spec, device, seed)
    return DetectionTrainer(network, network.detector, data, seed)
