"""CIFAR-10 / CIFAR-100: download from a loopback server, prepare, and the synthetic tarballs (no network)."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

from bench import prepared as bench_dataset
from bench.errors import UsageError
from data import cifar
from data import download as dl
from data.formats import gzip_bytes, tar_add
from data.paths import raw_dir
from data.prepare import prepare
from tests.data.fixtures import DATASET_SIZES, fetch_and_prepare, manifest_for, served, sha256, synthetic_files

DATASETS = ("cifar10", "cifar100")


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    folder = tmp_path_factory.mktemp("cifar")
    return {dataset: synthetic_files(folder, dataset) for dataset in DATASETS}


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _batches(archive: bytes, layout: cifar.CifarLayout) -> dict[str, dict]:
    """Every pickle of a (trusted, synthetic) archive, loaded the plain way, by file name."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile():
                out[member.name.rsplit("/", 1)[-1]] = pickle.loads(tar.extractfile(member).read(), encoding="bytes")
    return out


@pytest.mark.parametrize("dataset", DATASETS)
def test_download_and_prepare(tmp_path, raw_files, dataset):
    files = raw_files[dataset]
    layout = cifar.LAYOUTS[dataset]
    with served(files) as server:
        out = fetch_and_prepare(dataset, manifest_for({dataset: files}, [server.url + "/a/"]), tmp_path)
    assert (raw_dir(tmp_path, dataset) / layout.archive).read_bytes() == files[layout.archive]
    data = bench_dataset.load(out)
    n_train, n_test = DATASET_SIZES[dataset]
    assert data.x_train.shape == (n_train, 32, 32, 3) and data.x_train.dtype == np.uint8
    assert data.x_test.shape == (n_test, 32, 32, 3) and data.x_test.dtype == np.uint8
    assert data.y_train.shape == (n_train,) and data.y_train.dtype == np.int64
    assert data.y_test.dtype == np.int64
    k = layout.num_classes
    assert data.y_train.min() >= 0 and data.y_train.max() < k
    assert sorted(set(np.bincount(data.y_train, minlength=k))) == [n_train // k]  # balanced, every class
    meta = data.meta
    assert meta["num_classes"] == k and len(meta["class_names"]) == k
    assert meta["counts"] == {"train": n_train, "test": n_test}
    assert meta["keys"] == ["x_test", "x_train", "y_test", "y_train"]
    assert meta["input_shape"] == [32, 32, 3] and meta["label_key"] == layout.label_key.decode()
    assert meta["raw_files"] == {layout.archive: sha256(files[layout.archive])}
    # Pixels: rows of 3072 are R, G, B planes; the prepared layout is NHWC, batches in order.
    batches = _batches(files[layout.archive], layout)
    rows = np.concatenate([batches[name][b"data"] for name in layout.train])
    labels = np.concatenate([batches[name][layout.label_key] for name in layout.train])
    np.testing.assert_array_equal(data.x_train[:, 3, 5, 1], rows[:, 1024 + 3 * 32 + 5])  # G at row 3, col 5
    np.testing.assert_array_equal(data.x_train, rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(data.y_train, labels)
    np.testing.assert_array_equal(data.y_test, batches[layout.test][layout.label_key])


def test_cifar10_train_is_the_five_batches_in_order(raw_files):
    batches = _batches(raw_files["cifar10"]["cifar-10-python.tar.gz"], cifar.CIFAR10)
    assert [len(batches[f"data_batch_{i}"][b"labels"]) for i in range(1, 6)] == [20] * 5
    assert batches["batches.meta"][b"label_names"][0] == b"class_000"


def _py2_str(data: bytes) -> bytes:
    """A Python 2 str in a pickle (SHORT_BINSTRING / BINSTRING), which Python 3 reads as bytes."""
    return b"U" + bytes([len(data)]) + data if len(data) < 256 else b"T" + struct.pack("<i", len(data)) + data


def _python2_batch(rows: np.ndarray, labels: list[int]) -> bytes:
    """A batch pickled the way the published files are: Python 2 cPickle, numpy.core names, str data."""
    reconstruct = b"cnumpy.core.multiarray\n_reconstruct\nq\x01cnumpy\nndarray\nq\x02K\x00\x85" + _py2_str(b"b")
    dtype = (b"cnumpy\ndtype\nq\x04" + _py2_str(b"u1") + b"K\x00K\x01\x87Rq\x05(K\x03" + _py2_str(b"|")
             + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb")
    array = (reconstruct + b"\x87Rq\x03(K\x01J" + struct.pack("<i", len(rows)) + b"M\x00\x0c\x86" + dtype
             + b"\x89" + _py2_str(rows.tobytes()) + b"tb")
    label_list = b"]q\x06(" + b"".join(b"K" + bytes([label]) for label in labels) + b"e"
    return b"\x80\x02}q\x00(" + _py2_str(b"data") + array + _py2_str(b"labels") + label_list + b"u."


def test_python2_pickles_are_read():
    rows = np.random.default_rng(0).integers(0, 256, (3, 3072)).astype(np.uint8)
    batch = cifar.load_pickle(_python2_batch(rows, [7, 0, 9]), "data_batch_1")
    x, y = cifar.batch_arrays(batch, "data_batch_1", b"labels", 10)
    assert y.tolist() == [7, 0, 9] and x.dtype == np.uint8
    np.testing.assert_array_equal(x[1, :, :, 2], rows[1, 2048:].reshape(32, 32))  # blue plane of image 1


def test_checksum_mismatch_fails_cleanly(tmp_path, raw_files):
    files = raw_files["cifar100"]
    wrong = "f" * 64
    with served(files) as server:
        manifest = manifest_for({"cifar100": files}, [server.url + "/a/"],
                                **{"cifar-100-python.tar.gz": {"sha256": wrong}})
        with pytest.raises(UsageError) as err:
            fetch_and_prepare("cifar100", manifest, tmp_path)
    message = str(err.value)
    assert "\n" not in message and "sha256 mismatch" in message and f"expected {wrong}" in message
    assert os.listdir(raw_dir(tmp_path, "cifar100")) == []  # neither the file nor a .part is kept


def test_prepare_is_deterministic(tmp_path, raw_files):
    files = raw_files["cifar10"]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "cifar-10-python.tar.gz").write_bytes(files["cifar-10-python.tar.gz"])
    manifest = manifest_for({"cifar10": files}, ["http://unused/"])
    first = prepare("cifar10", raw, tmp_path / "a", manifest=manifest, progress=False)
    second = prepare("cifar10", raw, tmp_path / "b", manifest=manifest, progress=False)
    metas = [json.loads((p / "meta.json").read_text()) for p in (first, second)]
    assert metas[0]["arrays_sha256"] == metas[1]["arrays_sha256"]
    assert (first / "arrays.npz").read_bytes() == (second / "arrays.npz").read_bytes()


def _tarball(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            tar_add(tar, name, data)
    return gzip_bytes(buf.getvalue(), "cifar-10-python.tar")


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo should-not-run > /dev/null",))


def _with_batch(raw_files, batch: bytes) -> bytes:
    """The synthetic CIFAR-10 archive with data_batch_1 replaced."""
    members = {f"cifar-10-batches-py/{n}": pickle.dumps(d, protocol=2)
               for n, d in _batches(raw_files["cifar10"]["cifar-10-python.tar.gz"], cifar.CIFAR10).items()}
    members["cifar-10-batches-py/data_batch_1"] = batch
    return _tarball(members)


@pytest.mark.parametrize(
    ("batch", "complaint"),
    [
        (pickle.dumps({b"data": _Boom(), b"labels": []}, protocol=2), "refusing to load posix.system"),
        (pickle.dumps({b"data": np.zeros((2, 3071), np.uint8), b"labels": [0, 1]}, protocol=2),
         "not uint8 [N, 3072]"),
        (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, protocol=2),
         "has label 10, expected 0..9"),
        (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, protocol=2), "2 images but 1 labels"),
        (b"\x80\x02junk", "not a CIFAR python pickle"),
    ],
)
def test_malformed_batches_are_rejected(tmp_path, raw_files, batch, complaint):
    archive = _with_batch(raw_files, batch)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "cifar-10-python.tar.gz").write_bytes(archive)
    manifest = manifest_for({"cifar10": {"cifar-10-python.tar.gz": archive}}, ["http://unused/"])
    with pytest.raises(UsageError) as err:
        prepare("cifar10", raw, tmp_path / "out", manifest=manifest, progress=False)
    assert complaint in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_missing_batch_is_named(tmp_path):
    archive = _tarball({"cifar-10-batches-py/data_batch_1": b""})
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "cifar-10-python.tar.gz").write_bytes(archive)
    manifest = manifest_for({"cifar10": {"cifar-10-python.tar.gz": archive}}, ["http://unused/"])
    with pytest.raises(UsageError, match="lacks cifar-10-batches-py/batches.meta"):
        prepare("cifar10", raw, tmp_path / "out", manifest=manifest, progress=False)


