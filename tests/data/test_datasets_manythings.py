"""Many things spa-eng: download from a loopback server, seq2seq arrays (no network); its missing published
sha256 is tests/data/test_digests.py's."""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

from bench import prepared as bench_dataset
from bench.errors import UsageError
from data import download as dl
from data import manythings as mt
from data.paths import raw_dir
from data.prepare import prepare
from tests.data.fixtures import DATASET_SIZES, fetch_and_prepare, manifest_for, served, sha256, synthetic_files

ZIP = mt.MANYTHINGS_ARCHIVE


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return synthetic_files(tmp_path_factory.mktemp("manythings"), "manythings")


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _zip(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text.encode("utf-8"))
    return buf.getvalue()


def _prepare_local(tmp_path, archive: bytes, out: str = "out"):
    raw = tmp_path / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    (raw / ZIP).write_bytes(archive)
    manifest = manifest_for({"manythings": {ZIP: archive}}, ["http://unused/"])
    return prepare("manythings", raw, tmp_path / out, manifest=manifest, progress=False)


# ---------------------------------------------------------------- no published digest (tests/data/test_digests.py)


def test_shipped_entry_is_not_prepared_before_its_first_download(tmp_path, files):
    raw = tmp_path / "raw" / "manythings"
    raw.mkdir(parents=True)
    (raw / ZIP).write_bytes(files[ZIP])
    with pytest.raises(UsageError, match="none was recorded on first download"):
        prepare("manythings", raw, tmp_path / "out", progress=False)  # the shipped manifest
    # Synthetic data has its own bytes and needs no digest.
    out = prepare("manythings", raw, tmp_path / "syn", source="synthetic", progress=False)
    assert bench_dataset.read_meta(out)["source"] == "synthetic"


# ---------------------------------------------------------------- pinned: download and prepare


def test_download_and_prepare_with_a_pinned_copy(tmp_path, files):
    with served(files) as server:
        out = fetch_and_prepare("manythings", manifest_for({"manythings": files}, [server.url + "/a/"]), tmp_path)
    data = bench_dataset.load(out)
    meta = data.meta
    total = sum(DATASET_SIZES["manythings"])
    n_train, n_test = total * 4 // 5, total - total * 4 // 5
    assert meta["counts"] == {"train": n_train, "test": n_test} and meta["pairs_used"] == total
    assert meta["keys"] == sorted(f"{k}_{s}" for s in ("train", "test")
                                  for k in ("src", "src_len", "tgt_in", "tgt_out", "tgt_len", "y"))
    length = mt.MANYTHINGS_MAXLEN
    for split, n in (("train", n_train), ("test", n_test)):
        src, src_len = getattr(data, f"src_{split}"), getattr(data, f"src_len_{split}")
        tgt_in, tgt_out = getattr(data, f"tgt_in_{split}"), getattr(data, f"tgt_out_{split}")
        tgt_len, y = getattr(data, f"tgt_len_{split}"), getattr(data, f"y_{split}")
        assert src.shape == tgt_in.shape == tgt_out.shape == (n, length)
        assert {a.dtype for a in (src, src_len, tgt_in, tgt_out, tgt_len, y)} == {np.dtype(np.int32)}
        np.testing.assert_array_equal(y, tgt_out)
        assert (tgt_in[:, 0] == mt.START_ID).all() and (src_len >= 1).all() and (tgt_len >= 2).all()
        for row in range(n):
            k = tgt_len[row]
            # Teacher forcing: the decoder reads <start> + t and predicts t + <end>, one step later.
            np.testing.assert_array_equal(tgt_in[row, 1:k], tgt_out[row, : k - 1])
            assert tgt_out[row, k - 1] == mt.END_ID and mt.END_ID not in tgt_in[row]
            assert (tgt_in[row, k:] == 0).all() and (tgt_out[row, k:] == 0).all()
            assert (src[row, : src_len[row]] > 0).all() and (src[row, src_len[row]:] == 0).all()
        assert src.max() < meta["src_vocab_size"] and tgt_out.max() < meta["tgt_vocab_size"]
    assert meta["src_vocab"][:4] == meta["tgt_vocab"][:4] == ["<pad>", "<unk>", "<start>", "<end>"]
    assert meta["source_language"] == "eng" and meta["target_language"] == "spa"
    assert meta["max_len_src"] == meta["max_len_tgt"] == 20
    assert meta["raw_files"] == {ZIP: sha256(files[ZIP])}


def test_checksum_mismatch_fails_cleanly(tmp_path, files):
    wrong = "c" * 64
    with served(files) as server:
        manifest = manifest_for({"manythings": files}, [server.url + "/a/"], **{ZIP: {"sha256": wrong}})
        with pytest.raises(UsageError) as err:
            fetch_and_prepare("manythings", manifest, tmp_path)
    assert "sha256 mismatch" in str(err.value) and f"expected {wrong}" in str(err.value)
    assert os.listdir(raw_dir(tmp_path, "manythings")) == []


