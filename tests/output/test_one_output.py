"""One output path (issue 11 §2): every command that writes results writes them through the
`Output` it builds once; canned queries whose result is SQL alone stream it, so Parquet keeps
DuckDB's types; `export` writes Parquet typed as stored; the Arrow formatting tricks write
the bytes Python writes. On the small packaged sample, not the full-size replicas.
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli import arrow_text
from dices_cli.cli.main import app
from dices_cli.output import (
    SMALL_CELLS,
    Format,
    Output,
    Stream,
    Table,
    collect,
    small_as_table,
    table_from_rows,
    text_cell,
    write_result,
    write_table,
)
from dices_cli.queries.catalog import catalog
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store

ENUM = pa.dictionary(pa.uint8(), pa.string())


class Recorded:
    """Which `Output`s were opened, and in what format; and the bytes written outside one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.formats: list[Format] = []
        self.inside = False
        opened = Output.open

        @contextlib.contextmanager
        def recording_open(output: Output) -> Iterator[BinaryIO]:
            self.formats.append(output.format)
            self.inside = True
            try:
                with opened(output) as handle:
                    yield handle
            finally:
                self.inside = False

        monkeypatch.setattr(Output, "open", recording_open)


@pytest.mark.parametrize(
    ("arguments", "fmt"),
    [
        (["query", "item-distribution", "-f", "csv"], Format.CSV),
        (["query", "agreement", "--permutations", "5", "-f", "jsonl"], Format.JSONL),
        (["query", "--list", "-f", "json"], Format.JSON),
        (["query", "gold-vs-crowd", "--explain"], Format.CSV),  # text; not a terminal: CSV
        (["sql", "SELECT * FROM raters", "-f", "tsv"], Format.TSV),
        (["sql", "--schema", "-f", "csv"], Format.CSV),
        (["info", "-f", "json"], Format.JSON),
        (["export", "-d", "350"], Format.CSV),
        (["export", "-d", "990", "-f", "jsonl"], Format.JSONL),
        (["filter-raters", "--ids-only"], Format.CSV),
        (["filter-raters", "--audit"], Format.JSON),
        (["filter-raters", "-f", "csv"], Format.CSV),
    ],
)
def test_every_command_writes_its_result_through_one_output(
    arguments: list[str], fmt: Format, sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = Recorded(monkeypatch)
    reads_data = not {"--list", "--explain"} & set(arguments)  # the catalogue needs no data
    result = CliRunner().invoke(app, [*arguments, *(["--data", str(sample)] * reads_data)])
    assert result.exit_code == 0, result.output
    assert recorded.formats == [fmt]
    assert result.stdout_bytes  # ... and what it wrote is what the command printed


def test_validate_and_ingest_rejects_write_through_one_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "bad_350.csv"
    sample = resources.files("dices_cli") / "data" / "dices_350_sample.csv.gz"
    import gzip

    lines = gzip.decompress(sample.read_bytes()).splitlines(keepends=True)
    source.write_bytes(b"".join([*lines[:5], b"not,a,row\n", *lines[5:20]]))
    recorded = Recorded(monkeypatch)
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", str(source), "-o", str(tmp_path / "p.jsonl")])
    assert checked.exit_code == 1, checked.output
    rejects = tmp_path / "rejects.csv"
    args = ["ingest", str(source), "--data", str(tmp_path / "d"), "--rejects", str(rejects)]
    ingested = runner.invoke(app, args)
    assert ingested.exit_code == 0, ingested.output
    assert recorded.formats == [Format.JSONL, Format.CSV]
    assert rejects.read_bytes().startswith(b"file,line,problems,record")


def test_a_canned_query_to_parquet_keeps_duckdb_types(
    sample: Path, tmp_path: Path, runner: CliRunner
) -> None:
    """Written from the query's Arrow batches, not Python values: ENUMs stay dictionaries
    (they were plain strings), the numbers are the CSV's."""
    target = tmp_path / "items.parquet"
    args = ["query", "item-distribution", "--data", str(sample)]
    written = runner.invoke(app, [*args, "-o", str(target)])
    assert written.exit_code == 0, written.output
    table = pq.read_table(target)
    for name in ("degree_of_harm", "safety_gold", "plurality"):
        assert table.schema.field(name).type == ENUM
    assert table.schema.field("item_id").type == pa.int64()
    as_csv = runner.invoke(app, [*args, "-f", "csv"])
    expected = io.BytesIO()
    write_table(table_from_rows(table.column_names, _rows(table)), Format.CSV, expected)
    assert as_csv.stdout_bytes == expected.getvalue()


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(column.to_pylist() for column in table.columns), strict=True))


