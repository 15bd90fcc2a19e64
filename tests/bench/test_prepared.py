"""bench/prepared.py: binding a workload's prepared arrays to the roles a framework module reads; reading only
the arrays a run was planned for (their bytes' sha256), and one line for arrays that are not."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from bench import prepared
from bench.errors import UsageError
from bench.frameworks import common
from campaign import specs
from data import synthetic
from data.npz import write_npz
from tests.data.fixtures import MNIST_SIZES


def _prepared(**arrays: np.ndarray) -> prepared.PreparedData:
    return prepared.PreparedData(meta={"dataset": "manythings"}, train=dict(arrays), test=dict(arrays))


def test_roles_are_the_framework_contracts():
    assert prepared.ROLES == common.ROLES


def test_bind_roles_renames_and_drops_what_plays_no_role():
    src, tgt = np.ones((3, 5), np.int32), np.full((3, 5), 2, np.int32)
    data = _prepared(src=src, src_len=np.full(3, 5), tgt_in=tgt, tgt_out=tgt + 1, tgt_len=np.full(3, 4), y=tgt + 1)
    bound = prepared.bind_roles(data, specs.load("seq2seq-manythings")["arrays"])
    assert set(bound.train) == {"x", "len", "x_dec", "y", "y_len"}
    assert bound.x_train is src and (bound.y_test == 3).all()
    ptb = prepared.bind_roles(_prepared(x=src, y=tgt, tokens=np.arange(9)), None)
    assert set(ptb.train) == {"x", "y"}  # the whole token stream is not a role


def test_bind_roles_names_a_missing_array_and_the_fix():
    with pytest.raises(UsageError, match="no array 'src_train'.*make download"):
        prepared.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"x": "src"})
    with pytest.raises(UsageError, match="unknown roles"):
        prepared.bind_roles(_prepared(x=np.ones((2, 2)), y=np.ones(2)), {"labels": "y"})


# ---------------------------------------------------------------- the arrays a run reads are the planned ones

SYNTHETIC_FIX = "prepare it again: run 'python -m data synthetic --datasets mnist' (make demo does it)"


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    """A small synthetic MNIST prepared under tmp_path/data (its real prepare code, its real format)."""
    return synthetic.make_synthetic("mnist", tmp_path / "data", sizes=MNIST_SIZES, progress=False)


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, computed here rather than by the code under test."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _planned(folder: Path) -> dict:
    """The data block a run request planned on `folder` names (campaign/requests.py)."""
    meta = prepared.read_meta(folder)
    return {"dataset": meta["dataset"], "source": meta["source"], "arrays_sha256": meta["arrays_sha256"],
            "path": str(folder)}


def _all_labels_zero(folder: Path) -> None:
    """Replace arrays.npz by a valid one whose labels are all 0, leaving meta.json as it was."""
    with np.load(folder / prepared.ARRAYS_FILE) as npz:
        arrays = {key: np.zeros_like(npz[key]) if key.startswith("y_") else npz[key] for key in npz.files}
    write_npz(folder / prepared.ARRAYS_FILE, arrays)


def test_load_returns_the_sha256_of_the_bytes_it_read(mnist):
    data = prepared.load(mnist, planned=_planned(mnist))
    assert data.sha256 == sha256_file(mnist / prepared.ARRAYS_FILE) == data.meta["arrays_sha256"]


def test_replaced_but_valid_arrays_are_refused_before_they_are_parsed(mnist):
    planned = _planned(mnist)
    _all_labels_zero(mnist)
    found = sha256_file(mnist / prepared.ARRAYS_FILE)
    with pytest.raises(prepared.ArraysDiffer) as refused:
        prepared.load(mnist, planned=planned)
    assert str(refused.value) == (f"{mnist}/arrays.npz has sha256 {found}, the run was planned for "
                                  f"{planned['arrays_sha256']}; {SYNTHETIC_FIX}")
    assert refused.value.sha256 == found and isinstance(refused.value, UsageError)


def test_arrays_prepared_again_after_planning_ask_for_a_new_plan_not_a_new_prepare(mnist):
    planned = dict(_planned(mnist), arrays_sha256="0" * 64, path="prepared/mnist-synthetic")
    with pytest.raises(UsageError) as refused:
        prepared.load(mnist, planned=planned)
    assert str(refused.value) == (
        f"prepared/mnist-synthetic/arrays.npz has sha256 {prepared.read_meta(mnist)['arrays_sha256']}, the run was "
        f"planned for {'0' * 64}; the folder was prepared again since the run was planned: run the campaign "
        "again to plan its runs for these arrays")


def test_truncated_arrays_are_one_line_whether_planned_or_not(mnist):
    planned = _planned(mnist)
    path = mnist / prepared.ARRAYS_FILE
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(UsageError) as refused:
        prepared.load(mnist, planned=planned)
    assert str(refused.value) == (f"{path} has sha256 {sha256_file(path)}, the run was planned for "
                                  f"{planned['arrays_sha256']}; {SYNTHETIC_FIX}")
    unreadable = f"{path} is not a readable .npz (BadZipFile: File is not a zip file); {SYNTHETIC_FIX}"
    for read in (prepared.load, prepared.split_sizes):
        with pytest.raises(UsageError) as refused:
            read(mnist)
        assert str(refused.value) == unreadable


# ---------------------------------------------------------------- large arrays kept whole are memory-mapped


def test_a_large_array_kept_whole_is_mapped_not_read_and_holds_the_same_values(tmp_path, monkeypatch):
    # VOC2012's flat pixels (~8 GB a split at short side 600) are one array per split, not one row per image: a run
    # maps it and reads only the images its rows name. Rows of per-example arrays are still picked and read.
    folder = tmp_path / "p"
    folder.mkdir()
    stream = np.arange(5000, dtype=np.uint8)
    arrays = {"pixels_train": stream, "y_train": np.array([3, 1, 2]), "offset_train": np.array([0, 10, 20]),
              "pixels_test": stream[:100], "y_test": np.array([1])}
    write_npz(folder / prepared.ARRAYS_FILE, arrays)
    (folder / prepared.META_FILE).write_text('{"format_version": 1, "dataset": "voc2012", "source": "synthetic"}')
    monkeypatch.setattr(prepared, "MAP_BYTES", 1000)
    data = prepared.load(folder, train_indices=[2, 0], test_indices=[0])
    assert isinstance(data.train["pixels"], np.memmap) and not isinstance(data.test["pixels"], np.memmap)
    np.testing.assert_array_equal(data.train["pixels"], stream)
    np.testing.assert_array_equal(data.test["pixels"], stream[:100])
    assert data.train["y"].tolist() == [2, 3] and data.train["offset"].tolist() == [20, 0]
    assert not isinstance(data.train["y"], np.memmap)
