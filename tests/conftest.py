"""Session-wide test order: the registered slow fixtures (tests/background.py) start before the first test,
and the modules that use them run last, so the tests before them work beside the background jobs."""

from __future__ import annotations

import pytest

from tests import background


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules using a background fixture after all others (see tests/background.py)."""
    items[:] = background.last(items)


@pytest.fixture(scope="session", autouse=True)
def _background_jobs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Start every background job a selected test needs (none in the fast tier), before the first test."""
    background.start(request.session, tmp_path_factory)
