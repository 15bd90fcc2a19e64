"""File helpers shared by download, prepare and synthetic: hashing and atomic writes.

Everything the kit marks as complete appears under its final name in one rename, so an
interrupted process leaves either the old complete thing or a temporary, never half of one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.atomic import FILE_MODE

CHUNK = 1 << 20
# mkstemp/mkdtemp create owner-only entries; data must be readable by the containers' non-root user.
FOLDER_MODE = 0o755


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield a temporary folder next to ``target``; on success it replaces ``target`` at once.

    The temporary name ends in ``.partial`` (ignored by git). On an exception it is removed and
    ``target``, if it existed, is left untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, FOLDER_MODE)
        for child in tmp.iterdir():
            os.chmod(child, FILE_MODE if child.is_file() else FOLDER_MODE)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # A folder cannot be renamed over a non-empty one: move the old one aside first, then drop it.
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", suffix=".partial", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
