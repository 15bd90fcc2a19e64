"""data/prepare.py, data/formats.py, data/text.py and data/synthetic.py (no network)."""

from __future__ import annotations

import gzip
import json
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from bench import prepared as bench_dataset
from bench.errors import UsageError
from data import prepare as prep
from data import synthetic, text
from data.formats import RawFormatError, gzip_bytes, idx_bytes, parse_idx, read_idx
from data.manifest import load_manifest
from data.npz import write_npz
from data.paths import prepared_dir, raw_dir
from tests.data.fixtures import IMDB_SIZES, MNIST_SIZES, imdb_tar, manifest_for, sha256, synthetic_raw

WORKLOADS = Path(__file__).resolve().parents[2] / "studies" / "dlbench" / "workloads"


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    return synthetic_raw(tmp_path_factory.mktemp("fixtures"))


def _raw(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _prepare(dataset: str, files: dict[str, bytes], tmp: Path, out: str = "out", **kw) -> Path:
    raw = _raw(tmp / "raw" / dataset, files)
    manifest = manifest_for({dataset: files}, ["http://unused/"])
    return prep.prepare(dataset, raw, tmp / out, manifest=manifest, progress=False, **kw)


# ---------------------------------------------------------------- MNIST / IDX


def test_mnist_prepare_shapes_labels_and_meta(tmp_path, raw_files):
    out = _prepare("mnist", raw_files["mnist"], tmp_path)
    data = bench_dataset.load(out)
    n_train, n_test = MNIST_SIZES
    assert data.x_train.shape == (n_train, 28, 28, 1) and data.x_train.dtype == np.uint8
    assert data.x_test.shape == (n_test, 28, 28, 1)
    assert data.y_train.dtype == np.int64 and data.y_train.shape == (n_train,)
    assert set(np.unique(data.y_train)) <= set(range(10)) and len(np.unique(data.y_train)) > 5
    images = parse_idx(gzip.decompress(raw_files["mnist"]["train-images-idx3-ubyte.gz"]))
    np.testing.assert_array_equal(data.x_train[..., 0], images)
    meta = data.meta
    assert meta["format_version"] == bench_dataset.FORMAT_VERSION and meta["source"] == "real"
    assert meta["num_classes"] == 10 and meta["counts"] == {"train": n_train, "test": n_test}
    assert meta["keys"] == ["x_test", "x_train", "y_test", "y_train"]
    assert meta["arrays_sha256"] == sha256((out / "arrays.npz").read_bytes())
    assert meta["raw_files"] == {name: sha256(b) for name, b in raw_files["mnist"].items()}
    assert oct((out / "arrays.npz").stat().st_mode & 0o777) == "0o644"  # readable in containers


def test_idx_round_trip():
    for dtype in ("u1", "i1", ">i2", "<i4", "<f4", "<f8"):
        array = np.arange(24).reshape(2, 3, 4).astype(dtype)
        back = parse_idx(idx_bytes(array))
        np.testing.assert_array_equal(back, array)
        assert back.dtype.isnative


LABELS = "train-labels-idx1-ubyte.gz"
IMAGES = "train-images-idx3-ubyte.gz"


@pytest.mark.parametrize(
    ("name", "payload", "complaint"),
    [
        (IMAGES, b"\x08\x03\x00\x00" + bytes(100), "magic number 0x08030000"),
        (IMAGES, b"\x00\x00\x07\x03" + bytes(100), "magic number 0x00000703"),
        (IMAGES, idx_bytes(np.zeros((2, 28, 28), np.uint8))[:-5], "IDX data has 1563 bytes"),
        (IMAGES, idx_bytes(np.zeros((2, 28, 28), np.uint8)) + b"x", "IDX data has 1569 bytes"),
        (IMAGES, b"\x00\x00\x08\x03\x00\x00", "IDX header truncated"),
        (IMAGES, idx_bytes(np.zeros((2, 27, 28), np.uint8)), "not uint8 [N, 28, 28]"),
        (IMAGES, idx_bytes(np.zeros((2, 28, 28), np.float32)), "not uint8 [N, 28, 28]"),
        (LABELS, idx_bytes(np.array([1, 2, 10] * 40, np.uint8)), "has label 10, MNIST labels are 0..9"),
        (LABELS, idx_bytes(np.array([1, 2], np.uint8)), f"has 120 images but {LABELS} 2 labels"),
        (LABELS, None, "not a valid gzip file"),
    ],
)
def test_malformed_idx_is_rejected(tmp_path, raw_files, name, payload, complaint):
    files = dict(raw_files["mnist"])
    if payload is None:
        files[name] = files[name][:-20]  # truncated gzip stream
    else:
        files[name] = gzip_bytes(payload, name[:-3])
    with pytest.raises(UsageError) as err:
        _prepare("mnist", files, tmp_path)
    assert name in str(err.value) and complaint in str(err.value)
    assert "\n" not in str(err.value) and "python -m data download" in str(err.value)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob("*.partial"))


