"""CIFAR-10 and CIFAR-100 (Krizhevsky 2009): the python-pickle tarballs, prepared and synthetic.

Published as ``cifar-10-python.tar.gz`` (cifar-10-batches-py/data_batch_1..5, test_batch,
batches.meta) and ``cifar-100-python.tar.gz`` (cifar-100-python/train, test, meta). Every batch
is a dict pickled by Python 2, so it is read with ``encoding="bytes"`` and its keys are bytes:
``b"data"`` a uint8 array (N, 3072) whose rows hold the 1024 red, then the 1024 green, then the
1024 blue values of a 32x32 image, row-major; ``b"labels"`` (CIFAR-10) or ``b"fine_labels"`` and
``b"coarse_labels"`` (CIFAR-100) lists of ints. https://www.cs.toronto.edu/~kriz/cifar.html

Prepared: x uint8 (N, 32, 32, 3) NHWC, y int64 (N,), in the published order (train batches 1..5
one after the other); CIFAR-100 uses the 100 fine labels, as the study does.

Synthetic: the same tarballs, whose images are coloured stripes with a class-specific colour
pair, orientation and frequency, plus per-image jitter and noise: a CNN (or a nearest-centroid
rule on colours) learns them.
"""

from __future__ import annotations

import io
import pickle
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from data.formats import RawFormatError, gzip_bytes, read_tar_members, tar_add
from data.npz import Arrays

SIDE = 32
ROW = 3 * SIDE * SIDE  # one image per pickle row: R plane, G plane, B plane


@dataclass(frozen=True)
class CifarLayout:
    """Where one CIFAR variant keeps its batches, labels and class names."""

    archive: str
    folder: str
    train: tuple[str, ...]
    test: str
    meta_file: str
    label_key: bytes
    names_key: bytes
    num_classes: int

    def member(self, name: str) -> str:
        """The tar member name of a batch or meta file."""
        return f"{self.folder}/{name}"


CIFAR10 = CifarLayout(
    archive="cifar-10-python.tar.gz",
    folder="cifar-10-batches-py",
    train=tuple(f"data_batch_{i}" for i in range(1, 6)),
    test="test_batch",
    meta_file="batches.meta",
    label_key=b"labels",
    names_key=b"label_names",
    num_classes=10,
)
CIFAR100 = CifarLayout(
    archive="cifar-100-python.tar.gz",
    folder="cifar-100-python",
    train=("train",),
    test="test",
    meta_file="meta",
    label_key=b"fine_labels",
    names_key=b"fine_label_names",
    num_classes=100,
)
LAYOUTS = {"cifar10": CIFAR10, "cifar100": CIFAR100}

# ---------------------------------------------------------------- reading

# pickle can run any callable a file names, so only what a CIFAR batch needs is resolved: numpy's
# array reconstruction (named numpy.core.* by the published Python 2 files, numpy._core.* by
# numpy 2), and _codecs.encode, with which Python 3's protocol 2 stores bytes.
_RECONSTRUCT = np.zeros(1).__reduce__()[0]
_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): __import__("codecs").encode,
}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}") from None


