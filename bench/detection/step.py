"""What the host computes for one image between a detector's stages, the same NumPy code for every framework:
the RPN's targets before the forward pass, the RoIs (with their targets in training) from the RPN's outputs in
the middle of it, and the detections from the head's outputs after it (bench/detection/detector.py draws the
network). A framework passes its RPN outputs as NumPy arrays in the order (y, x, anchor): objectness (A,) and
deltas (A, 4), A = feature height * width * anchors per cell.

CPython 3.6-clean, NumPy only.
"""

from collections import namedtuple
from typing import Dict, List

import numpy as np

from bench.detection import anchors as anc
from bench.detection import boxes as bx
from bench.detection import roialign, targets, voc_eval
from bench.detection.detector import DetectorPlan
from bench.detection.images import Example

RpnBatch = namedtuple("RpnBatch", "labels sampled box_targets box_mask count")
RpnBatch.__doc__ = """The RPN's targets, float32, one row per anchor in (y, x, anchor) order: labels (A,) 1 object,
0 otherwise; sampled (A,) 1 where the anchor counts in the objectness loss; box_targets (A, 4); box_mask (A, 4) 1
on the positive anchors' rows; count, the number of sampled anchors (the losses' divisor, at least 1)."""

RoiBatch = namedtuple("RoiBatch", "rois rows cols labels box_targets box_mask")
RoiBatch.__doc__ = """The RoIs of one image: rois (R, 4) in the resized image; rows (R, out, Hf) and cols (R, out, Wf),
float32, RoIAlign's weights (bench/detection/roialign.py); in training labels (R,) int64 (0 background),
box_targets and box_mask (R, 4 * num_classes) float32 (the true class's 4 columns of a foreground RoI); at test
labels is None and the targets zero."""


def feature_size(detector: DetectorPlan, example: Example) -> tuple:
    """(Hf, Wf) of the trunk's output on the example's padded image."""
    stride = detector.settings["anchors"]["stride"]
    return example.pixels.shape[1] // stride, example.pixels.shape[2] // stride


def anchors_for(detector: DetectorPlan, example: Example) -> np.ndarray:
    """The (Hf * Wf * anchors per cell, 4) anchors of the example's feature map."""
    a = detector.settings["anchors"]
    height, width = feature_size(detector, example)
    return anc.grid_anchors(height, width, a["stride"], a["scales"], a["ratios"], a["offset"])


def training_truth(example: Example):
    """(boxes, classes) the detector trains on: the objects not marked difficult (py-faster-rcnn's use_diff)."""
    keep = ~example.difficult
    return example.boxes[keep], example.classes[keep]


def rpn_batch(detector: DetectorPlan, example: Example, anchors: np.ndarray, rng: np.random.RandomState) -> RpnBatch:
    """The RPN's targets of one training image (bench/detection/targets.py rpn_targets with the spec's values)."""
    rpn, weights = detector.settings["rpn"], detector.settings["boxes"]["rpn_weights"]
    gt, _ = training_truth(example)
    labels, deltas = targets.rpn_targets(anchors, gt, example.height, example.width, rng, rpn["positive_iou"],
                                         rpn["negative_iou"], rpn["batch"], rpn["positive_fraction"],
                                         rpn["allowed_border"], weights)
    sampled = (labels != targets.RPN_IGNORE).astype(np.float32)
    positive = (labels == targets.RPN_POSITIVE).astype(np.float32)
    return RpnBatch(positive, sampled, deltas.astype(np.float32),
                    np.repeat(positive[:, None], 4, axis=1), float(max(sampled.sum(), 1.0)))


def _proposals(detector: DetectorPlan, example: Example, anchors: np.ndarray, objectness, deltas,
               training: bool) -> np.ndarray:
    rpn = detector.settings["rpn"]
    stage = "train" if training else "test"
    rois, _ = targets.proposals(anchors, np.asarray(objectness, np.float64).reshape(-1),
                                np.asarray(deltas, np.float64).reshape(-1, 4), example.height, example.width,
                                rpn["pre_nms_" + stage], rpn["post_nms_" + stage], rpn["nms_iou"],
                                rpn["min_size"] * example.scale, detector.settings["boxes"]["rpn_weights"])
    return rois


def _align(detector: DetectorPlan, example: Example, rois: np.ndarray):
    roi = detector.settings["roi"]
    height, width = feature_size(detector, example)
    return roialign.matrices(rois, 1.0 / detector.settings["anchors"]["stride"], roi["output"], roi["sampling_ratio"],
                             height, width, roi["aligned"])


