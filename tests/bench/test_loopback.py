"""bench/loopback.py: real rank processes started and gathered by run_ranks (their results by rank, the
environment they start with, a failed rank ending the others at once and naming itself)."""

from __future__ import annotations

import json
import os
import time

import pytest

from bench import loopback

VAR = "DLREPRO_TEST_LOOPBACK"


# Module-level: the ranks are spawned, and import them from here.
def _report(rank: int, offset: int) -> dict:
    """A rank that returns its number, an argument and the variable VAR as it started with it."""
    return {"rank": rank, "value": rank + offset, "env": os.environ.get(VAR)}


def _fail_or_sleep(rank: int, seconds: float) -> dict:
    """Rank 0 fails at once; the others sleep `seconds` (they only finish if nobody ends them)."""
    if rank == 0:
        raise ValueError("boom")
    time.sleep(seconds)
    return {"rank": rank}


def test_each_ranks_result_is_gathered_by_rank_with_the_environment_it_started_with(tmp_path):
    os.environ.pop(VAR, None)
    (tmp_path / "rank2.json").write_text(json.dumps({"stale": True}))  # a file from before is not a result
    gathered = loopback.run_ranks(_report, [(10,), (20,), (30,)], tmp_path, "test", env={VAR: "3"})
    assert gathered.results == [{"rank": 0, "value": 10, "env": "3"}, {"rank": 1, "value": 21, "env": "3"},
                                {"rank": 2, "value": 32, "env": "3"}]
    assert [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(3)] == gathered.results
    assert VAR not in os.environ  # only the ranks started with it
    assert gathered.started <= time.perf_counter()


def test_when_a_rank_fails_the_others_are_ended_at_once_and_its_message_is_raised(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(loopback.RanksFailed) as caught:
        loopback.run_ranks(_fail_or_sleep, [(60.0,), (60.0,)], tmp_path, "test")
    assert time.monotonic() - t0 < 20  # rank 1 was ended, not waited for
    failed = caught.value
    assert str(failed) == "test rank(s) 0, 1 failed: rank 0: ValueError: boom"
    assert failed.failed == [0, 1]  # rank 0 first: it failed, rank 1 was ended
    assert failed.results == {0: {"rank": 0, "error": "rank 0: ValueError: boom", "error_type": "ValueError"}}
    assert failed.raised("ValueError") and not failed.raised("NonFiniteLoss")
    assert isinstance(failed, RuntimeError)  # the run records it as a crash
