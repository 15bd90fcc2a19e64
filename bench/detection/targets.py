"""Faster R-CNN's training targets and proposals, for one image, in NumPy (Ren et al. 2015; py-faster-rcnn's
lib/rpn/anchor_target_layer.py, proposal_layer.py and proposal_target_layer.py, read for the definitions).

- rpn_targets: each anchor's objectness label (1 object, 0 background, -1 ignored) and regression target;
- proposals: the RPN's boxes for the detection head (decode, clip, drop small, top-n, NMS, top-n);
- proposal_targets: the RoIs sampled from those proposals, their classes and per-class regression targets.

Every random choice is a call `rng.choice(indices, size=..., replace=False)` on a numpy.random.RandomState
passed in, made only when a set has more members than the batch takes: RandomState's stream is frozen across
NumPy versions, so the same seed samples the same anchors and RoIs in every framework and era. Boxes follow
bench/detection/boxes.py (x1, y1, x2, y2, "+0" extent).

CPython 3.6-clean: paper-era images run it.
"""

from collections import namedtuple
from typing import Optional, Sequence, Tuple

import numpy as np

from bench.detection import boxes as bx
from bench.detection.config import DEFAULTS
from bench.errors import UsageError

RPN_POSITIVE, RPN_NEGATIVE, RPN_IGNORE = 1, 0, -1

RoiTargets = namedtuple("RoiTargets", "rois labels targets weights")
RoiTargets.__doc__ = """The head's training batch of one image: rois (R, 4) sampled boxes, foreground first;
labels (R,) their classes (0 background); targets (R, 4 * num_classes), a foreground RoI's (dx, dy, dw, dh) in
columns 4c..4c+3 of its class c, zero elsewhere; weights (R, 4 * num_classes), 1 where targets count, else 0."""


def rpn_targets(anchors, gt_boxes, height: float, width: float, rng: np.random.RandomState,
                positive_iou: float = DEFAULTS["rpn_positive_iou"], negative_iou: float = DEFAULTS["rpn_negative_iou"],
                batch: int = DEFAULTS["rpn_batch"], positive_fraction: float = DEFAULTS["rpn_positive_fraction"],
                allowed_border: Optional[float] = DEFAULTS["rpn_allowed_border"],
                weights: Sequence[float] = DEFAULTS["rpn_box_weights"]) -> Tuple[np.ndarray, np.ndarray]:
    """The RPN's targets for (N, 4) `anchors` and (G, 4) ground-truth boxes of an image of `height` x `width`:
    (labels (N,) int64 of 1 / 0 / -1, regression targets (N, 4), encode(gt, anchor, weights) on positive rows
    and zero on the others). Ren et al. Sec 3.1.2-3.1.3, in py-faster-rcnn's order:

    1. anchors crossing the image border by more than `allowed_border` pixels are ignored (-1) (Sec 3.3; None
       keeps every anchor, as torchvision does);
    2. an anchor whose highest IoU with any gt is < `negative_iou` is negative;
    3. for each gt, the anchors of its highest IoU (all of them, on a tie) are positive, whatever that IoU, so
       every gt has an anchor; but not when that IoU is 0 (a gt no kept anchor touches), where py-faster-rcnn
       and torchvision would make every non-touching anchor positive;
    4. an anchor whose highest IoU is >= `positive_iou` is positive;
    5. if there are more than int(positive_fraction * batch) positives, that many are kept at random (the rest
       ignored); then negatives are kept at random up to batch minus the positives kept.
    A positive anchor regresses to its highest-IoU gt (the lowest gt index on a tie). No gt: every kept
    anchor is negative before sampling."""
    anchors, gt = bx.as_boxes(anchors, "anchors"), bx.as_boxes(gt_boxes, "gt_boxes")
    _check_rng(rng)
    _check_fraction("positive_fraction", positive_fraction)
    _check_batch(batch)
    if not 0 <= negative_iou <= positive_iou <= 1:
        raise UsageError(f"RPN IoU thresholds negative {negative_iou}, positive {positive_iou} are not "
                         "0 <= negative <= positive <= 1", "pass e.g. 0.3 and 0.7 (Ren et al. 2015)")
    labels = np.full(len(anchors), RPN_IGNORE, dtype=np.int64)
    targets = np.zeros((len(anchors), 4), dtype=anchors.dtype)
    inside = _inside(anchors, height, width, allowed_border)
    if len(gt) == 0:
        labels[inside] = RPN_NEGATIVE
        _subsample(labels, rng, int(positive_fraction * batch), batch)
        return labels, targets
    overlaps = bx.iou(anchors[inside], gt)  # (K, G), only the kept anchors
    best_gt = overlaps.argmax(axis=1)
    best_iou = overlaps[np.arange(len(inside)), best_gt]
    labels[inside[best_iou < negative_iou]] = RPN_NEGATIVE
    gt_best = overlaps.max(axis=0) if len(inside) else np.zeros(len(gt))
    best_of_a_gt = np.any((overlaps == gt_best[None, :]) & (gt_best[None, :] > 0), axis=1)
    labels[inside[best_of_a_gt]] = RPN_POSITIVE
    labels[inside[best_iou >= positive_iou]] = RPN_POSITIVE
    _subsample(labels, rng, int(positive_fraction * batch), batch)
    matched = np.zeros(len(anchors), dtype=np.int64)
    matched[inside] = best_gt
    positive = labels == RPN_POSITIVE
    if np.any(positive):
        targets[positive] = bx.encode(gt[matched[positive]], anchors[positive], weights)
    return labels, targets


