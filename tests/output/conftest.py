"""Fixtures of the output tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def sample_copy(sample: Path, tmp_path: Path) -> Path:
    """A private copy of `sample` that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target
