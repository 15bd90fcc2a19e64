"""SVHN (format 2 .mat files): download from a loopback server, prepare, label 10 -> 0, no 'extra' (no network)."""

from __future__ import annotations

import io
import json
import os
import sys

import numpy as np
import pytest
import scipy.io

from bench import prepared as bench_dataset
from bench.errors import UsageError
from data import download as dl
from data import svhn
from data.manifest import load_manifest
from data.paths import raw_dir
from data.prepare import prepare
from tests.data.fixtures import DATASET_SIZES, fetch_and_prepare, manifest_for, served, sha256, synthetic_files

TRAIN, TEST = svhn.SVHN_FILES["train"], svhn.SVHN_FILES["test"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return synthetic_files(tmp_path_factory.mktemp("svhn"), "svhn")


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _mat(data: bytes) -> dict:
    return scipy.io.loadmat(io.BytesIO(data))


def _prepare_local(tmp_path, files: dict[str, bytes], out: str = "out", extra: dict[str, bytes] | None = None):
    raw = tmp_path / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name, data in {**files, **(extra or {})}.items():
        (raw / name).write_bytes(data)
    manifest = manifest_for({"svhn": files}, ["http://unused/"])
    return prepare("svhn", raw, tmp_path / out, manifest=manifest, progress=False)


def test_download_and_prepare(tmp_path, files):
    assert sorted(files) == [TEST, TRAIN]  # the synthetic writer makes no extra_32x32.mat either
    with served(files) as server:
        out = fetch_and_prepare("svhn", manifest_for({"svhn": files}, [server.url + "/a/"]), tmp_path)
        assert sorted(server.paths()) == ["/a/test_32x32.mat", "/a/train_32x32.mat"]
    data = bench_dataset.load(out)
    n_train, n_test = DATASET_SIZES["svhn"]
    assert data.x_train.shape == (n_train, 32, 32, 3) and data.x_train.dtype == np.uint8
    assert data.x_test.shape == (n_test, 32, 32, 3)
    assert data.y_train.shape == (n_train,) and data.y_train.dtype == np.int64
    assert data.y_train.min() >= 0 and data.y_train.max() <= 9 and data.y_test.max() <= 9
    meta = data.meta
    assert meta["num_classes"] == 10 and meta["class_names"] == [str(d) for d in range(10)]
    assert meta["counts"] == {"train": n_train, "test": n_test}
    assert meta["raw_files"] == {name: sha256(b) for name, b in files.items()}
    assert "extra_32x32.mat is never used" in meta["training_split"]
    raw = _mat(files[TRAIN])
    np.testing.assert_array_equal(data.x_train, raw["X"].transpose(3, 0, 1, 2))  # (32,32,3,N) -> NHWC
    np.testing.assert_array_equal(data.x_train[7], raw["X"][:, :, :, 7])


def test_label_10_means_digit_0(tmp_path, files):
    data = bench_dataset.load(_prepare_local(tmp_path, files))
    published = _mat(files[TRAIN])["y"].ravel()
    assert published.min() >= 1 and published.max() == 10 and (published == 10).any()
    np.testing.assert_array_equal(data.y_train[published == 10], 0)
    np.testing.assert_array_equal(data.y_train[published != 10], published[published != 10])
    assert 10 not in data.y_train and 10 not in data.y_test


def test_extra_split_is_never_used(tmp_path, files):
    spec = load_manifest().get("svhn")
    assert [f.name for f in spec.files] == [TRAIN, TEST]  # nothing downloads extra_32x32.mat
    # Even when an extra_32x32.mat lies next to the others (e.g. fetched by hand), prepare ignores it.
    extra = svhn.svhn_mat_bytes(*svhn.svhn_arrays(30, np.random.default_rng(9)))
    plain = bench_dataset.load(_prepare_local(tmp_path / "a", files))
    with_extra = bench_dataset.load(_prepare_local(tmp_path / "b", files, extra={svhn.SVHN_EXTRA: extra}))
    assert plain.meta["arrays_sha256"] == with_extra.meta["arrays_sha256"]
    assert list(with_extra.meta["raw_files"]) == [TRAIN, TEST]
    assert len(with_extra.y_train) == DATASET_SIZES["svhn"][0]


def test_checksum_mismatch_fails_cleanly(tmp_path, files):
    wrong = "a" * 64
    with served(files) as server:
        manifest = manifest_for({"svhn": files}, [server.url + "/missing/", server.url + "/a/"],
                                **{TEST: {"sha256": wrong}})
        with pytest.raises(UsageError) as err:
            fetch_and_prepare("svhn", manifest, tmp_path)
    message = str(err.value)
    assert "\n" not in message and f"svhn/{TEST}" in message and "sha256 mismatch" in message
    assert "HTTP 404" in message  # both sources named
    assert os.listdir(raw_dir(tmp_path, "svhn")) == [TRAIN]  # the good file stays; the bad one is gone


def test_prepare_is_deterministic(tmp_path, files):
    first = _prepare_local(tmp_path, files, out="a")
    second = _prepare_local(tmp_path, files, out="b")
    metas = [json.loads((p / "meta.json").read_text()) for p in (first, second)]
    assert metas[0]["arrays_sha256"] == metas[1]["arrays_sha256"]
    assert (first / "arrays.npz").read_bytes() == (second / "arrays.npz").read_bytes()


def _mat_bytes(**variables) -> bytes:
    buf = io.BytesIO()
    scipy.io.savemat(buf, variables)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        (_mat_bytes(X=np.zeros((32, 32, 3, 2), np.uint8), y=np.array([[1], [11]], np.uint8)), "labels outside 1..10"),
        (_mat_bytes(X=np.zeros((32, 32, 3, 2), np.uint8), y=np.array([[1]], np.uint8)), "2 images but 1 labels"),
        (_mat_bytes(X=np.zeros((28, 28, 3, 2), np.uint8), y=np.array([[1], [2]], np.uint8)),
         "not uint8 [32, 32, 3, N]"),
        (_mat_bytes(X=np.zeros((32, 32, 3, 1), np.uint8)), "lacks the variables X and y"),
        (b"not a mat file at all" * 10, "is not a readable MATLAB v5 file"),
    ],
)
def test_malformed_mat_is_rejected(tmp_path, files, payload, complaint):
    with pytest.raises(UsageError) as err:
        _prepare_local(tmp_path, {**files, TRAIN: payload})
    assert TRAIN in str(err.value) and complaint in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_missing_scipy_is_one_clear_error(tmp_path, files, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.io", None)  # makes "import scipy.io" raise ImportError
    with pytest.raises(UsageError, match="SVHN's .mat files need scipy.*images/host/requirements.txt"):
        _prepare_local(tmp_path, files)


def test_synthetic_svhn_is_learnable():
    rng = np.random.default_rng(0)
    (x, y), (xt, yt) = svhn.svhn_arrays(1000, rng), svhn.svhn_arrays(300, rng)

    def ink(images: np.ndarray) -> np.ndarray:
        # Colours are random per image (as on house signs): compare contrast to the median instead.
        gray = images.astype(np.float32).mean(2).transpose(2, 0, 1)
        dist = np.abs(gray - np.median(gray.reshape(len(gray), -1), 1)[:, None, None])
        return (dist / (dist.reshape(len(gray), -1).max(1)[:, None, None] + 1e-6))[:, :, 8:24].reshape(len(gray), -1)

    f, ft, y, yt = ink(x), ink(xt), y.ravel() % 10, yt.ravel() % 10
    centroids = np.stack([f[y == k].mean(0) for k in range(10)])
    guess = ((ft[:, None] - centroids[None]) ** 2).sum(-1).argmin(1)
    assert (guess == yt).mean() > 0.5  # the most frequent digit alone gives about 0.2


def test_synthetic_mat_is_reproducible():
    a = svhn.svhn_mat_bytes(*svhn.svhn_arrays(20, np.random.default_rng(1)))
    assert a == svhn.svhn_mat_bytes(*svhn.svhn_arrays(20, np.random.default_rng(1)))
    assert a.startswith(b"MATLAB 5.0 MAT-file, synthetic SVHN")
