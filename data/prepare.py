"""Raw files -> the prepared format of bench/prepared.py (arrays.npz + meta.json).

One prepare function per dataset, found by its name, not registered: ``prepare_<name>`` in any module of the data
package (find_preparer), <name> being the manifest's ``prepare`` key. MNIST and IMDB are here; CIFAR-10/100, SVHN,
PTB and spa-eng live in their own modules (data/cifar.py, svhn.py, ptb.py, manythings.py, each with its synthetic
writer); a new dataset's goes in a module of its own, data/<dataset>.py. A function's version is its ``version``
attribute (``prepare_<name>.version = 2`` after it, when its output changes), 1 without one.
Each returns the arrays and dataset-specific meta; :func:`prepare` does the rest the same way for
all: checks the raw files, skips when already up to date, writes the folder atomically, and
records sha256s and how each raw file was verified (meta.json "raw_files" and "raw_verification":
the manifest's sha256, or the sha256 recorded on first download in data/digests.py's lock). Real and
synthetic data go through the same code.

"Up to date" means the bytes of arrays.npz still have the sha256 meta.json records (runs are
planned on that digest and the entrypoint refuses other bytes); a folder whose arrays differ
(truncated, replaced) is prepared again from the verified raw files. What is written is read back
and checked before prepare returns. Hashing costs about 0.16 s per 306 MB (SVHN, the largest).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import data
from bench.errors import UsageError
from bench.prepared import ARRAYS_FILE, FORMAT_VERSION, META_FILE, arrays_problem, check_source
from data import digests, text
from data.formats import RawFormatError, read_idx
from data.fsutil import atomic_folder, sha256_file
from data.manifest import DatasetSpec, Manifest, as_manifest
from data.npz import Arrays, write_npz

# ---------------------------------------------------------------- MNIST

MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
MNIST_SHAPE = (28, 28)


def prepare_mnist(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """MNIST IDX files -> x uint8 (N, 28, 28, 1), y int64 (N,), in the published order."""
    arrays: Arrays = {}
    for split, (image_file, label_file) in MNIST_FILES.items():
        images, labels = read_idx(raw / image_file), read_idx(raw / label_file)
        if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != MNIST_SHAPE:
            found = f"{images.dtype} {list(images.shape)}"
            raise RawFormatError(f"{image_file} holds {found}, not uint8 [N, 28, 28]")
        if labels.dtype != np.uint8 or labels.ndim != 1:
            raise RawFormatError(f"{label_file} holds {labels.dtype} {list(labels.shape)}, not uint8 [N]")
        if len(images) != len(labels):
            raise RawFormatError(
                f"{image_file} has {len(images)} images but {label_file} {len(labels)} labels")
        if len(labels) and labels.max() > 9:
            raise RawFormatError(f"{label_file} has label {labels.max()}, MNIST labels are 0..9")
        arrays[f"x_{split}"] = images[..., np.newaxis]
        arrays[f"y_{split}"] = labels.astype(np.int64)
    meta = {"num_classes": 10, "class_names": [str(d) for d in range(10)], "input_shape": [28, 28, 1]}
    return arrays, meta


# ---------------------------------------------------------------- IMDB

IMDB_ARCHIVE = "aclImdb_v1.tar.gz"
# Must equal studies/dlbench/workloads/lstm-imdb.toml (maxlen, vocab_size); a test checks it.
IMDB_MAXLEN = 500
IMDB_VOCAB_SIZE = 5000
# Reviews are sorted by file name, then shuffled with this seed: a fixed order, not class-sorted.
IMDB_SHUFFLE_SEED = 20110619
_REVIEW = re.compile(r"^(?:\./)?aclImdb/(train|test)/(pos|neg)/[^/]+\.txt$")


def read_imdb_reviews(archive: Path) -> dict[str, list[tuple[str, int, str]]]:
    """(member name, label, text) of every labelled review in the tar.gz, per split, sorted by name.

    Read straight from the archive; unsup/ reviews and the other files are skipped.
    """
    reviews: dict[str, list[tuple[str, int, str]]] = {"train": [], "test": []}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                match = _REVIEW.match(member.name)
                if match is None or not member.isfile():
                    continue
                handle = tar.extractfile(member)
                body = handle.read().decode("utf-8", errors="replace") if handle else ""
                reviews[match[1]].append((member.name, int(match[2] == "pos"), body))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise RawFormatError(f"{archive.name} is not a readable tar.gz ({err or 'truncated'})") from None
    for split, items in reviews.items():
        if not {label for _, label, _ in items} >= {0, 1}:
            raise RawFormatError(f"{archive.name} lacks aclImdb/{split}/pos or aclImdb/{split}/neg reviews")
        items.sort()
    return reviews


def prepare_imdb(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """aclImdb tar.gz -> x int32 (N, 500) post-padded, len int32 (N,), y int64 (N,) pos=1 neg=0."""
    reviews = read_imdb_reviews(raw / IMDB_ARCHIVE)
    indexer = text.Indexer()
    docs = {split: [indexer(text.tokenize(body)) for _, _, body in items] for split, items in reviews.items()}
    vocab, lookup = text.build_vocab(docs["train"], indexer, IMDB_VOCAB_SIZE)
    rng = np.random.default_rng(IMDB_SHUFFLE_SEED)
    arrays: Arrays = {}
    for split in ("train", "test"):
        x, lengths = text.encode(docs[split], lookup, IMDB_MAXLEN)
        y = np.array([label for _, label, _ in reviews[split]], dtype=np.int64)
        order = rng.permutation(len(y))
        arrays[f"x_{split}"], arrays[f"len_{split}"] = x[order], lengths[order]
        arrays[f"y_{split}"] = y[order]
    meta = {
        "num_classes": 2,
        "class_names": ["neg", "pos"],
        "maxlen": IMDB_MAXLEN,
        "vocab_size": IMDB_VOCAB_SIZE,
        "pad_id": text.PAD_ID,
        "oov_id": text.OOV_ID,
        "first_word_id": text.FIRST_WORD_ID,
        "padding": "post",
        "truncation": f"keep the first {IMDB_MAXLEN} tokens",
        "tokenizer": text.TOKENIZER,
        "vocab_rule": "most frequent training words, ties alphabetical; vocab[i] has id i + first_word_id",
        "shuffle_seed": IMDB_SHUFFLE_SEED,
        "vocab": vocab,
    }
    return arrays, meta


# ---------------------------------------------------------------- common driver


@dataclass(frozen=True)
class Preparer:
    """A dataset's prepare function and its version (bump it when its output changes)."""

    func: Callable[[Path], tuple[Arrays, dict[str, Any]]]
    version: int


