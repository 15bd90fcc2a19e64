"""The detector every framework builds (a workload's model with architecture "faster_rcnn"), planned once.

    image (1, Hp, Wp, 3), Hp and Wp multiples of image.size_divisor
      -> trunk (planned layers, e.g. ResNet-50 conv1 .. res4)              -> C4 (1, Hp/16, Wp/16, C)
      -> RPN: 3x3 conv 'same' of rpn.channels + ReLU, then two 1x1 convs: A objectness logits and 4A deltas
         (A = len(scales) * len(ratios)); both read in the order (y, x, anchor) (bench/detection/anchors.py)
      -> [host: proposals and, in training, the sampled RoIs and their targets: bench/detection/step.py]
      -> RoIAlign of C4 at the RoIs (bench/detection/roialign.py)        -> (R, out, out, C)
      -> head (planned layers, e.g. res5 + global average pool)          -> (R, F)
      -> two dense layers: num_classes class logits and 4 * num_classes box deltas (class c's in 4c .. 4c+3)

Losses (``losses`` is their NumPy definition, what the framework modules compute in their own ops):
- rpn_class: sigmoid cross-entropy of the objectness logits, summed over the sampled anchors, / their count;
- rpn_box: smooth L1 (rpn.box_beta) of the deltas of the positive anchors, summed, / the sampled count;
- head_class: softmax cross-entropy of the class logits, the mean over the RoIs;
- head_box: smooth L1 (roi.box_beta) of the true class's 4 deltas of each foreground RoI, summed, / the RoIs;
the training loss is their sum (py-faster-rcnn's and torchvision's definitions).
smooth_l1(d, beta) = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta.

CPython 3.6-clean, NumPy only.
"""

from collections import namedtuple
from typing import Dict

import numpy as np

from bench import modelplan
from bench.modelplan import SpecError

ARCHITECTURE = modelplan.DETECTOR
LOSS = "faster_rcnn"
LOSS_NAMES = ("rpn_class", "rpn_box", "head_class", "head_box")
# The tables of a detector's [model] and the keys each must have (the spec carries every value; nothing defaults).
TABLES = {
    "image": ("short_side", "max_side", "size_divisor", "flip"),
    "anchors": ("stride", "scales", "ratios", "offset"),
    "rpn": ("channels", "batch", "positive_fraction", "positive_iou", "negative_iou", "allowed_border", "nms_iou",
            "pre_nms_train", "post_nms_train", "pre_nms_test", "post_nms_test", "min_size", "box_beta"),
    "roi": ("output", "sampling_ratio", "aligned", "batch", "fg_fraction", "fg_iou", "bg_iou_hi", "bg_iou_lo",
            "box_beta"),
    "boxes": ("rpn_weights", "head_weights"),
    "test": ("nms_iou", "score_threshold", "detections_per_image", "ap"),
}
MODEL_KEYS = ("architecture", "num_classes", "trunk", "head") + tuple(TABLES)

DetectorPlan = namedtuple("DetectorPlan", "trunk head num_classes num_anchors trunk_channels features settings")
DetectorPlan.__doc__ = """A planned detector: trunk and head (bench.modelplan.Layer lists; the trunk planned on
the padded nominal image, whose pads hold for every multiple of the size divisor), num_classes (background
included), num_anchors per cell, trunk_channels (C4's), features (the head's vector length), settings (the
spec's tables by name: image, anchors, rpn, roi, boxes, test)."""


def is_detector(spec: dict) -> bool:
    """Whether a workload spec's model is a detector (architecture "faster_rcnn")."""
    return (spec.get("model") or {}).get("architecture") == ARCHITECTURE


