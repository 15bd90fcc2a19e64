"""tests/cachelock.py, the lock the paper-era Theano compile cache is held by (test_theano.compile_cache_held):
a second holder, in another process or another thread, waits until the first lets go. Real processes and
threads; a lock that let both in would fail the tests."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

from tests import cachelock

HOLD_S = 0.5  # how long the first holder keeps the lock while the second tries for it


def _take(path: Path, trying, acquired_at) -> None:
    """The second process: say it is about to ask, take the lock, note when it got it."""
    trying.set()
    with cachelock.held(path):
        acquired_at.value = time.time()


def test_a_second_process_waits_until_the_first_releases(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    trying, acquired_at = ctx.Event(), ctx.Value("d", 0.0)
    lock = tmp_path / "cache" / "compiledir.lock"  # its folder is made too
    with cachelock.held(lock):
        proc = ctx.Process(target=_take, args=(lock, trying, acquired_at))
        proc.start()
        assert trying.wait(60), "the second process never started"
        time.sleep(HOLD_S)
        assert acquired_at.value == 0.0, "the second process got the lock while the first held it"
        released = time.time()
    proc.join(60)
    assert proc.exitcode == 0 and acquired_at.value >= released


def test_a_second_thread_waits_too(tmp_path):
    lock = tmp_path / "compiledir.lock"
    events = []

    def second() -> None:
        with cachelock.held(lock):
            events.append("second holds")

    with cachelock.held(lock):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(HOLD_S)
        events.append("first releases")
    thread.join(60)
    assert events == ["first releases", "second holds"]
