"""The Trainer (bench/frameworks Trainer) of every framework's detector: the loop over images, written once.

A framework module builds a Network (its own layers and ops, bench/detection/detector.py's drawing) and wraps
it in DetectionTrainer, which sets its initial weights (bench/detection/weights.py: the same numbers in every
framework) and owns the order, the flips, the sampling and the evaluation. A Network has:

    set_weights(weights)
        Take a dict of weights in bench/detection/weights.py's neutral layout (every name of weights.layout, the
        batchnorms' moving statistics included), converted to the framework's own layout.
    train_step(pixels, rpn, rois_for) -> {loss name: float}
        One image (pixels (1, Hp, Wp, 3) float32, NHWC; transpose for an NCHW framework) in training mode:
        forward the trunk and the RPN, call rois_for(objectness (A,), deltas (A, 4)) with the RPN's outputs
        as NumPy arrays in (y, x, anchor) order, which returns a step.RoiBatch; RoIAlign the trunk's output with
        its rows and cols, forward the head; the four losses of detector.losses against `rpn` (a step.RpnBatch)
        and the RoiBatch, summed; backward (the RoIs are constants) and one optimizer update. Returns the four
        losses (detector.LOSS_NAMES) as computed before the update.
    detect(pixels, rois_for) -> (class_logits (R, num_classes), box_deltas (R, 4 * num_classes))
        The same forward pass in inference mode (no gradient, batchnorm's moving statistics), as NumPy arrays.
    param_count(), synchronize(), info(): as a Trainer's.

Every random choice (the image order and flips of an epoch, the anchors and RoIs sampled for an image) comes
from a numpy RandomState seeded by (seed, epoch[, image]), so every framework trains on the same images in the
same order and flips and, where their RPNs agree, the same samples. CPython 3.6-clean.
"""

from typing import Optional, Tuple

import numpy as np

from bench.detection import step, weights
from bench.detection.detector import LOSS_NAMES, DetectorPlan
from bench.detection.images import Split
from bench.frameworks import NonFiniteLoss


class DetectionTrainer:
    """A Trainer over a Network (module docstring) for a detector workload's prepared data."""

    def __init__(self, network, detector: DetectorPlan, data, seed: int) -> None:
        self.network = network
        self.detector = detector
        self.train = Split(data.train, detector.settings["image"])
        self.test = Split(data.test, detector.settings["image"])
        self.class_names = list(data.meta.get("class_names") or [])
        self.seed = int(seed)
        self.epoch = 0
        network.set_weights(weights.initial(detector, self.seed))

    def param_count(self) -> int:
        """The network's trainable parameters."""
        return int(self.network.param_count())

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """Every training image once, in a shuffled order, one in two flipped (model.image.flip); the mean loss."""
        self.epoch += 1
        order_rng = np.random.RandomState([self.seed, self.epoch])
        order = order_rng.permutation(len(self.train))
        flips = order_rng.rand(len(order)) < 0.5
        total = 0.0
        for index, flip in zip(order, flips):
            example = self.train.example(int(index), bool(flip) and self.detector.settings["image"]["flip"])
            rng = np.random.RandomState([self.seed, self.epoch, int(index)])
            anchors = step.anchors_for(self.detector, example)
            rpn = step.rpn_batch(self.detector, example, anchors, rng)

            def rois_for(objectness, deltas, example=example, anchors=anchors, rng=rng):
                return step.roi_batch(self.detector, example, anchors, objectness, deltas, rng)

            parts = self.network.train_step(example.pixels, rpn, rois_for)
            loss = sum(float(parts[name]) for name in LOSS_NAMES)
            if not np.isfinite(loss):
                raise NonFiniteLoss(f"loss is {loss} at image {example.image_id} of epoch {self.epoch}")
            total += loss
        return total / max(len(order), 1), None

    def evaluate(self) -> float:
        """The test split's VOC mAP (model.test.ap) in inference mode; 0 where no class has ground truth."""
        evaluation = step.Evaluation(self.detector, self.class_names)
        for index in range(len(self.test)):
            example = self.test.example(index)
            anchors = step.anchors_for(self.detector, example)
            kept = {}

            def rois_for(objectness, deltas, example=example, anchors=anchors, kept=kept):
                kept["batch"] = step.test_rois(self.detector, example, anchors, objectness, deltas)
                return kept["batch"]

            logits, deltas = self.network.detect(example.pixels, rois_for)
            evaluation.add(example, step.detections(self.detector, example, kept["batch"].rois, logits, deltas))
        return float(evaluation.result()["map"] or 0.0)

    def synchronize(self) -> None:
        """The network's."""
        self.network.synchronize()

    def info(self) -> dict:
        """The network's, with the RoI op it used."""
        return self.network.info()
