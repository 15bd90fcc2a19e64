"""Canonical JSON and content hashes (the basis of run ids: host and entrypoint must agree), and files' sha256."""

import hashlib

from bench import hashing


def test_content_hash_is_order_independent():
    assert hashing.content_hash({"a": 1, "b": [1, 2]}) == hashing.content_hash({"b": [1, 2], "a": 1})
    assert hashing.content_hash({"a": 1}) != hashing.content_hash({"a": 2})


def test_canonical_json_is_compact_sorted_ascii():
    assert hashing.canonical_json({"b": "é", "a": [1, 2.5]}) == '{"a":[1,2.5],"b":"\\u00e9"}'
    assert len(hashing.content_hash({})) == 16 and len(hashing.content_hash({}, 64)) == 64


def test_a_files_sha256_is_that_of_its_bytes_and_data_hashes_files_the_same_way(tmp_path):
    from data import fsutil

    body = bytes(range(256)) * (2 * hashing.CHUNK // 256) + b"tail"  # more than two chunks
    path = tmp_path / "arrays.npz"
    path.write_bytes(body)
    assert hashing.sha256_file(path) == hashlib.sha256(body).hexdigest() == fsutil.sha256_file(path)
    with open(path, "rb") as fh:
        fh.read(4)
        assert hashing.sha256_stream(fh) == hashlib.sha256(body[4:]).hexdigest()  # what is left to read
