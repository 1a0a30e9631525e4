"""`dices sql`: one read-only SELECT over the views, and nothing else.

Every refused statement must leave the file system as it was: each test points its
statement at a canary file (or at a new file next to it) and checks that the canary still
holds what it held and that nothing else appeared. These tests run twice, from a working
directory whose `.tmp` (DuckDB's default temporary directory) holds canary files, once as
a directory and once as a symlink; no output may show them (see test_sandbox_tempdir.py).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families.schema import PUBLISHED_REMOVED
from dices_cli.store.datasets import Store
from tests.queries.test_sandbox_tempdir import (
    DISABLED,
    assert_no_canary,
    temp_canary,  # noqa: F401 (a fixture, used by name)
)

CANARY_TEXT = "rater_id\n296708581782793\n"
READ_ONLY = "dices sql is read-only"


def run_sql(
    runner: CliRunner, data: Path, statement: str, *options: str, dataset: str = "350"
) -> Result:
    """`dices sql` over one dataset by default: loading both takes longer and shows nothing more."""
    args = ["sql", statement, "--data", str(data), *options]
    result = runner.invoke(app, args if "-d" in options else [*args, "-d", dataset])
    assert_no_canary(result)
    return result


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    path = tmp_path / "canary.csv"
    path.write_text(CANARY_TEXT, encoding="utf-8")
    return path


def assert_untouched(canary: Path) -> None:
    assert canary.read_text(encoding="utf-8") == CANARY_TEXT
    assert sorted(p.name for p in canary.parent.iterdir()) == ["canary.csv"]


# The statement kind DuckDB reports is in the message: INSTALL is a LOAD, RESET a SET.
REFUSED = [
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("CREATE VIEW v AS SELECT 1", "CREATE"),
    ("CREATE MACRO m(x) AS x + 1", "CREATE"),
    ("INSERT INTO published_removed VALUES ('350', 1)", "INSERT"),
    ("UPDATE published_removed SET rater_id = 0", "UPDATE"),
    ("DELETE FROM published_removed", "DELETE"),
    ("DROP VIEW items", "DROP"),
    ("ALTER VIEW items RENAME TO things", "ALTER"),
    ("COPY (SELECT * FROM raters) TO '{canary}'", "COPY"),
    ("COPY (SELECT * FROM raters) TO '{dir}/new.csv'", "COPY"),
    ("COPY published_removed FROM '{canary}'", "COPY"),
    ("EXPORT DATABASE '{dir}/export'", "EXPORT"),
    ("ATTACH '{dir}/new.duckdb' AS other", "ATTACH"),
    ("DETACH memory", "DETACH"),
    ("INSTALL httpfs", "LOAD"),
    ("LOAD httpfs", "LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("SET lock_configuration = false", "SET"),
    ("RESET threads", "SET"),
    # The views read the stored files' paths from this variable (`engine.STORED_FILES`).
    ("SET VARIABLE dices_stored_files = {{'ratings_350': '/etc/passwd'}}", "SET"),
    ("RESET VARIABLE dices_stored_files", "SET"),
    ("PRAGMA version", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("CHECKPOINT", "CALL"),
    ("VACUUM", "VACUUM"),
]


@pytest.mark.parametrize(("statement", "kind"), REFUSED)
@pytest.mark.usefixtures("temp_canary")
def test_statements_other_than_select_are_refused(
    statement: str, kind: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    sql = statement.format(canary=canary, dir=canary.parent)
    result = run_sql(runner, ingested, sql)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: only SELECT is allowed here, not {kind}; {READ_ONLY}\n"
    assert_untouched(canary)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 1; SELECT 2",
        "SELECT 1; DROP VIEW items",
        "SELECT 1; COPY (SELECT 1) TO '{canary}'",
        "SELECT 1; SET enable_external_access = true; SELECT * FROM read_text('{canary}')",
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_several_statements_are_refused(
    statement: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    sql = statement.format(canary=canary)
    count = sql.count(";") + 1
    result = run_sql(runner, ingested, sql)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: give exactly one statement (got {count})\n"
    assert_untouched(canary)


def test_no_statement_is_refused(runner: CliRunner, ingested: Path) -> None:
    result = run_sql(runner, ingested, "  ;  ")
    assert result.exit_code == 1
    assert result.stderr == "Error: give exactly one statement (got 0)\n"


@pytest.mark.parametrize(
    "function",
    [
        "read_csv('/etc/passwd')",
        "read_csv_auto('{canary}')",
        "read_text('/etc/passwd')",
        "read_text('{canary}')",
        "read_blob('/etc/passwd')",
        "read_json('{canary}')",
        "read_parquet('{parquet}')",
        "parquet_scan('{parquet}')",
        "parquet_metadata('{parquet}')",
        "glob('/etc/*')",
        "glob('{dir}/*')",
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_reading_files_is_refused(
    function: str,
    runner: CliRunner,
    ingested: Path,
    canary: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Any file but the stored ones the statement reads: a copy of one of those too."""
    parquet = tmp_path_factory.mktemp("copy") / "ratings.parquet"  # a real Parquet file
    shutil.copyfile(stored_path(ingested, "350", "ratings"), parquet)
    sql = "SELECT * FROM " + function.format(canary=canary, dir=canary.parent, parquet=parquet)
    result = run_sql(runner, ingested, sql)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: the query failed: Permission Error: ")
    assert DISABLED in result.stderr
    assert "296708581782793" not in result.stderr  # the canary's content is not shown
    assert_untouched(canary)


