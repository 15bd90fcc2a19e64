"""SVHN (Netzer et al. 2011), format 2 (cropped 32x32 digits): the .mat files, prepared and synthetic.

Published as MATLAB v5 files ``train_32x32.mat`` (73,257 images) and ``test_32x32.mat`` (26,032),
each with ``X`` uint8 (32, 32, 3, N) and ``y`` (N, 1) labels 1..10, where 10 stands for the digit
0. http://ufldl.stanford.edu/housenumbers/

Prepared: x uint8 (N, 32, 32, 3) NHWC, y int64 (N,) with 10 mapped to 0, published order.
The 531,131-image ``extra_32x32.mat`` is never read: the study's CNN trains on the train split,
and the authors' loader returning 'extra' as the training set was a defect the kit does not copy.

Reading and writing .mat needs scipy (pinned in images/host/requirements.txt); it is imported
only here, so the other datasets keep working without it.

Synthetic: the same two .mat files; each image is a hand-drawn-looking digit (data/digits.py) in
a random colour on a random background, with parts of neighbouring digits at the sides, as the
house-number crops have.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from bench.errors import UsageError
from data.digits import render_digits
from data.formats import RawFormatError
from data.npz import Arrays

SVHN_FILES = {"train": "train_32x32.mat", "test": "test_32x32.mat"}
SVHN_EXTRA = "extra_32x32.mat"  # named only to say it is never used
SIDE = 32
# The .mat header carries a creation time; synthetic files get a fixed one for reproducible bytes.
_MAT_HEADER = b"MATLAB 5.0 MAT-file, synthetic SVHN written by dlrepro data/svhn.py"


def _scipy_io() -> Any:
    try:
        import scipy.io
    except ImportError:
        raise UsageError(
            "SVHN's .mat files need scipy, which this Python lacks",
            "install it (pip install -r images/host/requirements.txt), then rerun",
        ) from None
    return scipy.io


def read_svhn_mat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One SVHN .mat file -> images uint8 (N, 32, 32, 3) and labels int64 (N,) with 10 -> 0."""
    sio = _scipy_io()
    try:
        mat = sio.loadmat(path, variable_names=["X", "y"])
    except (ValueError, TypeError, OSError, NotImplementedError, sio.matlab.MatReadError) as err:
        raise RawFormatError(f"{path.name} is not a readable MATLAB v5 file ({err})") from None
    images, labels = mat.get("X"), mat.get("y")
    if images is None or labels is None:
        raise RawFormatError(f"{path.name} lacks the variables X and y")
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[:3] != (SIDE, SIDE, 3):
        raise RawFormatError(f"{path.name}: X holds {images.dtype} {list(images.shape)}, not uint8 [32, 32, 3, N]")
    y = np.asarray(labels).reshape(-1)
    if y.shape[0] != images.shape[3]:
        raise RawFormatError(f"{path.name} has {images.shape[3]} images but {y.shape[0]} labels")
    if len(y) and (not np.all(np.equal(np.mod(y, 1), 0)) or y.min() < 1 or y.max() > 10):
        raise RawFormatError(f"{path.name} has labels outside 1..10 (min {y.min()}, max {y.max()})")
    y = y.astype(np.int64)
    y[y == 10] = 0  # SVHN writes the digit 0 as class 10
    # (H, W, C, N) -> (N, H, W, C)
    return np.ascontiguousarray(images.transpose(3, 0, 1, 2)), y


def prepare_svhn(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """train_32x32.mat and test_32x32.mat -> x uint8 (N, 32, 32, 3), y int64 (N,) digits 0..9."""
    arrays: Arrays = {}
    for split, name in SVHN_FILES.items():
        arrays[f"x_{split}"], arrays[f"y_{split}"] = read_svhn_mat(raw / name)
    meta = {
        "num_classes": 10,
        "class_names": [str(d) for d in range(10)],
        "input_shape": [SIDE, SIDE, 3],
        "layout": "NHWC",
        "label_mapping": "published label 10 is the digit 0; labels 1..9 are kept",
        "training_split": f"{SVHN_FILES['train']} only; {SVHN_EXTRA} is never used",
    }
    return arrays, meta


# ---------------------------------------------------------------- synthetic

# SVHN's classes are not balanced (Benford-like: many 1s and 2s); mimic that roughly.
_DIGIT_WEIGHTS = np.array([0.07, 0.19, 0.14, 0.11, 0.10, 0.09, 0.08, 0.08, 0.07, 0.07])


def _cut(pool: np.ndarray, pick: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """pool[pick] shifted right by dx pixels (left when negative), zero where shifted in."""
    cols = np.arange(SIDE)[None, :] - dx[:, None]  # source column of each output column
    valid = (cols >= 0) & (cols < SIDE)
    rows = np.arange(SIDE)[None, :, None]
    out = pool[pick[:, None, None], rows, np.clip(cols, 0, SIDE - 1)[:, None, :]]
    return out * valid[:, None, :]


def svhn_arrays(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic house-number crops uint8 (32, 32, 3, n) and labels uint8 (n, 1) in 1..10."""
    per_class = int(np.clip(n // 20, 8, 48))
    pool = np.concatenate([render_digits(d, per_class, rng) for d in range(10)])
    digits = rng.choice(10, size=n, p=_DIGIT_WEIGHTS)
    images = np.empty((n, SIDE, SIDE, 3), dtype=np.uint8)
    for lo in range(0, n, 4096):
        k = digits[lo:lo + 4096]
        m = len(k)
        ink = _cut(pool, k * per_class + rng.integers(0, per_class, m), rng.integers(-2, 3, m))
        # Neighbouring digits of the house number, mostly outside the crop, at either side.
        for side in (-1, 1):
            shown = rng.random(m) < 0.6
            shift = side * rng.integers(13, 18, m)
            other = _cut(pool, rng.integers(0, len(pool), m), shift)
            ink = np.maximum(ink, other * shown[:, None, None])
        bg = rng.uniform(0, 255, (m, 1, 1, 3)).astype(np.float32)
        # Digit colour far enough from the background to be legible, as on real house signs.
        fg = np.where(bg > 127, bg - rng.uniform(90, 200, (m, 1, 1, 3)), bg + rng.uniform(90, 200, (m, 1, 1, 3)))
        img = bg + (fg - bg) * ink[..., None]
        img += rng.standard_normal(img.shape, dtype=np.float32) * 10
        images[lo:lo + m] = np.clip(img, 0, 255).astype(np.uint8)
    labels = np.where(digits == 0, 10, digits).astype(np.uint8)[:, None]
    return np.ascontiguousarray(images.transpose(1, 2, 3, 0)), labels


def svhn_mat_bytes(images: np.ndarray, labels: np.ndarray) -> bytes:
    """A MATLAB v5 file (zlib-compressed, like the published ones) holding X and y."""
    buf = io.BytesIO()
    _scipy_io().savemat(buf, {"X": images, "y": labels}, do_compression=True)
    data = bytearray(buf.getvalue())
    data[:116] = _MAT_HEADER.ljust(116, b" ")  # the 116-byte text header, without the date
    return bytes(data)


def write_svhn(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write synthetic train_32x32.mat and test_32x32.mat into ``raw`` (no extra_32x32.mat)."""
    rng = np.random.default_rng([seed, 0x5B4])
    written = []
    for split, n in (("train", n_train), ("test", n_test)):
        path = raw / SVHN_FILES[split]
        write_bytes_atomic(path, svhn_mat_bytes(*svhn_arrays(n, rng)))
        written.append(path)
    return written
