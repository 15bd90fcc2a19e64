"""Faster R-CNN's anchors (Ren et al. 2015, Sec 3.1.1): `len(scales) * len(ratios)` reference boxes at every
position of a stride-`stride` feature map.

A base anchor of scale s and ratio r (height / width, as py-faster-rcnn and torchvision define it) has side
size = s * stride (scales (8, 16, 32) at stride 16: 128, 256, 512 pixels), width size / sqrt(r), height
size * sqrt(r), so its area is size^2 whatever r. It is centred at (offset * stride, offset * stride): offset 0.5
puts it on the centre of the first feature cell, as py-faster-rcnn's (7.5, 7.5) does in its "+1" extent
(torchvision and detectron2 default to offset 0). Coordinates are exact (float64): py-faster-rcnn rounds the
widths and heights, torchvision the base corners, to integers; neither is needed when every framework takes
its anchors from here.

Order (what the frameworks' RPN heads must match):
- base anchors are ratio-major: index a = ratio_index * len(scales) + scale_index (py-faster-rcnn's
  generate_anchors and torchvision's AnchorGenerator order);
- the grid is location-major, rows first: anchor (y, x, a) of an (H, W) map is row (y * W + x) * A + a, its
  base anchor shifted by (x * stride, y * stride). An NCHW head output of A scores (or 4 * A deltas, channel
  4 * a + k) per location lines up after a transpose to (H, W, A) (or (H, W, A, 4)) and a reshape to (-1,)
  (or (-1, 4)).

CPython 3.6-clean: paper-era images run it.
"""

from typing import Sequence

import numpy as np

from bench.detection.config import DEFAULTS
from bench.errors import UsageError


def base_anchors(stride: float = DEFAULTS["anchor_stride"], scales: Sequence[float] = DEFAULTS["anchor_scales"],
                 ratios: Sequence[float] = DEFAULTS["anchor_ratios"],
                 offset: float = DEFAULTS["anchor_offset"]) -> np.ndarray:
    """The (len(ratios) * len(scales), 4) anchors of the first feature cell, ratio-major (module docstring)."""
    _check(stride, scales, ratios, offset)
    centre = offset * stride
    rows = []
    for ratio in ratios:
        for scale in scales:
            size = scale * stride
            half_w, half_h = size / np.sqrt(ratio) / 2, size * np.sqrt(ratio) / 2
            rows.append([centre - half_w, centre - half_h, centre + half_w, centre + half_h])
    return np.array(rows, dtype=np.float64)


def grid_anchors(feature_height: int, feature_width: int, stride: float = DEFAULTS["anchor_stride"],
                 scales: Sequence[float] = DEFAULTS["anchor_scales"],
                 ratios: Sequence[float] = DEFAULTS["anchor_ratios"],
                 offset: float = DEFAULTS["anchor_offset"]) -> np.ndarray:
    """The (H * W * A, 4) anchors of an (H, W) feature map, row (y * W + x) * A + a (module docstring)."""
    if int(feature_height) != feature_height or int(feature_width) != feature_width or \
            feature_height < 1 or feature_width < 1:
        raise UsageError(f"feature map size {feature_height} x {feature_width} is not two positive integers",
                         "pass the RPN feature map's height and width")
    base = base_anchors(stride, scales, ratios, offset)
    ys, xs = np.meshgrid(np.arange(int(feature_height)) * float(stride), np.arange(int(feature_width)) * float(stride),
                         indexing="ij")
    shifts = np.stack([xs.ravel(), ys.ravel(), xs.ravel(), ys.ravel()], axis=1)  # (H * W, 4), rows first
    return (shifts[:, None, :] + base[None, :, :]).reshape(-1, 4)


def count(feature_height: int, feature_width: int, scales: Sequence[float] = DEFAULTS["anchor_scales"],
          ratios: Sequence[float] = DEFAULTS["anchor_ratios"]) -> int:
    """How many anchors an (H, W) feature map has: H * W * len(scales) * len(ratios)."""
    return int(feature_height) * int(feature_width) * len(scales) * len(ratios)


def _check(stride: float, scales: Sequence[float], ratios: Sequence[float], offset: float) -> None:
    if not stride > 0:
        raise UsageError(f"anchor stride {stride} is not positive", "pass the feature map's stride in pixels, e.g. 16")
    if not scales or not all(s > 0 for s in scales) or not ratios or not all(r > 0 for r in ratios):
        raise UsageError(f"anchor scales {tuple(scales)} or ratios {tuple(ratios)} are empty or not all positive",
                         "pass positive scales (e.g. 8, 16, 32) and height/width ratios (e.g. 0.5, 1, 2)")
    if not 0 <= offset < 1:
        raise UsageError(f"anchor offset {offset} is not in [0, 1)",
                         "pass the anchor centre's offset as a fraction of the stride, e.g. 0.5")
