"""frcnn-voc2012's detector (bench/detection/detector.py draws it) in Chainer, the same in both eras (Chainer 7 and
4.5.0): the Network that bench.detection.trainer.DetectionTrainer drives.

The trunk and the head are layers.build_layers of the plan's layer lists (the classifier's builders: the plan's
pads, links.BatchNormalization, residual blocks), so they take any padded image size the plan allows. Between
them, the RPN (three links.Convolution2D), the RoI op and two links.Linear outputs. Chainer runs define-by-run,
so one forward pass reads the RPN's outputs back to the host in its middle (the RoIs are NumPy's business,
bench/detection/step.py) and goes on with the head; the RoIs are constants to the gradient.

RoI op: RoIAlign as two matrix products (bench/detection/roialign.py) with functions.matmul. Chainer 4.5.0 has
only roi_pooling_2d (RoIPool: a max over quantised bins); Chainer 7's roi_average_align_2d has no aligned=True
(it would need a -0.5 cell shift) and stretches RoIs under one cell to one cell, so it is not this op on the
probe's sub-cell RoI. The matrices are exact (roialign.py), the same arithmetic in both eras.

Losses (detector.losses' definitions in Chainer's ops): functions.sigmoid_cross_entropy (reduce='no', label -1
for the anchors not sampled) summed / rpn.count; smooth L1 as functions.huber_loss(delta=beta, reduce='no') / beta
(Huber with delta beta is beta times smooth L1 with beta); functions.softmax_cross_entropy (mean over the RoIs).
Optimizer: trainer.make_optimizer (Adam with the decoupled weight-decay hook, as every Chainer run); device,
OpenBLAS threads, device name and versions: the era adapter's hooks (current.py, paper.py).

Weights (set_weights): bench/detection/weights.py's layout is Chainer's own (Convolution2D's W (out, in, kh, kw),
a cross-correlation as Chainer's convolution_2d computes it, unflipped; Linear's W (out, in)), so every array is
copied as it is. The weighted links are found by walking the built structure (each SpecChain's steps in plan
order, a residual block's branch before its shortcut, a concat's branches in order), never by Link.params() or
children(), whose order is not the plan's: a Chain keeps its children's names in a set, which 4.5.0 iterates in
the set's (hash-seeded) order and Chainer 5.0.0b4 onwards (chainer PR 5119) sorted by name; neither is
registration order. A batchnorm takes gamma, beta and its avg_mean / avg_var (avg_var is the variance itself:
Chainer normalizes by sqrt(avg_var + eps) in inference, as the neutral layout means).

Chainer 4.5.0 API relied on (checked against its source): functions.matmul on 2-D and on same-batch 3-D arrays
(transb), huber_loss and sigmoid_cross_entropy with reduce='no' (ignore label -1), softmax_cross_entropy,
reshape, transpose, relu, sum; chainer.no_backprop_mode, using_config; links.Convolution2D(pad), links.Linear.
For set_weights (checked against Chainer 7's source only; all older than 4.5.0 by their changelogs):
Variable.array (3.0), BatchNormalization's gamma, beta, avg_mean and avg_var arrays when given a size,
Convolution2D's b None under nobias, ChainList iterated in order; and layers.py's own attributes (SpecChain.steps,
the wrapped conv, a residual block's branch and shortcut).
Not run here: the paper era is exercised only in its image. CPython 3.6-clean.
"""

from typing import Any, Callable, Dict, Iterator, List, Tuple

import chainer
import chainer.functions as F  # noqa: N812 (Chainer's own convention)
import chainer.links as L  # noqa: N812
import numpy as np
from chainer.backends import cuda

from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.step import RoiBatch, RpnBatch
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.chainer import layers, trainer
from bench.frameworks.chainer.layers import build_layers

ROI_OP = "RoIAlign as two matrix products (bench/detection/roialign.py): functions.matmul, 2-D then batched"