# A prepare function's name: this prefix and the manifest's `prepare` key.
PREFIX = "prepare_"


def data_modules() -> list[Any]:
    """Every module of the data package (data/<module>.py, in each folder on its path), imported; not the CLI."""
    return [importlib.import_module(f"{data.__name__}.{m.name}") for m in pkgutil.iter_modules(data.__path__)
            if not m.ispkg and m.name != "__main__"]


def dataset_function(prefix: str, name: str) -> Callable | None:
    """The function `prefix + name` a module of the data package defines (not one it imports), or None."""
    found = [f for module in data_modules() if inspect.isfunction(f := vars(module).get(prefix + name))
             and f.__module__ == module.__name__]
    if len(found) > 1:
        raise AssertionError(f"{prefix}{name} is defined in {len(found)} modules of data/, not one")
    return found[0] if found else None


def find_preparer(name: str) -> Preparer | None:
    """The prepare step the manifest's `prepare` key `name` names (prepare_<name>), or None."""
    func = dataset_function(PREFIX, name)
    return None if func is None else Preparer(func, getattr(func, "version", 1))


def preparers(manifest: Manifest | Mapping[str, Any] | None = None) -> dict[str, Preparer]:
    """The prepare step of every dataset of the manifest (default: data/manifest.toml) that has one, by its
    `prepare` key, in name order."""
    keys = sorted({spec.prepare for spec in as_manifest(manifest).datasets.values()})
    return {k: p for k in keys if (p := find_preparer(k)) is not None}


