"""File helpers shared by download, prepare and synthetic: hashing and atomic writes.

Everything the kit marks as complete appears under its final name in one rename, so an
interrupted process leaves either the old complete thing or a temporary, never half of one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import hashing
from bench.atomic import FILE_MODE, name_the_path

# mkstemp/mkdtemp create owner-only entries; data must be readable by the containers' non-root user.
FOLDER_MODE = 0o755


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes (bench/hashing.py: the entrypoint hashes the arrays it loads the same way)."""
    return hashing.sha256_file(path)


@contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield a temporary folder next to ``target``; on success it replaces ``target`` at once.

    The temporary name ends in ``.partial`` (ignored by git). On an exception it is removed and
    ``target``, if it existed, is left untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    except OSError as exc:
        exc.filename = str(target.parent)  # the folder refused a new one (mkdtemp names a random one)
        raise
    try:
        yield tmp
        os.chmod(tmp, FOLDER_MODE)
        for child in tmp.iterdir():
            os.chmod(child, FILE_MODE if child.is_file() else FOLDER_MODE)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        name_the_path(exc, target)
        raise
    # A folder cannot be renamed over a non-empty one: move the old one aside first, then drop it.
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", suffix=".partial", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
