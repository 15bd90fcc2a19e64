"""Canonical JSON and the content hashes made from it: run ids, spec comparisons.

Standard library only, CPython 3.6-clean: the host computes a run's id when it plans the run, and
the entrypoint inside an image recomputes it from the request, so both must agree byte for byte.
"""

import hashlib
import json


def canonical_json(obj):
    """A canonical, order-independent JSON form (sorted keys, no spaces, ASCII): the basis of every hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def content_hash(obj, length=16):
    """Hex sha256 of the canonical JSON form, shortened to `length` characters."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]
