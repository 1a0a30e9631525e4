"""Every DuckDB type a statement can give, in every format `dices sql` writes (issue 36).

Each value is written (CSV, TSV, JSON, JSON Lines, Parquet, the terminal's table) or
refused with exit 1 and a message that says what to do; never "a bug in dices". The text
formats write what `output.text_cell` and JSON say for each value: ISO 8601 times, DuckDB's
own text for the types Arrow does not carry (`output.AS_TEXT`) and for BLOBs, the words
`infinity` and `-infinity` for DuckDB's infinite dates and times. Parquet is checked against
DuckDB itself: the file, read back by DuckDB, holds the text of the statement's own value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.output import AS_TEXT, SMALL_CELLS

# name: (SQL expression, its value as JSON writes it). A value of text is also its CSV cell.
WRITTEN: dict[str, tuple[str, Any]] = {
    "boolean": ("true", True),
    "tinyint": ("(-128)::TINYINT", -128),
    "smallint": ("(-32768)::SMALLINT", -32768),
    "integer": ("(-2147483648)::INTEGER", -2147483648),
    "bigint": ("(-9223372036854775808)::BIGINT", -9223372036854775808),
    "hugeint": ("170141183460469231731687303715884105727::HUGEINT", 2**127 - 1),
    "utinyint": ("255::UTINYINT", 255),
    "usmallint": ("65535::USMALLINT", 65535),
    "uinteger": ("4294967295::UINTEGER", 4294967295),
    "ubigint": ("18446744073709551615::UBIGINT", 2**64 - 1),
    "uhugeint": ("340282366920938463463374607431768211455::UHUGEINT", str(2**128 - 1)),
    "float": ("1.5::FLOAT", 1.5),
    "double": ("0.1::DOUBLE", 0.1),
    "decimal": ("(-1.25)::DECIMAL(4, 2)", -1.25),
    "wide decimal": ("1234567.125::DECIMAL(38, 3)", 1234567.125),
    "varchar": ("'a, \"b\"'", 'a, "b"'),
    "blob": ("'\\xAA\\x00a\\x5C'::BLOB", "\\xAA\\x00a\\x5C"),
    "bit": ("'0101'::BIT", "0101"),
    "bignum": (
        "(-123456789012345678901234567890123456789012)::BIGNUM",
        "-" + "1234567890" * 4 + "12",
    ),
    "uuid": (
        "'5e5c1e9e-8d8a-4c1e-9f1e-0123456789ab'::UUID",
        "5e5c1e9e-8d8a-4c1e-9f1e-0123456789ab",
    ),
    "json": ("'{\"a\": [1]}'::JSON", '{"a": [1]}'),
    "enum": ("'b'::ENUM('a', 'b')", "b"),
    "date": ("DATE '2024-02-29'", "2024-02-29"),
    "date infinity": ("'infinity'::DATE", "infinity"),
    "date -infinity": ("'-infinity'::DATE", "-infinity"),
    "time": ("TIME '12:34:56.5'", "12:34:56.500000"),
    "time_ns": ("'12:34:56.123456789'::TIME_NS", "12:34:56.123456789"),
    "timetz": ("TIMETZ '12:34:56+02:30'", "12:34:56+02:30"),
    "timestamp": ("TIMESTAMP '2024-02-29 12:00:01'", "2024-02-29T12:00:01"),
    "timestamp_s": ("TIMESTAMP_S '0001-01-01 00:00:00'", "0001-01-01T00:00:00"),
    "timestamp_ms": ("TIMESTAMP_MS '9999-12-31 23:59:59.5'", "9999-12-31T23:59:59.500000"),
    "timestamp_ns": (
        "TIMESTAMP_NS '2024-02-29 12:00:00.123456789'",
        "2024-02-29T12:00:00.123456789",
    ),
    "timestamptz": ("TIMESTAMPTZ '2024-02-29 12:00:00+00'", "2024-02-29T12:00:00+00:00"),
    "timestamp infinity": ("'infinity'::TIMESTAMP", "infinity"),
    "timestamp -infinity": ("'-infinity'::TIMESTAMP", "-infinity"),
    "timestamptz infinity": ("'infinity'::TIMESTAMPTZ", "infinity"),
    "timestamp_ns infinity": ("'infinity'::TIMESTAMP_NS", "infinity"),
    "interval": ("INTERVAL '1 month 2 days 03:04:05'", "1 month 2 days 03:04:05"),
    "list": ("[1, NULL, 3]", [1, None, 3]),
    "array": ("[1.5, 2]::DOUBLE[2]", [1.5, 2.0]),
    "struct": ("{'a': 1, 'b c': 'x'}", {"a": 1, "b c": "x"}),
    "map": ("MAP {'k': 1}", [["k", 1]]),
    "union": ("union_value(n := 7)::UNION(n INTEGER, s VARCHAR)", "7"),
    "variant": ("[1, 2]::VARIANT", "[1, 2]"),
    "list of blobs": ("['\\xFF'::BLOB]", ["\\xFF"]),
    "struct of an interval": ("{'i': INTERVAL 90 MINUTE}", {"i": "01:30:00"}),
    "map of times with zones": ("MAP {'k': TIMETZ '01:02:03-05'}", [["k", "01:02:03-05"]]),
    "null": ("NULL", None),
}
# The CSV cells that are not the JSON value's text (floats that JSON cannot hold).
CSV_CELLS = {"nan": ("'nan'::DOUBLE", None, "nan"), "-inf": ("'-inf'::DOUBLE", None, "-inf")}
# Values that only Parquet holds, and what the text formats and the table say of them.
PARQUET_ONLY = {
    "date beyond 9999": ("DATE '20000-01-01'", "a date outside the years 1 to 9999"),
    "date before 1": ("DATE '0001-01-01' - 1", "a date outside the years 1 to 9999"),
    "timestamp beyond 9999": ("TIMESTAMP '294246-12-31 00:00:00'", "a date outside the years"),
    "timestamp before 1": ("'0001-01-01'::TIMESTAMP - INTERVAL 1 SECOND", "a date outside"),
    "list of dates beyond 9999": ("[DATE '10000-01-01']", "a date or a time beyond Python's"),
    "list of infinite dates": ("['infinity'::DATE]", "a date or a time beyond Python's"),
}
TEXT_FORMATS = ["csv", "tsv", "json", "jsonl"]
FORMATS = [*TEXT_FORMATS, "parquet", "table"]
STATEMENTS = {
    **{name: expression for name, (expression, _) in WRITTEN.items()},
    **{name: expression for name, (expression, _, _) in CSV_CELLS.items()},
    **{name: expression for name, (expression, _) in PARQUET_ONLY.items()},
}


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


def sql(runner: CliRunner, data: Path, statement: str, *options: str) -> Any:
    result = runner.invoke(app, ["sql", statement, "--data", str(data), *options])
    assert "bug in dices" not in result.output
    return result


def csv_cell(value: Any) -> str:
    """A JSON value as `output.text_cell` writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def expected_cell(name: str, delimiter: str) -> str:
    """The cell of case `name` as its CSV or TSV line says it (quoted as needed)."""
    cell = CSV_CELLS[name][2] if name in CSV_CELLS else csv_cell(WRITTEN[name][1])
    if any(c in cell for c in (delimiter, '"', "\n")):
        return '"' + cell.replace('"', '""') + '"'
    return cell


