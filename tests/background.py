"""Slow module fixtures that mostly wait on one single-threaded subprocess, run two at a time.

A framework probe trains at one thread (DLREPRO_THREADS=1), so on CI's two cores one of them leaves a
core idle for minutes. A module registers its slow fixture here at import (collection). The session
starts every registered job that a selected test needs before its first test (tests/conftest.py), in
two lanes, longest first, and runs the modules that use them after every other module (`last`), so the
foreground works beside the lanes instead of waiting on them; each fixture then waits only for its own
job. Nothing they run is timed: the jobs only have to train (speed figures belong to the benchmarks),
so sharing the cores is safe.

    probe = background.fixture("chainer probe", lambda tmp: check.run_probe("chainer", ...), weight=80,
                               module=__name__, fixture_name="probe")

Jobs that name the same `shares` (a cache no two of them may use at once) run one after the other in one
lane, so neither lane waits on the other's hold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

LANES = 2  # CI's cores


@dataclass(frozen=True)
class Job:
    """A registered slow fixture: what it runs, its test module and fixture name, and its rough cost
    (orders the lanes)."""

    run: Callable[[pytest.TempPathFactory], Any]
    module: str
    fixture_name: str
    weight: float
    shares: str | None = None


_jobs: dict[str, Job] = {}
_futures: dict[str, Future] = {}
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def fixture(name: str, run: Callable[[pytest.TempPathFactory], Any], weight: float, module: str,
            fixture_name: str, shares: str | None = None):
    """A module-scoped fixture `fixture_name` giving run(tmp_path_factory)'s value, computed in the
    background (see the module docstring); `name` must be unique, `weight` is the job's rough seconds
    (longest first), `module` the registering test module's __name__, `shares` what it may not use at
    the same time as another job naming it (they run in turn)."""
    if name in _jobs:
        raise ValueError(f"background job {name!r} is registered twice")
    _jobs[name] = Job(run, module, fixture_name, weight, shares)

    @pytest.fixture(scope="module", name=fixture_name)
    def background_fixture(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
        start(request.session, tmp_path_factory)
        return _futures[name].result()

    return background_fixture


def _needed(session: pytest.Session) -> set[tuple[str, str]]:
    """(test module, fixture name) of every fixture a selected test uses: only their jobs are worth starting."""
    return {(item.module.__name__, name) for item in session.items if getattr(item, "module", None) is not None
            for name in getattr(item, "fixturenames", ())}


def last(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items with every module that uses a registered fixture moved after all other modules, each module's
    items kept together and in order (its module-scoped fixtures are set up once); stable otherwise."""
    users = {(job.module, job.fixture_name) for job in _jobs.values()}

    def module_of(item: pytest.Item) -> str | None:
        module = getattr(item, "module", None)
        return module.__name__ if module is not None else None

    late = {module_of(item) for item in items
            if any((module_of(item), name) in users for name in getattr(item, "fixturenames", ()))}
    return [item for item in items if module_of(item) not in late] + [item for item in items
                                                                         if module_of(item) in late]


def turns(names: list[str], jobs: dict[str, Job]) -> list[list[str]]:
    """The jobs grouped into what one lane runs in one go: each job alone, except that jobs naming the same
    `shares` form one group; groups heaviest first (their weights summed), jobs in a group heaviest first."""
    groups: dict[str, list[str]] = {}
    for name in sorted(names, key=lambda n: -jobs[n].weight):
        groups.setdefault(jobs[name].shares or f"job {name}", []).append(name)
    return sorted(groups.values(), key=lambda group: -sum(jobs[n].weight for n in group))


def _run_in_turn(names: list[str], futures: dict[str, Future], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Run a group's jobs one after another, each result (or error) into its own future."""
    for name in names:
        try:
            futures[name].set_result(_jobs[name].run(tmp_path_factory))
        except BaseException as exc:  # the test that asks for it sees the error, as from a plain fixture
            futures[name].set_exception(exc)


def start(session: pytest.Session, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Submit every needed job not yet submitted, heaviest first (idempotent)."""
    global _pool
    with _lock:
        needed = _needed(session)
        todo = [name for name, job in _jobs.items()
                if (job.module, job.fixture_name) in needed and name not in _futures]
        if not todo:
            return
        if _pool is None:
            _pool = ThreadPoolExecutor(LANES, thread_name_prefix="background-fixture")
        for group in turns(todo, _jobs):
            futures = {name: Future() for name in group}
            _futures.update(futures)
            _pool.submit(_run_in_turn, group, futures, tmp_path_factory)
