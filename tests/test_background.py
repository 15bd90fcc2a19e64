"""tests/background.py: registered slow fixtures start together, two at a time, heaviest first, and only
those a selected test uses."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from tests import background


@pytest.fixture()
def registry(monkeypatch):
    """An empty registry and pool for one test."""
    monkeypatch.setattr(background, "_jobs", {})
    monkeypatch.setattr(background, "_futures", {})
    monkeypatch.setattr(background, "_pool", None)
    yield
    if background._pool is not None:
        background._pool.shutdown(wait=True)


def session(*uses: tuple[str, str]) -> SimpleNamespace:
    """A session whose selected items use the given (module, fixture) pairs."""
    return SimpleNamespace(items=[SimpleNamespace(module=SimpleNamespace(__name__=m), fixturenames=[f])
                                  for m, f in uses])


def test_jobs_run_two_at_a_time_heaviest_first_and_only_when_selected(registry):
    started: list[str] = []
    both_running = threading.Barrier(2, timeout=10)  # broken (an error) unless two jobs run at once

    def job(name: str):
        def run(_tmp):
            started.append(name)
            if name in ("heavy", "medium"):
                both_running.wait()
            return name
        return run

    background.fixture("light", job("light"), weight=1, module="m1", fixture_name="probe")
    background.fixture("heavy", job("heavy"), weight=300, module="m2", fixture_name="probe")
    background.fixture("medium", job("medium"), weight=50, module="m3", fixture_name="runs")
    background.fixture("unselected", job("unselected"), weight=900, module="m4", fixture_name="probe")
    background.start(session(("m1", "probe"), ("m2", "probe"), ("m3", "runs"), ("m4", "other")), None)
    assert {name: f.result(timeout=20) for name, f in background._futures.items()} == {
        "heavy": "heavy", "medium": "medium", "light": "light"}
    assert started[:2] in (["heavy", "medium"], ["medium", "heavy"]) and started[2] == "light"
    background.start(session(("m1", "probe")), None)  # idempotent: nothing runs twice
    assert len(started) == 3


def test_a_name_registers_once(registry):
    background.fixture("probe", lambda _tmp: None, weight=1, module="m", fixture_name="probe")
    with pytest.raises(ValueError, match="registered twice"):
        background.fixture("probe", lambda _tmp: None, weight=1, module="m", fixture_name="probe")


def test_jobs_sharing_a_cache_run_in_turn_in_one_lane_and_the_other_lane_goes_on(registry):
    running: set[str] = set()
    overlaps: list[set[str]] = []
    lock = threading.Lock()
    other_ran = threading.Event()

    def job(name: str):
        def run(_tmp):
            with lock:
                running.add(name)
                overlaps.append(set(running))
            if name == "keras":
                assert other_ran.wait(10)  # the other lane is free while the group runs
            if name == "fails":
                raise RuntimeError("boom")
            with lock:
                running.discard(name)
            if name == "light":
                other_ran.set()
            return name
        return run

    background.fixture("keras", job("keras"), weight=470, module="m1", fixture_name="paper", shares="cache")
    background.fixture("theano", job("theano"), weight=235, module="m2", fixture_name="paper", shares="cache")
    background.fixture("light", job("light"), weight=10, module="m3", fixture_name="probe")
    background.fixture("fails", job("fails"), weight=5, module="m4", fixture_name="probe", shares="cache")
    assert background.turns(["light", "theano", "fails", "keras"], background._jobs) == [
        ["keras", "theano", "fails"], ["light"]]
    background.start(session(("m1", "paper"), ("m2", "paper"), ("m3", "probe"), ("m4", "probe")), None)
    assert [background._futures[n].result(timeout=20) for n in ("keras", "theano", "light")] == [
        "keras", "theano", "light"]
    with pytest.raises(RuntimeError, match="boom"):
        background._futures["fails"].result(timeout=20)
    assert not any({"keras", "theano"} <= seen for seen in overlaps)


def test_modules_using_a_background_fixture_run_last_whole_and_in_order(registry):
    background.fixture("probe", lambda _tmp: None, weight=1, module="m2", fixture_name="probe")

    def item(module: str, test: str, *fixtures: str) -> SimpleNamespace:
        return SimpleNamespace(module=SimpleNamespace(__name__=module), fixturenames=list(fixtures), name=test)

    items = [item("m1", "a"), item("m2", "b"), item("m2", "c", "probe"), item("m3", "d", "probe"),
             item("m2", "e"), item("m4", "f")]
    # m2 moves whole (b and e use no probe, but share its module fixtures); m3's "probe" is another module's name.
    assert [i.name for i in background.last(items)] == ["a", "d", "f", "b", "c", "e"]
    assert background.last(items[:1]) == items[:1]