def test_prepare_is_deterministic(tmp_path, files):
    first, second = _prepare_local(tmp_path, files[ZIP], "a"), _prepare_local(tmp_path, files[ZIP], "b")
    metas = [json.loads((p / "meta.json").read_text()) for p in (first, second)]
    assert metas[0]["arrays_sha256"] == metas[1]["arrays_sha256"]
    assert (first / "arrays.npz").read_bytes() == (second / "arrays.npz").read_bytes()


# ---------------------------------------------------------------- the format and the text


def test_tokenizer():
    assert mt.tokenize("¿Dónde está el baño?") == ["¿", "dónde", "está", "el", "baño", "?"]
    assert mt.tokenize("I don't know, Tom.") == ["i", "don't", "know", ",", "tom", "."]
    assert mt.tokenize("¡Que\u0301 snake_case $5!") == ["¡", "qué", "snake", "case", "$", "5", "!"]  # NFC


def test_tensorflow_two_column_layout_and_truncation(tmp_path):
    long_en = " ".join(f"w{i}" for i in range(30))
    lines = ["Go.\tVe.", "Hi!\t¡Hola!", f"{long_en}.\t{long_en}.", "Run.\tCorre.", "Who?\t¿Quién?"] * 4
    archive = _zip({"spa-eng/spa.txt": "\n".join(lines) + "\n", "spa-eng/_about.txt": "x"})
    data = bench_dataset.load(_prepare_local(tmp_path, archive))
    assert data.meta["pairs_used"] == 20 and data.meta["counts"] == {"train": 16, "test": 4}
    src_vocab = data.meta["src_vocab"]
    x = np.concatenate([data.src_train, data.src_test])
    lengths = np.concatenate([data.src_len_train, data.src_len_test])
    assert lengths.max() == 20 and sorted(set(lengths.tolist())) == [2, 20]  # 31 tokens cut to 20
    longest = x[lengths.argmax()]
    assert [src_vocab[i] for i in longest] == [f"w{i}" for i in range(20)]
    tgt_len = np.concatenate([data.tgt_len_train, data.tgt_len_test])
    assert tgt_len.max() == 20  # 19 words + <end>
    truncated = data.meta["truncated"]
    assert sum(t["src"] for t in truncated.values()) == 4 and sum(t["tgt"] for t in truncated.values()) == 4


def test_only_the_first_pairs_are_used(tmp_path):
    text = "".join(f"a{i}\tb{i}\tCC-BY 2.0 (France) Attribution: x\n" for i in range(30))
    archive = _zip({"spa.txt": text, "_about.txt": "about"})
    (tmp_path / ZIP).write_bytes(archive)
    pairs = mt.read_pairs(tmp_path / ZIP, limit=12)
    assert pairs == [(f"a{i}", f"b{i}") for i in range(12)]  # file order, attribution column dropped


@pytest.mark.parametrize(
    ("archive", "complaint"),
    [
        (b"PK\x03\x04 not really a zip", "not a readable zip file"),
        (_zip({"other.txt": "a\tb\n"}), "holds 0 files named spa.txt"),
        (_zip({"spa.txt": "no tab here\n" * 10}), "line 1 has no tab"),
        (_zip({"spa.txt": "a\tb\n"}), "has only 1 pairs"),
    ],
)
def test_malformed_zip_is_rejected(tmp_path, archive, complaint):
    with pytest.raises(UsageError) as err:
        _prepare_local(tmp_path, archive)
    assert complaint in str(err.value) and "\n" not in str(err.value)


def test_split_is_a_deterministic_shuffle_of_the_first_pairs(tmp_path):
    text = "".join(f"e{i}\ts{i}\n" for i in range(50))
    data = bench_dataset.load(_prepare_local(tmp_path, _zip({"spa.txt": text})))
    vocab = data.meta["src_vocab"]
    train_words = [vocab[row[0]] for row in data.src_train]
    test_words = [vocab[row[0]] for row in data.src_test]
    assert len(train_words) == 40 and len(test_words) == 10
    assert set(test_words) == {"<unk>"}  # test-only words are unknown: vocabularies come from training pairs
    assert train_words != sorted(train_words, key=lambda w: int(w[1:]))  # shuffled, not file order
    order = np.random.default_rng(mt.MANYTHINGS_SHUFFLE_SEED).permutation(50)
    assert train_words == [f"e{i}" for i in order[:40]]


def test_synthetic_pairs_follow_a_word_mapping():
    archive = mt.spa_eng_zip_bytes(400, seed=0)
    assert archive == mt.spa_eng_zip_bytes(400, seed=0)
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        assert sorted(zf.namelist()) == ["_about.txt", "spa.txt"]
        lines = zf.read("spa.txt").decode().splitlines()
    assert len(lines) == 400 and all(line.count("\t") == 2 for line in lines)
    # Whenever an English sentence has a (real) noun, its Spanish side has that noun's translation.
    checked = 0
    for line in lines:
        english, spanish = (set(mt.tokenize(side)) for side in line.split("\t")[:2])
        for noun_en, noun_es, _ in mt._NOUNS:
            if noun_en in english:
                assert noun_es in spanish, line
                checked += 1
    assert checked > 100
