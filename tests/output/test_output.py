"""The output layer: which format a result is written in, and the exact bytes of each format.

Small tables built here; only the closed-pipe tests run the real command on the replica data.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.cli.commands.wording import worded
from dices_cli.cli.main import app
from dices_cli.cli.render import emit
from dices_cli.errors import UsageError
from dices_cli.output import Format, Table, choose_format, table_from_rows, write_table
from tests.conftest import memory_cap

WHEN = datetime(2022, 12, 9, 10, 54, 27, tzinfo=UTC)

# One column per kind of value a query returns; every row has something tricky.
TABLE = Table(
    columns=["name", "n", "x", "flag", "tags", "when", "day", "missing"],
    numeric=[False, True, True, False, False, False, False, False],
    rows=[
        ("plain", 1, 0.1, True, ["a", "b"], WHEN, date(2022, 12, 9), None),
        (
            'comma, "quote"\nnewline',
            -2,
            1 / 3,
            False,
            [],
            datetime(2022, 12, 9, 10, 54, 27, 123456),
            date(1999, 1, 31),
            None,
        ),
        ("tab\there é", 10**15 + 1, 1e-20, None, [1, None, 2.5], None, None, None),
        ("", 0, 1e20, True, ["x,y"], WHEN.astimezone(timezone(timedelta(hours=5))), None, None),
    ],
)

CSV = (
    "name,n,x,flag,tags,when,day,missing\n"
    'plain,1,0.1,true,"[""a"", ""b""]",2022-12-09T10:54:27+00:00,2022-12-09,\n'
    '"comma, ""quote""\nnewline",-2,0.3333333333333333,false,[],'
    "2022-12-09T10:54:27.123456,1999-01-31,\n"
    'tab\there é,1000000000000001,1e-20,,"[1, null, 2.5]",,,\n'
    ',0,1e+20,true,"[""x,y""]",2022-12-09T15:54:27+05:00,,\n'
)

TSV = (
    "name\tn\tx\tflag\ttags\twhen\tday\tmissing\n"
    'plain\t1\t0.1\ttrue\t"[""a"", ""b""]"\t2022-12-09T10:54:27+00:00\t2022-12-09\t\n'
    '"comma, ""quote""\nnewline"\t-2\t0.3333333333333333\tfalse\t[]\t'
    "2022-12-09T10:54:27.123456\t1999-01-31\t\n"
    '"tab\there é"\t1000000000000001\t1e-20\t\t[1, null, 2.5]\t\t\t\n'
    '\t0\t1e+20\ttrue\t"[""x,y""]"\t2022-12-09T15:54:27+05:00\t\t\n'
)

RECORDS = [
    '{"name": "plain", "n": 1, "x": 0.1, "flag": true, "tags": ["a", "b"], '
    '"when": "2022-12-09T10:54:27+00:00", "day": "2022-12-09", "missing": null}',
    '{"name": "comma, \\"quote\\"\\nnewline", "n": -2, "x": 0.3333333333333333, "flag": false, '
    '"tags": [], "when": "2022-12-09T10:54:27.123456", "day": "1999-01-31", "missing": null}',
    '{"name": "tab\\there é", "n": 1000000000000001, "x": 1e-20, "flag": null, '
    '"tags": [1, null, 2.5], "when": null, "day": null, "missing": null}',
    '{"name": "", "n": 0, "x": 1e+20, "flag": true, "tags": ["x,y"], '
    '"when": "2022-12-09T15:54:27+05:00", "day": null, "missing": null}',
]


def written(table: Table, fmt: Format) -> bytes:
    handle = io.BytesIO()
    write_table(table, fmt, handle)
    assert not handle.closed  # the caller's handle stays open
    return handle.getvalue()


# ----------------------------------------------------------------------------- choose_format


@pytest.mark.parametrize(
    ("requested", "output", "terminal", "expected"),
    [
        # nothing asked: a table for a person, CSV for a program
        (None, None, True, Format.TABLE),
        (None, None, False, Format.CSV),
        # -o: the extension decides, in any case, terminal or not
        (None, "r.csv", True, Format.CSV),
        (None, "r.tsv", True, Format.TSV),
        (None, "r.tab", False, Format.TSV),
        (None, "r.json", True, Format.JSON),
        (None, "r.JSON", False, Format.JSON),
        (None, "r.jsonl", True, Format.JSONL),
        (None, "r.ndjson", True, Format.JSONL),
        (None, "dir.v2/r.parquet", True, Format.PARQUET),
        (None, "r.Parquet", False, Format.PARQUET),
        # no extension (a device such as /dev/null, say): CSV
        (None, "results", True, Format.CSV),
        (None, "/dev/null", False, Format.CSV),
        # an extension it does not know, with --format: that format
        (Format.CSV, "r.txt", True, Format.CSV),
        (Format.JSON, "r.xlsx", False, Format.JSON),
        # --format wins over the extension and the terminal
        (Format.CSV, "r.json", True, Format.CSV),
        (Format.JSONL, "r.parquet", False, Format.JSONL),
        (Format.JSON, None, True, Format.JSON),
        (Format.TSV, None, False, Format.TSV),
        (Format.TABLE, None, False, Format.TABLE),
        (Format.TABLE, None, True, Format.TABLE),
        (Format.PARQUET, None, False, Format.PARQUET),
        (Format.PARQUET, "r.parquet", True, Format.PARQUET),
    ],
)
def test_choose_format(
    requested: Format | None, output: str | None, terminal: bool, expected: Format
) -> None:
    path = Path(output) if output is not None else None
    assert choose_format(requested, path, terminal) is expected


@pytest.mark.parametrize("terminal", [True, False])
def test_format_table_with_an_output_file_is_a_usage_error(terminal: bool) -> None:
    with pytest.raises(UsageError) as caught:
        choose_format(Format.TABLE, Path("r.csv"), terminal)
    assert worded(caught.value) == (
        "--format table is for the terminal; with -o pick csv, tsv, json, jsonl or parquet"
    )
    assert caught.value.exit_code == 2


def test_parquet_to_a_terminal_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        choose_format(Format.PARQUET, None, True)
    assert worded(caught.value) == "Parquet is binary; write it with -o FILE or redirect stdout"
    assert caught.value.exit_code == 2


def test_format_table_with_an_output_file_on_the_command_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Refused before anything is read: no data directory is needed to hear it."""
    path = tmp_path / "r.csv"
    result = runner.invoke(app, ["query", "--list", "--format", "table", "-o", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Error: --format table is for the terminal; with -o pick csv, tsv, json, jsonl or "
        "parquet\nTry 'dices query -h' for help.\n"
    )
    assert not path.exists()


# ----------------------------------------------------------------------------- exact text


def test_csv_text() -> None:
    assert written(TABLE, Format.CSV).decode("utf-8") == CSV


def test_tsv_text() -> None:
    assert written(TABLE, Format.TSV).decode("utf-8") == TSV


def test_json_text() -> None:
    assert written(TABLE, Format.JSON).decode("utf-8") == "[" + ", ".join(RECORDS) + "]\n"


def test_jsonl_text() -> None:
    assert written(TABLE, Format.JSONL).decode("utf-8") == "".join(r + "\n" for r in RECORDS)


def test_text_is_utf8_without_a_byte_order_mark() -> None:
    for fmt in (Format.CSV, Format.TSV, Format.JSON, Format.JSONL):
        data = written(TABLE, fmt)
        assert not data.startswith(b"\xef\xbb\xbf")
        assert "é".encode() in data
        assert b"\r" not in data


FLOATS = [0.1, 0.2 + 0.1, 1 / 3, 2 / 3, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.125, -0.0]


def test_floats_are_written_exactly() -> None:
    """Shortest round-trip form: reading the text back gives the very same double."""
    table = Table(["x"], [True], [(x,) for x in FLOATS])
    lines = written(table, Format.CSV).decode().splitlines()
    assert lines == ["x", *(repr(x) for x in FLOATS)]
    assert [float(v) for v in lines[1:]] == FLOATS
    assert [r["x"] for r in json.loads(written(table, Format.JSON))] == FLOATS
    assert lines[2] == "0.30000000000000004"  # no rounding for people here


def test_non_finite_floats() -> None:
    """JSON has no NaN or Infinity: null there; the delimited formats keep Python's names."""
    table = Table(["x"], [True], [(float("nan"),), (float("inf"),), (float("-inf"),)])
    assert written(table, Format.CSV) == b"x\nnan\ninf\n-inf\n"
    assert written(table, Format.JSON) == b'[{"x": null}, {"x": null}, {"x": null}]\n'
    assert written(table, Format.JSONL) == b'{"x": null}\n{"x": null}\n{"x": null}\n'
    assert b"NaN" not in written(table, Format.JSON)


def test_decimals_and_nested_values() -> None:
    table = Table(
        ["d", "whole", "nested", "pair"],
        [True, True, False, False],
        [(Decimal("1.50"), Decimal("350"), {"a": [1, {"b": None}], 2: date(2020, 1, 2)}, (1, "x"))],
    )
    assert written(table, Format.JSONL) == (
        b'{"d": 1.5, "whole": 350, "nested": {"a": [1, {"b": null}], "2": "2020-01-02"}, '
        b'"pair": [1, "x"]}\n'
    )
    assert written(table, Format.CSV) == (
        b'd,whole,nested,pair\n1.50,350,"{""a"": [1, {""b"": null}], ""2"": ""2020-01-02""}",'
        b'"[1, ""x""]"\n'
    )


def test_empty_result() -> None:
    table = Table(["a", "b"], [False, True], [])
    assert written(table, Format.CSV) == b"a,b\n"
    assert written(table, Format.TSV) == b"a\tb\n"
    assert written(table, Format.JSON) == b"[]\n"
    assert written(table, Format.JSONL) == b""
    read = pq.read_table(io.BytesIO(written(table, Format.PARQUET)))
    assert read.column_names == ["a", "b"]
    assert read.num_rows == 0


def test_parquet_round_trip() -> None:
    rows = [
        ("plain", 1, 0.1, True, ["a", "b"], WHEN, None),
        ("é", -2, 1 / 3, None, [], None, None),
        (None, 10**15 + 1, 1e-20, False, None, WHEN, None),
    ]
    columns = ["name", "n", "x", "flag", "tags", "when", "missing"]
    table = Table(columns, [False, True, True, False, False, False, False], rows)
    read = pq.read_table(io.BytesIO(written(table, Format.PARQUET)))
    assert read.column_names == columns
    types = read.schema.types
    assert [str(t) for t in types[:4]] == ["string", "int64", "double", "bool"]
    assert pa.types.is_list(types[4])
    assert str(types[4].value_type) == "string"
    assert pa.types.is_timestamp(types[5])
    assert str(types[6]) == "null"
    assert [tuple(r.values()) for r in read.to_pylist()] == rows


def test_table_is_not_written_here() -> None:
    with pytest.raises(ValueError, match="drawn by the CLI"):
        write_table(TABLE, Format.TABLE, io.BytesIO())


# ----------------------------------------------------------------------------- Table


@pytest.mark.parametrize(
    ("values", "numeric"),
    [
        ([1, 2], True),
        ([1.5, None, 2], True),
        ([Decimal("1.5")], True),
        ([True, False], False),  # booleans are not numbers here
        ([1, True], False),
        ([None, None], False),
        (["1", 2], False),
        ([[1], [2]], False),
        ([WHEN], False),
    ],
)
def test_table_from_rows_finds_numeric_columns(values: list[Any], numeric: bool) -> None:
    table = table_from_rows(["v"], [(v,) for v in values])
    assert table.numeric == [numeric]
    assert table.rows == [(v,) for v in values]


def test_table_from_rows_with_no_rows() -> None:
    assert table_from_rows(["a", "b"], []) == Table(["a", "b"], [False, False], [])


def test_table_from_polars() -> None:
    frame = pl.DataFrame(
        {"a": [1, 2], "b": ["x", None], "c": [0.5, None], "d": [True, False]},
        schema_overrides={"b": pl.Enum(["x", "y"])},
    )
    table = Table.from_polars(frame)
    assert table == Table(
        ["a", "b", "c", "d"],
        [True, False, True, False],
        [(1, "x", 0.5, True), (2, None, None, False)],
    )
    assert table.records() == [
        {"a": 1, "b": "x", "c": 0.5, "d": True},
        {"a": 2, "b": None, "c": None, "d": False},
    ]


# ----------------------------------------------------------------------------- emit


class FakeStdout(io.TextIOWrapper):
    """sys.stdout with a bytes buffer behind it, a terminal or not."""

    def __init__(self, terminal: bool) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", newline="")
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal

    def data(self) -> bytes:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue()


def test_emit_writes_csv_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    stdout = FakeStdout(terminal=False)
    monkeypatch.setattr(sys, "stdout", stdout)
    emit(TABLE, None, None, title="t")
    assert stdout.data().decode() == CSV


def test_emit_draws_a_table_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    stdout = FakeStdout(terminal=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    table = Table(["group", "share"], [False, True], [("a", 1 / 3), ("b", None), ("c", 2.0)])
    emit(table, None, None, title="Shares")
    text = re.sub(r"\x1b\[[0-9;]*m", "", stdout.data().decode())  # styles, if any
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    assert lines[0] == "Shares"
    assert lines[1].split() == ["group", "share"]
    rows = [line.split() for line in lines if line.lstrip()[:1] in ("a", "b", "c")]
    assert rows == [["a", "0.333"], ["b"], ["c", "2.000"]]  # rounded for people; None is blank
    assert lines[-1].endswith("2.000") and lines[-3].endswith("0.333")  # numbers to the right


def test_emit_writes_the_file_the_extension_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stdout = FakeStdout(terminal=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    for name, expected in (
        ("r.tsv", TSV.encode()),
        ("r.json", ("[" + ", ".join(RECORDS) + "]\n").encode()),
        ("r.csv", CSV.encode()),
    ):
        emit(TABLE, None, tmp_path / name)
        assert (tmp_path / name).read_bytes() == expected
    emit(TABLE, Format.JSONL, tmp_path / "r.csv", force=True)  # --format wins
    assert (tmp_path / "r.csv").read_text(encoding="utf-8") == "".join(r + "\n" for r in RECORDS)
    assert stdout.data() == b""  # nothing on stdout


# ----------------------------------------------------------------------------- closed pipe


def dices_command() -> list[str]:
    script = Path(sys.executable).parent / "dices"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dices_cli"]


@pytest.mark.parametrize(
    "args",
    [
        ["query", "item-distribution"],
        ["query", "item-distribution", "--format", "jsonl"],
        ["query", "rater-quality", "--format", "jsonl"],
        ["sql", "SELECT range AS n, 'x' AS s FROM range(200000)", "-d", "350"],
    ],
)
def test_a_closed_pipe_is_a_quiet_success(
    args: list[str], ingested: Path, tmp_path: Path, runner: CliRunner
) -> None:
    full = runner.invoke(app, [*args, "--data", str(ingested)])
    assert full.exit_code == 0, full.output
    assert len(full.stdout_bytes) > 96 * 1024  # more than the pipe and head take in
    command = shlex.join([*dices_command(), *args, "--data", str(ingested)])
    stderr = tmp_path / "stderr.txt"
    script = (
        f"set -o pipefail; {command} 2>{shlex.quote(str(stderr))} | head -1; "
        'status=("${PIPESTATUS[@]}"); echo "status: ${status[*]}"'
    )
    env = {k: v for k, v in os.environ.items() if k != "DICES_DEBUG"}
    with memory_cap():  # the processes': a `sql` statement runs under a time limit
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=60, env=env
        )
    assert done.returncode == 0, done.stderr
    first, status = done.stdout.splitlines()
    assert first == full.stdout.splitlines()[0]
    assert status == "status: 0 0"
    assert stderr.read_text(encoding="utf-8") == ""
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("args", "status", "stdout", "stderr"),
    [
        (["--version"], 0, f"dices {__version__}\n", ""),
        (["query", "nope"], 2, "", "Error: no query 'nope'; the queries are: "),
        (["info", "--data", "{missing}"], 1, "", "Error: nothing is ingested"),
    ],
)
def test_the_console_entry_point_exits_with_the_commands_status_and_output(
    args: list[str], status: int, stdout: str, stderr: str, tmp_path: Path
) -> None:
    # run() leaves with os._exit, skipping the interpreter's teardown: output must be
    # flushed and the status kept.
    args = [arg.format(missing=tmp_path / "none") for arg in args]
    done = subprocess.run([*dices_command(), *args], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (status, stdout)
    assert done.stderr.startswith(stderr)