def columns(names: list[str]) -> str:
    """The select list of the cases `names`, each in a column of its own name."""
    return ", ".join(f'{STATEMENTS[name]} AS "{name}"' for name in names)


# Every case that a text format writes, side by side in one row: a cell is written alone,
# so one statement per format checks each type's cell as one statement per type would.
WRITTEN_IN_TEXT = [name for name in STATEMENTS if name not in PARQUET_ONLY]


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_every_type_is_written_in_every_text_format(
    fmt: str, runner: CliRunner, sample: Path
) -> None:
    result = sql(runner, sample, f"SELECT {columns(WRITTEN_IN_TEXT)}", "-f", fmt)
    assert result.exit_code == 0, result.output
    if fmt in ("json", "jsonl"):
        written = json.loads(result.stdout) if fmt == "json" else [json.loads(result.stdout)]
        assert len(written) == 1 and list(written[0]) == WRITTEN_IN_TEXT
        for name in WRITTEN_IN_TEXT:
            value = CSV_CELLS[name][1] if name in CSV_CELLS else WRITTEN[name][1]
            assert written[0][name] == value, name
    else:
        delimiter = "," if fmt == "csv" else "\t"
        header, line = result.stdout.split("\n")[:2]
        assert result.stdout == f"{header}\n{line}\n"
        assert header == delimiter.join(WRITTEN_IN_TEXT)
        expected = delimiter.join(expected_cell(name, delimiter) for name in WRITTEN_IN_TEXT)
        assert result.stdout == f"{header}\n{expected}\n"


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_row_of_one_null_is_a_quoted_empty_cell(
    fmt: str, runner: CliRunner, sample: Path
) -> None:
    """A line with one empty cell would read as no row: the lone NULL is written `""`."""
    result = sql(runner, sample, f"SELECT {STATEMENTS['null']} AS v", "-f", fmt)
    assert (result.exit_code, result.stdout) == (0, 'v\n""\n')


