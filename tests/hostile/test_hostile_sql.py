"""Hostile input against the SQL layer: every one is refused with a clear error or treated
as a plain value, and none touches the file system.

tests/queries/test_sql_sandbox.py covers the basic `dices sql` lockdown (writes, COPY, ATTACH,
INSTALL/LOAD, SET, PRAGMA, the file-reading functions, several statements, --timeout);
this file adds what it does not: other statement kinds and disguises, URL and extension
table functions, statements hidden inside functions, never-ending recursion, and above
all hostile values in the parameters of the canned queries (--by, --rule, --threshold,
--question, --unsure, --raters and its file, the query name, the --data path).

Every test runs in a directory that holds only a canary file; a statement that wrote
anything (a relative path lands there) or changed the canary fails the test. Each `dices
sql` statement runs twice, with a `.tmp` (DuckDB's default temporary directory) next to
the canary holding canary files of its own, once as a directory and once as a symlink to
a directory elsewhere; no output may show them (see test_sandbox_tempdir.py).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from drivers.datadir import subset
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.errors import UsageError
from dices_cli.output import collect
from dices_cli.queries.catalog import GROUP_COLUMNS
from dices_cli.queries.sandbox import MAX_TABLE_COLUMNS, MEMORY_LIMIT, run_sql
from dices_cli.read.lines import header_fields
from dices_cli.store.datasets import Store
from tests.conftest import memory_cap
from tests.hostile.test_bounded_input import FIXED_MEMORY, run_capped, run_capped_each
from tests.queries.test_sandbox_tempdir import DISABLED, LAYOUTS, assert_no_canary, planted_temp

pytestmark = pytest.mark.slow  # a hostile corpus

CANARY_TEXT = "rater_id\n296708581782793\n"
READ_ONLY = "dices sql is read-only"
EVIL_WRITE = "COPY (SELECT 1) TO 'pwned.csv'"
QUOTED_WRITE = EVIL_WRITE.replace("'", "''")  # inside an SQL string literal


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding only canary.csv, made the working directory."""
    directory = tmp_path / "canary"
    directory.mkdir()
    path = directory / "canary.csv"
    path.write_text(CANARY_TEXT, encoding="utf-8")
    monkeypatch.chdir(directory)
    duckdb_home = _duckdb_home()
    yield path
    assert path.read_text(encoding="utf-8") == CANARY_TEXT
    assert sorted(p.name for p in directory.iterdir()) == ["canary.csv"]
    assert _duckdb_home() == duckdb_home  # no extension installed, no secret stored