def proposals(anchors, objectness, deltas, height: float, width: float, pre_nms_top_n: int, post_nms_top_n: int,
              nms_iou: float = DEFAULTS["rpn_nms_iou"], min_size: float = DEFAULTS["rpn_min_size"],
              weights: Sequence[float] = DEFAULTS["rpn_box_weights"]) -> Tuple[np.ndarray, np.ndarray]:
    """The RPN's proposals for one image: (rois (P, 4), their scores (P,)), highest score first.

    py-faster-rcnn's proposal_layer, in its order: decode each anchor's (dx, dy, dw, dh) row of `deltas` (N, 4);
    clip to the `height` x `width` image; drop boxes narrower or shorter than `min_size` pixels (py-faster-rcnn's
    RPN_MIN_SIZE is in original-image pixels: pass it times the image's resize factor); rank by `objectness`
    (N,) (the object probability or logit: only the order counts; ties by anchor index); keep the first
    `pre_nms_top_n`; NMS at `nms_iou`; keep the first `post_nms_top_n`. A top-n <= 0 keeps all (as
    py-faster-rcnn). Training takes 12000 / 2000, testing 6000 / 300 (config.DEFAULTS)."""
    anchors = bx.as_boxes(anchors, "anchors")
    scores = bx.as_scores(objectness, len(anchors), "objectness")
    boxes = bx.clip(bx.decode(deltas, anchors, weights), height, width)
    keep = bx.remove_small(boxes, min_size)
    boxes, scores = boxes[keep], scores[keep]
    order = bx.score_order(scores)
    if pre_nms_top_n > 0:
        order = order[:pre_nms_top_n]
    boxes, scores = boxes[order], scores[order]
    kept = bx.nms(boxes, scores, nms_iou, limit=post_nms_top_n if post_nms_top_n > 0 else None)
    return boxes[kept], scores[kept]


def proposal_targets(proposals, gt_boxes, gt_labels, num_classes: int, rng: np.random.RandomState,
                     batch: int = DEFAULTS["roi_batch"], fg_fraction: float = DEFAULTS["roi_fg_fraction"],
                     fg_iou: float = DEFAULTS["roi_fg_iou"], bg_iou_hi: float = DEFAULTS["roi_bg_iou_hi"],
                     bg_iou_lo: float = DEFAULTS["roi_bg_iou_lo"],
                     weights: Sequence[float] = DEFAULTS["head_box_weights"], append_gt: bool = True) -> RoiTargets:
    """The detection head's RoI batch for one image (RoiTargets), py-faster-rcnn's proposal_target_layer:

    1. the gt boxes are appended to the (P, 4) proposals (`append_gt`; py-faster-rcnn and torchvision do), so
       early in training, when proposals are poor, every gt is a foreground RoI;
    2. each RoI takes the class of its highest-IoU gt (the lowest gt index on a tie); it is foreground if that
       IoU is >= `fg_iou`, background if it is in [`bg_iou_lo`, `bg_iou_hi`), otherwise unused;
    3. up to round(fg_fraction * batch) foreground RoIs are kept (at random if there are more), then
       background RoIs up to `batch` in all (at random if there are more): fewer than `batch` when the image
       has too few, as in py-faster-rcnn. The kept RoIs keep their input order within each group.
    4. a foreground RoI's target is encode(gt, roi, weights) (weights (10, 10, 5, 5): py-faster-rcnn's
       normalisation) in the 4 columns of its class, with weights 1 there.
    gt_labels (G,) are classes 1 .. num_classes - 1 (0 is the background)."""
    rois, gt = bx.as_boxes(proposals, "proposals"), bx.as_boxes(gt_boxes, "gt_boxes")
    gt_labels = _check_labels(gt_labels, len(gt), num_classes)
    _check_rng(rng)
    _check_batch(batch)
    _check_fraction("fg_fraction", fg_fraction)
    if not 0 <= bg_iou_lo <= bg_iou_hi <= fg_iou <= 1:
        raise UsageError(f"RoI IoU thresholds bg [{bg_iou_lo}, {bg_iou_hi}), fg >= {fg_iou} are not ordered "
                         "0 <= bg_lo <= bg_hi <= fg <= 1", "pass e.g. bg [0.0, 0.5) and fg 0.5 (py-faster-rcnn)")
    if append_gt and len(gt):
        rois = np.concatenate([rois, gt.astype(rois.dtype)], axis=0)
    if len(gt):
        overlaps = bx.iou(rois, gt)
        assigned = overlaps.argmax(axis=1)
        best_iou = overlaps[np.arange(len(rois)), assigned]
    else:  # an image without objects: every RoI is background
        assigned, best_iou = np.zeros(len(rois), dtype=np.int64), np.zeros(len(rois))
    fg = _sample(np.flatnonzero(best_iou >= fg_iou), int(np.round(fg_fraction * batch)), rng)
    bg = _sample(np.flatnonzero((best_iou < bg_iou_hi) & (best_iou >= bg_iou_lo)), batch - len(fg), rng)
    keep = np.concatenate([fg, bg]).astype(np.int64)
    labels = np.zeros(len(keep), dtype=np.int64)
    labels[:len(fg)] = gt_labels[assigned[fg]]
    targets = np.zeros((len(keep), 4 * num_classes), dtype=rois.dtype)
    target_weights = np.zeros_like(targets)
    if len(fg):
        deltas = bx.encode(gt[assigned[fg]], rois[fg], weights)
        columns = 4 * labels[:len(fg), None] + np.arange(4)[None, :]
        rows = np.arange(len(fg))[:, None]
        targets[rows, columns] = deltas
        target_weights[rows, columns] = 1
    return RoiTargets(rois[keep], labels, targets, target_weights)


