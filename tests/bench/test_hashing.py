"""Canonical JSON and content hashes: the basis of run ids (host and entrypoint must agree)."""

from bench import hashing


def test_content_hash_is_order_independent():
    assert hashing.content_hash({"a": 1, "b": [1, 2]}) == hashing.content_hash({"b": [1, 2], "a": 1})
    assert hashing.content_hash({"a": 1}) != hashing.content_hash({"a": 2})


def test_canonical_json_is_compact_sorted_ascii():
    assert hashing.canonical_json({"b": "é", "a": [1, 2.5]}) == '{"a":[1,2.5],"b":"\\u00e9"}'
    assert len(hashing.content_hash({})) == 16 and len(hashing.content_hash({}, 64)) == 64