def load_pickle(data: bytes, name: str) -> dict:
    """A CIFAR pickle (a dict with bytes keys), read without running anything it names."""
    try:
        obj = _BatchUnpickler(io.BytesIO(data), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise RawFormatError(f"{name} is not a CIFAR python pickle ({err or 'truncated'})") from None
    if not isinstance(obj, dict):
        raise RawFormatError(f"{name} holds a {type(obj).__name__}, not a CIFAR batch dict")
    return obj


def batch_arrays(batch: dict, name: str, label_key: bytes, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """One batch dict -> images uint8 (N, 32, 32, 3) NHWC and labels int64 (N,)."""
    data, labels = batch.get(b"data"), batch.get(label_key)
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != ROW:
        found = f"{data.dtype} {list(data.shape)}" if isinstance(data, np.ndarray) else type(data).__name__
        raise RawFormatError(f"{name}: b'data' holds {found}, not uint8 [N, {ROW}]")
    if labels is None:
        raise RawFormatError(f"{name} has no {label_key!r} labels")
    y = np.asarray(labels, dtype=np.int64)
    if y.shape != (len(data),):
        raise RawFormatError(f"{name} has {len(data)} images but {y.size} labels")
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise RawFormatError(f"{name} has label {y.min() if y.min() < 0 else y.max()}, expected 0..{num_classes - 1}")
    # Rows are channel planes (C, H, W); the kit's layout is NHWC.
    x = np.ascontiguousarray(data.reshape(-1, 3, SIDE, SIDE).transpose(0, 2, 3, 1))
    return x, y


def prepare_cifar(layout: CifarLayout, raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """The tarball of ``layout`` -> x uint8 (N, 32, 32, 3), y int64 (N,), published order."""
    archive = raw / layout.archive
    members = read_tar_members(archive, [layout.member(n) for n in (*layout.train, layout.test, layout.meta_file)])
    arrays: Arrays = {}
    for split, names in (("train", layout.train), ("test", (layout.test,))):
        parts = [batch_arrays(load_pickle(members[layout.member(n)], n), n, layout.label_key, layout.num_classes)
                 for n in names]
        arrays[f"x_{split}"] = np.concatenate([x for x, _ in parts])
        arrays[f"y_{split}"] = np.concatenate([y for _, y in parts])
    names = load_pickle(members[layout.member(layout.meta_file)], layout.meta_file).get(layout.names_key)
    if not isinstance(names, list) or len(names) != layout.num_classes:
        raise RawFormatError(f"{layout.meta_file} has no list of {layout.num_classes} {layout.names_key!r}")
    meta = {
        "num_classes": layout.num_classes,
        "class_names": [n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in names],
        "input_shape": [SIDE, SIDE, 3],
        "layout": "NHWC",
        "label_key": layout.label_key.decode(),
    }
    return arrays, meta


def prepare_cifar10(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """cifar-10-python.tar.gz -> 50,000 / 10,000 images, 10 classes."""
    return prepare_cifar(CIFAR10, raw)


def prepare_cifar100(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """cifar-100-python.tar.gz -> 50,000 / 10,000 images, 100 fine classes."""
    return prepare_cifar(CIFAR100, raw)


# ---------------------------------------------------------------- synthetic


def _class_styles(num_classes: int, seed: int) -> dict[str, np.ndarray]:
    """Per class: two RGB colours, a stripe orientation and frequency, a phase (all fixed by the seed)."""
    rng = np.random.default_rng([seed, num_classes, 0xC1FA])
    return {
        "fg": rng.uniform(20, 235, (num_classes, 3)).astype(np.float32),
        "bg": rng.uniform(20, 235, (num_classes, 3)).astype(np.float32),
        "angle": rng.uniform(0, np.pi, num_classes).astype(np.float32),
        "freq": rng.uniform(1.0, 4.0, num_classes).astype(np.float32),
        "phase": rng.uniform(0, 2 * np.pi, num_classes).astype(np.float32),
    }


def cifar_images(labels: np.ndarray, num_classes: int, rng: np.random.Generator, seed: int = 0) -> np.ndarray:
    """Synthetic images uint8 (N, 32, 32, 3) for ``labels`` (class styles depend on ``seed`` only)."""
    style = _class_styles(num_classes, seed)
    ramp = (np.arange(SIDE, dtype=np.float32) + 0.5) / SIDE
    yy, xx = np.meshgrid(ramp, ramp, indexing="ij")
    images = np.empty((len(labels), SIDE, SIDE, 3), dtype=np.uint8)
    for lo in range(0, len(labels), 4096):  # bounded memory for any N
        k = labels[lo:lo + 4096]
        n = len(k)
        # Jitter within a class: a bit of rotation, frequency and phase, brightness, then noise.
        angle = style["angle"][k] + rng.normal(0, 0.12, n).astype(np.float32)
        freq = style["freq"][k] * rng.uniform(0.9, 1.1, n).astype(np.float32)
        phase = style["phase"][k] + rng.uniform(-1.2, 1.2, n).astype(np.float32)
        proj = xx * np.cos(angle)[:, None, None] + yy * np.sin(angle)[:, None, None]
        wave = 0.5 + 0.5 * np.sin(2 * np.pi * freq[:, None, None] * proj + phase[:, None, None])
        fg, bg = style["fg"][k][:, None, None], style["bg"][k][:, None, None]
        img = bg + (fg - bg) * wave[..., None]
        img *= rng.uniform(0.8, 1.2, (n, 1, 1, 1)).astype(np.float32)
        img += rng.standard_normal(img.shape, dtype=np.float32) * 14
        images[lo:lo + n] = np.clip(img, 0, 255).astype(np.uint8)
    return images


def _batch_bytes(layout: CifarLayout, label: str, images: np.ndarray, labels: np.ndarray, first: int) -> bytes:
    """One pickled batch dict with the published keys (protocol 2, as the Python 2 files)."""
    rows = np.ascontiguousarray(images.transpose(0, 3, 1, 2).reshape(len(images), ROW))
    batch: dict[bytes, Any] = {
        b"batch_label": label.encode(),
        b"filenames": [f"synthetic_{first + i:06d}.png".encode() for i in range(len(images))],
        b"data": rows,
    }
    if layout.num_classes == 100:
        batch[b"fine_labels"] = labels.tolist()
        batch[b"coarse_labels"] = (labels // 5).tolist()  # 20 superclasses of 5, as published
    else:
        batch[b"labels"] = labels.tolist()
    return pickle.dumps(batch, protocol=2)


def cifar_archive_bytes(layout: CifarLayout, n_train: int, n_test: int, seed: int = 0) -> bytes:
    """The bytes of a synthetic CIFAR tarball of ``layout`` (balanced classes, shuffled)."""
    rng = np.random.default_rng([seed, layout.num_classes, 0xC1FA8])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar_add(tar, layout.folder)
        splits = (("train", n_train, layout.train), ("test", n_test, (layout.test,)))
        for split, n, names in splits:
            labels = rng.permutation(np.arange(n) % layout.num_classes).astype(np.int64)
            images = cifar_images(labels, layout.num_classes, rng, seed)
            bounds = np.linspace(0, n, len(names) + 1).astype(int)
            for i, name in enumerate(names):
                a, b = bounds[i], bounds[i + 1]
                label = f"{'training' if split == 'train' else 'testing'} batch {i + 1} of {len(names)}"
                tar_add(tar, layout.member(name), _batch_bytes(layout, label, images[a:b], labels[a:b], a))
        names = [f"class_{k:03d}".encode() for k in range(layout.num_classes)]
        meta: dict[bytes, Any] = {layout.names_key: names}
        if layout.num_classes == 100:
            meta[b"coarse_label_names"] = [f"superclass_{k:02d}".encode() for k in range(20)]
        else:
            meta[b"num_cases_per_batch"], meta[b"num_vis"] = max(1, n_train // len(layout.train)), ROW
        tar_add(tar, layout.member(layout.meta_file), pickle.dumps(meta, protocol=2))
    return gzip_bytes(buf.getvalue(), layout.archive.removesuffix(".gz"), level=1)


def write_cifar10(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write a synthetic cifar-10-python.tar.gz into ``raw``."""
    write_bytes_atomic(raw / CIFAR10.archive, cifar_archive_bytes(CIFAR10, n_train, n_test, seed))
    return [raw / CIFAR10.archive]


def write_cifar100(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write a synthetic cifar-100-python.tar.gz into ``raw``."""
    write_bytes_atomic(raw / CIFAR100.archive, cifar_archive_bytes(CIFAR100, n_train, n_test, seed))
    return [raw / CIFAR100.archive]
