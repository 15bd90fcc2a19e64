"""An exclusive lock on a file (flock) for test fixtures that share something on disk no two users may use at
once, such as the paper-era Theano compile cache (tests/bench/frameworks/paper/test_theano.py)."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made, with its folder, if missing) for the block, waiting
    while another holder has it: one holder at a time across threads, processes and test sessions (each
    hold opens the file anew, and flock locks belong to the open file). The kernel releases it when the
    block ends or the holder dies."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when fh closes
        yield
