"""RoIAlign (He et al. 2017, Mask R-CNN) as two small matrices per RoI, so every framework computes it with one
batched matrix product of its own, the same arithmetic everywhere.

RoIAlign's output bin (i, j) of RoI r averages ratio x ratio bilinear samples of the feature map. A bilinear
sample at (y, x) weighs the 4 neighbours by wy * wx, and a bin's sample points form a grid (every y with every
x), so the average factors into one weight row over the feature rows and one over the columns:

    pooled[r, c, i, j] = sum_h sum_w rows[r, i, h] * features[c, h, w] * cols[r, j, w]

``matrices`` gives rows (R, out, H) and cols (R, out, W); a framework computes rows @ features @ cols^T
(differentiable in the features; the matrices are constants, as the RoIs are in approximate joint training).

The sampling rule is Caffe2's / torchvision's roi_align (``aligned=True``: the box is shifted by half a cell,
so that its edges in pixels fall on the cells' edges, cell k covering pixels [16k, 16k + 16) at stride 16, where
the samples are interpolated between cell centres; ``aligned=False``: no shift, and a box's width and height
at least one cell): sample k of ratio in a bin of size b starting at s is s + (k + 0.5) * b / ratio; a sample
beyond -1 or beyond the map's size contributes zero; otherwise a coordinate below 0 is taken as 0 and one
whose lower neighbour is the last row is taken as the last row. A sample zero on either axis is zero in both
(the product), so the factored form is exact.

``reference`` computes the same op sample by sample, as torchvision's CPU kernel does (not through the
matrices): the RoI op parity tests compare every framework's op, and the matrices, with it.

CPython 3.6-clean, NumPy only: paper-era images run it.
"""

from typing import Tuple

import numpy as np

from bench.errors import UsageError


def matrices(rois, spatial_scale: float, output: int, ratio: int, height: int, width: int,
             aligned: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """(rows (R, output, height), cols (R, output, width)) float32 for (R, 4) `rois` (x1, y1, x2, y2) in image
    pixels over a feature map of `height` x `width` cells, `spatial_scale` cells per pixel (1/16 for C4)."""
    rois = _check(rois, output, ratio)
    x1, y1, x2, y2 = (rois[:, k] * spatial_scale for k in range(4))
    rows = _axis(y1, y2, output, ratio, height, aligned)
    cols = _axis(x1, x2, output, ratio, width, aligned)
    return rows.astype(np.float32), cols.astype(np.float32)


def _axis(start: np.ndarray, end: np.ndarray, output: int, ratio: int, size: int, aligned: bool) -> np.ndarray:
    """(R, output, size): each bin's mean bilinear weights over one axis's `size` cells."""
    offset = 0.5 if aligned else 0.0
    start = start - offset
    extent = end - offset - start
    if not aligned:
        extent = np.maximum(extent, 1.0)
    step = extent / output  # (R,)
    k = (np.arange(output)[:, None] + (np.arange(ratio)[None, :] + 0.5) / ratio).reshape(-1)  # (output * ratio,)
    points = start[:, None] + k[None, :] * step[:, None]  # (R, output * ratio)
    weights = np.zeros(points.shape + (size,), np.float64)
    valid = (points >= -1.0) & (points <= size)
    p = np.clip(points, 0.0, None)
    low = np.floor(p).astype(np.int64)
    last = low >= size - 1
    low = np.where(last, size - 1, low)
    high = np.where(last, size - 1, low + 1)
    p = np.where(last, low.astype(np.float64), p)
    frac = p - low
    r_idx, s_idx = np.nonzero(valid)
    np.add.at(weights, (r_idx, s_idx, low[valid]), 1.0 - frac[valid])
    np.add.at(weights, (r_idx, s_idx, high[valid]), frac[valid])
    return weights.reshape(len(points), output, ratio, size).mean(axis=2)


def pool(features, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The op through the matrices in NumPy: (C, H, W) features -> (R, C, output, output)."""
    features = np.asarray(features, dtype=np.float64)
    return np.einsum("rih,chw,rjw->rcij", rows, features, cols, optimize=True)


def reference(features, rois, spatial_scale: float, output: int, ratio: int, aligned: bool = True) -> np.ndarray:
    """RoIAlign sample by sample (torchvision's CPU kernel's loop): (C, H, W) features -> (R, C, output, output)."""
    features = np.asarray(features, dtype=np.float64)
    rois = _check(rois, output, ratio)
    channels, height, width = features.shape
    out = np.zeros((len(rois), channels, output, output))
    offset = 0.5 if aligned else 0.0
    for r, (x1, y1, x2, y2) in enumerate(rois * spatial_scale):
        y0, x0 = y1 - offset, x1 - offset
        roi_h, roi_w = y2 - offset - y0, x2 - offset - x0
        if not aligned:
            roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
        bin_h, bin_w = roi_h / output, roi_w / output
        for i in range(output):
            for j in range(output):
                total = np.zeros(channels)
                for iy in range(ratio):
                    y = y0 + i * bin_h + (iy + 0.5) * bin_h / ratio
                    for ix in range(ratio):
                        x = x0 + j * bin_w + (ix + 0.5) * bin_w / ratio
                        total += _bilinear(features, y, x, height, width)
                out[r, :, i, j] = total / (ratio * ratio)
    return out


def _bilinear(features: np.ndarray, y: float, x: float, height: int, width: int) -> np.ndarray:
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(features.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return (hy * hx * features[:, y_low, x_low] + hy * lx * features[:, y_low, x_high]
            + ly * hx * features[:, y_high, x_low] + ly * lx * features[:, y_high, x_high])


def _check(rois, output: int, ratio: int) -> np.ndarray:
    rois = np.asarray(rois, dtype=np.float64).reshape(-1, 4) if np.size(rois) == 0 else np.asarray(rois, np.float64)
    if rois.ndim != 2 or rois.shape[1] != 4 or not np.all(np.isfinite(rois)):
        raise UsageError(f"RoIs of shape {rois.shape} are not (R, 4) finite boxes", "pass (x1, y1, x2, y2) rows")
    if int(output) != output or output < 1 or int(ratio) != ratio or ratio < 1:
        raise UsageError(f"RoIAlign output {output}, sampling ratio {ratio} are not positive integers",
                         "give e.g. output 14 and sampling ratio 2 (the workload's roi table)")
    return rois