@pytest.mark.parametrize("path", ["/etc/passwd", "{canary}"])
@pytest.mark.usefixtures("temp_canary")
def test_a_file_name_as_a_table_is_not_read(
    path: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = run_sql(runner, ingested, f"SELECT * FROM '{path.format(canary=canary)}'")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: the query failed: ")
    assert "root:" not in result.stderr
    assert "296708581782793" not in result.stderr
    assert_untouched(canary)


def stored_path(data: Path, dataset: str, table: str) -> Path:
    """The stored file of `table`, as the session names it to DuckDB."""
    return Store(data).open(dataset).table_path(table)


@pytest.mark.parametrize("table", ["items", "raters", "ratings"])
def test_a_stored_file_the_statement_reads_may_be_read_by_its_path(
    table: str, runner: CliRunner, ingested: Path
) -> None:
    """What the views read is on the list of files a query may read (the issue-25 choice:
    DuckDB's own reader, no Arrow): read by its path, it gives what its view gives, without
    the rater selection. A stored file of a view the statement does not read is refused, and
    so is a path beside a stored file or one that climbs out of it."""
    path = stored_path(ingested, "350", table)
    by_path = f"SELECT count(*) AS n FROM read_parquet('{path}')"
    result = run_sql(runner, ingested, f"{by_path} UNION ALL SELECT count(*) FROM {table}")
    assert (result.exit_code, result.stderr) == (0, "")
    (n,) = set(result.stdout.split()[1:])  # the same count both ways
    assert int(n) > 0

    other = "items" if table != "items" else "raters"
    result = run_sql(runner, ingested, f"SELECT count(*) FROM {other}, read_parquet('{path}')")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f'Error: the query failed: Permission Error: Cannot access file "{path}"{DISABLED}'
    )

    for beside in (f"{path}.bak", f"{path}/{'../' * len(path.parts)}etc/passwd"):
        result = run_sql(runner, ingested, f"SELECT * FROM {table}, read_text('{beside}')")
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr.startswith(
            f'Error: the query failed: Permission Error: Cannot access file "{beside}"{DISABLED}'
        )