def test_read_idx_reports_file_name(tmp_path):
    path = tmp_path / "bad-idx1-ubyte"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(RawFormatError, match="bad-idx1-ubyte is not an IDX file"):
        read_idx(path)


# ---------------------------------------------------------------- IMDB / text


def test_tokenizer():
    assert text.tokenize("Don't<br />STOP!!! 'quoted' snake_case café 42nd... fans' rock'n'roll") == [
        "don't", "stop", "quoted", "snake", "case", "café", "42nd", "fans", "rock'n'roll"]
    assert text.tokenize("<br /><br />  ...  ") == []


def test_imdb_prepare_synthetic_archive(tmp_path, raw_files):
    out = _prepare("imdb", raw_files["imdb"], tmp_path)
    data = bench_dataset.load(out)
    n_train, n_test = IMDB_SIZES
    assert data.x_train.shape == (n_train, 500) and data.x_train.dtype == np.int32
    assert data.x_test.shape == (n_test, 500)
    assert data.len_train.dtype == np.int32 and data.len_train.min() >= 1 and data.len_train.max() <= 500
    assert data.y_train.dtype == np.int64 and sorted(np.bincount(data.y_train)) == [n_train // 2] * 2
    assert 0 <= data.x_train.min() and data.x_train.max() < 5000
    for x, length in zip(data.x_train, data.len_train):  # post-padded: tokens, then only zeros
        assert (x[:length] > 0).all() and (x[length:] == 0).all()
    assert not (np.all(np.diff(data.y_train) >= 0) or np.all(np.diff(data.y_train) <= 0))  # not class-sorted
    meta = data.meta
    assert meta["vocab_size"] == 5000 and meta["maxlen"] == 500 and (meta["pad_id"], meta["oov_id"]) == (0, 1)
    # The vocabulary: training words only, by count, ties alphabetical.
    counts = Counter()
    for _, _, body in prep.read_imdb_reviews(tmp_path / "raw" / "imdb" / "aclImdb_v1.tar.gz")["train"]:
        counts.update(text.tokenize(body))
    expected = sorted(counts, key=lambda w: (-counts[w], w))[:4998]
    assert meta["vocab"] == expected


def test_imdb_vocab_truncation_and_oov(tmp_path):
    long_review = " ".join(["zebra"] * 499 + ["yak", "last"])  # 501 tokens: "last" is cut off
    archive = imdb_tar({
        "aclImdb/train/pos/0_10.txt": "Great film, great <br />cast!",
        "aclImdb/train/pos/1_9.txt": long_review,
        "aclImdb/train/neg/0_1.txt": "Bad film. bad bad, ALPHA beta",
        "aclImdb/train/neg/1_2.txt": "",
        "aclImdb/train/unsup/0_0.txt": "unlabelled words never count " * 50,
        "aclImdb/test/pos/0_8.txt": "great unseen",
        "aclImdb/test/neg/0_3.txt": "bad",
        "aclImdb/README": "readme",
    })
    out = _prepare("imdb", {"aclImdb_v1.tar.gz": archive}, tmp_path)
    data = bench_dataset.load(out)
    vocab = data.meta["vocab"]
    # zebra 499; bad 3; film 2, great 2 (tie: alphabetical); then count 1, alphabetical; "last" counts too.
    assert vocab == ["zebra", "bad", "film", "great", "alpha", "beta", "cast", "last", "yak"]
    ids = {word: i + 2 for i, word in enumerate(vocab)}
    rows = {tuple(x[:n]) for x, n in zip(data.x_train, data.len_train)}
    assert (ids["great"], ids["film"], ids["great"], ids["cast"]) in rows
    assert (1,) in rows  # the empty review: one OOV token, length 1
    longest = data.x_train[np.argmax(data.len_train)]
    assert data.len_train.max() == 500 and longest[499] == ids["yak"]  # the first 500 tokens are kept
    test_rows = {tuple(x[:n]): y for x, n, y in zip(data.x_test, data.len_test, data.y_test)}
    assert test_rows == {(ids["great"], 1): 1, (ids["bad"],): 0}  # "unseen" is OOV (test words never count)


def test_imdb_archive_without_a_class_is_rejected(tmp_path):
    archive = imdb_tar({"aclImdb/train/pos/0_10.txt": "good", "aclImdb/test/pos/0_10.txt": "good"})
    with pytest.raises(UsageError, match="lacks aclImdb/train/pos or aclImdb/train/neg"):
        _prepare("imdb", {"aclImdb_v1.tar.gz": archive}, tmp_path)
    with pytest.raises(UsageError, match="not a readable tar.gz"):
        _prepare("imdb", {"aclImdb_v1.tar.gz": b"\x1f\x8b garbage"}, tmp_path / "2")


def test_imdb_constants_match_the_workload():
    with open(WORKLOADS / "lstm-imdb.toml", "rb") as fh:
        model = tomllib.load(fh)["model"]
    assert (model["maxlen"], model["vocab_size"]) == (prep.IMDB_MAXLEN, prep.IMDB_VOCAB_SIZE)


# ---------------------------------------------------------------- the common driver


def test_prepare_is_deterministic(tmp_path, raw_files):
    for dataset in ("mnist", "imdb"):
        first = _prepare(dataset, raw_files[dataset], tmp_path / dataset, out="a")
        second = _prepare(dataset, raw_files[dataset], tmp_path / dataset, out="b")
        meta_a, meta_b = (json.loads((p / "meta.json").read_text()) for p in (first, second))
        assert meta_a["arrays_sha256"] == meta_b["arrays_sha256"]
        assert (first / "arrays.npz").read_bytes() == (second / "arrays.npz").read_bytes()


def test_up_to_date_is_skipped_and_changes_redo(tmp_path, raw_files):
    out = _prepare("mnist", raw_files["mnist"], tmp_path)
    stamp = (out / "arrays.npz").stat().st_mtime_ns
    assert _prepare("mnist", raw_files["mnist"], tmp_path) == out
    assert (out / "arrays.npz").stat().st_mtime_ns == stamp
    _prepare("mnist", raw_files["mnist"], tmp_path, force=True)
    assert (out / "arrays.npz").stat().st_mtime_ns != stamp


def test_failed_prepare_keeps_the_previous_folder(tmp_path, raw_files):
    out = _prepare("mnist", raw_files["mnist"], tmp_path)
    before = (out / "meta.json").read_bytes()
    files = dict(raw_files["mnist"], **{LABELS: gzip_bytes(b"junk", "x")})
    with pytest.raises(UsageError):
        _prepare("mnist", files, tmp_path)
    assert (out / "meta.json").read_bytes() == before
    assert not list(tmp_path.glob(".*partial"))


def _labels_zero(path: Path) -> None:
    """Overwrite a prepared arrays.npz with a valid one whose labels are all 0 (meta.json stays)."""
    with np.load(path) as npz:
        arrays = {key: np.zeros_like(npz[key]) if key.startswith("y_") else npz[key] for key in npz.files}
    write_npz(path, arrays)


@pytest.mark.parametrize("damage", ["truncated", "labels zeroed"])
def test_arrays_whose_bytes_differ_from_meta_are_prepared_again_not_up_to_date(tmp_path, raw_files, capsys, damage):
    out = _prepare("mnist", raw_files["mnist"], tmp_path)
    arrays, raw = out / "arrays.npz", tmp_path / "raw" / "mnist"
    manifest = manifest_for({"mnist": raw_files["mnist"]}, ["http://unused/"])
    good = arrays.read_bytes()
    if damage == "truncated":
        arrays.write_bytes(good[: len(good) // 2])
    else:
        _labels_zero(arrays)
    damaged = sha256(arrays.read_bytes())
    capsys.readouterr()
    prep.prepare("mnist", raw, out, manifest=manifest)
    assert capsys.readouterr().err.splitlines() == [
        f"mnist: {arrays} has sha256 {damaged}, not the {sha256(good)} its meta.json records; "
        f"preparing it again from {raw}"]
    assert arrays.read_bytes() == good
    # With the raw files gone it cannot be: one line naming what is missing and the fix; the folder is kept.
    _labels_zero(arrays)
    before = sha256(arrays.read_bytes()), (out / "meta.json").read_bytes()
    (raw / IMAGES).unlink()
    with pytest.raises(UsageError) as err:
        prep.prepare("mnist", raw, out, manifest=manifest, progress=False)
    assert str(err.value) == f"{raw / IMAGES} is missing; run 'python -m data download --datasets mnist'"
    assert (sha256(arrays.read_bytes()), (out / "meta.json").read_bytes()) == before


def test_what_prepare_writes_is_read_back_before_it_replaces_the_folder(tmp_path, raw_files, monkeypatch):
    out = _prepare("mnist", raw_files["mnist"], tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def short_write(path: Path, arrays: dict) -> None:  # a disk that drops the end of a file without an error
        write_npz(path, arrays)
        path.write_bytes(path.read_bytes()[:-100])

    monkeypatch.setattr(prep, "write_npz", short_write)
    with pytest.raises(UsageError) as err:
        _prepare("mnist", raw_files["mnist"], tmp_path, force=True)
    assert str(err.value) == (
        f"the new {out} did not read back as written (arrays.npz is not a readable .npz: File is not a zip file); "
        f"check the disk holding {tmp_path} (free space, errors), then run 'python -m data download --datasets "
        "mnist' again")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not list(tmp_path.glob(".*partial"))


def test_real_source_requires_manifest_sha256(tmp_path, raw_files):
    raw = _raw(tmp_path / "raw", raw_files["mnist"])
    with pytest.raises(UsageError) as err:  # the shipped manifest has the real MNIST hashes
        prep.prepare("mnist", raw, tmp_path / "out", progress=False)
    assert "expected 440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609" in str(err.value)
    (raw / IMAGES).unlink()
    hint = "run 'python -m data download --datasets mnist'"
    with pytest.raises(UsageError, match=f"{IMAGES} is missing; {hint}"):
        prep.prepare("mnist", raw, tmp_path / "out", progress=False)


def test_shipped_manifest_is_valid():
    manifest = load_manifest()
    assert manifest.names() == ["cifar10", "cifar100", "imdb", "manythings", "mnist", "ptb", "svhn", "voc2012"]
    assert sorted(prep.preparers(manifest)) == sorted({spec.prepare for spec in manifest.datasets.values()})
    assert sorted(synthetic.GENERATORS) == manifest.names()  # every dataset has synthetic data too
    assert manifest.get("mnist").file("t10k-labels-idx1-ubyte.gz").sha256 == (
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6")
    # https first everywhere; plain http only as a later fallback (the sha256 check guards it).
    for spec in manifest.datasets.values():
        for f in spec.files:
            assert f.urls[0].startswith("https://")
            assert all(url.startswith(("https://", "http://")) for url in f.urls)


TOY_DATASET = """
import numpy as np


def prepare_toyset(raw):
    rows = np.frombuffer((raw / "toy.bin").read_bytes(), dtype=np.uint8)
    return {"x_train": rows[:, None], "y_train": rows.astype(np.int64), "x_test": rows[:1, None],
            "y_test": rows[:1].astype(np.int64)}, {"num_classes": 256}


prepare_toyset.version = 3
"""


def test_a_dataset_module_on_the_package_path_brings_its_prepare_step(tmp_path, monkeypatch):
    """A prepare function is found by its name (prepare_<name> in a module of data/), its version read from it:
    a dataset is its manifest entry and its module, no list edited; a manifest naming no such function is refused
    in one line naming the choices."""
    import sys

    import data

    (tmp_path / "toyset.py").write_text(TOY_DATASET, encoding="utf-8")
    monkeypatch.setattr(data, "__path__", [*data.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "data.toyset", raising=False)
    payload = bytes([3, 1, 2])
    manifest = manifest_for({"toyset": {"toy.bin": payload}}, ["https://example.org/"])
    raw = _raw(tmp_path / "raw", {"toy.bin": payload})
    out = prep.prepare("toyset", raw, tmp_path / "out", manifest=manifest, progress=False)
    meta = bench_dataset.read_meta(out)
    assert meta["prepare_version"] == 3 and meta["counts"] == {"train": 3, "test": 1}
    assert list(prep.preparers(manifest)) == ["toyset"]
    manifest["datasets"]["toyset"]["prepare"] = "toyset2"
    with pytest.raises(UsageError, match=r"no prepare step 'toyset2' yet \(no function prepare_toyset2 in data/\); "
                                         r"choose from: none \(its manifest entry's prepare key\), or define "
                                         r"prepare_toyset2\(raw\) in a module data/toyset.py$"):
        prep.prepare("toyset", raw, tmp_path / "out2", manifest=manifest, progress=False)
    monkeypatch.delitem(sys.modules, "data.toyset", raising=False)


# ---------------------------------------------------------------- synthetic


def test_synthetic_is_deterministic_and_prepared_like_real(tmp_path):
    sizes = {"mnist": (60, 20), "imdb": (12, 8)}
    for dataset, size in sizes.items():
        out = synthetic.make_synthetic(dataset, tmp_path, sizes=size, progress=False)
        assert out == prepared_dir(tmp_path, dataset, "synthetic")
        meta = bench_dataset.read_meta(out)
        assert meta["source"] == "synthetic" and meta["counts"] == {"train": size[0], "test": size[1]}
        raw = raw_dir(tmp_path, dataset, "synthetic")
        again = synthetic.GENERATORS[dataset](tmp_path / "again" / dataset, *size, 0)
        for path in again:
            assert path.read_bytes() == (raw / path.name).read_bytes()
    other = synthetic.imdb_archive_bytes(12, 8, seed=1)
    assert other != (raw_dir(tmp_path, "imdb", "synthetic") / "aclImdb_v1.tar.gz").read_bytes()


def test_synthetic_reuses_matching_raw_files(tmp_path):
    raw = synthetic.generate("mnist", tmp_path, sizes=(30, 10))
    stamp = (raw / IMAGES).stat().st_mtime_ns
    synthetic.generate("mnist", tmp_path, sizes=(30, 10))
    assert (raw / IMAGES).stat().st_mtime_ns == stamp
    synthetic.generate("mnist", tmp_path, sizes=(40, 10))
    assert read_idx(raw / IMAGES).shape == (40, 28, 28)


def test_synthetic_mnist_is_learnable():
    rng = np.random.default_rng(0)
    x, y = synthetic.mnist_arrays(1000, rng)
    xt, yt = synthetic.mnist_arrays(300, rng)
    centroids = np.stack([x[y == k].reshape(-1, 784).mean(0) for k in range(10)])
    guess = np.argmin(((xt.reshape(-1, 1, 784) - centroids) ** 2).sum(-1), axis=1)
    assert (guess == yt).mean() > 0.5  # far above chance (0.1): classes differ
