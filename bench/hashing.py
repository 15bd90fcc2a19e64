"""Canonical JSON and the content hashes made from it (run ids, spec comparisons), and files' sha256.

Standard library only, CPython 3.6-clean: the host computes a run's id when it plans the run, and
the entrypoint inside an image recomputes it from the request, so both must agree byte for byte;
likewise data/ hashes the prepared arrays it writes, and the entrypoint the arrays it loads.
"""

import hashlib
import json


def canonical_json(obj):
    """A canonical, order-independent JSON form (sorted keys, no spaces, ASCII): the basis of every hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def content_hash(obj, length=16):
    """Hex sha256 of the canonical JSON form, shortened to `length` characters."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


# Read size of the file hashes: large enough that hashing, not the system calls, sets the pace.
CHUNK = 1 << 20


def sha256_stream(fh):
    """Hex sha256 of what is left to read in a binary file object, read in CHUNK-sized pieces."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: fh.read(CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path):
    """Hex sha256 of a file's bytes: the one way the kit hashes raw files and prepared arrays."""
    with open(str(path), "rb") as fh:
        return sha256_stream(fh)
