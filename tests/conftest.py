"""Shared fixtures: replica DICES files built once per run, and a data directory holding both.

Under xdist (`-n auto`) the workers share what is built once (`built_once`): the first to
need it builds it under a file lock, the others wait and read the same directory.

The replica generator lives in the sibling `shared/` folder (../shared/data), not in this
repository. Without it, the tests that need full-size files are skipped with a reason, unless
DICES_REQUIRE_REPLICA=1 (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from hypothesis import settings
from typer.testing import CliRunner

from dices_cli.cli.launch import DRAWING_SETTINGS
from dices_cli.cli.main import app
from dices_cli.download import BASE_VARIABLE
from dices_cli.queries import sandbox
from dices_cli.queries.catalog import SQL_DIR_VARIABLE
from dices_cli.store.datasets import DATA_ENV

# The shell's terminal state and dices' own settings are not the tests': the settings that
# change how Typer and Rich draw (width, colours, boxes), and where dices finds its data,
# queries and downloads. A test that needs one sets it.
for _name in (*DRAWING_SETTINGS, "LINES", DATA_ENV, SQL_DIR_VARIABLE, BASE_VARIABLE, "DICES_DEBUG"):
    os.environ.pop(_name, None)

# Hypothesis profiles for tests that take their example count from the profile: "ci" (the
# default) keeps the suite fast; `pytest --hypothesis-profile=long` searches far longer.
settings.register_profile("ci", max_examples=30, deadline=None, print_blob=True)
settings.register_profile("long", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DICES_SHARED", REPO.parent / "shared"))
GENERATOR = SHARED / "data" / "make_replica.py"


@cache
def _code_version() -> str:
    """A digest of what a built fixture depends on: the package's files (its code, queries and
    sample data), the replica generator and the engine versions."""
    import duckdb
    import polars
    import pyarrow

    digest = hashlib.sha256(
        f"{duckdb.__version__} {polars.__version__} {pyarrow.__version__}".encode()
    )
    files = sorted((REPO / "dices_cli").rglob("*"))
    for path in [*files, GENERATOR]:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(path.anchor)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The directory `name`, filled by `build(directory)` once per run and code version, and
    shared by every xdist worker of the run (read-only): the first worker to ask builds it
    under a lock, the others wait for it. A build that fails leaves nothing behind."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    home = root / f"built-{_code_version()}"
    home.mkdir(exist_ok=True)
    target = home / name
    with FileLock(home / f"{name}.lock"):
        if not target.is_dir():
            partial = home / f"{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            build(partial)
            partial.rename(target)
    return target


def _replica(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not GENERATOR.exists():
        message = f"replica generator not found at {GENERATOR} (set DICES_SHARED)"
        if os.environ.get("DICES_REQUIRE_REPLICA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    file = f"dices_{name}.csv"

    def build(directory: Path) -> None:
        subprocess.run(
            [sys.executable, str(GENERATOR), name, str(directory / file)],
            check=True,
            capture_output=True,
        )

    return built_once(tmp_path_factory, f"replica_{name}", build) / file


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


# What the collector would walk at every full collection, frozen (`gc.freeze`): the modules
# and objects of the run so far, first once the tests are collected, then at each test
# file's first test (after a collection that frees the garbage so far). A full collection
# (Python's own, or the one `dices_cli` runs before it reads a file again) then walks only
# what the current file made.
_FROZEN_AT: list[Path] = []


def pytest_collection_finish() -> None:
    gc.collect()
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _FROZEN_AT[-1:] != [item.path]:
        _FROZEN_AT[:] = [item.path]
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session")
def replica_350(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _replica("350", tmp_path_factory)


@pytest.fixture(scope="session")
def replica_990(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _replica("990", tmp_path_factory)


@pytest.fixture(scope="session")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, replica_350: Path, replica_990: Path
) -> Path:
    """A data directory with both replica datasets. Read-only: copy it before changing it."""

    def build(data: Path) -> None:
        result = CliRunner().invoke(
            app, ["ingest", str(replica_350), str(replica_990), "--data", str(data)]
        )
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "ingested", build)


@pytest.fixture(scope="session")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the packaged sample of both datasets (40 + 80 conversations),
    ingested once per run. Read-only: copy it before changing it."""
    from dices_cli.runs.demo import sample_paths

    def build(data: Path) -> None:
        paths = [str(path) for path in sample_paths()]
        result = CliRunner().invoke(app, ["ingest", *paths, "--data", str(data), "-q"])
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "sample", build)


