"""One image of a prepared VOC split (data/voc.py's arrays) as a detector reads it: resized to the workload's
size, flipped when asked, scaled / 255 and zero-padded at the bottom and right to a multiple of the size divisor.

The prepared arrays hold every image at one size (short side 600, long side at most 1000). A workload that
asks for a smaller size (the quick and smoke profiles) gets each image resized here from the prepared pixels,
bilinearly with half-pixel centres (OpenCV's INTER_LINEAR, no antialiasing), the same NumPy code in every
framework, and its boxes from the annotation at the new factor. Ground truth for training leaves out the
objects marked difficult (py-faster-rcnn's use_diff = False); the evaluation keeps them, flagged.

CPython 3.6-clean, NumPy only.
"""

from collections import namedtuple
from typing import Dict, Tuple

import numpy as np

from bench.detection import detector as det
from bench.errors import UsageError

Example = namedtuple("Example", "pixels height width scale boxes classes difficult original_boxes image_id")
Example.__doc__ = """One image ready for the network: pixels (1, Hp, Wp, 3) float32 in [0, 1] (zero padding past
height x width), height and width (the resized image's, before padding), scale (resized / original), boxes
(K, 4) (x1, y1, x2, y2) in the resized image ("+0" extent), classes (K,) 1 .. 20 (0 is the background), difficult
(K,) bool, original_boxes (K, 4) as annotated (1-based inclusive, for voc_eval), image_id."""

ARRAYS = ("pixels", "offset", "shape", "original_shape", "boxes", "original_boxes", "labels", "difficult", "y", "id")


def scale_for(height: int, width: int, short_side: int, max_side: int) -> float:
    """py-faster-rcnn's resize factor: short side to `short_side`, unless the long side would then round
    above `max_side`, in which case the long side to `max_side`."""
    scale = short_side / min(height, width)
    if round(scale * max(height, width)) > max_side:
        scale = max_side / max(height, width)
    return scale


def resized_size(height: int, width: int, scale: float) -> Tuple[int, int]:
    """(height, width) after resizing by `scale`: round(side * scale), at least 1."""
    return max(1, int(round(height * scale))), max(1, int(round(width * scale)))


class Split:
    """The images of one prepared split (the arrays of data/voc.py without their _<split> suffix), read one at a
    time at the workload's image size (model.image: short_side, max_side, size_divisor)."""

    def __init__(self, arrays: Dict[str, np.ndarray], image: dict) -> None:
        missing = [key for key in ARRAYS if key not in arrays]
        if missing:
            raise UsageError(f"the prepared dataset has no '{missing[0]}' array: it is not a detection dataset",
                             "run a detection workload on voc2012 (make download, or DATA=synthetic)")
        self.arrays = arrays
        self.image = image

    def __len__(self) -> int:
        return len(self.arrays["y"])

    def example(self, index: int, flip: bool = False) -> Example:
        """Image `index` of the split (horizontally flipped when `flip`)."""
        a = self.arrays
        original = tuple(int(v) for v in a["original_shape"][index])
        scale = scale_for(original[0], original[1], self.image["short_side"], self.image["max_side"])
        height, width = resized_size(original[0], original[1], scale)
        prepared_hw = tuple(int(v) for v in a["shape"][index])
        start = int(a["offset"][index])
        rgb = a["pixels"][start:start + prepared_hw[0] * prepared_hw[1] * 3].reshape(prepared_hw + (3,))
        rgb = rgb.astype(np.float32) / np.float32(255.0)
        if prepared_hw != (height, width):
            rgb = resize(rgb, height, width)
        count = int(a["y"][index])
        annotated = np.asarray(a["original_boxes"][index][:count], np.float64)
        boxes = (annotated - [1.0, 1.0, 0.0, 0.0]) * scale  # the annotation's inclusive pixels, "+0" extent
        if flip:
            rgb = rgb[:, ::-1]
            boxes = np.stack([width - boxes[:, 2], boxes[:, 1], width - boxes[:, 0], boxes[:, 3]], axis=1)
        divisor = self.image["size_divisor"]
        pixels = np.zeros((1, det.padded(height, divisor), det.padded(width, divisor), 3), np.float32)
        pixels[0, :height, :width] = rgb
        return Example(pixels, height, width, scale, boxes.reshape(-1, 4),
                       np.asarray(a["labels"][index][:count], np.int64) + 1,
                       np.asarray(a["difficult"][index][:count], bool), annotated.reshape(-1, 4), str(a["id"][index]))


def resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """(H, W, C) -> (height, width, C), bilinear with half-pixel centres (source coordinates clamped to the edge)."""
    rows = _interpolation(image.shape[0], height)
    cols = _interpolation(image.shape[1], width)
    # Two products, one axis each (a three-operand einsum would loop over every combination).
    out = np.tensordot(rows, image, axes=(1, 0))  # (height, W, C)
    return np.tensordot(cols, out, axes=(1, 1)).transpose(1, 0, 2).astype(np.float32)


def _interpolation(source: int, target: int) -> np.ndarray:
    """(target, source) weights of each output row over the source rows."""
    position = np.clip((np.arange(target) + 0.5) * (source / target) - 0.5, 0.0, source - 1)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, source - 1)
    frac = (position - low).astype(np.float32)
    weights = np.zeros((target, source), np.float32)
    np.add.at(weights, (np.arange(target), low), 1.0 - frac)
    np.add.at(weights, (np.arange(target), high), frac)
    return weights
