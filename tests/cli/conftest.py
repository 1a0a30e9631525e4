"""Fixtures of the command-line tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.drivers.terminal import Terminal


@pytest.fixture(scope="session")
def terminal() -> Iterator[Terminal]:
    """One dices process on a pseudo-terminal for the run's drawings on a terminal (each
    worker's own)."""
    shared = Terminal()
    yield shared
    shared.close()