def test_synthetic_cifar_is_learnable():
    rng = np.random.default_rng(0)
    y = np.arange(600) % 10
    yt = np.arange(200) % 10
    x = cifar.cifar_images(y, 10, rng).reshape(600, -1).astype(np.float32)
    xt = cifar.cifar_images(yt, 10, rng).reshape(200, -1).astype(np.float32)
    centroids = np.stack([x[y == k].mean(0) for k in range(10)])
    guess = ((xt[:, None] - centroids[None]) ** 2).sum(-1).argmin(1)
    assert (guess == yt).mean() > 0.5  # chance is 0.1


def test_synthetic_archive_is_reproducible():
    a = cifar.cifar_archive_bytes(cifar.CIFAR100, 20, 10, seed=3)
    assert a == cifar.cifar_archive_bytes(cifar.CIFAR100, 20, 10, seed=3)
    assert a != cifar.cifar_archive_bytes(cifar.CIFAR100, 20, 10, seed=4)


def test_layouts_match_the_published_archives():
    assert cifar.CIFAR10.member("test_batch") == "cifar-10-batches-py/test_batch"
    assert cifar.CIFAR100.member("train") == "cifar-100-python/train"
    assert Path(cifar.CIFAR100.archive).name == "cifar-100-python.tar.gz"