def test_every_type_is_written_as_parquet(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    """Parquet holds every case; DuckDB's text of each value, from the file and from the
    statement itself, is the same."""
    names = list(STATEMENTS)
    target = tmp_path / "v.parquet"
    result = sql(runner, sample, f"SELECT {columns(names)}", "-o", str(target))
    assert result.exit_code == 0, result.output
    con = duckdb.connect()
    texts = ", ".join(f'"{name}"::VARCHAR' for name in names)
    read = con.execute(f"SELECT {texts} FROM read_parquet($1)", [str(target)]).fetchall()
    own = con.execute(f"SELECT {', '.join(f'({STATEMENTS[n]})::VARCHAR' for n in names)}")
    for name, in_file, in_statement in zip(names, read[0], own.fetchall()[0], strict=True):
        assert in_file == in_statement, name
    assert len(read) == 1


@pytest.mark.parametrize("fmt", [*TEXT_FORMATS, "table"])
@pytest.mark.parametrize("name", PARQUET_ONLY)
def test_a_value_only_parquet_holds_is_refused_in_every_other_format(
    name: str, fmt: str, runner: CliRunner, sample: Path
) -> None:
    result = sql(runner, sample, f"SELECT {STATEMENTS[name]} AS v", "-f", fmt)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: the column 'v' holds {PARQUET_ONLY[name][1]}")
    assert result.stderr.endswith(
        "which dices writes only as Parquet; cast it to text in the statement"
        " (CAST(... AS VARCHAR)), or write Parquet (--format parquet)\n"
    )


@pytest.mark.parametrize("name", WRITTEN_IN_TEXT)
def test_every_type_is_on_the_table_for_people(name: str, runner: CliRunner, sample: Path) -> None:
    """A value of text is on the table as it is (a time with a space for its T)."""
    result = sql(runner, sample, f"SELECT {STATEMENTS[name]} AS v", "-f", "table")
    assert result.exit_code == 0, result.output
    value = WRITTEN[name][1] if name in WRITTEN else None
    title, header, *_ = result.stdout.splitlines()
    assert (title, header.strip()) == ("sql", "v")
    if isinstance(value, str):
        assert value in result.stdout or value.replace("T", " ") in result.stdout


def test_the_cases_hold_every_type_duckdb_writes_as_text() -> None:
    """Each of `output.AS_TEXT` is among the cases, so none is left untested."""
    con = duckdb.connect()
    kinds = {con.sql(f"SELECT {expression} AS v").types[0].id for expression in STATEMENTS.values()}
    assert AS_TEXT - {"geometry"} <= kinds  # GEOMETRY: DuckDB's spatial functions make it


def test_duckdb_settings_are_written_in_every_text_format(runner: CliRunner, sample: Path) -> None:
    """duckdb_settings() has a VARIANT column: written as DuckDB's text."""
    statement = (
        "SELECT name, value FROM duckdb_settings()"
        " WHERE name IN ('access_mode', 'enable_external_access') ORDER BY name"
    )
    lines = {
        "csv": "name,value\naccess_mode,automatic\nenable_external_access,false\n",
        "jsonl": '{"name": "access_mode", "value": "automatic"}\n'
        '{"name": "enable_external_access", "value": "false"}\n',
    }
    for fmt, expected in lines.items():
        result = sql(runner, sample, statement, "-f", fmt)
        assert (result.exit_code, result.stdout) == (0, expected)
    whole = sql(runner, sample, "SELECT * FROM duckdb_settings()", "-f", "json")
    assert whole.exit_code == 0, whole.output
    assert len(json.loads(whole.stdout)) > 100


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_a_large_result_is_written_as_a_small_one(
    fmt: str, runner: CliRunner, sample: Path
) -> None:
    """Over `SMALL_CELLS`, a result is written by Arrow (`arrow_text`), not through Python
    values: each type's text is the same."""
    rows = SMALL_CELLS // len(WRITTEN_IN_TEXT) + 1
    small = sql(runner, sample, f"SELECT {columns(WRITTEN_IN_TEXT)}", "-f", fmt)
    large = sql(runner, sample, f"SELECT {columns(WRITTEN_IN_TEXT)} FROM range({rows})", "-f", fmt)
    assert small.exit_code == large.exit_code == 0, small.output + large.output
    if fmt == "json":
        assert json.loads(large.stdout) == json.loads(small.stdout) * rows
    elif fmt == "jsonl":
        assert large.stdout == small.stdout * rows
    else:
        header, line = small.stdout.splitlines(keepends=True)
        assert large.stdout == header + line * rows
