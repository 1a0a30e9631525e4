"""`dices sql` reads nothing in DuckDB's temporary directory, nor anything else on disk.

DuckDB's temporary directory is `./.tmp` by default, and with external access off DuckDB
still lets a query read there (the directory, or wherever a `.tmp` symlink points). The
sandbox runs with no temporary directory, and with no file readable but the stored files
the statement reads (`allowed_paths`).

`planted_temp` is also used by tests/queries/test_sql_sandbox.py and
tests/hostile/test_hostile_sql.py,
which run every hostile statement from a working directory set up this way.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.queries import sandbox

TEMP_CANARY = "temp-canary-5f3a9e"
# .tmp as a directory of its own, or as a symlink to a directory elsewhere (say /etc).
LAYOUTS = ("tmp-directory", "tmp-symlink")
# DuckDB's words for a file or directory that a query may not read with external access off.
DISABLED = " - file system operations are disabled by configuration\n"


def _contents(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@contextmanager
def planted_temp(
    layout: str, cwd: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Make `cwd` the working directory, with a `.tmp` holding canary files as text, CSV and
    Parquet: a directory, or a symlink to `elsewhere`. Yields the directory the files are
    really in. On exit, checks that they are unchanged and that nothing was added there,
    removes `.tmp`, and checks that `cwd` holds what it held before."""
    before = _contents(cwd)
    link = cwd / ".tmp"
    target = link if layout == "tmp-directory" else elsewhere
    target.mkdir(exist_ok=True)
    (target / "canary.txt").write_text(f"{TEMP_CANARY}\n", encoding="utf-8")
    (target / "canary.csv").write_text(f"secret\n{TEMP_CANARY}\n", encoding="utf-8")
    pq.write_table(pa.table({"secret": [TEMP_CANARY]}), target / "canary.parquet")
    planted = _contents(target)
    if layout == "tmp-symlink":
        link.symlink_to(target, target_is_directory=True)
    monkeypatch.chdir(cwd)
    yield target
    assert _contents(target) == planted
    for path in target.iterdir():
        path.unlink()
    target.rmdir()
    if link.is_symlink():
        link.unlink()
    assert _contents(cwd) == before


def assert_no_canary(result: Result) -> None:
    assert TEMP_CANARY not in result.stdout + result.stderr


@pytest.fixture(params=LAYOUTS)
def temp_canary(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """A fresh working directory with a planted `.tmp` (see planted_temp)."""
    cwd, elsewhere = tmp_path_factory.mktemp("cwd"), tmp_path_factory.mktemp("elsewhere")
    with planted_temp(request.param, cwd, elsewhere, monkeypatch) as directory:
        yield directory


def sql(runner: CliRunner, data: Path, statement: str) -> Result:
    result = runner.invoke(app, ["sql", statement, "--data", str(data), "-d", "350"])
    assert_no_canary(result)
    return result


@pytest.mark.parametrize(
    "function",
    [
        "read_text('.tmp/canary.txt')",
        "read_text('.tmp/*')",
        "read_blob('.tmp/*')",
        "read_csv('.tmp/canary.csv')",
        "read_csv_auto('.tmp/*.csv')",
        "read_parquet('.tmp/canary.parquet')",
        "parquet_scan('.tmp/*.parquet')",
        "glob('.tmp/*')",
        "glob('.tmp/**')",
        "'.tmp/canary.csv'",
        "read_text('{cwd}/.tmp/canary.txt')",  # absolute, through the link
        "read_text('{target}/canary.txt')",  # absolute, where the file really is
        "read_parquet('{target}/*.parquet')",
        "glob('{target}/*')",
        "glob('{system_temp}/*')",
    ],
)
def test_the_temporary_directory_is_not_read(
    function: str, runner: CliRunner, ingested: Path, temp_canary: Path
) -> None:
    paths = {
        "cwd": Path.cwd(),
        "target": temp_canary.resolve(),
        "system_temp": tempfile.gettempdir(),
    }
    result = sql(runner, ingested, "SELECT * FROM " + function.format(**paths))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: the query failed: Permission Error: Cannot access ")
    assert DISABLED in result.stderr


def test_a_lockdown_that_leaves_a_directory_readable_is_not_run(
    runner: CliRunner, ingested: Path, temp_canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net: without the line that removes the temporary directory, DuckDB would
    let queries read it, and dices refuses to run the query at all."""
    lockdown = tuple(s for s in sandbox.LOCKDOWN if "temp_directory" not in s)
    assert len(lockdown) == len(sandbox.LOCKDOWN) - 1
    monkeypatch.setattr(sandbox, "LOCKDOWN", lockdown)
    result = sql(runner, ingested, "SELECT * FROM read_text('.tmp/canary.txt')")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: the SQL sandbox is not closed (allowed_directories = "
        f"[{temp_canary.resolve()}/]); the query was not run\n"
    )


def test_a_lockdown_that_lets_a_query_read_another_file_is_not_run(
    runner: CliRunner, ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net for the list of files a query may read: it must be the stored files
    of the statement's views, no more (and none is made readable here)."""
    widened = ("SET allowed_paths = ['/etc/passwd']", *sandbox.LOCKDOWN)
    monkeypatch.setattr(sandbox, "LOCKDOWN", widened)
    result = sql(runner, ingested, "SELECT * FROM read_text('/etc/passwd')")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "Error: the SQL sandbox is not closed (allowed_paths = [/etc/passwd]); "
        "the query was not run\n"
    )


def test_persistent_secrets_are_not_loaded(
    runner: CliRunner, ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret stored in ~/.duckdb/stored_secrets is neither listed nor used."""
    monkeypatch.setenv("HOME", str(tmp_path))
    with duckdb.connect(":memory:") as con:
        con.execute(f"CREATE PERSISTENT SECRET planted (TYPE http, BEARER_TOKEN '{TEMP_CANARY}')")
    assert (tmp_path / ".duckdb" / "stored_secrets" / "planted.duckdb_secret").is_file()
    for statement, header in (
        ("SELECT name, secret_string FROM duckdb_secrets()", "name,secret_string"),
        ("SELECT * FROM which_secret('https://example.com/x', 'http')", "name,persistent,storage"),
    ):
        result = sql(runner, ingested, statement)
        assert result.exit_code == 0, result.output
        assert result.stdout == f"{header}\n"
