"""Box arithmetic of Faster R-CNN in NumPy: IoU, the (dx, dy, dw, dh) box coding, clipping, small-box removal
and greedy non-maximum suppression.

Conventions (stated once, used by every module of bench/detection):
- A box is (x1, y1, x2, y2) in pixels of the network's input image; arrays of boxes are (N, 4).
- Extent is "+0": width = x2 - x1, height = y2 - y1, as torchvision and detectron2 compute it. py-faster-rcnn
  (and the original Caffe code) use "+1" (width = x2 - x1 + 1, pixel indices inclusive); the two differ by one
  pixel per side, which moves IoUs of small boxes and nothing else.
- The coding is Ren et al. 2015, Eq. 2 (from R-CNN, Girshick et al. 2014, Appendix C): with a reference box of
  centre (xa, ya) and size (wa, ha), dx = (x - xa) / wa, dy = (y - ya) / ha, dw = log(w / wa), dh = log(h / ha),
  each multiplied by a weight: (1, 1, 1, 1) for the RPN, (10, 10, 5, 5) for the detection head (py-faster-rcnn's
  target normalisation by stds (0.1, 0.1, 0.2, 0.2); torchvision's BoxCoder weights).
- Arrays stay in their floating type (float32 or float64; integers become float64).

CPython 3.6-clean, NumPy >= 1.14 only: paper-era images run it.
"""

from typing import Optional, Sequence

import numpy as np

from bench.detection.config import DEFAULTS
from bench.errors import UsageError

BOX_FIX = "pass an (N, 4) array of finite (x1, y1, x2, y2) pixel boxes with x1 <= x2 and y1 <= y2"


def as_boxes(boxes, name: str = "boxes") -> np.ndarray:
    """`boxes` as an (N, 4) floating array, checked: finite, x1 <= x2, y1 <= y2 (a UsageError otherwise).
    An empty sequence is (0, 4)."""
    arr = _as_float(boxes)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise UsageError(f"{name} has shape {arr.shape}, not (N, 4)", BOX_FIX)
    if not np.all(np.isfinite(arr)):
        raise UsageError(f"{name} has a NaN or infinite coordinate", BOX_FIX)
    if np.any(arr[:, 2] < arr[:, 0]) or np.any(arr[:, 3] < arr[:, 1]):
        raise UsageError(f"{name} has a box with x2 < x1 or y2 < y1", BOX_FIX)
    return arr


def as_deltas(deltas, count: int, name: str = "deltas") -> np.ndarray:
    """`deltas` as a finite (count, 4) floating array (a UsageError otherwise)."""
    arr = _as_float(deltas)
    if arr.size == 0 and count == 0:
        return arr.reshape(0, 4)
    if arr.shape != (count, 4) or not np.all(np.isfinite(arr)):
        raise UsageError(f"{name} has shape {arr.shape} or a non-finite value, where ({count}, 4) finite "
                         "values were expected", "pass one finite (dx, dy, dw, dh) row per box")
    return arr


def as_scores(scores, count: int, name: str = "scores") -> np.ndarray:
    """`scores` as a finite (count,) floating array, one per box (a UsageError otherwise)."""
    arr = _as_float(scores)
    if arr.shape != (count,) or not np.all(np.isfinite(arr)):
        raise UsageError(f"{name} has shape {arr.shape} or a non-finite value, where {count} finite scores were "
                         "expected", "pass one finite score per box, in the boxes' order")
    return arr


