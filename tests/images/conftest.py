"""Fixtures of the image tests that need a real Docker engine."""

from __future__ import annotations

import pytest

from bench.errors import UsageError
from images import build as images


@pytest.fixture(scope="module")
def engine():
    """A docker SDK client of this machine's engine; the test is skipped where none answers."""
    try:
        return images.client()
    except UsageError as exc:
        pytest.skip(f"no Docker engine: {exc.problem}")
