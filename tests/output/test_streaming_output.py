"""`dices sql` writes its result as Arrow batches, as the query produces them (issue 11).

The bytes are those of the `Table` path that every other command uses; Parquet keeps
DuckDB's types; a reader that leaves early (`| head`) ends the run at once and quietly;
the time limit holds while the result is being written.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.errors import DicesError
from dices_cli.output import (
    BATCH_ROWS,
    SMALL_CELLS,
    Format,
    Stream,
    Table,
    table_from_rows,
    write_result,
    write_table,
)
from dices_cli.queries.engine import PLAIN_TYPES, Session, open_session
from dices_cli.store.datasets import Store
from tests.conftest import memory_cap

MACHINE_TEXT = [Format.CSV, Format.TSV, Format.JSON, Format.JSONL]
# Every kind of value the views hold, and some that only a query makes.
MIXED = """
    SELECT id, rater_id, Q_overall, {times}granular_answers, harm_tags,
           safety_gold_reasons, context, rater_raw_race,
           answer_time_ms / 7 AS a_float, id % 3 = 0 AS a_bool, NULL AS nothing,
           CASE WHEN id % 2 = 0 THEN 'a "quoted", line' || chr(10) || 'feed' END AS awkward,
           {'n': id, 'tags': harm_tags} AS a_struct, DATE '2024-02-29' AS a_date,
           sum(id) OVER () AS a_hugeint
    FROM ratings_wide WHERE dataset = '350' ORDER BY id LIMIT {rows}
"""


def mixed(rows: int, zoned: bool) -> str:
    """MIXED with `rows` rows, with or without its zoned times (answer_timestamp)."""
    times = "answer_timestamp, " if zoned else ""
    return MIXED.replace("{rows}", str(rows)).replace("{times}", times)


# How `Output.write` writes each: a small answer (300 rows x 15 columns: 4,500 cells, within
# `output.SMALL_CELLS`) through Python; a large one (3,000 rows), and any with zoned times
# (which Arrow would convert to Python through pandas), through Arrow (`arrow_text`).
STATEMENTS = {
    "small": mixed(300, zoned=False),
    "large": mixed(3_000, zoned=False),
    "small, zoned times": mixed(300, zoned=True),
}


def table_path_bytes(data: Path, statement: str, fmt: Format) -> bytes:
    """What the `Table` path writes for `statement`: rows as Python values."""
    handle = io.BytesIO()
    write_table(open_session(Store(data), "350").execute(statement), fmt, handle)
    return handle.getvalue()


@pytest.mark.parametrize("statement", STATEMENTS.values(), ids=STATEMENTS.keys())
@pytest.mark.parametrize("fmt", MACHINE_TEXT)
def test_sql_writes_the_bytes_of_the_table_path(
    fmt: Format, statement: str, runner: CliRunner, sample: Path
) -> None:
    args = ["sql", statement, "--data", str(sample), "-d", "350", "-f", fmt]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = table_path_bytes(sample, statement, fmt)
    assert result.stdout_bytes == expected
    rows = int(statement.split()[-1])
    assert expected.count(b"Q_overall") == (rows if fmt in (Format.JSON, Format.JSONL) else 1)


# `dices ARGS` in a fresh interpreter, which then says whether it imported pandas and
# pyarrow.compute.
WITH_IMPORTS_SAID = """
import sys
from dices_cli.cli.main import app
try:
    app(sys.argv[1:], prog_name="dices")
except SystemExit as done:
    code = done.code
sys.stdout.flush()
for name in ("pandas", "pyarrow.compute"):
    sys.stderr.write(f"{name} was imported\\n" if name in sys.modules else "")
sys.exit(code)
"""
ARROW_TEXT = b"pyarrow.compute was imported\n"


@pytest.mark.parametrize(
    ("statement", "imported"),
    [
        (STATEMENTS["small"], b""),
        (STATEMENTS["large"], ARROW_TEXT),
        (STATEMENTS["small, zoned times"], ARROW_TEXT),
    ],
    ids=STATEMENTS.keys(),
)
def test_sql_writes_csv_without_importing_pandas(
    statement: str, imported: bytes, sample: Path
) -> None:
    """Arrow imports pandas when it converts a Python value (0.3-0.6 s of CPU before the
    first rows): every kind of column is written without such a conversion. A small answer
    is written through Python, without pyarrow.compute either (30-40 ms to import)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    args = ["sql", statement, "--data", str(sample), "-d", "350", "-f", "csv"]
    done = subprocess.run(
        [sys.executable, "-c", WITH_IMPORTS_SAID, *args],
        capture_output=True,
        env=environment,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, imported)
    assert done.stdout == table_path_bytes(sample, statement, Format.CSV)


