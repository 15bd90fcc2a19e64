"""Synthetic data in the real published formats, so the demo and the tests run without a network.

- mnist: the four IDX .gz files. Each digit class has a pen-stroke template (polylines); every
  image is a template with jittered control points, random slant, scale and stroke width, a
  shift of up to 2 pixels and mild noise, drawn anti-aliased into a 20x20 box centred in 28x28
  (as MNIST is). Train and test use separately drawn stroke variants. Default 60000 / 10000.
- imdb: ``aclImdb_v1.tar.gz`` with aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt plus the
  README, imdb.vocab and a few train/unsup reviews. Reviews are sentences of common English
  words and a long tail of made-up words (Zipf-like frequencies), with sentiment words of the
  review's class (and some of the other class) mixed in; 20-700 words, ``<br /><br />`` between
  paragraphs. Default 5000 / 5000 reviews, half positive.
- cifar10, cifar100, svhn, ptb, manythings, voc2012: written by data/cifar.py, svhn.py, ptb.py,
  manythings.py and voc.py (see there); registered here. For ptb the sizes are lines (train, and each of
  valid and test); for manythings, train + test is the number of pairs, which prepare splits 4:1.

Everything is a pure function of the sizes and the seed: same arguments, same bytes. The files
go to <root>/synthetic/raw/<dataset>/ and are prepared by data/prepare.py, like real data, into
bench.prepared.prepared_dir(root, dataset, "synthetic").
"""

from __future__ import annotations

import io
import itertools
import json
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from bench.errors import UsageError
from data import cifar, manythings, ptb, svhn, voc
from data.digits import render_digits
from data.formats import gzip_bytes, idx_bytes, tar_add
from data.fsutil import sha256_file
from data.paths import prepared_dir, raw_dir
from data.prepare import IMDB_ARCHIVE, MNIST_FILES, prepare

# 2: denser sentiment words, shorter reviews (the demo LSTM learns); 3: PTB's successors drawn Zipf-wise
# (its quick profile learns in every framework)
GENERATOR_VERSION = 3
STAMP_FILE = "synthetic.json"
# The new datasets' defaults are small enough to generate in seconds (the real ones are 2-5x larger).
DEFAULT_SIZES: dict[str, tuple[int, int]] = {
    "mnist": (60000, 10000),
    "imdb": (5000, 5000),
    "cifar10": (10000, 2000),
    "cifar100": (10000, 2000),
    "svhn": (10000, 2000),
    "ptb": (10000, 1000),
    "manythings": (8000, 2000),
    # Images (real: 5717 / 5823); prepared at Faster R-CNN's 600-pixel short side, each is about 1.5 MB.
    "voc2012": (64, 32),
}

# ---------------------------------------------------------------- MNIST-like digits


