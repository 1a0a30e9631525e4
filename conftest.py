"""The doctests of the Python API (dices_cli/api/, docs/python.md): each runs in a
temporary working directory of its own, with `dices` imported and `d`, a data directory
holding the packaged sample (read-only), ready."""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path
from typing import Any

# One xdist worker per core: the libraries of each (and of the processes its tests start)
# keep to one thread, where their own pools would make every worker contend with the others
# for both cores. Set before Polars and NumPy are imported; a value set by the user stays.
for _variable in ("POLARS_MAX_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
from _pytest.doctest import DoctestItem, DoctestModule  # noqa: E402

ROOT = Path(__file__).resolve().parent
TESTS = ROOT / "tests"

# The suite writes bytecode whatever PYTHONDONTWRITEBYTECODE says: pytest keeps each test
# module's rewritten assertions in __pycache__ (else every worker rewrites every module on
# every run), and the dices processes the tests start read dices_cli's modules compiled, as
# an install leaves them (else each compiles all it imports).
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """dices_cli compiled once, in the process that starts the workers (or the only one)."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(ROOT / "dices_cli", quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Any:
    """Doctests are the API's and docs/python.md's: a module under tests/ holds none, so it is
    not collected a second time as one (and a folder's conftest.py is imported as a conftest
    only, never as a module named `conftest` beside another folder's)."""
    collected = yield
    if TESTS in file_path.parents:
        return [each for each in collected if not isinstance(each, DoctestModule)]
    return collected


@pytest.fixture(scope="session")
def _sample_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import dices_cli as dices
    from dices_cli.runs.demo import sample_paths

    directory = tmp_path_factory.mktemp("doctest-sample")
    dices.ingest(sample_paths(), directory)
    return directory


@pytest.fixture(autouse=True)
def _doctest_session(request: pytest.FixtureRequest) -> None:
    if not isinstance(request.node, DoctestItem):
        return
    import dices_cli as dices
    from dices_cli.runs.demo import sample_paths

    namespace: dict[str, Any] = request.getfixturevalue("doctest_namespace")
    request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))
    sample = request.getfixturevalue("_sample_directory")
    namespace.update(dices=dices, sample_paths=sample_paths, d=dices.open(sample))