@pytest.mark.usefixtures("temp_canary")
def test_the_connection_is_locked(runner: CliRunner, ingested: Path) -> None:
    """No temporary directory, no file on the list of files a query may read but the
    stored files of the views (a statement over the catalogue gets every view), nothing
    on the list of options it may change."""
    sql = (
        "SELECT name, value FROM duckdb_settings() WHERE name IN ("
        "'allow_community_extensions', 'allow_persistent_secrets', 'allowed_configs', "
        "'allowed_directories', 'allowed_paths', 'autoinstall_known_extensions', "
        "'autoload_known_extensions', 'enable_external_access', 'lock_configuration', "
        "'python_enable_replacements', 'temp_directory') ORDER BY name"
    )
    result = run_sql(runner, ingested, sql, "-f", "json")
    assert result.exit_code == 0, result.output
    settings = json.loads(result.stdout)
    # DuckDB keeps the list as a set, and shows it as "[a, b, c]" in the set's order.
    allowed = settings[4]["value"]
    stored = [str(stored_path(ingested, "350", table)) for table in ("items", "raters", "ratings")]
    assert sorted(allowed.removeprefix("[").removesuffix("]").split(", ")) == sorted(stored)
    assert settings == [
        {"name": "allow_community_extensions", "value": "false"},
        {"name": "allow_persistent_secrets", "value": "false"},
        {"name": "allowed_configs", "value": "[]"},
        {"name": "allowed_directories", "value": "[]"},
        {"name": "allowed_paths", "value": allowed},
        {"name": "autoinstall_known_extensions", "value": "false"},
        {"name": "autoload_known_extensions", "value": "false"},
        {"name": "enable_external_access", "value": "false"},
        {"name": "lock_configuration", "value": "true"},
        {"name": "python_enable_replacements", "value": "false"},
        {"name": "temp_directory", "value": ""},
    ]


def test_the_views_read_the_stored_files_through_the_lockdown(
    runner: CliRunner, ingested: Path
) -> None:
    """The views work although the connection may read no other file."""
    sql = "SELECT dataset, count(*) AS ratings FROM ratings_wide GROUP BY ALL ORDER BY ALL"
    result = run_sql(runner, ingested, sql, dataset="all")
    assert result.exit_code == 0, result.output
    assert result.stdout == "dataset,ratings\n350,43050\n990,72103\n"
    assert result.stderr == ""


def test_a_select_cannot_change_the_files_the_views_read(runner: CliRunner, ingested: Path) -> None:
    """The views read the stored files' paths from a variable the session sets; a SELECT
    may read it, never set it (`query()` runs only a SELECT)."""
    sql = "SELECT * FROM query('SET VARIABLE dices_stored_files = {''ratings_350'': ''x''}')"
    result = run_sql(runner, ingested, sql)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: the query failed: Parser Error: Expected a single SELECT statement"
    )


def test_every_view_is_there(runner: CliRunner, ingested: Path) -> None:
    sql = (
        "SELECT (SELECT count(*) FROM items) AS items, (SELECT count(*) FROM raters) AS raters, "
        "(SELECT count(*) FROM ratings) AS ratings, "
        "(SELECT count(*) FROM ratings_wide) AS ratings_wide, "
        "(SELECT count(*) FROM published_removed) AS published_removed"
    )
    result = run_sql(runner, ingested, sql, dataset="all")
    assert result.exit_code == 0, result.output
    removed = len(PUBLISHED_REMOVED["350"]) + len(PUBLISHED_REMOVED["990"])
    expected = f"{350 + 990},{123 + 173},{43_050 + 72_103},{43_050 + 72_103},{removed}"
    assert result.stdout.splitlines() == [
        "items,raters,ratings,ratings_wide,published_removed",
        expected,
    ]