def test_canned_queries_stream_the_bytes_of_their_rows(sample: Path) -> None:
    """Every canned query whose result is SQL alone is a bounded Stream, written as its rows
    are by the Table path; a compute step's result stays a Table."""
    session = open_session(Store(sample), "all")
    for query in catalog().values():
        parameters = {
            p.name: p.convert(["rater_gender"] if p.name == "by" else None)
            for p in query.parameters
        }
        if query.parameter("permutations"):
            parameters["permutations"] = 5
        rows = collect(session.run(query, parameters))  # a stream holds the connection
        result = session.run(query, parameters)
        assert isinstance(result, Stream) == (query.compute is None), query.name
        if not isinstance(result, Stream):
            continue
        assert result.bounded
        streamed, from_rows = io.BytesIO(), io.BytesIO()
        write_result(result, Format.CSV, streamed)
        write_table(rows, Format.CSV, from_rows)
        assert streamed.getvalue() == from_rows.getvalue(), query.name


def test_export_to_parquet_is_typed_as_stored(
    sample: Path, tmp_path: Path, runner: CliRunner
) -> None:
    target = tmp_path / "dices_350.parquet"
    result = runner.invoke(app, ["export", "-d", "350", "--data", str(sample), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stdout == result.stderr == ""
    table = pq.read_table(target)
    header = runner.invoke(app, ["export", "-d", "350", "--data", str(sample)])
    names = header.stdout.splitlines()[0].split(",")
    assert table.column_names == names  # the source file's header, in its order
    assert table.num_rows == len(list(csv.reader(io.StringIO(header.stdout)))) - 1
    assert pa.types.is_dictionary(table.schema.field("Q_overall").type)
    assert table.schema.field("rater_id").type == pa.int64()
    assert table.schema.field("answer_timestamp").type == pa.timestamp("us", tz="UTC")
    assert set(table.column("Q_overall").to_pylist()) <= {"No", "Yes", "Unsure"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-f", "table"], "export writes data: pick --format csv, tsv, json, jsonl or parquet"),
        (
            ["-f", "parquet", "--excel-safe", "-o", "{dir}/x.parquet"],
            "--excel-safe is for CSV, which spreadsheets open; leave it out",
        ),
        (
            ["-o", "{dir}/x.xlsx"],
            "-o {dir}/x.xlsx: dices does not write .xlsx files; name it .csv, .tsv, .tab, "
            ".json, .jsonl, .ndjson, .parquet, or give --format",
        ),
    ],
)
def test_export_usage_errors(
    options: list[str], message: str, sample: Path, tmp_path: Path, runner: CliRunner
) -> None:
    options = [o.format(dir=tmp_path) for o in options]
    result = runner.invoke(app, ["export", "-d", "350", "--data", str(sample), *options])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == f"Error: {message.format(dir=tmp_path)}"
    assert list(tmp_path.iterdir()) == []


def test_the_first_rows_are_written_on_their_own() -> None:
    """A reader that leaves (`| head`) is noticed after FIRST_ROWS rows, not a whole batch."""
    batch = pa.record_batch([pa.array(range(2500))], names=["n"])
    chunks = [bytes(c) for c in arrow_text.delimited(iter([batch, batch]), ",", text_cell)]
    assert [c.count(b"\n") for c in chunks] == [arrow_text.FIRST_ROWS, 1500, 2500]
    assert b"".join(chunks) == "".join(f"{n}\n" for n in [*range(2500)] * 2).encode()


enum_text = st.one_of(st.none(), st.sampled_from(["No", "Yes", 'a "q", b', "é\n", "\\x"]))
times = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
)