def roi_align(features: Any, rows: Any, cols: Any) -> Any:
    """(1, C, H, W) features, rows (R, out, H) and cols (R, out, W) -> (R, C, out, out): rows @ features @ cols^T.

    The columns are contracted first, as one 2-D product over every RoI, then the rows, one product per RoI
    (a batched matmul): no copy of the feature map per RoI.
    """
    _, channels, height, width = features.shape
    count, out = rows.shape[0], rows.shape[1]
    # (C * H, W) x (R * out, W)^T -> (C * H, R * out)
    half = F.matmul(F.reshape(features, (channels * height, width)), cols.reshape(count * out, width), transb=True)
    # -> (R, H, C * out), the RoI as the batch axis
    half = F.reshape(F.transpose(F.reshape(half, (channels, height, count, out)), (2, 1, 0, 3)),
                     (count, height, channels * out))
    pooled = F.matmul(rows, half)  # (R, out, H) x (R, H, C * out) -> (R, out, C * out)
    return F.transpose(F.reshape(pooled, (count, out, channels, out)), (0, 2, 1, 3))


def weighted_links(chain: layers.SpecChain) -> Iterator[chainer.Link]:
    """The links of a built layer list that hold weights, in the plan's order (bench/detection/weights.owners'):
    the SpecChain's steps in turn, a residual block's branch then its shortcut, a concat's branches in order.

    Walked by structure because Link.params() and children() follow a Chain's set of child names (4.5.0: the
    set's order; 7: sorted by name); a link holding parameters that this walk does not know is refused rather
    than skipped.
    """
    for _, step in chain.steps:
        if isinstance(step, (L.Convolution2D, L.BatchNormalization, L.Linear)):
            yield step
        elif isinstance(step, layers.Conv2D):  # the builder's wrapper: its conv holds W
            yield step.conv
        elif isinstance(step, layers.Residual):
            for inner in (step.branch, step.shortcut):
                for link in weighted_links(inner):
                    yield link
        elif isinstance(step, layers.Concat):
            for branch in step:
                for link in weighted_links(branch):
                    yield link
        elif isinstance(step, chainer.Link) and any(True for _ in step.params()):
            raise TypeError(f"a {type(step).__name__} in the detector holds weights that set_weights does not "
                            "know where to put")


def _targets(link: chainer.Link) -> List[Any]:
    """A weighted link's arrays to write into, in weights.py's order of parts (gamma, beta, avg_mean, avg_var; W and
    b, an absent b left out)."""
    if isinstance(link, L.BatchNormalization):
        return [link.gamma.array, link.beta.array, link.avg_mean, link.avg_var]
    return [link.W.array] + ([link.b.array] if link.b is not None else [])


def smooth_l1(x: Any, t: Any, beta: float) -> Any:
    """Elementwise smooth L1 (detector.smooth_l1): Huber with delta beta, divided by beta."""
    return F.huber_loss(x, t, beta, reduce="no") / beta