def area(boxes) -> np.ndarray:
    """The (N,) areas (x2 - x1) * (y2 - y1) of (N, 4) boxes ("+0" extent)."""
    b = as_boxes(boxes)
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def iou(a, b) -> np.ndarray:
    """The (N, M) intersection over union of every box of `a` (N, 4) with every box of `b` (M, 4).

    IoU = area(a & b) / (area(a) + area(b) - area(a & b)) with the "+0" extent; 0 where the union is empty
    (two zero-area boxes), so degenerate boxes never divide by zero."""
    return _iou(as_boxes(a, "a"), as_boxes(b, "b"))


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """iou of boxes already checked (nms calls it once per kept box, so it checks nothing again)."""
    top_left = np.maximum(a[:, None, :2], b[None, :, :2])
    bottom_right = np.minimum(a[:, None, 2:], b[None, :, 2:])
    size = np.clip(bottom_right - top_left, 0, None)
    inter = size[..., 0] * size[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def encode(boxes, references, weights: Sequence[float] = DEFAULTS["rpn_box_weights"]) -> np.ndarray:
    """The (N, 4) regression targets (dx, dy, dw, dh) that take each reference box (an anchor or a RoI) to the
    box of the same row: Ren et al. 2015 Eq. 2, times `weights` (wx, wy, ww, wh).

    Both boxes of a row must have positive width and height (log of a ratio): a UsageError otherwise."""
    boxes, references = as_boxes(boxes), as_boxes(references, "references")
    if len(boxes) != len(references):
        raise UsageError(f"encode got {len(boxes)} boxes for {len(references)} reference boxes",
                         "pass one reference box (anchor or RoI) per box")
    wx, wy, ww, wh = _weights(weights)
    x, y, w, h = _centres(boxes, "boxes")
    xa, ya, wa, ha = _centres(references, "references")
    return np.stack([wx * (x - xa) / wa, wy * (y - ya) / ha, ww * np.log(w / wa), wh * np.log(h / ha)], axis=1)


def decode(deltas, references, weights: Sequence[float] = DEFAULTS["rpn_box_weights"],
           clip_value: float = DEFAULTS["box_delta_clip"]) -> np.ndarray:
    """The (N, 4) boxes that (N, 4) `deltas` (dx, dy, dw, dh, times `weights`) make of the reference boxes: the
    inverse of encode. dw and dh (after dividing by their weights) are clamped from above at `clip_value`
    (log(1000 / 16), torchvision's BoxCoder) so that exp() cannot overflow on an untrained network's output."""
    references = as_boxes(references, "references")
    deltas = as_deltas(deltas, len(references))
    wx, wy, ww, wh = _weights(weights)
    xa, ya, wa, ha = _centres(references, "references")
    x = deltas[:, 0] / wx * wa + xa
    y = deltas[:, 1] / wy * ha + ya
    w = np.exp(np.minimum(deltas[:, 2] / ww, clip_value)) * wa
    h = np.exp(np.minimum(deltas[:, 3] / wh, clip_value)) * ha
    return np.stack([x - 0.5 * w, y - 0.5 * h, x + 0.5 * w, y + 0.5 * h], axis=1)


def clip(boxes, height: float, width: float) -> np.ndarray:
    """A copy of `boxes` with x in [0, width] and y in [0, height] (the "+0" image extent; py-faster-rcnn's "+1"
    clips to width - 1 and height - 1)."""
    boxes = as_boxes(boxes)
    if not (height > 0 and width > 0):
        raise UsageError(f"image size {height} x {width} is not positive", "pass the image's height and width")
    out = boxes.copy()
    out[:, 0::2] = np.clip(out[:, 0::2], 0, width)
    out[:, 1::2] = np.clip(out[:, 1::2], 0, height)
    return out


def remove_small(boxes, min_size: float) -> np.ndarray:
    """The indices (ascending) of the boxes whose width and height are both >= `min_size` pixels
    (py-faster-rcnn's _filter_boxes, torchvision's remove_small_boxes)."""
    boxes = as_boxes(boxes)
    keep = (boxes[:, 2] - boxes[:, 0] >= min_size) & (boxes[:, 3] - boxes[:, 1] >= min_size)
    return np.flatnonzero(keep)


def score_order(scores) -> np.ndarray:
    """The indices of `scores` from the highest to the lowest; equal scores keep their index order (a stable
    sort), so every framework and NumPy version ranks ties alike."""
    scores = _as_float(scores)
    # "mergesort" is NumPy 1.14's name for a stable sort (kind="stable" came in 1.15).
    return np.argsort(-scores, kind="mergesort")


def nms(boxes, scores, threshold: float, limit: Optional[int] = None) -> np.ndarray:
    """Greedy non-maximum suppression (py-faster-rcnn's py_cpu_nms, torchvision.ops.nms): take the highest-scoring
    box left, drop every remaining box whose IoU with it is > `threshold`, repeat. Returns the kept indices in
    score order (highest first; equal scores in index order, see score_order). `limit` stops after that many
    are kept: the same prefix, sooner."""
    boxes = as_boxes(boxes)
    scores = as_scores(scores, len(boxes))
    order = score_order(scores)
    keep = []
    while order.size and (limit is None or len(keep) < limit):
        best, order = order[0], order[1:]
        keep.append(best)
        order = order[_iou(boxes[best:best + 1], boxes[order])[0] <= threshold]
    return np.array(keep, dtype=np.int64)


def _as_float(values) -> np.ndarray:
    arr = np.asarray(values)
    return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


def _weights(weights: Sequence[float]):
    w = [float(v) for v in weights]
    if len(w) != 4 or not all(v > 0 for v in w):
        raise UsageError(f"box coding weights {tuple(weights)} are not four positive numbers",
                         "pass (wx, wy, ww, wh), e.g. (1, 1, 1, 1) for the RPN or (10, 10, 5, 5) for the head")
    return w


def _centres(boxes: np.ndarray, name: str):
    """(centre x, centre y, width, height) of checked boxes, each (N,); widths and heights must be positive."""
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    if np.any(w <= 0) or np.any(h <= 0):
        raise UsageError(f"{name} has a box of zero width or height, which the box coding cannot take",
                         "remove empty boxes first (remove_small) or pass boxes with x2 > x1 and y2 > y1")
    return boxes[:, 0] + 0.5 * w, boxes[:, 1] + 0.5 * h, w, h