@given(
    lists=st.lists(st.one_of(st.none(), st.lists(enum_text, max_size=4)), min_size=1, max_size=6),
    moments=st.lists(times, min_size=6, max_size=6),
    fmt=st.sampled_from([Format.CSV, Format.TSV]),
)
def test_lists_of_enums_and_times_are_written_as_python_writes_them(
    lists: list[list[str | None] | None], moments: list[datetime | None], fmt: Format
) -> None:
    """The speed tricks (a list of ENUMs quoted through its dictionary, times cast rather
    than strftime'd) write the bytes of Python's csv module over the same values."""
    n = len(lists)
    naive = [
        m.replace(microsecond=m.microsecond if i % 2 else 0) if m else None
        for i, m in enumerate(moments[:n])
    ]
    columns = {
        "answers": pa.array(lists, pa.list_(pa.string())).cast(pa.list_(ENUM)),
        "naive": pa.array(naive, pa.timestamp("us")),
        "utc": pa.array(
            [m.replace(tzinfo=UTC) if m else None for m in naive], pa.timestamp("us", "UTC")
        ),
    }
    batch = pa.record_batch(list(columns.values()), names=list(columns))
    expected, written = io.BytesIO(), io.BytesIO()
    write_table(
        table_from_rows(list(columns), _rows(pa.Table.from_batches([batch]))), fmt, expected
    )
    write_result(
        Stream(batch.schema, iter([batch.slice(0, n // 2), batch.slice(n // 2)])), fmt, written
    )
    assert written.getvalue() == expected.getvalue()


@pytest.mark.parametrize(
    ("kind", "kept_a_stream"),
    [
        (pa.int64(), False),
        (pa.timestamp("us"), False),
        (pa.timestamp("us", tz="UTC"), True),
        (pa.list_(pa.timestamp("us", tz="Europe/Paris")), True),
        (pa.struct([("at", pa.timestamp("us", tz="UTC")), ("n", pa.int64())]), True),
    ],
)
def test_a_small_stream_is_written_as_a_table_unless_it_holds_zoned_times(
    kind: pa.DataType, kept_a_stream: bool
) -> None:
    column = pa.array([None, None], kind)
    batch = pa.record_batch([column], names=["value"])
    settled = small_as_table(Stream(batch.schema, iter([batch, batch])))
    assert isinstance(settled, Stream) == kept_a_stream
    rows = [row for b in settled.batches for row in b.to_pylist()] if kept_a_stream else []
    assert len(rows if kept_a_stream else settled.rows) == 4


@pytest.mark.parametrize(("rows", "is_table"), [(5_000, True), (5_001, False)])
def test_a_stream_of_more_cells_than_a_small_answer_stays_a_stream_of_all_its_rows(
    rows: int, is_table: bool
) -> None:
    """SMALL_CELLS is 10,000: two columns of 5,000 rows are small, of 5,001 are not."""
    assert SMALL_CELLS == 10_000
    batch = pa.record_batch([pa.array(range(rows)), pa.array(range(rows))], names=["a", "b"])
    halves = [batch.slice(0, rows // 2), batch.slice(rows // 2)]
    settled = small_as_table(Stream(batch.schema, iter(halves)))
    assert isinstance(settled, Table) == is_table
    if isinstance(settled, Table):
        assert settled.rows == list(zip(range(rows), range(rows), strict=True))
    else:
        assert [b.num_rows for b in settled.batches] == [rows // 2, rows - rows // 2]