@pytest.fixture(params=LAYOUTS)
def temp_canary(
    request: pytest.FixtureRequest, canary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A `.tmp` holding canary files next to the canary, in the working directory."""
    elsewhere = tmp_path / "elsewhere"
    with planted_temp(request.param, canary.parent, elsewhere, monkeypatch) as directory:
        yield directory


def _duckdb_home() -> list[str]:
    home = Path.home() / ".duckdb"
    return sorted(str(p) for p in home.rglob("*")) if home.is_dir() else []


def unboxed(text: str) -> str:
    """Typer's usage errors come in a box that wraps lines: the words alone."""
    return " ".join(text.replace("│", " ").replace("╭", " ").replace("╰", " ").split())


def sql(runner: CliRunner, data: Path, statement: str, *options: str) -> Result:
    result = runner.invoke(app, ["sql", statement, "--data", str(data), "-d", "350", *options])
    assert_no_canary(result)
    return result


def assert_not_a_choice(
    result: Result, option: str, value: str, choices: Sequence[str] | None
) -> None:
    """Refused by Click (from the query's .sql header) before any SQL: exit 2, the value
    named, and the allowed ones (unless `choices` is None: too long to read back whole from
    the box, which folds long names)."""
    assert (result.exit_code, result.stdout) == (2, "")
    allowed = "" if choices is None else ", ".join(map(repr, choices)) + "."
    assert f"Invalid value for '{option}': {value!r} is not one of {allowed}" in unboxed(
        result.stderr
    )


def query(runner: CliRunner, data: Path, *arguments: str, stdin: str | None = None) -> Result:
    return runner.invoke(app, ["query", *arguments, "--data", str(data)], input=stdin)


# --- dices sql: statement kinds and disguises not in test_sql_sandbox.py ---------------

REFUSED = [
    ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN"),
    ("CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')", "CREATE"),
    ("CREATE TEMP TABLE t AS SELECT 1", "CREATE"),
    ("CREATE VIEW v AS SELECT * FROM read_csv('{canary}')", "CREATE"),
    ("CREATE OR REPLACE FUNCTION f() AS 1", "CREATE"),
    ("USE memory", "SET"),
    ("SET GLOBAL enable_external_access = true", "SET"),
    ("SET memory_limit = '100GB'", "SET"),
    ("SET VARIABLE x = 1", "SET"),
    ("SET profiling_output = '{dir}/profile.json'", "SET"),
    ("PRAGMA profile_output = '{dir}/profile.json'", "SET"),
    ("BEGIN TRANSACTION", "TRANSACTION"),
    ("PIVOT ratings ON Q_overall USING count(*) GROUP BY dataset", "MULTI"),
    ("/* only a comment */ COPY (SELECT 1) TO '{canary}'", "COPY"),
    ("copy (select 1) to '{dir}/new.csv'", "COPY"),
    ("COPY FROM DATABASE memory TO other", "PRAGMA"),
    ("IMPORT DATABASE '{dir}'", "PRAGMA"),
    ("INSTALL httpfs FROM 'http://example.com'", "LOAD"),
    ("FORCE INSTALL '{dir}/evil.duckdb_extension'", "LOAD"),
    ("LOAD '{dir}/evil.duckdb_extension'", "LOAD"),
    ("UPDATE EXTENSIONS", "UPDATE"),
    ("ATTACH '{canary}' AS c (TYPE sqlite)", "ATTACH"),
    ("ATTACH ':memory:' AS scratch", "ATTACH"),
    ("DETACH DATABASE memory", "DETACH"),
    (
        "MERGE INTO published_removed USING (SELECT 1 AS a) s ON true WHEN MATCHED THEN DELETE",
        "MERGE_INTO",
    ),
    ("TRUNCATE published_removed", "DELETE"),
    ("COMMENT ON TABLE published_removed IS 'x'", "ALTER"),
    ("DROP SECRET s", "DROP"),
    ("ANALYZE", "VACUUM"),
]


@pytest.mark.parametrize(("statement", "kind"), REFUSED)
@pytest.mark.usefixtures("temp_canary")
def test_other_statements_are_refused(
    statement: str, kind: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, statement.format(canary=canary, dir=canary.parent))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: only SELECT is allowed here, not {kind}; {READ_ONLY}\n"


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 1 -- harmless\n; COPY (SELECT 1) TO '{canary}'",
        "SELECT 1;/* */COPY (SELECT 1) TO '{canary}'",
        "SELECT 1;\nLOAD httpfs",
        "WITH x AS (SELECT 1) SELECT * FROM x; ATTACH '{dir}/new.duckdb'",
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_a_second_statement_behind_a_comment_is_refused(
    statement: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, statement.format(canary=canary, dir=canary.parent))
    assert result.exit_code == 1
    assert result.stderr == "Error: give exactly one statement (got 2)\n"


@pytest.mark.parametrize(
    ("statement", "output"),
    [
        (f"SELECT '; {QUOTED_WRITE}' AS s", f"s\n; {EVIL_WRITE}\n"),
        (f"SELECT 1 AS x /* ; {EVIL_WRITE} */", "x\n1\n"),
        (f"SELECT 1 AS x -- ; {EVIL_WRITE}", "x\n1\n"),
        (f'SELECT 1 AS "; {EVIL_WRITE}"', f"; {EVIL_WRITE}\n1\n"),
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_a_statement_in_a_string_or_comment_is_only_text(
    statement: str, output: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, statement)
    assert result.exit_code == 0, result.output
    assert result.stdout == output


@pytest.mark.parametrize(
    "function",
    [
        "read_csv('https://example.com/ratings.csv')",
        "read_parquet('s3://bucket/ratings.parquet')",
        "read_json('http://127.0.0.1:9/x.json')",
        "'https://example.com/ratings.csv'",
        "read_text('file:///etc/passwd')",
        "read_json_auto('/proc/self/environ')",
        "sniff_csv('{canary}')",
        "read_ndjson_objects('{canary}')",
        "read_csv(['{canary}', '/etc/passwd'])",
        "glob('~/*')",
        "query('SELECT * FROM read_text(''{canary}'')')",
        "duckdb_extensions()",
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_urls_and_other_file_readers_are_refused(
    function: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, "SELECT * FROM " + function.format(canary=canary))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: the query failed: Permission Error: ")
    assert DISABLED in result.stderr
    assert "296708581782793" not in result.stderr


@pytest.mark.usefixtures("temp_canary")
def test_a_statement_hidden_in_query_is_refused(
    runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, f"SELECT * FROM query('COPY (SELECT 1) TO ''{canary}''')")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: the query failed: Parser Error: Expected a single SELECT statement"
    )


@pytest.mark.parametrize(
    ("function", "extension"),
    [
        ("read_xlsx('{canary}')", "excel"),
        ("st_read('{canary}')", "spatial"),
        ("sqlite_scan('{canary}', 't')", "sqlite_scanner"),
        ("iceberg_scan('{dir}')", "iceberg"),
        ("delta_scan('{dir}')", "delta"),
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_extension_functions_are_not_loaded(
    function: str, extension: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    name = function.split("(")[0]
    statement = "SELECT * FROM " + function.format(canary=canary, dir=canary.parent)
    result = sql(runner, ingested, statement)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f'Error: the query failed: Catalog Error: Table Function with name "{name}" is not in '
        f"the catalog, but it exists in the {extension} extension."
    )


@pytest.mark.parametrize(
    "statement",
    [
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
        "SELECT count(*) FROM ratings a, ratings b, ratings c WHERE a.id + b.id = c.id - 1",
    ],
)
@pytest.mark.usefixtures("temp_canary")
def test_a_statement_that_never_ends_is_interrupted(
    statement: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, statement, "--timeout", "0.5")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: the query ran longer than 0.5 s and was stopped\n"


def test_an_infinite_timeout_means_no_limit(ingested: Path, canary: Path) -> None:
    """A process of its own: the timer runs in a thread whose errors go to the real stderr."""
    command = [sys.executable, "-m", "dices_cli", "sql", "SELECT 42 AS answer"]
    with memory_cap():
        result = subprocess.run(
            [*command, "--timeout", "inf", "--data", str(ingested), "-d", "350"],
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "answer\n42\n"
    assert result.stderr == ""


@pytest.mark.parametrize("value", ["1; DROP VIEW items", "-1", "0.05", "nan"])
def test_a_timeout_that_is_not_a_number_of_seconds_is_a_usage_error(
    value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = sql(runner, ingested, "SELECT 1", "--timeout", value)
    assert result.exit_code == 2
    assert result.stdout == ""
    words = unboxed(result.stderr)
    # Typer refuses it, or (NaN, which some Typer versions let through) dices does.
    assert "Invalid value for '--timeout'" in words or words == (
        f"Error: --timeout must be at least 0.1 s (got {value}) Try 'dices sql -h' for help."
    )


# One call DuckDB does not interrupt: `--timeout 5` ran 28.6 s and 3 GB.
STUCK_CALL = "SELECT md5(repeat('a', 1500000000)) AS h"
ENDLESS_ROWS = "SELECT range AS n FROM range(1000000000000000) WHERE hash(range) % 100 = 0"
# dices, its stream started after the time limit has passed: DuckDB forgets an interrupt
# that comes while it runs nothing (the runaway test process of 18.5 GB).
LATE_STREAM = """
import time
from dices_cli.queries import engine
stream = engine.Session.stream
def late(self, *args, **kwargs):
    time.sleep(1.5)
    return stream(self, *args, **kwargs)
engine.Session.stream = late
from dices_cli.cli.main import run; run()
"""


def test_one_call_duckdb_cannot_interrupt_is_stopped_after_the_time_limit(
    ingested: Path, canary: Path
) -> None:
    """The process ends `STOP_GRACE` after the limit, in the time limit's words, before the
    call has written its 1.5 GB string. (DuckDB reserves the string's 2 GiB at once: under a
    cap below that, it fails at once with its Out of Memory error.)"""
    args = ["sql", STUCK_CALL, "--timeout", "1", "--data", str(ingested), "-d", "350"]
    code, stderr, peak = run_capped(args, cap=4 << 30, cpu=120)
    assert (code, stderr) == (1, "Error: the query ran longer than 1 s and was stopped\n")
    # How far the call gets before the stop depends on the machine's load; whatever it is,
    # the process never holds the whole string twice (it did, running on, without the stop).
    assert peak < 2 << 30


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_interrupt_duckdb_forgets_still_stops_the_query(
    fmt: str, ingested: Path, canary: Path
) -> None:
    """Its time limit past before the stream starts, an endless query stops at its first
    batch (it ran until the CPU cap killed it)."""
    args = ["sql", ENDLESS_ROWS, "--timeout", "0.5", "--data", str(ingested), "-d", "350"]
    code, stderr, _ = run_capped([*args, "-f", fmt], cpu=60, entry=LATE_STREAM)
    assert (code, stderr) == (1, "Error: the query ran longer than 0.5 s and was stopped\n")


def test_a_query_under_a_time_limit_gets_a_memory_limit(ingested: Path) -> None:
    """DuckDB's memory for a statement of `dices sql` is capped (its default: 80% of RAM)."""
    with run_sql(Store(ingested), "350", "SELECT current_setting('memory_limit') AS m") as result:
        assert collect(result).rows == [(MEMORY_LIMIT.replace("GiB", ".0 GiB"),)]


def test_a_nan_timeout_is_refused_by_the_core(ingested: Path, canary: Path) -> None:
    """NaN would make the timer fire at once, before the query starts: no limit at all."""
    with pytest.raises(UsageError) as refused:
        run_sql(Store(ingested), "350", "SELECT 1", timeout=float("nan"))
    assert str(refused.value) == "timeout must be at least 0.1 s (got nan)"  # no flag named


# --- canned queries: hostile parameter values -------------------------------------------

HOSTILE = [
    "rater_gender; DROP TABLE x",
    "x') OR 1=1 --",
    "rater_gender\" FROM ratings; COPY (SELECT 1) TO 'pwned.csv'; --",
    "rater_gender') TO 'pwned.csv' (FORMAT csv); --",
    "*",
    "rater_gender, rater_race",
    "",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(
    "name", ["qoverall-by-demographic", "agreement", "gold-vs-crowd", "degree-of-harm"]
)
def test_a_hostile_by_is_refused(
    name: str, value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, name, "--by", "rater_gender", "--by", value)
    assert_not_a_choice(result, "--by", value, GROUP_COLUMNS)


@pytest.mark.parametrize("value", ["Q_overall", "rater_id", "context"])
def test_a_column_that_is_not_a_group_is_refused_as_by(
    value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, "qoverall-by-demographic", "--by", value)
    assert_not_a_choice(result, "--by", value, GROUP_COLUMNS)


@pytest.mark.parametrize("value", [*HOSTILE, "PLURALITY", "threshold "])
def test_a_hostile_rule_is_refused(
    value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, "gold-vs-crowd", "--rule", value)
    assert_not_a_choice(result, "--rule", value, ["plurality", "threshold"])


@pytest.mark.parametrize(
    "value", ["Q_overall') TO 'pwned.csv'", "Q_overall; DROP TABLE x", "rater_id", "context", "*"]
)
def test_a_hostile_question_is_refused(
    value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    """--question picks a column in the SQL (COLUMNS(lambda c: c = $question)): only answer
    columns are accepted, so no other column, let alone SQL, gets there."""
    result = query(runner, ingested, "agreement", "--question", value, "--permutations", "0")
    assert_not_a_choice(result, "--question", value, None)


@pytest.mark.parametrize("value", ["missing; DROP TABLE x", "category' OR '1'='1"])
def test_a_hostile_unsure_is_refused(
    value: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, "agreement", "--unsure", value)
    assert_not_a_choice(result, "--unsure", value, ["category", "missing"])


@pytest.mark.parametrize(
    ("arguments", "option"),
    [
        (
            ["gold-vs-crowd", "--rule", "threshold", "--threshold", "0.5; DROP TABLE x"],
            "--threshold",
        ),
        (["gold-vs-crowd", "--rule", "threshold", "--threshold", "0.5' OR '1'='1"], "--threshold"),
        (["agreement", "--permutations", "1; DROP TABLE x"], "--permutations"),
        (["agreement", "--seed", "0 OR 1=1"], "--seed"),
        (["overview", "--min-quality", "0.5; COPY (SELECT 1) TO 'pwned.csv'"], "--min-quality"),
        (["overview", "--dataset", "350'; --"], "--dataset"),
    ],
)
def test_a_hostile_number_or_choice_is_a_usage_error(
    arguments: list[str], option: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, *arguments)
    assert result.exit_code == 2
    assert result.stdout == ""
    said = unboxed(result.stderr)
    # Typer checks a number; the registry, a dataset's name (every choice listed)
    assert f"Invalid value for '{option}'" in said or f"{option} must be one of: " in said


@pytest.mark.parametrize("name", ["overview; DROP TABLE x", "../sql/overview", "overview.sql"])
def test_a_hostile_query_name_is_refused(
    name: str, runner: CliRunner, ingested: Path, canary: Path
) -> None:
    result = query(runner, ingested, name)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: no query {name!r}")
    assert "queries are: agreement, " in result.stderr


def test_the_threshold_is_bound_as_a_number(
    runner: CliRunner, ingested: Path, canary: Path
) -> None:
    """--show-sql shows $threshold in the SQL and the float apart: bound, not pasted."""
    arguments = ["gold-vs-crowd", "--rule", "threshold", "--threshold", "0.3", "--show-sql"]
    result = query(runner, ingested, *arguments)
    assert result.exit_code == 0, result.output
    assert "'threshold': 0.3" in result.stderr
    assert "$threshold" in result.stderr
    assert ">= 0.3" not in result.stderr


# --- --raters: hostile file content, hostile file names ---------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("1; DROP TABLE ratings\n", "line 1: '1; DROP TABLE ratings' is not a rater id"),
        ("296708581782793\n0) OR (1=1\n", "line 2: '0) OR (1=1' is not a rater id"),
        (f"296708581782793\n{EVIL_WRITE}\n", f'line 2: "{EVIL_WRITE}" is not a rater id'),
        (
            "rater_id,note\n296708581782793,ok\n\"1); COPY (SELECT 1) TO 'pwned.csv'; --\",x\n",
            "line 3: \"1); COPY (SELECT 1) TO 'pwned.csv'; --\" is not a rater id",
        ),
        (
            '"rater_id\'); DROP TABLE x; --",note\n1,x\n',
            "line 1 has columns but none is named rater_id",
        ),
        ("99999999999999999999999\n", "line 1: '99999999999999999999999' is not a rater id"),
        ("-9223372036854775809\n", "line 1: '-9223372036854775809' is not a rater id"),
    ],
)
def test_hostile_rater_files_are_refused(
    content: str, problem: str, runner: CliRunner, ingested: Path, canary: Path, tmp_path: Path
) -> None:
    path = tmp_path / "raters.txt"
    path.write_text(content, encoding="utf-8")
    result = query(runner, ingested, "overview", "--raters", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: {path}: {problem}\n"
    # The same from stdin.
    result = query(runner, ingested, "overview", "--raters", "-", stdin=content)
    assert result.exit_code == 1
    assert result.stderr == f"Error: stdin: {problem}\n"


def test_a_rater_file_with_a_hostile_name_is_read_as_a_file(
    runner: CliRunner, ingested: Path, canary: Path, tmp_path: Path
) -> None:
    path = tmp_path / f"ids'; {EVIL_WRITE}; --.txt"
    path.write_text("296708581782793\n296708603742541\n", encoding="utf-8")
    result = query(runner, ingested, "overview", "-d", "350", "--raters", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"raters: 2 raters from {path}\n"
    assert result.stdout.splitlines()[1].startswith("350,350,2,700,")
    missing = tmp_path / f"none'; {EVIL_WRITE}; --.txt"
    result = query(runner, ingested, "overview", "--raters", str(missing))
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot read --raters {missing}: No such file or directory\n"


# --- a data directory whose path looks like SQL -----------------------------------------

HOSTILE_DIR = f"d'; {EVIL_WRITE}; --\" x"


@pytest.fixture(scope="module")
def small_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("small") / "dices_350_small.csv", 40)


def test_a_data_path_that_looks_like_sql_is_only_a_path(
    runner: CliRunner, ingested: Path, small_350: Path, canary: Path, tmp_path: Path
) -> None:
    """Parquet paths go to DuckDB as values, never pasted into SQL: the same answers as
    from a plain path, and nothing written (a relative COPY would land next to the canary)."""
    hostile = tmp_path / HOSTILE_DIR
    shutil.copytree(ingested, hostile, symlinks=True)
    for arguments in (
        ["query", "overview"],
        ["query", "qoverall-by-demographic", "--by", "rater_gender"],
        ["query", "rater-quality", "-d", "990"],
        ["sql", "SELECT dataset, count(*) AS n FROM ratings_wide GROUP BY ALL ORDER BY ALL"],
    ):
        plain = runner.invoke(app, [*arguments, "--data", str(ingested)])
        odd = runner.invoke(app, [*arguments, "--data", str(hostile)])
        assert plain.exit_code == odd.exit_code == 0, odd.output
        assert odd.stdout == plain.stdout
    # Ingest into, and info about, a fresh directory with such a name.
    fresh = tmp_path / ("fresh" + HOSTILE_DIR)
    result = runner.invoke(app, ["ingest", str(small_350), "--data", str(fresh)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["info", "--data", str(fresh), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert '"ratings": 4920' in result.stdout
    result = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM ratings", "--data", str(fresh)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "n\n4920\n"


# --- very wide tables of one's own (issue 36, cause 10) ------------------------------------

WIDE = 10_000  # columns: past MAX_TABLE_COLUMNS, and took 10 s and 360 MB before the limit


def _wide_csv(separator: str) -> bytes:
    header = separator.join(f"c{i}" for i in range(WIDE))
    return f"{header}\n{separator.join('1' * WIDE)}\n".encode()


def _wide_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({f"c{i}": [1] for i in range(WIDE)}), path)


TOO_MANY = f"more than {MAX_TABLE_COLUMNS:,} columns"
HEADER = f"its header names {TOO_MANY}, the most a table of yours may have"
KEYS = f"{TOO_MANY} (keys, nested ones included), the most a table of yours may have"
WIDE_FILES = {
    "wide.csv": (_wide_csv(","), HEADER),
    "wide.tsv": (_wide_csv("\t"), HEADER),
    "keys.jsonl": (
        json.dumps({f"k{i}": 1 for i in range(WIDE)}).encode() + b"\n",
        f"line 1: the rows so far hold {KEYS}",
    ),
    "rows.jsonl": (
        b"".join(b'{"k%d": 1}\n' % i for i in range(WIDE)),
        f"line {MAX_TABLE_COLUMNS + 1}: the rows so far hold {KEYS}",
    ),
    "nested.jsonl": (
        json.dumps({"a": [{f"k{i}": 1 for i in range(WIDE)}]}).encode() + b"\n",
        f"line 1: the rows so far hold {KEYS}",
    ),
    "wide.parquet": (
        b"",
        f"it has {WIDE:,} columns, more than {MAX_TABLE_COLUMNS:,}, the most a table of yours "
        "may have",
    ),
}


def test_a_table_too_wide_is_refused_before_it_is_read(sample: Path, tmp_path: Path) -> None:
    """A 439 KB CSV of 50,000 columns took 1.2 GB and 106 s; 500,000 ran 14 minutes and died:
    the columns are counted first (a CSV's header, every key of a JSON Lines file, a Parquet
    footer), under a bound, and too many are an error naming the limit. Every kind of file
    in turn in one capped process: its peak bounds each."""
    paths = {name: tmp_path / name for name in WIDE_FILES}
    for name, path in paths.items():
        if name.endswith(".parquet"):
            _wide_parquet(path)
        else:
            path.write_bytes(WIDE_FILES[name][0])
    statement = ["sql", "SELECT count(*) AS n FROM t", "--data", str(sample)]
    commands = [[*statement, "--table", f"t={path}"] for path in paths.values()]
    ended, peak = run_capped_each(commands, cpu=120)
    for (name, path), ending in zip(paths.items(), ended, strict=True):
        said = WIDE_FILES[name][1]
        assert ending == (1, f"Error: cannot read table t from {path}: {said}\n"), name
    assert peak < FIXED_MEMORY, f"{peak >> 20} MiB"


def test_a_table_at_the_column_limit_is_read(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """MAX_TABLE_COLUMNS columns are read; a separator inside a quoted name is no column."""
    names = ['"a,b,c"', *(f"c{i}" for i in range(1, MAX_TABLE_COLUMNS))]
    path = tmp_path / "widest.csv"
    path.write_text(",".join(names) + "\n" + ",".join("1" * MAX_TABLE_COLUMNS) + "\n")
    statement = 'SELECT "a,b,c" + c4095 AS n FROM t'
    args = ["sql", statement, "--table", f"t={path}", "--data", str(sample)]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stdout) == (0, "n\n2\n"), result.output


@pytest.mark.parametrize(
    ("header", "fields"),
    [
        (b"a,b,c\n1,2,3\n", 3),
        (b'"a\nb",c\n', 2),
        (b'"a"",""b",c', 2),
        (b"\n", 1),
        (b"", 1),
        (b"a,b\r\nc,d,e\n", 2),
    ],
)
def test_header_fields_counts_the_first_record(header: bytes, fields: int) -> None:
    assert header_fields(io.BytesIO(header), b",", 10) == fields
    assert header_fields(io.BytesIO(header), b",", 1) == min(fields, 2)