@pytest.fixture
def ingested_copy(ingested: Path, tmp_path: Path) -> Path:
    """A private copy of `ingested` that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(ingested, target, symlinks=True)
    return target


# The address space a run under a time limit may add to the test process (`memory_cap`).
IN_PROCESS_CAP = 2 << 30


class _Cap:
    """The cap in force: the outermost `memory_cap` sets it and puts the old limit back; one
    entered inside it (nested, or from another thread) leaves it as it is."""

    lock = threading.Lock()
    depth = 0
    soft = hard = resource.RLIM_INFINITY


@contextlib.contextmanager
def memory_cap(extra: int = IN_PROCESS_CAP) -> Iterator[None]:
    """The process's address space capped at what it holds now plus `extra` bytes (its soft
    limit, put back when the block ends; a process started inside the block inherits it):
    a run that grows without bound fails with "not enough memory" instead of taking the
    machine down."""
    with _Cap.lock:
        if _Cap.depth == 0:
            _Cap.soft, _Cap.hard = resource.getrlimit(resource.RLIMIT_AS)
            with open("/proc/self/status", encoding="ascii") as status:
                (size,) = (
                    int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:")
                )
            cap = (
                size + extra
                if _Cap.hard == resource.RLIM_INFINITY
                else min(size + extra, _Cap.hard)
            )
            resource.setrlimit(resource.RLIMIT_AS, (cap, _Cap.hard))
        _Cap.depth += 1
    try:
        yield
    finally:
        with _Cap.lock:
            _Cap.depth -= 1
            if _Cap.depth == 0:
                resource.setrlimit(resource.RLIMIT_AS, (_Cap.soft, _Cap.hard))


def _capped_while_running(running: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(running, "memory_capped", False):
        return running  # this file imported again, as tests.conftest

    @contextlib.contextmanager
    def capped(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with memory_cap(), running(*args, **kwargs) as result:
            yield result

    capped.memory_capped = True  # type: ignore[attr-defined]
    return capped


# Every query under a time limit (each `sql` statement: of the command line, the API or
# `run_sql`, in this process) runs under `memory_cap` until its result is read: a time limit
# that fails to stop a query must fail the test, not fill the machine's memory.
sandbox._running = _capped_while_running(sandbox._running)  # type: ignore[method-assign]


class CappedRunner(CliRunner):
    """A runner whose runs with `--timeout` (of a query, a judge or a download) run under
    `memory_cap` from start to end: a time limit that fails to stop a run must fail the test,
    not fill the machine's memory as its output piles up in the runner's buffer."""

    def invoke(self, cli: Any, args: str | Sequence[str] | None = None, **kwargs: Any) -> Any:
        if args is None or isinstance(args, str) or "--timeout" not in args:
            return super().invoke(cli, args, **kwargs)
        with memory_cap():
            return super().invoke(cli, args, **kwargs)


@pytest.fixture
def runner() -> CliRunner:
    return CappedRunner()


@pytest.fixture
def registry_as_it_was() -> Iterator[None]:
    """The families a test registers (a declaration it ingests) are forgotten after it: the
    registry is the process's. A module asks for it with
    `pytestmark = pytest.mark.usefixtures("registry_as_it_was")`."""
    from dices_cli.families import FAMILIES

    before = set(FAMILIES)
    yield
    for name in set(FAMILIES) - before:
        FAMILIES.pop(name)
