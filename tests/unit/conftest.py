"""Unit tests get a tight time limit: each runs in well under a second with fakes, so one
that takes a minute hangs (pyproject.toml's ``timeout`` is the integration tests' limit)."""

from __future__ import annotations

from pathlib import Path

import pytest

# Seconds: about ten times the slowest unit test on a loaded two-core machine.
UNIT_TIMEOUT_S = 60
UNIT_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test under tests/unit without its own ``timeout`` marker the unit limit."""
    for item in items:
        if item.path.is_relative_to(UNIT_DIR) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))