class Detector(chainer.Chain):
    """The detector's links: trunk, RPN, head and the two outputs (detector.py's drawing), NCHW."""

    def __init__(self, detector: det.DetectorPlan) -> None:
        super().__init__()
        channels, hidden = detector.trunk_channels, detector.settings["rpn"]["channels"]
        anchors, classes = detector.num_anchors, detector.num_classes
        with self.init_scope():
            self.trunk = build_layers(detector.trunk)
            self.rpn_conv = L.Convolution2D(channels, hidden, 3, pad=1)  # 'same' for a 3x3 at stride 1
            self.rpn_class = L.Convolution2D(hidden, anchors, 1)
            self.rpn_box = L.Convolution2D(hidden, 4 * anchors, 1)
            self.head = build_layers(detector.head)
            self.class_out = L.Linear(detector.features, classes)
            self.box_out = L.Linear(detector.features, 4 * classes)

    def rpn(self, features: Any) -> Tuple[Any, Any]:
        """The RPN on (1, C, Hf, Wf) features: objectness (Hf * Wf * A,) and deltas (Hf * Wf * A, 4), both in
        (y, x, anchor) order (channels last, then the 4A channels read as (anchor, 4))."""
        hidden = F.relu(self.rpn_conv(features))
        objectness = F.transpose(self.rpn_class(hidden), (0, 2, 3, 1))
        deltas = F.transpose(self.rpn_box(hidden), (0, 2, 3, 1))
        return F.reshape(objectness, (objectness.size,)), F.reshape(deltas, (deltas.size // 4, 4))

    def classify(self, features: Any, rows: Any, cols: Any) -> Tuple[Any, Any]:
        """The head on the RoIs: class logits (R, num_classes) and box deltas (R, 4 * num_classes)."""
        pooled = self.head(roi_align(features, rows, cols))
        return self.class_out(pooled), self.box_out(pooled)


class Network:
    """bench.detection.trainer's Network for Chainer, on the device of the era adapter `era` (the era module's
    trainer.SpecTrainer subclass, whose device, thread and version hooks it uses)."""

    def __init__(self, era: type, spec: dict, detector: det.DetectorPlan, device: str, seed: int) -> None:
        # The era's hooks on an instance made without SpecTrainer.__init__ (which would plan a classifier):
        # they only set and read the device and thread attributes, in the order SpecTrainer.__init__ calls them.
        self.era = era.__new__(era)
        self.era._open_device(device)
        self.era.threads_set = self.era._set_threads()
        np.random.seed(seed)  # Chainer's initializers draw from NumPy's global generator (as SpecTrainer)
        if self.era.gpu:
            cuda.cupy.random.seed(seed)
        self.detector = detector
        self.model = Detector(detector)
        self.era._place(self.model)
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = trainer.make_optimizer(self.opt_settings, self.model)

    def _send(self, array: np.ndarray) -> Any:
        return self.era._send(np.ascontiguousarray(array))

    def _trunk(self, pixels: np.ndarray) -> Any:
        """C4 of one (1, Hp, Wp, 3) NHWC image, as NCHW (Chainer's only layout)."""
        return self.model.trunk(self._send(pixels.transpose(0, 3, 1, 2).astype(np.float32)))

    def _forward(self, pixels: np.ndarray,
                 rois_for: Callable[[np.ndarray, np.ndarray], RoiBatch]) -> Tuple[Any, Any, RoiBatch, Any, Any]:
        """(objectness, rpn deltas, the RoiBatch, class logits, box deltas) in the current chainer.config."""
        features = self._trunk(pixels)
        objectness, deltas = self.model.rpn(features)
        rois = rois_for(cuda.to_cpu(objectness.array), cuda.to_cpu(deltas.array))
        if not len(rois.rois):  # no proposal survived (test only: training appends the gt boxes)
            return objectness, deltas, rois, None, None
        logits, boxes = self.model.classify(features, self._send(rois.rows), self._send(rois.cols))
        return objectness, deltas, rois, logits, boxes

    def set_weights(self, weights: Dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's layout (module docstring: Chainer's own, copied as they
        are): the trunk's and the head's weighted links in plan order beside weights.owners, then rpn_conv,
        rpn_logits, rpn_deltas, classes, boxes. Every count and shape is checked before a value is written."""
        model = self.model
        links = list(weighted_links(model.trunk)) + list(weighted_links(model.head))
        links += [model.rpn_conv, model.rpn_class, model.rpn_box, model.class_out, model.box_out]
        for target, value in neutral.placed(self.detector, weights, links, _targets, lambda t: t.shape):
            target[...] = self._send(value.astype(target.dtype))

    def _loss(self, objectness: Any, deltas: Any, rpn: RpnBatch, logits: Any, boxes: Any,
              rois: RoiBatch) -> Dict[str, Any]:
        """detector.losses' four losses (detector.LOSS_NAMES, scalar Variables), in Chainer's functions."""
        beta_rpn = self.detector.settings["rpn"]["box_beta"]
        beta_roi = self.detector.settings["roi"]["box_beta"]
        labels = np.where(rpn.sampled > 0, rpn.labels, -1).astype(np.int32)  # -1: ignored (not sampled)
        rpn_class = F.sum(F.sigmoid_cross_entropy(objectness, self._send(labels), reduce="no")) / rpn.count
        rpn_box = F.sum(smooth_l1(deltas, self._send(rpn.box_targets), beta_rpn)
                        * self._send(rpn.box_mask)) / rpn.count
        head_class = F.softmax_cross_entropy(logits, self._send(rois.labels.astype(np.int32)))
        head_box = F.sum(smooth_l1(boxes, self._send(rois.box_targets), beta_roi)
                         * self._send(rois.box_mask)) / len(rois.labels)
        return {"rpn_class": rpn_class, "rpn_box": rpn_box, "head_class": head_class, "head_box": head_box}

    def train_step(self, pixels: np.ndarray, rpn: RpnBatch,
                   rois_for: Callable[[np.ndarray, np.ndarray], RoiBatch]) -> Dict[str, float]:
        """One image in training mode (batchnorm's batch statistics): the summed loss, backward, one update;
        the four losses (detector.LOSS_NAMES) as computed before the update."""
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            objectness, deltas, rois, logits, boxes = self._forward(pixels, rois_for)
            parts = self._loss(objectness, deltas, rpn, logits, boxes, rois)
            loss = parts["rpn_class"] + parts["rpn_box"] + parts["head_class"] + parts["head_box"]
            self.model.cleargrads()
            loss.backward()
            # Read before the update: the Variables' arrays are the forward's results, which update() leaves.
            values = {name: float(cuda.to_cpu(value.array)) for name, value in parts.items()}
            self.optimizer.update()
        return values

    def detect(self, pixels: np.ndarray,
               rois_for: Callable[[np.ndarray, np.ndarray], RoiBatch]) -> Tuple[np.ndarray, np.ndarray]:
        """The forward pass in inference mode (moving statistics, no graph): class logits and box deltas."""
        with chainer.using_config("train", False), chainer.no_backprop_mode(), \
                chainer.using_config("type_check", False):
            _, _, rois, logits, boxes = self._forward(pixels, rois_for)
        if logits is None:
            classes = self.detector.num_classes
            return np.zeros((0, classes), np.float32), np.zeros((0, 4 * classes), np.float32)
        return cuda.to_cpu(logits.array), cuda.to_cpu(boxes.array)

    def roi_features(self, features: np.ndarray, batch: RoiBatch) -> np.ndarray:
        """This network's RoI op on (1, Hf, Wf, C) NHWC features: (R, C, out, out), as NumPy."""
        with chainer.no_backprop_mode():
            pooled = roi_align(self._send(features.transpose(0, 3, 1, 2)), self._send(batch.rows),
                               self._send(batch.cols))
        return cuda.to_cpu(pooled.array)

    def param_count(self) -> int:
        """Trainable parameters (batchnorm's moving statistics are not parameters)."""
        return int(sum(p.size for p in self.model.params()))

    def synchronize(self) -> None:
        """Wait for queued CUDA work; Chainer's NumPy path is synchronous."""
        if self.era.gpu:
            cuda.Stream.null.synchronize()

    def info(self) -> Dict[str, Any]:
        """What was really used: device, threads, the RoI op, losses, optimizer semantics, versions."""
        blas_name, blas_threads = self.era._blas()
        return {
            "framework": trainer.NAME,
            "versions": self.era._versions(),
            "device": self.era.device_label,
            "device_name": self.era._device_name(),
            "threads": self.era._threads(blas_name, blas_threads),
            "roi_op": ROI_OP,
            "data_layout": "NCHW (each image transposed from NHWC)",
            "config": {"type_check": False, "use_ideep": chainer.config.use_ideep,
                       "use_cudnn": chainer.config.use_cudnn if self.era.gpu else "n/a (CPU)"},
            "loss": "sigmoid_cross_entropy(reduce='no', -1 unsampled) / count + huber_loss(delta=beta) / beta "
                    "(smooth L1) + softmax_cross_entropy + huber_loss / beta of the true class's deltas",
            "optimizer": self.opt_settings,
            "optimizer_impl": "optimizers.Adam(alpha=lr, eps)" if self.opt_settings["name"] == "adam"
            else self.opt_settings["name"],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE + " (a 'pre' optimizer hook, not WeightDecay's L2)",
        }


def make_trainer(era: type, spec: dict, data: Any, device: str, seed: int) -> DetectionTrainer:
    """A detector spec's Trainer: DetectionTrainer over a Network on `device` with the era adapter `era`."""
    detector = det.plan(spec)
    return DetectionTrainer(Network(era, spec, detector, device, seed), detector, data, seed)