@pytest.fixture
def sample_copy(sample: Path, tmp_path: Path) -> Path:
    """A private copy of `sample` that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


def test_sql_reads_only_the_stored_files_its_statement_names(
    sample_copy: Path, runner: CliRunner
) -> None:
    """A damaged page of ratings.parquet does not stop a statement over items; one that
    reads it is refused with the file named, as a damaged file is everywhere."""
    ratings = (sample_copy / "350").resolve() / "ratings.parquet"
    content = bytearray(ratings.read_bytes())
    middle = len(content) // 2
    content[middle : middle + 4096] = bytes(4096)  # same size: only decoding finds it
    ratings.write_bytes(bytes(content))
    args = ["--data", str(sample_copy), "-d", "350", "-f", "csv"]

    result = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM items", *args])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "n\n40\n", "")

    # Every column's values (a count alone is read from the file's metadata).
    every_value = "SELECT max(COLUMNS(*)::VARCHAR) FROM ratings"
    result = runner.invoke(app, ["sql", every_value, *args])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: DICES-350: {ratings} cannot be read (ZSTD Decompression failure); "
        "ingest the dataset again (`dices ingest FILE --force`)\n"
    )


cell_text = st.one_of(st.none(), st.text(alphabet=st.sampled_from('ab,\t"\n\r\\é\x01 ')))


@given(
    texts=st.lists(cell_text, min_size=1, max_size=8),
    numbers=st.lists(st.one_of(st.none(), st.floats(), st.integers(-(2**63), 2**63 - 1))),
    fmt=st.sampled_from(MACHINE_TEXT),
)
def test_a_stream_is_written_as_its_rows_are(
    texts: list[str | None], numbers: list[float | int | None], fmt: Format
) -> None:
    """Any strings (quotes, delimiters, line breaks, escapes), lists of them, ENUMs,
    floats, integers and nulls: a stream's bytes are its rows' bytes."""
    floats = [float(n) if n is not None else None for n in numbers[: len(texts)]]
    floats += [None] * (len(texts) - len(floats))
    columns = {
        "text": pa.array(texts, pa.string()),
        "enum": pa.array(texts, pa.string()).dictionary_encode(),
        "list": pa.array([[t, t] if t is not None else None for t in texts]),
        "float": pa.array(floats, pa.float64()),
    }
    for names in (["text"], ["enum"], list(columns)):  # one column, too: `""` for an empty row
        batch = pa.record_batch([columns[n] for n in names], names=names)
        rows = list(zip(*(c.to_pylist() for c in batch.columns), strict=True))
        expected, written = io.BytesIO(), io.BytesIO()
        write_table(table_from_rows(names, rows), fmt, expected)
        # The same rows in two batches: each batch is written where the one before ended.
        halves = [batch.slice(0, len(texts) // 2), batch.slice(len(texts) // 2)]
        write_result(Stream(batch.schema, iter(halves)), fmt, written)
        assert written.getvalue() == expected.getvalue()


# A column of each type whose values DuckDB gives Python itself (`engine.PLAIN_TYPES`), with
# the Python values it may hold.
PLAIN_COLUMNS: dict[str, st.SearchStrategy[object]] = {
    "BOOLEAN": st.booleans(),
    "TINYINT": st.integers(-(2**7), 2**7 - 1),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1),
    "INTEGER": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "UTINYINT": st.integers(0, 2**8 - 1),
    "USMALLINT": st.integers(0, 2**16 - 1),
    "UINTEGER": st.integers(0, 2**32 - 1),
    "UBIGINT": st.integers(0, 2**64 - 1),
    "FLOAT": st.floats(width=32),
    "DOUBLE": st.floats(),
    "DECIMAL(18,3)": st.decimals(-(10**14), 10**14, places=3),
    "VARCHAR": st.text(st.characters(exclude_categories=["Cs"])),
    "ENUM('No', 'Yes', 'Unsure')": st.sampled_from(["No", "Yes", "Unsure"]),
}


def test_the_plain_types_are_those_tested() -> None:
    kinds = {duckdb.sql(f"SELECT NULL::{kind} AS c").types[0].id for kind in PLAIN_COLUMNS}
    assert kinds == PLAIN_TYPES


@given(
    rows=st.lists(
        st.tuples(*(st.one_of(st.none(), values) for values in PLAIN_COLUMNS.values())),
        max_size=4,
    ),
    fmt=st.sampled_from(MACHINE_TEXT),
)
def test_a_small_answer_fetched_by_duckdb_is_written_as_arrow_would(
    rows: list[tuple[object, ...]], fmt: Format, session: Session
) -> None:
    """`Session.small_or_stream` gives a small answer as DuckDB's Python values: written,
    they are the bytes of the same answer as an Arrow stream."""
    names = [f"c{i}" for i in range(len(PLAIN_COLUMNS))]
    columns = ", ".join(f"{name} {kind}" for name, kind in zip(names, PLAIN_COLUMNS, strict=True))
    session.con.execute(f"CREATE OR REPLACE TEMP TABLE t ({columns})")
    if rows:
        session.con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(names))})", rows)
    statement = "SELECT * FROM t ORDER BY ALL"
    small, streamed = io.BytesIO(), io.BytesIO()
    table = session.small_or_stream(statement, SMALL_CELLS)
    assert isinstance(table, Table)
    write_result(table, fmt, small)
    write_result(session.stream(statement), fmt, streamed)
    assert small.getvalue() == streamed.getvalue()


def test_an_answer_over_the_cells_given_or_of_other_types_is_a_stream(session: Session) -> None:
    two_by_two = "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(n, s) ORDER BY n"
    assert isinstance(session.small_or_stream(two_by_two, 4), Table)
    assert isinstance(session.small_or_stream(two_by_two, 3), Stream)
    assert isinstance(session.small_or_stream("SELECT [1, 2] AS a_list", 4), Stream)
    # DuckDB gives Python an infinite date as 9999-12-31: a date comes through Arrow.
    assert isinstance(session.small_or_stream("SELECT 'infinity'::DATE AS d", 4), Stream)
    with pytest.raises(DicesError, match=r"^the query failed: Binder Error"):
        session.small_or_stream("SELECT nothing", 4)


@pytest.fixture(scope="module")
def session(sample: Path) -> Session:
    return open_session(Store(sample), "350")


def test_parquet_keeps_duckdb_types(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    target = tmp_path / "ratings.parquet"
    statement = "SELECT * FROM ratings ORDER BY dataset, id"
    result = runner.invoke(app, ["sql", statement, "--data", str(sample), "-o", str(target)])
    assert result.exit_code == 0, result.output
    written = pq.read_table(target)
    schema = written.schema
    assert schema.field("Q_overall").type == pa.dictionary(pa.uint8(), pa.string())
    assert schema.field("answer_timestamp").type == pa.timestamp("us", tz="Etc/UTC")
    assert schema.field("granular_answers").type == pa.list_(
        pa.field("l", pa.dictionary(pa.uint8(), pa.string()))
    )
    # The reference: the same rows (dataset and id are a key) as Python values, of only the
    # columns compared, which spares converting the other columns of every row.
    names = ("Q_overall", "answer_timestamp", "granular_answers")
    session = open_session(Store(sample), "all")
    expected = session.execute(statement.replace("*", ", ".join(names)))
    assert written.num_rows == len(expected.rows) == 4_920 + 5_855
    for name in names:
        index = expected.columns.index(name)
        assert written.column(name).to_pylist() == [row[index] for row in expected.rows]
    assert set(written.column("Q_overall").to_pylist()) == {"No", "Yes", "Unsure"}


def test_a_reader_that_leaves_ends_the_run_quietly(ingested: Path) -> None:
    """`dices sql ... | head -c 100`: the first bytes arrive, and the run ends at once with
    exit 0 and nothing on stderr, without writing (or computing) the rest."""
    command = [sys.executable, "-m", "dices_cli", "sql", "SELECT * FROM ratings_wide"]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    start = time.perf_counter()
    with memory_cap():  # the process's: a `sql` statement runs under a time limit
        process = subprocess.Popen(
            [*command, "--data", str(ingested), "-f", "csv"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
        )
    assert process.stdout is not None
    first = process.stdout.read(100)
    process.stdout.close()
    _, errors = process.communicate(timeout=60)
    elapsed = time.perf_counter() - start
    assert first.startswith(b"dataset,id,rater_id,item_id,")
    assert process.returncode == 0
    assert errors == b""
    assert elapsed < 10  # writing all 115,153 rows the old way took 24 s


@pytest.mark.slow  # a query kept busy until its time limit stops it
def test_the_time_limit_holds_while_the_result_is_written(runner: CliRunner, sample: Path) -> None:
    """Rows keep coming, and are written as they come, until the limit stops the query.
    Under a memory cap (the runner's, for a run with --timeout): a limit that fails to stop
    the query must fail this test, not fill the machine's memory. The limit leaves a loaded
    machine the time to import Arrow and write the first batches."""
    endless = "SELECT range AS n FROM range(1000000000000000) WHERE hash(range) % 100 = 0"
    args = ["sql", endless, "--data", str(sample), "-d", "350", "-f", "csv"]
    result = runner.invoke(app, [*args, "--timeout", "5"])
    assert result.exit_code == 1
    assert result.stderr == "Error: the query ran longer than 5 s and was stopped\n"
    lines = result.stdout.splitlines()
    assert lines[0] == "n"
    assert len(lines) > 1 + BATCH_ROWS  # more than the first batch: stopped while being written


def test_a_stream_drawn_as_a_table_shows_its_first_rows(
    runner: CliRunner, sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dices_cli.cli.render.TABLE_ROWS", 3)
    args = ["sql", "SELECT range AS n FROM range(10)", "--data", str(sample), "-d", "350"]
    result = runner.invoke(app, [*args, "-f", "table"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["sql", "n", "─", "0", "1", "2"]
    assert result.stderr == "... only the first 3 rows shown: use --format csv to see all\n"


def test_duckdb_draws_no_progress_bar_into_the_output() -> None:
    """DuckDB draws a progress bar on stdout (into a file or a pipe too, a `\\r` first) once
    a query has run 2 s, as one may under load: off in every session dices opens."""
    from dices_cli.queries.engine import connect

    with connect() as con:
        setting = "SELECT current_setting('enable_progress_bar')"
        assert con.execute(setting).fetchall() == [(False,)]
