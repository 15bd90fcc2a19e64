"""Atomic file writes: a file appears under its final name complete, or not at all.

Shared by the run artifacts, the run request, the data stages and the reports, so an interrupted
process leaves the old complete file or a temporary, never half of one. Standard library only,
CPython 3.6-clean (it runs inside paper-era images too).
"""

import os
import tempfile
from pathlib import Path

# mkstemp creates owner-only files; data and results must be readable by a container's non-root user.
FILE_MODE = 0o644


def write_bytes(path: Path, data: bytes) -> None:
    """Write data to path through a synced temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    except OSError as exc:
        exc.filename = str(path.parent)  # the folder refused a new file (mkstemp names a random one)
        raise
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, str(path))
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        name_the_path(exc, path)
        raise


def name_the_path(exc: BaseException, path: Path) -> None:
    """Give an OSError that names no file (a write() to a full disk names none) the path being written, so
    bench.errors.run_cli can say where the disk is full."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(path)


def write_text(path: Path, text: str) -> None:
    """write_bytes for UTF-8 text."""
    write_bytes(path, text.encode("utf-8"))
