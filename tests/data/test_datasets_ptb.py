"""Penn Treebank: download from a loopback server, prepare token streams and windows (no network)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from bench import prepared as bench_dataset
from bench.errors import UsageError
from data import download as dl
from data import ptb
from data.paths import raw_dir
from data.prepare import prepare
from tests.data.fixtures import fetch_and_prepare, manifest_for, served, sha256, synthetic_files

NAMES = list(ptb.PTB_FILES.values())


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return synthetic_files(tmp_path_factory.mktemp("ptb"), "ptb")


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _prepare_local(tmp_path, files: dict[str, bytes], out: str = "out"):
    raw = tmp_path / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (raw / name).write_bytes(data)
    return prepare("ptb", raw, tmp_path / out, manifest=manifest_for({"ptb": files}, ["http://unused/"]),
                   progress=False)


def _npz(folder) -> dict[str, np.ndarray]:
    with np.load(folder / "arrays.npz") as npz:
        return {key: npz[key] for key in npz.files}


def test_download_and_prepare(tmp_path, files):
    assert sorted(files) == sorted(NAMES)
    with served(files) as server:
        out = fetch_and_prepare("ptb", manifest_for({"ptb": files}, [server.url + "/a/"]), tmp_path)
    arrays, meta = _npz(out), bench_dataset.read_meta(out)
    assert sorted(arrays) == ["tokens_test", "tokens_train", "tokens_valid", "x_test", "x_train", "y_test", "y_train"]
    steps = ptb.PTB_NUM_STEPS
    for split in ("train", "valid", "test"):
        stream = arrays[f"tokens_{split}"]
        assert stream.dtype == np.int32 and stream.ndim == 1
        words = files[f"ptb.{split}.txt"].decode().replace("\n", " <eos> ").split()
        assert len(stream) == len(words) == meta["token_counts"][split]
        assert (stream == meta["eos_id"]).sum() == files[f"ptb.{split}.txt"].count(b"\n")  # one <eos> per line
    for split in ("train", "test"):
        x, y, stream = arrays[f"x_{split}"], arrays[f"y_{split}"], arrays[f"tokens_{split}"]
        n = (len(stream) - 1) // steps
        assert x.shape == y.shape == (n, steps) and x.dtype == y.dtype == np.int32
        # Non-overlapping windows of the stream; targets are the same windows one token later.
        np.testing.assert_array_equal(x.reshape(-1), stream[: n * steps])
        np.testing.assert_array_equal(y.reshape(-1), stream[1 : n * steps + 1])
        np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
        np.testing.assert_array_equal(x[1:, 0], y[:-1, -1])
        assert meta["counts"][split] == n
    assert 0 <= arrays["x_train"].min() and arrays["x_train"].max() < meta["vocab_size"]
    assert meta["num_steps"] == 35 and len(meta["vocab"]) == meta["vocab_size"]
    assert meta["vocab"][meta["eos_id"]] == "<eos>" and meta["vocab"][meta["unk_id"]] == "<unk>"
    assert meta["paper_counts"] == {"train": 1_088_220, "test": 59_118}
    assert meta["raw_files"] == {name: sha256(files[name]) for name in NAMES}


def test_vocabulary_rule_and_unknown_words(tmp_path):
    train = " b a c a \n b a x \n" * 10  # a 30, b 20, <eos> 20, c 10, x 10
    test = " a b c q \n" * 10
    files = {"ptb.train.txt": train.encode(), "ptb.valid.txt": b" a zz \n", "ptb.test.txt": test.encode()}
    out = _prepare_local(tmp_path, files)
    arrays, meta = _npz(out), bench_dataset.read_meta(out)
    # By count, ties alphabetical; <unk> never occurs here, so it is added to map unseen words to.
    assert meta["vocab"] == ["a", "<eos>", "b", "c", "x", "<unk>"]
    ids = {w: i for i, w in enumerate(meta["vocab"])}
    assert arrays["tokens_valid"].tolist() == [ids["a"], ids["<unk>"], ids["<eos>"]]
    assert arrays["tokens_test"][:5].tolist() == [ids["a"], ids["b"], ids["c"], ids["<unk>"], ids["<eos>"]]
    assert meta["out_of_vocab_tokens"] == {"train": 0, "valid": 1, "test": 10}


def test_vocabulary_is_capped_with_unk_kept():
    words = [f"w{i:02d}" for i in range(30) for _ in range(30 - i)]
    vocab = ptb.build_vocab(words, size=10)
    assert vocab == [f"w{i:02d}" for i in range(9)] + ["<unk>"]
    assert ptb.build_vocab(words + ["<unk>"] * 100, size=10)[0] == "<unk>"


def test_too_little_text_is_rejected(tmp_path):
    files = {"ptb.train.txt": b" a b \n", "ptb.valid.txt": b" a \n", "ptb.test.txt": b" a \n"}
    with pytest.raises(UsageError, match="ptb.train.txt has 3 tokens, too few for one window"):
        _prepare_local(tmp_path, files)
    files["ptb.train.txt"] = b"\xff\xfe binary"
    with pytest.raises(UsageError, match="ptb.train.txt is not UTF-8 text"):
        _prepare_local(tmp_path, files)


def test_checksum_mismatch_fails_cleanly(tmp_path, files):
    wrong = "b" * 64
    with served(files) as server:
        manifest = manifest_for({"ptb": files}, [server.url + "/a/"], **{"ptb.valid.txt": {"sha256": wrong}})
        with pytest.raises(UsageError) as err:
            fetch_and_prepare("ptb", manifest, tmp_path)
    message = str(err.value)
    assert "\n" not in message and "ptb/ptb.valid.txt" in message and "sha256 mismatch" in message
    assert sorted(os.listdir(raw_dir(tmp_path, "ptb"))) == ["ptb.train.txt"]  # stopped at the bad file


def test_prepare_is_deterministic(tmp_path, files):
    first, second = _prepare_local(tmp_path, files, "a"), _prepare_local(tmp_path, files, "b")
    metas = [json.loads((p / "meta.json").read_text()) for p in (first, second)]
    assert metas[0]["arrays_sha256"] == metas[1]["arrays_sha256"]
    assert (first / "arrays.npz").read_bytes() == (second / "arrays.npz").read_bytes()


def test_synthetic_ptb_is_learnable_and_looks_like_ptb():
    texts = ptb.ptb_texts({"train": 3000, "test": 300})
    assert texts["train"].startswith(" ") and texts["train"].endswith(" \n")
    assert texts["train"] == ptb.ptb_texts({"train": 3000, "test": 300})["train"]
    vocab = ptb.build_vocab(texts["train"].replace("\n", " <eos> ").split())
    ids = {w: i for i, w in enumerate(vocab)}
    train = ptb.encode(texts["train"].replace("\n", " <eos> ").split(), ids)
    test = ptb.encode(texts["test"].replace("\n", " <eos> ").split(), ids)
    bigrams = np.zeros((len(vocab), len(vocab)), np.int32)
    np.add.at(bigrams, (train[:-1], train[1:]), 1)
    accuracy = (bigrams.argmax(1)[test[:-1]] == test[1:]).mean()
    assert accuracy > 3 * np.bincount(train).max() / len(train)  # well above always guessing the top word