def prepare(
    dataset: str,
    raw: Path,
    out: Path,
    *,
    source: str = "real",
    manifest: Manifest | Mapping[str, Any] | None = None,
    force: bool = False,
    progress: bool = True,
) -> Path:
    """Prepare ``dataset`` from the raw folder into ``out``; return ``out``.

    For source "real" every raw file must match the manifest's sha256, or for a "first-download"
    file the sha256 recorded on its first download (in the lock beside ``raw``: data/digests.py).
    Skips the work when ``out`` already holds a complete folder made by the same code from the same
    raw bytes, verified the same way, whose arrays.npz still has the sha256 its meta.json records
    (else it is prepared again, and one line says why).
    Raises UsageError for missing, corrupt or malformed raw files, and for output that does not
    read back as written (``out`` is then left as it was).
    """
    check_source(source)
    spec = as_manifest(manifest).get(dataset)
    preparer = find_preparer(spec.prepare)
    if preparer is None:
        raise UsageError(f"dataset '{dataset}' has no prepare step '{spec.prepare}' yet (no function "
                         f"{PREFIX}{spec.prepare} in data/)",
                         f"choose from: {', '.join(preparers(manifest)) or 'none'} (its manifest entry's prepare "
                         f"key), or define {PREFIX}{spec.prepare}(raw) in a module data/{dataset}.py")
    raw, out = Path(raw), Path(out)
    redo = _redo_hint(dataset, source)
    raw_files, verification = _raw_sha256s(spec, raw, source, redo)
    recorded = None if force else _recorded(out, dataset, source, raw_files, preparer.version, verification)
    problem = None if recorded is None else arrays_problem(out, recorded)
    if recorded is not None and problem is None:
        _say(progress, f"{dataset}: {out} is up to date")
        return out
    _say(progress, f"{dataset}: {problem}; preparing it again from {raw}" if problem
         else f"{dataset}: preparing {out} from {raw}")
    try:
        arrays, extra = preparer.func(raw)
    except RawFormatError as err:
        raise UsageError(str(err), f"delete the file named above from {raw} and {redo}") from None
    with atomic_folder(out) as tmp:
        write_npz(tmp / ARRAYS_FILE, arrays)
        meta = {
            "format_version": FORMAT_VERSION,
            "dataset": dataset,
            "source": source,
            "arrays_sha256": sha256_file(tmp / ARRAYS_FILE),
            "keys": sorted(arrays),
            "counts": {split: len(arrays[f"y_{split}"]) for split in ("train", "test")},
            "raw_files": raw_files,
            "raw_verification": verification,
            "prepare_version": preparer.version,
            **extra,
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        _check_written(tmp, out, meta, redo)  # in the temporary folder: a failure leaves ``out`` as it was
    return out


def _check_written(tmp: Path, out: Path, meta: dict[str, Any], redo: str) -> None:
    """Read back what prepare wrote into ``tmp`` (to become ``out``): meta.json as written, arrays.npz
    with the sha256 meta records and an .npz of its keys. A UsageError naming ``out`` and the fix otherwise."""
    try:
        if json.loads((tmp / META_FILE).read_text(encoding="utf-8")) != json.loads(json.dumps(meta)):
            problem = f"{META_FILE} reads back differently"
        else:  # the bytes meta records (the same check as "up to date"), then the archive's keys
            problem = arrays_problem(tmp, meta) or _keys_problem(tmp / ARRAYS_FILE, meta["keys"])
    except (OSError, ValueError) as err:
        problem = f"it cannot be read back: {err}"
    if problem:
        raise UsageError(f"the new {out} did not read back as written ({problem})",
                         f"check the disk holding {out.parent} (free space, errors), then {redo} again")


def _keys_problem(path: Path, keys: list[str]) -> str | None:
    """Why the .npz at ``path`` is not a whole archive of these arrays, or None."""
    try:
        with np.load(path) as npz:
            found = sorted(npz.files)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        return f"{path.name} is not a readable .npz: {err}"
    return None if found == keys else f"{path.name} holds {found}, not {keys}"


def _recorded(out: Path, dataset: str, source: str, raw_files: dict[str, str], version: int,
              verification: dict[str, str]) -> dict[str, Any] | None:
    """``out``'s meta.json when it records a folder made from these raw files by this code, verified
    this way, else None (whether its arrays are still those bytes is arrays_problem's question)."""
    try:
        meta = json.loads((Path(out) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    expected = {
        "format_version": FORMAT_VERSION,
        "dataset": dataset,
        "source": source,
        "raw_files": raw_files,
        "prepare_version": version,
        "raw_verification": verification,
    }
    return meta if isinstance(meta, dict) and all(meta.get(k) == v for k, v in expected.items()) else None


def _raw_sha256s(spec: DatasetSpec, raw: Path, source: str, redo: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each raw file's sha256, and how it was verified ({name: sha256}, {name: how})."""
    lock = digests.lock_for(raw)
    found, verification = {}, {}
    for file in spec.files:
        path = raw / file.name
        if not path.is_file():
            raise UsageError(f"{path} is missing", redo)
        digest = sha256_file(path)
        if source != "real":
            verification[file.name] = digests.VERIFIED_SYNTHETIC  # synthetic files have their own hashes
        elif file.pinned:
            if digest != file.sha256:
                raise UsageError(f"{path} has sha256 {digest}, expected {file.sha256}", f"delete it and {redo}")
            verification[file.name] = digests.VERIFIED_MANIFEST
        else:
            _check_recorded(spec.name, path, digest, lock, redo)
            verification[file.name] = digests.VERIFIED_FIRST_DOWNLOAD
        found[file.name] = digest
    return found, verification


def _check_recorded(dataset: str, path: Path, digest: str, lock: Path, redo: str) -> None:
    """Refuse a raw file with no published digest unless it matches the one recorded on first download."""
    recorded = digests.recorded(lock, dataset, path.name)
    if recorded is None:
        raise UsageError(f"{path} has no published sha256 and none was recorded on first download (in {lock})",
                         f"{redo} (it checks the size and records the sha256)")
    if digest != recorded:
        raise digests.mismatch_error(dataset, path, recorded, digest, lock)


def _redo_hint(dataset: str, source: str) -> str:
    command = "download" if source == "real" else "synthetic"
    return f"run 'python -m data {command} --datasets {dataset}'"


def _say(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)