def test_a_select_with_a_cte_and_a_trailing_semicolon(runner: CliRunner, ingested: Path) -> None:
    sql = (
        "WITH yes AS (SELECT * FROM ratings WHERE Q_overall = 'Yes') "
        "SELECT dataset, count(*) AS n FROM yes GROUP BY ALL ORDER BY ALL;"
    )
    result = run_sql(runner, ingested, sql, "-d", "350")
    assert result.exit_code == 0, result.output
    assert result.stdout == "dataset,n\n350,14064\n"


def test_timestamps_come_out_in_utc(runner: CliRunner, ingested: Path) -> None:
    sql = "SELECT id, answer_timestamp FROM ratings WHERE dataset = '350' ORDER BY id LIMIT 2"
    result = run_sql(runner, ingested, sql, "-f", "jsonl")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == [0, 1]
    for line in lines:
        assert line["answer_timestamp"].endswith("+00:00")
        assert len(line["answer_timestamp"]) == len("2022-12-09T10:54:27+00:00")


def test_rater_selection_applies(runner: CliRunner, ingested: Path) -> None:
    sql = (
        "SELECT dataset, count(DISTINCT rater_id) AS raters FROM ratings GROUP BY ALL ORDER BY ALL"
    )
    result = run_sql(runner, ingested, sql, "--exclude-removed", dataset="all")
    assert result.exit_code == 0, result.output
    assert result.stdout == "dataset,raters\n350,104\n990,161\n"
    removed = sorted(PUBLISHED_REMOVED["350"])[:2]
    result = runner.invoke(
        app,
        ["sql", sql, "--data", str(ingested), "--raters", "-"],
        input="\n".join(map(str, removed)),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "dataset,raters\n350,2\n"
    assert result.stderr == ""


def test_a_sql_error_is_reported(runner: CliRunner, ingested: Path) -> None:
    result = run_sql(runner, ingested, "SELECT no_such_column FROM ratings")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the query failed: Binder Error: ")
    assert "no_such_column" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_parse_error_is_reported(runner: CliRunner, ingested: Path) -> None:
    result = run_sql(runner, ingested, "SELEC 1")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the SQL does not parse: Parser Error: ")


def test_nothing_ingested(runner: CliRunner, tmp_path: Path) -> None:
    result = run_sql(runner, tmp_path, "SELECT 1")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: nothing is ingested in {tmp_path}; "
        f"run `dices ingest FILE --data {tmp_path}` first\n"
    )


def test_a_long_query_is_stopped(runner: CliRunner, ingested: Path) -> None:
    sql = "SELECT sum(a.range * b.range) FROM range(100000000) a, range(100000000) b"
    start = time.perf_counter()
    result = run_sql(runner, ingested, sql, "--timeout", "0.5", "-d", "350")
    elapsed = time.perf_counter() - start
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: the query ran longer than 0.5 s and was stopped\n"
    assert elapsed < 15  # the query itself would take hours


@pytest.mark.parametrize("message", ["interrupt me", "INTERRUPT Error: Interrupted!"])
def test_an_error_that_says_interrupt_is_not_a_timeout(
    message: str, runner: CliRunner, ingested: Path
) -> None:
    """Only our timer's interrupt is a timeout; any other error is reported as DuckDB gave it."""
    result = run_sql(runner, ingested, f"SELECT error('{message}')", "--timeout", "30")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: the query failed: Invalid Input Error: {message}\n"


def test_a_quick_query_is_not_stopped(runner: CliRunner, ingested: Path) -> None:
    result = run_sql(runner, ingested, "SELECT 42 AS answer", "--timeout", "0.5", "-d", "990")
    assert result.exit_code == 0, result.output
    assert result.stdout == "answer\n42\n"


def test_a_timeout_below_the_minimum_is_a_usage_error(runner: CliRunner, ingested: Path) -> None:
    result = run_sql(runner, ingested, "SELECT 1", "--timeout", "0.05")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Invalid value for '--timeout'" in result.stderr
    assert "0.1" in result.stderr  # the wording of the range differs between Typer versions
    assert "bug in dices" not in result.stderr