def _inside(anchors: np.ndarray, height: float, width: float, border: Optional[float]) -> np.ndarray:
    """The indices of the anchors within `border` pixels of the image ("+0": x2 <= width is inside)."""
    if not (height > 0 and width > 0):
        raise UsageError(f"image size {height} x {width} is not positive", "pass the image's height and width")
    if border is None:
        return np.arange(len(anchors))
    return np.flatnonzero((anchors[:, 0] >= -border) & (anchors[:, 1] >= -border) &
                          (anchors[:, 2] <= width + border) & (anchors[:, 3] <= height + border))


def _subsample(labels: np.ndarray, rng: np.random.RandomState, max_positive: int, batch: int) -> None:
    """Ignore (label -1) positives beyond `max_positive`, then negatives beyond batch minus the positives left:
    the ones ignored drawn by rng.choice, as py-faster-rcnn draws them."""
    for label, cap in ((RPN_POSITIVE, max_positive), (RPN_NEGATIVE, None)):
        members = np.flatnonzero(labels == label)
        if cap is None:
            cap = batch - int(np.sum(labels == RPN_POSITIVE))
        if len(members) > cap:
            labels[rng.choice(members, size=len(members) - cap, replace=False)] = RPN_IGNORE


def _sample(indices: np.ndarray, cap: int, rng: np.random.RandomState) -> np.ndarray:
    """`indices` if there are at most `cap`, else `cap` of them drawn by rng.choice, in ascending order."""
    if len(indices) <= cap:
        return indices
    if cap <= 0:  # nothing to draw: the stream is left as it is
        return indices[:0]
    return np.sort(rng.choice(indices, size=cap, replace=False))


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.RandomState):
        raise UsageError(f"the sampler got a {type(rng).__name__}, not a numpy.random.RandomState",
                         "pass numpy.random.RandomState(seed): its stream is the same in every NumPy version")


def _check_batch(batch: int) -> None:
    if int(batch) != batch or batch < 1:
        raise UsageError(f"sampling batch {batch} is not a positive integer", "pass e.g. 256 (RPN) or 128 (RoIs)")


def _check_fraction(name: str, value: float) -> None:
    if not 0 <= value <= 1:
        raise UsageError(f"{name} {value} is not in [0, 1]", "pass a fraction, e.g. 0.5 (RPN) or 0.25 (RoIs)")


def _check_labels(gt_labels, count: int, num_classes: int) -> np.ndarray:
    labels = np.asarray(gt_labels).reshape(-1)
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise UsageError(f"gt_labels have type {labels.dtype}, not integers", "pass class indices 1 .. num_classes - 1")
    labels = labels.astype(np.int64)
    if len(labels) != count or np.any(labels < 1) or np.any(labels >= num_classes):
        raise UsageError(f"{len(labels)} gt_labels for {count} gt boxes, or one outside 1 .. {num_classes - 1}",
                         "pass one class index per gt box, 1 .. num_classes - 1 (0 is the background)")
    return labels
