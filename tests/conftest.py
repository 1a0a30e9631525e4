"""Shared fixtures: replica DICES files built once per run, and a data directory holding both.

The replica generator lives in the sibling `shared/` folder (../shared/data), not in this
repository. Without it, the tests that need full-size files are skipped with a reason, unless
DICES_REQUIRE_REPLICA=1 (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from typer.testing import CliRunner

from dices_cli.cli.main import app

# Hypothesis profiles for tests that take their example count from the profile: "ci" (the
# default) keeps the suite fast; `pytest --hypothesis-profile=long` searches far longer.
settings.register_profile("ci", max_examples=30, deadline=None, print_blob=True)
settings.register_profile("long", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DICES_SHARED", REPO.parent / "shared"))
GENERATOR = SHARED / "data" / "make_replica.py"


def _replica(name: str, directory: Path) -> Path:
    if not GENERATOR.exists():
        message = f"replica generator not found at {GENERATOR} (set DICES_SHARED)"
        if os.environ.get("DICES_REQUIRE_REPLICA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    target = directory / f"dices_{name}.csv"
    subprocess.run(
        [sys.executable, str(GENERATOR), name, str(target)], check=True, capture_output=True
    )
    return target


# The fixtures of the full-size replica files: building and ingesting them takes each worker
# far longer than the inner loop's whole budget, so every test that uses one is `slow`.
REPLICA_FIXTURES = frozenset({"replica_350", "replica_990", "ingested", "ingested_copy"})


# The marked suites: every test under tests/hostile/ is `hostile` (the corpora of hostile
# input), every test under tests/calibration/ is `calibration` (intervals and tests against
# a known truth); `pytest -m "not hostile and not calibration"` leaves the package's own.
SUITES = {"hostile": pytest.mark.hostile, "calibration": pytest.mark.calibration}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if REPLICA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        folder = item.path.parent.name
        if folder in SUITES and item.path.parent.parent == REPO / "tests":
            item.add_marker(SUITES[folder])


@pytest.fixture(scope="session")
def replica_350(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _replica("350", tmp_path_factory.mktemp("replica"))


@pytest.fixture(scope="session")
def replica_990(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _replica("990", tmp_path_factory.mktemp("replica"))


@pytest.fixture(scope="session")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, replica_350: Path, replica_990: Path
) -> Path:
    """A data directory with both replica datasets. Read-only: copy it before changing it."""
    data = tmp_path_factory.mktemp("data")
    result = CliRunner().invoke(
        app, ["ingest", str(replica_350), str(replica_990), "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    return data


@pytest.fixture(scope="session")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the packaged sample of both datasets (40 + 80 conversations),
    ingested once per run (per worker). Read-only: copy it before changing it."""
    from dices_cli.cli.demo import sample_paths

    data = tmp_path_factory.mktemp("sample")
    paths = [str(path) for path in sample_paths()]
    result = CliRunner().invoke(app, ["ingest", *paths, "--data", str(data), "-q"])
    assert result.exit_code == 0, result.output
    return data


@pytest.fixture
def ingested_copy(ingested: Path, tmp_path: Path) -> Path:
    """A private copy of `ingested` that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(ingested, target, symlinks=True)
    return target


# The address space a run under a time limit may add to the test process (`CappedRunner`).
IN_PROCESS_CAP = 2 << 30


@contextlib.contextmanager
def memory_cap(extra: int = IN_PROCESS_CAP) -> Iterator[None]:
    """The process's address space capped at what it holds now plus `extra` bytes (its soft
    limit, put back when the block ends): a run that grows without bound fails with "not
    enough memory" instead of taking the machine down."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status", encoding="ascii") as status:
        (size,) = (int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
    cap = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class CappedRunner(CliRunner):
    """A runner whose runs under a time limit (`--timeout`) run under a memory cap too
    (`memory_cap`): a time limit that fails to stop a query must fail the test, not fill
    the machine's memory as its output piles up in the runner's buffer."""

    def invoke(self, cli: Any, args: str | Sequence[str] | None = None, **kwargs: Any) -> Any:
        if args is None or isinstance(args, str) or "--timeout" not in args:
            return super().invoke(cli, args, **kwargs)
        with memory_cap():
            return super().invoke(cli, args, **kwargs)


@pytest.fixture
def runner() -> CliRunner:
    return CappedRunner()