def plan(spec: dict) -> DetectorPlan:
    """Validate a detector spec and plan its trunk and head."""
    model = spec["model"]
    if spec["training"]["loss"] != LOSS:
        raise SpecError(f"a {ARCHITECTURE} model trains with loss \"{LOSS}\", not {spec['training']['loss']!r}")
    unknown = sorted(set(model) - set(MODEL_KEYS))
    if unknown:
        raise SpecError(f"a {ARCHITECTURE} model has no key {unknown[0]!r}: use {', '.join(MODEL_KEYS)}")
    missing = [key for key in MODEL_KEYS if key not in model and key not in TABLES]  # a table: checked below
    if missing:
        raise SpecError(f"the {ARCHITECTURE} model has no {missing[0]!r}: give every one of {', '.join(MODEL_KEYS)}")
    if not isinstance(model["num_classes"], int) or model["num_classes"] < 2:
        raise SpecError(f"model.num_classes {model['num_classes']!r} must count the background and >= 1 class")
    settings = {}
    for name, keys in TABLES.items():
        table = model.get(name)
        if not isinstance(table, dict) or set(table) != set(keys):
            raise SpecError(f"model.{name} must be a table of exactly {', '.join(keys)}")
        settings[name] = dict(table)
    image, stride = settings["image"], settings["anchors"]["stride"]
    if image["size_divisor"] % stride:
        raise SpecError(f"model.image.size_divisor {image['size_divisor']} is not a multiple of the anchors' stride "
                        f"{stride}: the feature map would not tile the padded image")
    nominal = (padded(image["short_side"], image["size_divisor"]), padded(image["max_side"], image["size_divisor"]), 3)
    trunk = modelplan.plan_images(model["trunk"], nominal, "trunk layer")
    out = trunk[-1].output
    if out.kind != modelplan.IMAGE or (nominal[0] // out.dims[0], nominal[1] // out.dims[1]) != (stride, stride) \
            or nominal[0] % out.dims[0] or nominal[1] % out.dims[1]:
        raise SpecError(f"the trunk maps a {nominal[0]} x {nominal[1]} image to {out}: it must reduce both sides by "
                        f"the anchors' stride {stride}")
    roi = settings["roi"]["output"]
    head = modelplan.plan_images(model["head"], (roi, roi, out.features), "head layer")
    if head[-1].output.kind != modelplan.VECTOR:
        raise SpecError(f"the head must end with a vector (e.g. global_avgpool), not {head[-1].output}")
    anchors = len(settings["anchors"]["scales"]) * len(settings["anchors"]["ratios"])
    return DetectorPlan(trunk, head, int(model["num_classes"]), anchors, out.features, head[-1].output.features,
                        settings)


def padded(size: int, divisor: int) -> int:
    """`size` rounded up to a multiple of `divisor`."""
    return -(-int(size) // int(divisor)) * int(divisor)


def extra_params(detector: DetectorPlan) -> int:
    """Trainable parameters outside the trunk's and head's planned layers: the RPN's three convs and the two
    dense outputs (each with its bias)."""
    c, k, a = detector.trunk_channels, detector.settings["rpn"]["channels"], detector.num_anchors
    f, n = detector.features, detector.num_classes
    return (9 * c * k + k) + (k * a + a) + (k * 4 * a + 4 * a) + (f * n + n) + (f * 4 * n + 4 * n)


def smooth_l1(d: np.ndarray, beta: float) -> np.ndarray:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (elementwise)."""
    a = np.abs(d)
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def losses(detector: DetectorPlan, objectness, rpn_deltas, rpn, class_logits, box_deltas, roi) -> Dict[str, float]:
    """The four losses in NumPy (module docstring) from the network's outputs and the step's targets:
    objectness (A,), rpn_deltas (A, 4) and an RpnBatch; class_logits (R, num_classes), box_deltas
    (R, 4 * num_classes) and a RoiBatch (bench/detection/step.py)."""
    x = np.asarray(objectness, np.float64)
    bce = np.maximum(x, 0) - x * rpn.labels + np.log1p(np.exp(-np.abs(x)))
    beta_rpn, beta_roi = detector.settings["rpn"]["box_beta"], detector.settings["roi"]["box_beta"]
    logits = np.asarray(class_logits, np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = len(logits)
    return {
        "rpn_class": float((bce * rpn.sampled).sum() / rpn.count),
        "rpn_box": float((smooth_l1(np.asarray(rpn_deltas, np.float64) - rpn.box_targets, beta_rpn)
                          * rpn.box_mask).sum() / rpn.count),
        "head_class": float(-log_probs[np.arange(rows), roi.labels].mean()),
        "head_box": float((smooth_l1(np.asarray(box_deltas, np.float64) - roi.box_targets, beta_roi)
                           * roi.box_mask).sum() / rows),
    }


# How every detector run starts: no pretrained weights are reachable here (a departure: Faster R-CNN's ResNets start
# from ImageNet weights), so from the kit's seeded draw, the same numbers in every framework (weights.initial).
WEIGHTS = ("from scratch: the same seeded initial weights in every framework (bench/detection/weights.py); "
           "no ImageNet weights")


def record(spec: dict) -> dict:
    """run.json's model.detector: the initial weights, the RoI op's settings and the AP method."""
    roi, test = spec["model"]["roi"], spec["model"]["test"]
    return {"weights": WEIGHTS, "roi_align": {key: roi[key] for key in ("output", "sampling_ratio", "aligned")},
            "ap": test["ap"], "image": dict(spec["model"]["image"])}