def mnist_arrays(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic digit images uint8 (n, 28, 28) and their labels uint8 (n,)."""
    # Up to 128 stroke variants per class (fewer for tiny sets, which keeps the tests fast);
    # with 25 shifts and noise that is thousands of distinct images per class.
    variants_per_class = int(np.clip(n // 20, 8, 128))
    pool = np.concatenate([render_digits(d, variants_per_class, rng) for d in range(10)])
    labels = rng.integers(0, 10, n).astype(np.uint8)
    pick = labels.astype(np.int64) * variants_per_class + rng.integers(0, variants_per_class, n)
    dy, dx = rng.integers(0, 5, n), rng.integers(0, 5, n)  # top-left corner of the 28x28 cut
    images = np.empty((n, 28, 28), dtype=np.uint8)
    ramp = np.arange(28)
    for lo in range(0, n, 8192):  # bounded memory for any n
        hi = min(lo + 8192, n)
        rows = (dy[lo:hi, None] + ramp)[:, :, None]
        cols = (dx[lo:hi, None] + ramp)[:, None, :]
        ink = pool[pick[lo:hi, None, None], rows, cols] * 255
        ink += rng.standard_normal(ink.shape, dtype=np.float32) * 12 * (ink > 0)  # noise on the strokes only
        images[lo:hi] = np.clip(ink, 0, 255).astype(np.uint8)
    return images, labels


def write_mnist(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write the four MNIST IDX .gz files of a synthetic MNIST into ``raw``."""
    rng = np.random.default_rng([seed, 0x3A157])
    written = []
    for split, n in (("train", n_train), ("test", n_test)):
        images, labels = mnist_arrays(n, rng)
        for name, array in zip(MNIST_FILES[split], (images, labels)):
            # Level 1: the noisy images compress to about the same size at a fraction of the time.
            write_bytes_atomic(raw / name, gzip_bytes(idx_bytes(array), name.removesuffix(".gz"), level=1))
            written.append(raw / name)
    return written


# ---------------------------------------------------------------- IMDB-like reviews

def _words(block: str) -> list[str]:
    return block.split()


_COMMON = _words("""
the a and of to is in it this that was as for with movie film but on not you his he are have be one
all at they by who an so from like her just or about out has if some there what more when very she
even my would up time which only story really see their had can were me we than much been get will
also into people other do because how first him most made its then make way them could too any after
characters character watch think films two seen many life plot acting never where little show know
over did ever does man better end here scene scenes still these why while something actors go should
back real director years doesn't thing don't i'm it's actually makes though another nothing new same
few lot old part cast along world young both between each almost quite role music around series
without down script screen house night woman family feel give watching minutes sure found long work
say take done whole father hollywood book comedy drama horror action war kids girl boy police town
""")
_POSITIVE = _words("""
great excellent wonderful best loved beautiful brilliant superb perfect amazing enjoyed favorite
masterpiece outstanding touching fantastic delightful moving gem recommend hilarious charming powerful
fun enjoyable terrific stunning memorable marvelous refreshing underrated classic heartwarming
compelling gripping witty splendid magnificent beautifully flawless superbly sweet
""")
_NEGATIVE = _words("""
bad worst awful boring terrible waste poor horrible stupid dull worse mess pointless lame annoying
ridiculous poorly disappointing disappointment unfunny predictable wooden laughable crap pathetic
mediocre tedious forgettable cheap weak badly garbage painful unwatchable overrated clichéd bland
incoherent insulting atrocious
""")
_ONSETS = _words("b c d f g h j k l m n p r s t v w z br ch cl dr fl gr pl sh st th tr")
_VOWELS = _words("a e i o u ai ea ou")
_CODAS = ["", "", "", "n", "r", "s", "l", "t", "nd", "rk"]


def _tail_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct made-up words (2-3 syllables), none of them a listed real word."""
    taken = set(_COMMON) | set(_POSITIVE) | set(_NEGATIVE)
    words: list[str] = []
    while len(words) < count:
        syllables = rng.integers(2, 4)
        word = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
                       for _ in range(syllables)) + _CODAS[rng.integers(len(_CODAS))]
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def _cdf(n: int, exponent: float) -> np.ndarray:
    """Cumulative Zipf-like frequencies of ranks 1..n (for searchsorted sampling)."""
    cdf = np.cumsum(1.0 / np.arange(2, n + 2) ** exponent)
    return cdf / cdf[-1]


class _ReviewWriter:
    """Draws synthetic reviews; one instance holds the word lists and their frequencies."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.common = np.array(_COMMON, dtype=object)
        self.tail = np.array(_tail_words(rng, 9000), dtype=object)
        self.sentiment = (np.array(_NEGATIVE, dtype=object), np.array(_POSITIVE, dtype=object))

    def words(self) -> list[str]:
        """Every word a review can use (for imdb.vocab)."""
        return sorted({*self.common, *self.tail, *self.sentiment[0], *self.sentiment[1]})

    def reviews(self, labels: np.ndarray) -> list[str]:
        """One review per label (1 positive, 0 negative), 20-700 words each (median about 60).

        Drawn for all reviews at once (per-token Python loops would take seconds).
        """
        rng, n = self.rng, len(labels)
        lengths = np.clip(rng.lognormal(np.log(60), 0.6, n), 20, 700).astype(np.int64)
        doc = np.repeat(np.arange(n), lengths)
        total = len(doc)
        common = self.common[np.searchsorted(_cdf(len(self.common), 1.0), rng.random(total))]
        tail = self.tail[np.searchsorted(_cdf(len(self.tail), 1.05), rng.random(total))]
        tokens = np.where(rng.random(total) < 0.6, common, tail)
        # Class-indicative words at a review-specific density, 10% of them from the other class:
        # dense enough that the quick profile (2 epochs of 2000 reviews) learns, so the demo shows it.
        hit = rng.random(total) < rng.uniform(0.08, 0.2, n)[doc]
        side = np.where(rng.random(total) < 0.9, labels[doc], 1 - labels[doc])
        for value, words in enumerate(self.sentiment):
            where = hit & (side == value)
            tokens[where] = words[rng.integers(0, len(words), int(where.sum()))]
        return self._texts(tokens, lengths)

    def _texts(self, tokens: np.ndarray, lengths: np.ndarray) -> list[str]:
        """Sentences (capitalized, . ! ?, some commas) and <br /><br /> paragraph breaks."""
        rng, total = self.rng, len(tokens)
        last = np.cumsum(lengths) - 1
        end = rng.random(total) < 1 / 12
        end[last] = True
        paragraph = end & (rng.random(total) < 0.2)
        paragraph[last] = False
        comma = ~end & (rng.random(total) < 0.03)
        start = np.roll(end, 1)
        start[0] = True
        tokens[start] = [word.capitalize() for word in tokens[start]]
        tokens[comma] += ","
        tokens[end] += np.array([".", ".", "!", "?"], dtype=object)[rng.integers(0, 4, int(end.sum()))]
        tokens[paragraph] += "<br /><br />"
        words = tokens.tolist()
        bounds = np.concatenate([[0], last + 1]).tolist()
        return [" ".join(words[a:b]) for a, b in itertools.pairwise(bounds)]


def imdb_archive_bytes(n_train: int, n_test: int, seed: int = 0) -> bytes:
    """The bytes of a synthetic aclImdb_v1.tar.gz (half positive, half negative per split)."""
    rng = np.random.default_rng([seed, 0x1ADB])
    writer = _ReviewWriter(rng)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar_add(tar, "aclImdb")
        tar_add(tar, "aclImdb/README", b"Synthetic IMDB-format reviews (dlrepro data/synthetic.py).\n")
        tar_add(tar, "aclImdb/imdb.vocab", "\n".join(writer.words()).encode() + b"\n")
        for split, n in (("train", n_train), ("test", n_test)):
            tar_add(tar, f"aclImdb/{split}")
            labels = (np.arange(n) < (n + 1) // 2).astype(np.int64)  # the first half positive
            texts = writer.reviews(labels)
            ratings = np.where(labels == 1, rng.integers(7, 11, n), rng.integers(1, 5, n))
            for label, folder in ((1, "pos"), (0, "neg")):
                tar_add(tar, f"aclImdb/{split}/{folder}")
                for i, k in enumerate(np.flatnonzero(labels == label)):
                    tar_add(tar, f"aclImdb/{split}/{folder}/{i}_{ratings[k]}.txt", texts[k].encode("utf-8"))
        # Unlabelled reviews exist in the real archive; prepare must skip them.
        tar_add(tar, "aclImdb/train/unsup")
        unsup = writer.reviews(rng.integers(0, 2, min(20, n_train // 10 + 1)))
        for i, body in enumerate(unsup):
            tar_add(tar, f"aclImdb/train/unsup/{i}_0.txt", body.encode("utf-8"))
    return gzip_bytes(buf.getvalue(), IMDB_ARCHIVE.removesuffix(".gz"), level=6)


def write_imdb(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write a synthetic aclImdb_v1.tar.gz into ``raw``."""
    write_bytes_atomic(raw / IMDB_ARCHIVE, imdb_archive_bytes(n_train, n_test, seed))
    return [raw / IMDB_ARCHIVE]


# ---------------------------------------------------------------- driver

# name -> writer(raw folder, n_train, n_test, seed) -> files written
GENERATORS: dict[str, Callable[[Path, int, int, int], list[Path]]] = {
    "mnist": write_mnist,
    "imdb": write_imdb,
    "cifar10": cifar.write_cifar10,
    "cifar100": cifar.write_cifar100,
    "svhn": svhn.write_svhn,
    "ptb": ptb.write_ptb,
    "manythings": manythings.write_manythings,
    "voc2012": voc.write_voc2012,
}


def known() -> list[str]:
    """Datasets that have a synthetic generator."""
    return sorted(GENERATORS)


def check_dataset(dataset: str) -> None:
    """UsageError for a dataset without a generator."""
    if dataset not in GENERATORS:
        raise UsageError(f"unknown dataset '{dataset}'", f"choose from: {', '.join(known())}")


def generate(
    dataset: str, root: Path, *, sizes: tuple[int, int] | None = None, seed: int = 0, progress: bool = False
) -> Path:
    """Write the synthetic raw files of ``dataset`` into <root>/synthetic/raw/<dataset>/.

    Skipped when the folder already holds the files the same generator version, sizes and seed wrote,
    byte for byte (their sha256s are recorded in synthetic.json, written last): a deleted or damaged raw
    file is written again, which is what prepare's advice for one ("delete it and run python -m data
    synthetic") relies on.
    """
    check_dataset(dataset)
    n_train, n_test = sizes or DEFAULT_SIZES[dataset]
    if n_train < 2 or n_test < 2:
        raise UsageError(f"synthetic {dataset} sizes {n_train}:{n_test} are too small", "give at least 2:2")
    raw = raw_dir(root, dataset, "synthetic")
    stamp = {"generator_version": GENERATOR_VERSION, "dataset": dataset, "seed": seed,
             "n_train": n_train, "n_test": n_test}
    if _written_before(raw, stamp):
        return raw
    (raw / STAMP_FILE).unlink(missing_ok=True)  # the files are about to change
    if progress:
        print(f"{dataset}: writing synthetic {n_train} train / {n_test} test to {raw}", file=sys.stderr)
    written = GENERATORS[dataset](raw, n_train, n_test, seed)
    stamp["files"] = {path.name: sha256_file(path) for path in written}
    write_bytes_atomic(raw / STAMP_FILE, (json.dumps(stamp, indent=1) + "\n").encode())
    return raw


def _written_before(raw: Path, stamp: dict) -> bool:
    """Whether ``raw`` holds every file the generator wrote for ``stamp``, unchanged (synthetic.json's sha256s)."""
    try:
        recorded = json.loads((raw / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return False
    files = recorded.pop("files", None) if isinstance(recorded, dict) else None
    if recorded != stamp or not isinstance(files, dict) or not files:
        return False
    return all((raw / name).is_file() and sha256_file(raw / name) == digest for name, digest in files.items())


def make_synthetic(
    dataset: str,
    root: Path,
    *,
    sizes: tuple[int, int] | None = None,
    seed: int = 0,
    progress: bool = True,
) -> Path:
    """Generate (if needed) and prepare synthetic ``dataset``; return its prepared folder."""
    raw = generate(dataset, root, sizes=sizes, seed=seed, progress=progress)
    out = prepared_dir(root, dataset, "synthetic")
    return prepare(dataset, raw, out, source="synthetic", progress=progress)