def roi_batch(detector: DetectorPlan, example: Example, anchors: np.ndarray, objectness, deltas,
              rng: np.random.RandomState) -> RoiBatch:
    """The head's training RoIs of one image from the RPN's outputs: proposals, then the sampled RoIs and their
    targets (targets.proposal_targets, the gt boxes appended), and their RoIAlign weights."""
    roi = detector.settings["roi"]
    gt, classes = training_truth(example)
    sampled = targets.proposal_targets(_proposals(detector, example, anchors, objectness, deltas, True), gt, classes,
                                       detector.num_classes, rng, roi["batch"], roi["fg_fraction"], roi["fg_iou"],
                                       roi["bg_iou_hi"], roi["bg_iou_lo"], detector.settings["boxes"]["head_weights"])
    rows, cols = _align(detector, example, sampled.rois)
    return RoiBatch(sampled.rois, rows, cols, sampled.labels, sampled.targets.astype(np.float32),
                    sampled.weights.astype(np.float32))


def test_rois(detector: DetectorPlan, example: Example, anchors: np.ndarray, objectness, deltas) -> RoiBatch:
    """The head's RoIs of one test image: the RPN's test proposals (no targets)."""
    rois = _proposals(detector, example, anchors, objectness, deltas, False)
    rows, cols = _align(detector, example, rois)
    zeros = np.zeros((len(rois), 4 * detector.num_classes), np.float32)
    return RoiBatch(rois, rows, cols, None, zeros, zeros)


def detections(detector: DetectorPlan, example: Example, rois: np.ndarray, class_logits,
               box_deltas) -> Dict[str, np.ndarray]:
    """One test image's detections in voc_eval's form (boxes as annotated: 1-based inclusive pixels of the
    original image; labels 0 .. num_classes - 2, VOC's class indices): per class, the RoIs' boxes decoded by the
    class's deltas and clipped, those scoring >= test.score_threshold, NMS at test.nms_iou; then the
    test.detections_per_image highest-scoring of all classes."""
    test, weights = detector.settings["test"], detector.settings["boxes"]["head_weights"]
    logits = np.asarray(class_logits, np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    deltas = np.asarray(box_deltas, np.float64)
    found_boxes, found_labels, found_scores = [], [], []  # type: List[np.ndarray], List[np.ndarray], List[np.ndarray]
    for cls in range(1, detector.num_classes):
        keep = np.flatnonzero(probs[:, cls] >= test["score_threshold"])
        if not len(keep):
            continue
        boxes = bx.clip(bx.decode(deltas[keep, 4 * cls:4 * cls + 4], rois[keep], weights), example.height,
                        example.width)
        scores = probs[keep, cls]
        kept = bx.nms(boxes, scores, test["nms_iou"])
        found_boxes.append(boxes[kept])
        found_scores.append(scores[kept])
        found_labels.append(np.full(len(kept), cls - 1, np.int64))
    if not found_boxes:
        return {"boxes": np.zeros((0, 4)), "labels": np.zeros(0, np.int64), "scores": np.zeros(0)}
    boxes, labels, scores = np.concatenate(found_boxes), np.concatenate(found_labels), np.concatenate(found_scores)
    top = bx.score_order(scores)[:test["detections_per_image"]]
    original = boxes[top] / example.scale + [1.0, 1.0, 0.0, 0.0]  # back to the annotation's inclusive pixels
    return {"boxes": original, "labels": labels[top], "scores": scores[top]}


class Evaluation:
    """The VOC evaluation of one pass over a test split: add each image's detections, then result()."""

    def __init__(self, detector: DetectorPlan, class_names: List[str]) -> None:
        self.method = detector.settings["test"]["ap"]
        voc_eval.check_method(self.method)
        self.class_names = list(class_names)
        self.truth = {}  # type: Dict[str, dict]
        self.found = {}  # type: Dict[str, dict]

    def add(self, example: Example, found: Dict[str, np.ndarray]) -> None:
        """Record one image's ground truth (difficult objects flagged) and detections."""
        self.truth[example.image_id] = {"boxes": example.original_boxes, "labels": example.classes - 1,
                                        "difficult": example.difficult}
        self.found[example.image_id] = found

    def result(self) -> dict:
        """voc_eval.evaluate's result over the images added."""
        return voc_eval.evaluate(self.found, self.truth, self.class_names, method=self.method)
