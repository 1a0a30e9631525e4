"""Hostile input on the surfaces added after the DICES CSV: ProsocialDialog files,
predictions files, `sql --table` files and Parquet inputs (issue 22).

Each cause first has an exact test (it failed before the fix: a "bug in dices", a crash, a
silent misreading, or gigabytes of memory). Then a corpus per surface: Hypothesis builds
files of hostile lines or cells, and each runs in a fresh process under the memory cap of
`test_bounded_input` (one process per example, several hostile lines per file), which must
end with exit 0 or 1, a clean message, and memory bounded by the valid part.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.read.json_lines import MAX_DEPTH
from dices_cli.read.lines import MAX_RECORD_BYTES
from tests.conftest import SHARED
from tests.hostile.test_bounded_input import (
    FIXED_MEMORY,
    MiB,
    assert_clean,
    run_capped,
    run_capped_each,
)

pytestmark = pytest.mark.slow  # a hostile corpus

SAMPLES = SHARED / "data" / "prosocial" / "samples.jsonl"
DATA = Path(__file__).resolve().parents[2] / "dices_cli" / "data"


@pytest.fixture(scope="module")
def sample_lines() -> list[str]:
    if not SAMPLES.exists():
        if os.environ.get("DICES_REQUIRE_REPLICA") == "1":
            pytest.fail(f"ProsocialDialog samples not found at {SAMPLES}")
        pytest.skip(f"ProsocialDialog samples not found at {SAMPLES} (set DICES_SHARED)")
    return SAMPLES.read_text(encoding="utf-8").splitlines()


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# --- ProsocialDialog ---------------------------------------------------------------------------

# How line 2 of a sample file is broken (bytes replacing `"response": "`), and the record
# that must be reported for it.
PROSOCIAL_BROKEN = {
    "invalid-utf8": (
        b'"response": "\xff\xfe',
        ["invalid-utf8", "error", "2", "", "", "the line is not valid UTF-8 (at its byte 78)"],
    ),
    "duplicate-key": (
        b'"etc": "again", "response": "',
        ["duplicate-key", "error", "2", "", "etc", 'the key "etc" appears twice in one object'],
    ),
    "deep": (
        b'"deep": ' + deep(100_000) + b', "response": "',
        [
            "invalid-json",
            "error",
            "2",
            "",
            '{"context": "No, but I think they\'re wasting my tuition fees...',
            f"the line nests lists and objects deeper than {MAX_DEPTH} levels",
        ],
    ),
}


def prosocial_file(directory: Path, lines: list[str], broken: bytes) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    second = data.index(b'"response": "', len(lines[0].encode()) + 1)
    path = directory / "test.json"
    path.write_bytes(data[:second] + broken + data[second + len(b'"response": "') :])
    return path


@pytest.mark.parametrize("name", list(PROSOCIAL_BROKEN))
def test_a_broken_prosocial_line_is_a_record_and_nothing_is_ingested(
    name: str, sample_lines: list[str], tmp_path: Path
) -> None:
    """Invalid UTF-8 passed validate, ingest and verify (export then failed); a key twice
    was read silently; 100,000 levels of nesting crashed PyArrow's reader."""
    broken, record = PROSOCIAL_BROKEN[name]
    path = prosocial_file(tmp_path, sample_lines, broken)

    validated = run("validate", path, "-f", "csv")
    ingested = run("ingest", path, "--data", tmp_path / "data")

    assert validated.exit_code == 1, validated.output
    assert list(csv.reader(io.StringIO(validated.stdout))) == [
        ["file", "type", "severity", "line", "column", "value", "message"],
        [str(path), *record],
    ]
    assert ingested.exit_code == 1
    assert ingested.stderr.splitlines()[0] == (
        f"Error: {path} is not valid ProsocialDialog data; nothing was written"
    )
    assert not (tmp_path / "data").exists()


def test_a_prosocial_line_of_a_gigabyte_is_refused_in_bounded_memory(
    sample_lines: list[str], tmp_path: Path
) -> None:
    """One line of 1 GB took 4.3 GB: both readers held it whole."""
    valid = "".join(line + "\n" for line in sample_lines).encode()
    path = tmp_path / "test.json"
    with path.open("wb") as stream:
        stream.write(valid)
        stream.write(b'{"context": "' + b"x" * (40 * MiB) + b'"}\n')

    code, stderr, peak = run_capped(["validate", str(path)])

    assert_clean(code, stderr, 1)
    assert stderr == (
        f"{path}: 1 error (ProsocialDialog); 6 rows read, 1 would be rejected [1 record-too-long]\n"
    )
    assert peak < 3 * len(valid) + FIXED_MEMORY, f"{peak / MiB:.0f} MiB"


# --- predictions files -------------------------------------------------------------------------

PREDICTION_LINES = [
    (
        b'{"item_id": 13, "label": "Yes\xff"}',
        "the line is not valid UTF-8 (at its byte 30)",
        "invalid-utf8",
    ),
    (
        b'{"item_id": 13, "label": "\\ud800"}',
        "the line escapes a lone UTF-16 surrogate (\\ud800 to \\udfff), which is no character",
        "invalid-utf8",
    ),
    (
        b'{"item_id": 13, "label": "Yes", "label": "No"}',
        'the key "label" appears twice in one object',
        "duplicate-key",
    ),
    (
        b'{"item_id": 13, "Label": "Yes", "label ": "No"}',
        "the keys of the line name label twice",
        "duplicate-key",
    ),
    (
        b'{"item_id": 13, "x": ' + deep(5000) + b"}",
        f"the line nests lists and objects deeper than {MAX_DEPTH} levels",
        "invalid-json",
    ),
]


def test_hostile_json_lines_of_predictions_are_records(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Each was "This is a bug in dices" (invalid UTF-8, a lone surrogate, deep nesting) or
    read silently (the last of two equal keys)."""
    path = tmp_path / "p.jsonl"
    good = b'{"item_id": 20, "label": "Yes"}\n'
    path.write_bytes(good + b"".join(line + b"\n" for line, _, _ in PREDICTION_LINES))

    result = runner.invoke(app, ["evaluate", str(path), "-d", "350", "--data", str(sample)])

    assert result.exit_code == 1
    listed = result.stderr.splitlines()[2:]
    assert [line.split(": ", 1)[1] for line in listed] == [
        f"{message} [{kind}]" for _, message, kind in PREDICTION_LINES
    ]
    assert [line.split(":")[0].split(",")[0] for line in listed] == [
        f"  line {n}" for n in range(2, 7)
    ]
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_a_baseline_of_every_rater_is_a_usage_error_naming_the_largest_that_works(
    command: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """raters:123 with 123 raters per conversation left none to score against: IndexError."""
    output = tmp_path / "report.html"
    args = [command, "--baseline", "raters:123", "-d", "350", "--data", str(sample)]
    if command == "evaluate":
        args.insert(1, str(DATA / "demo-predictions.csv"))
    else:
        args += ["--predictions", str(DATA / "demo-predictions.csv"), "-o", str(output)]

    result = runner.invoke(app, args)

    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "Error: --baseline raters:123 needs a conversation with at least 124 ratings (123 "
        "drawn, and one left to score them against); the most any conversation of DICES-350 "
        "has among the selected raters is 123: give raters:122 or less"
    )
    assert result.stdout == ""
    assert not output.exists()
    args[args.index("raters:123")] = "raters:122"
    if command == "evaluate":  # the largest that works
        assert runner.invoke(app, [*args, "--bootstrap", "0"]).exit_code == 0


def dictionary_bomb(path: Path, value_mib: int, rows: int) -> Path:
    """A Parquet file whose label column is one string of `value_mib` MiB, in a dictionary
    that every one of `rows` rows points to: a few KB on disk."""
    label = pa.DictionaryArray.from_arrays(
        pa.array([0] * rows, pa.int32()), pa.array(["x" * (value_mib * MiB)])
    )
    table = pa.table({"item_id": pa.array(range(rows), pa.int64()), "label": label})
    pq.write_table(table, path, compression="zstd")
    return path


def test_a_parquet_dictionary_bomb_is_refused_before_it_is_read(
    sample: Path, tmp_path: Path
) -> None:
    """4 GiB once read from 2.4 KB: evaluate used 8.8 GB, sql --table ran DuckDB out of
    memory ("bug in dices"); the footer's sizes are of the encoded data. Both commands in
    one capped process: its peak bounds each."""
    bomb = dictionary_bomb(tmp_path / "bomb.parquet", 8, 512)
    assert bomb.stat().st_size < 8 * 1024
    data = ["--data", str(sample)]
    evaluate = ["evaluate", str(bomb), "-d", "350", *data]
    sql = ["sql", "SELECT count(*) FROM p", "--table", f"p={bomb}", *data]

    ended, peak = run_capped_each([evaluate, sql])

    for code, stderr in ended:
        assert_clean(code, stderr, 1)
        assert stderr == (
            f"Error: {bomb} holds more than 2 GiB of data once decompressed and decoded; "
            "nothing was read\n"
        )
    assert peak < FIXED_MEMORY


def test_parquet_labels_of_64_kib_are_refused_before_polars_copies_them(
    sample: Path, tmp_path: Path
) -> None:
    """64 MiB of 64 KiB labels, within --max-size: Polars' working copies ended in SIGABRT
    under a 2 GiB address-space cap. Now the first long cell stops the reading. PyArrow
    reads a row group's column chunk whole (here the 64 MiB of labels) before the check."""
    rows = 1024
    labels = pa.array([os.urandom(32 << 10).hex() for _ in range(rows)])
    table = pa.table({"item_id": pa.array(range(1, rows + 1), pa.int64()), "label": labels})
    path = tmp_path / "long.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False)

    code, stderr, peak = run_capped(["evaluate", str(path), "-d", "350", "--data", str(sample)])

    assert_clean(code, stderr, 1)
    assert stderr.splitlines()[-1] == (
        "  line 2, column label: the label cell is 64 KiB long, and a label is a few bytes "
        "(at most 4096 here); reading stopped at this row [cell-too-long]"
    )
    assert peak < FIXED_MEMORY + 2 * 64 * MiB, f"{peak / MiB:.0f} MiB"


@pytest.mark.parametrize(
    ("layout", "first_row"),
    [
        ("csv", b"13,Yes"),  # read by PyArrow, then again by the record reader
        ("csv", b'13,"a", "dup": "b"'),  # a row PyArrow refuses: the record reader only
        ("jsonl", b'{"item_id": 13, "label": "Yes"}'),
        ("jsonl", b'{"item_id": 13, "label": "Yes", "label": "No"}'),
    ],
)
def test_a_text_label_of_megabytes_is_refused_before_polars_copies_it(
    layout: str, first_row: bytes, sample: Path, tmp_path: Path
) -> None:
    """A label of 20 MiB (a line within the record bound): Polars' checks made about eight
    copies of it (`evaluate` peaked at 465 MiB, over the bound). Now the cell stops the
    reading before Polars has it, in either reader, as in a Parquet file."""
    long = b"z" * (20 * MiB)
    if layout == "csv":
        rows = [b"item_id,label", first_row, b"14,No", b'15,"' + long + b'"', b"16,Yes"]
    else:
        rows = [first_row, b'{"item_id": 14, "label": "No"}']
        rows += [b'{"item_id": 15, "label": "' + long + b'"}', b'{"item_id": 16, "label": "Yes"}']
    path = tmp_path / f"p.{layout}"
    path.write_bytes(b"".join(row + b"\n" for row in rows))

    code, stderr, peak = run_capped(["evaluate", str(path), "-d", "350", "--data", str(sample)])

    assert_clean(code, stderr, 1)
    line = 4 if layout == "csv" else 3
    assert stderr.splitlines()[-1] == (
        f"  line {line}, column label: the label cell is 20 MiB long, and a label is a few "
        "bytes (at most 4096 here); reading stopped at this row [cell-too-long]"
    )
    assert peak < 3 * path.stat().st_size + FIXED_MEMORY, f"{peak / MiB:.0f} MiB"


def test_json_lines_read_a_record_at_a_time_hold_only_their_typed_rows(
    sample: Path, tmp_path: Path
) -> None:
    """The record reader (here: a file that opens with a line of a space, which PyArrow's
    reader is not given; an empty line no longer keeps it away) checks its rows a batch at
    a time, so that it holds the typed rows, not the cells as read: 40,000 labels padded
    with 4,000 blanks each (160 MB of cells, "Yes" once typed) take no more than the same
    labels unpadded. The whole file was held before: 180 MB more than unpadded. The last
    line repeats the first, so that the whole file is read, and refused."""
    items = pl.read_parquet(sample / "350" / "items.parquet")["item_id"].to_list()
    peaks = {}
    for padding in (0, 4000):
        label = "Yes" + " " * padding
        lines = [
            f'{{"model": "m{m}", "item_id": {i}, "label": "{label}"}}\n'
            for m in range(40_000 // len(items))
            for i in items
        ]
        path = tmp_path / f"padded-{padding}.jsonl"
        path.write_text("".join([" \n", *lines, lines[0]]))
        args = ["evaluate", str(path), "-d", "350", "--bootstrap", "0", "--data", str(sample)]
        code, stderr, peaks[padding] = run_capped(args)
        assert_clean(code, stderr, 1)
        assert stderr.splitlines()[-1] == (
            f"  line {len(lines) + 2}, column item_id: model m0 already has a prediction for "
            f"item {items[0]} (line 2) [duplicate-prediction]"
        )
    assert peaks[4000] < peaks[0] + 64 * MiB, f"{peaks[4000] / MiB:.0f} MiB, {peaks[0] / MiB:.0f}"


# --- sql --table -------------------------------------------------------------------------------

TABLE_LINES = {
    "duplicate-key": (
        b'{"item_id": 1, "label": "Yes", "label": "No"}\n',
        'line 1: the key "label" appears twice in one object [duplicate-key]',
    ),
    "surrogate": (
        b'{"item_id": 1, "label": "\\ud800"}\n',
        "line 1: the line escapes a lone UTF-16 surrogate (\\ud800 to \\udfff), which is no "
        "character [invalid-utf8]",
    ),
    "invalid-utf8": (
        b'{"item_id": 1}\n{"item_id": 2, "label": "\xc3"}\n',
        "line 2: the line is not valid UTF-8 (at its byte 26) [invalid-utf8]",
    ),
    "deep": (
        b'{"item_id": 1, "x": ' + deep(900) + b"}\n",
        f"line 1: the line nests lists and objects deeper than {MAX_DEPTH} levels [invalid-json]",
    ),
}


@pytest.mark.parametrize("name", list(TABLE_LINES))
def test_a_hostile_json_line_of_a_table_is_refused(
    name: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Polars kept the first of two equal keys, made an escaped \\ud800 NUL, and crashed
    (SIGSEGV) at 900 levels of nesting."""
    data, message = TABLE_LINES[name]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)

    result = runner.invoke(
        app, ["sql", "SELECT * FROM t", "--table", f"t={path}", "--data", str(sample)]
    )

    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot read table t from {path}: {message}\n"
    assert result.stdout == ""


def test_a_table_record_of_a_gigabyte_is_refused_in_bounded_memory(
    sample: Path, tmp_path: Path
) -> None:
    """A 1 GB single line took 4.3 GB: Polars holds the whole file. A CSV, a TSV and a JSON
    Lines table, one after the other in one capped process: its peak bounds each."""
    paths = {kind: tmp_path / f"t.{kind}" for kind in ("csv", "tsv", "jsonl")}
    for kind, path in paths.items():
        with path.open("wb") as stream:
            if kind == "jsonl":
                stream.write(b'{"item_id": 1}\n{"item_id": "' + b"y" * (40 * MiB) + b'"}\n')
            else:  # a quoted cell whose lines are short: the record is long
                stream.write(b'item_id,label\n1,"' + b"y\n" * (20 * MiB) + b'"\n')

    ended, peak = run_capped_each(
        [
            ["sql", "SELECT 1 FROM t", "--table", f"t={path}", "--data", str(sample)]
            for path in paths.values()
        ]
    )

    for (kind, path), (code, stderr) in zip(paths.items(), ended, strict=True):
        assert_clean(code, stderr, 1)
        record = "line 2: " + (
            f"the line is longer than {MAX_RECORD_BYTES >> 20} MiB, and a row is a few KB; "
            "reading goes on at the next line"
            if kind == "jsonl"
            else f"the record starting here is longer than {MAX_RECORD_BYTES >> 20} MiB"
        )
        assert stderr == f"Error: cannot read table t from {path}: {record} [record-too-long]\n"
    assert peak < FIXED_MEMORY, f"{peak / MiB:.0f} MiB"


@pytest.mark.parametrize("name", ["semi", "anti", "asof", "positional", "similar", "glob", "Join"])
def test_a_name_duckdb_cannot_use_unquoted_is_a_usage_error(
    name: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("item_id\n1\n")
    result = runner.invoke(
        app, ["sql", f"SELECT * FROM {name}", "--table", f"{name}={path}", "--data", str(sample)]
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: {name!r} is an SQL keyword; choose another table name"
    )


def test_two_stdin_tables_are_a_usage_error(runner: CliRunner, sample: Path) -> None:
    """They gave "empty CSV": the second found stdin drained by the first."""
    result = runner.invoke(
        app,
        ["sql", "SELECT 1", "--table", "a=-", "--table", "b=-", "--data", str(sample)],
        input="item_id\n1\n",
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "Error: - (stdin) can be given once: as the file of one table"
    )


# --- the corpus: hostile lines and cells anywhere, under the memory cap ----------------------

# Hostile replacements for a JSON string value's text (bytes as written in the file).
HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        [
            b"\xff",
            b"\xc3",
            b"\xed\xa0\x80",  # a surrogate encoded as UTF-8
            b"\\ud800",
            b"\\udfff x",
            b"\\ud83d\\ude00",  # a pair: valid
            b"\\u0000",
            b"\x00",
            b"\x1b[31m",
            b"\r",
            b"\\",
            b'"',
        ]
    ),
    st.binary(max_size=8),
)
# Hostile whole values: nesting, a key twice, a long run (MiB of one byte).
HOSTILE_VALUE = st.one_of(
    st.integers(1, 3000).map(deep),
    st.integers(1, 48).map(lambda mib: b'"' + b"z" * (mib * MiB) + b'"'),
    st.just(b'"a", "dup": "b", "dup": "c"'),
    st.just(b"1e999999"),
    st.just(b"-0"),
)


@st.composite
def hostile_json_line(draw: st.DrawFn, line: bytes) -> bytes:
    """`line` (a JSON object on one line) with a string broken or a value added."""
    if draw(st.booleans()):
        at = line.index(b'": "') + 4
        return line[:at] + draw(HOSTILE_TEXT) + line[at:]
    return line[:-1] + b', "extra": ' + draw(HOSTILE_VALUE) + b"}"


def assert_corpus_case(code: int, stderr: str, peak: int, valid: int) -> None:
    assert code in (0, 1), stderr
    assert_clean(code, stderr, code)
    assert len(stderr.splitlines()) < 200
    assert peak < 3 * valid + FIXED_MEMORY, f"{peak / MiB:.0f} MiB"


def run_corpus_case(args: list[str], valid: int) -> tuple[int, str]:
    code, stderr, peak = run_capped(args)
    assert_corpus_case(code, stderr, peak, valid)
    return code, stderr


@given(data=st.data(), broken=st.lists(st.integers(0, 4), min_size=1, max_size=3))
@settings(max_examples=6, deadline=None)
def test_hostile_prosocial_lines_end_cleanly_in_bounded_memory(
    sample_lines: list[str], data: st.DataObject, broken: list[int]
) -> None:
    lines = [line.encode() for line in sample_lines]
    for index in broken:
        lines[index] = data.draw(hostile_json_line(lines[index]))
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "test.json"
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        ingest = ["ingest", str(path), "--data", f"{scratch}/data"]
        ended, peak = run_capped_each([["validate", str(path)], ingest])
        for code, stderr in ended:
            assert_corpus_case(code, stderr, peak, len(SAMPLES.read_bytes()))
        assert (Path(scratch) / "data" / "prosocial").exists() == (ended[1][0] == 0)


@given(
    data=st.data(),
    layout=st.sampled_from(["csv", "jsonl", "jsonl.gz"]),
    command=st.sampled_from(["evaluate", "sql"]),
)
@settings(max_examples=8, deadline=None)
def test_hostile_predictions_and_tables_end_cleanly_in_bounded_memory(
    sample: Path, data: st.DataObject, layout: str, command: str
) -> None:
    """A predictions file (`evaluate`) or a table (`sql --table`) of a few good rows and
    some hostile ones. A line within the record bound is read whole, whatever it holds (a
    value of many MiB under a key dices ignores is legal JSON): its bytes count as valid
    input; a longer one is refused unread."""
    good = [f'{{"item_id": {i}, "label": "Yes"}}'.encode() for i in (13, 14, 15)]
    rows = [*good, *(data.draw(hostile_json_line(line)) for line in good)]
    if layout == "csv":
        rows = [b"item_id,label"] + [
            b"%d,%s" % (i, data.draw(st.one_of(HOSTILE_TEXT, HOSTILE_VALUE))) for i in (13, 14, 15)
        ]
    text = b"".join(row + b"\n" for row in rows)
    read_whole = sum(len(row) + 1 for row in rows if len(row) < MAX_RECORD_BYTES)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"p.{layout}"
        path.write_bytes(gzip.compress(text) if layout.endswith(".gz") else text)
        args = (
            ["evaluate", str(path), "-d", "350", "--bootstrap", "0"]
            if command == "evaluate"
            else ["sql", "SELECT count(*) FROM t", "--table", f"t={path}"]
        )
        run_corpus_case([*args, "--data", str(sample)], 1000 + read_whole)


def test_duckdb_out_of_memory_is_not_enough_memory(
    runner: CliRunner, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB failing to allocate (`sql --table` of a 20 MiB value under a 2 GiB
    address-space cap did) is the environment's fault, said as such: not "a bug"."""
    import duckdb

    from dices_cli.queries import sandbox

    def no_memory(*_: object) -> None:
        raise duckdb.OutOfMemoryException("Out of Memory Error: Failed to allocate block")

    monkeypatch.setattr(sandbox, "add_tables", no_memory)
    table = tmp_path / "t.csv"
    table.write_text("item_id,label\n13,Yes\n", encoding="utf-8")
    args = ["sql", "SELECT count(*) FROM t", "--table", f"t={table}", "--data", str(sample)]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Error: not enough memory to finish; nothing was written\n"


@given(
    bomb=st.booleans(),
    value_kib=st.integers(1, 4),
    rows=st.integers(1, 1024),
    command=st.sampled_from(["evaluate", "sql"]),
)
@settings(max_examples=6, deadline=None)
def test_parquet_with_repeated_values_ends_cleanly_in_bounded_memory(
    sample: Path, bomb: bool, value_kib: int, rows: int, command: str
) -> None:
    """A dictionary-repeated string: read when it fits (at most 4 MiB decoded), refused
    before it is read when it takes more than 2 GiB (4 to 16 MiB x 2,052 to 6,144 rows).
    (64 MiB of 64 KiB labels, which fits --max-size, still ends evaluate in SIGABRT under
    the 2 GiB address-space cap: Polars' working copies, not the reading.)"""
    if bomb:
        value_kib, rows = value_kib * 4 * 1024, rows * 4 + 2048
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "p.parquet"
        label = pa.DictionaryArray.from_arrays(
            pa.array([0] * rows, pa.int32()), pa.array(["y" * (value_kib * 1024)])
        )
        pq.write_table(pa.table({"item_id": pa.array(range(rows)), "label": label}), path)
        args = (
            ["evaluate", str(path), "-d", "350", "--bootstrap", "0"]
            if command == "evaluate"
            else ["sql", "SELECT count(*) FROM t", "--table", f"t={path}"]
        )
        code, stderr, peak = run_capped([*args, "--data", str(sample)])
    assert code in (0, 1), stderr
    assert_clean(code, stderr, code)
    decoded = value_kib * 1024 * rows
    assert (decoded > 2 << 30) == bomb
    if bomb:
        assert code == 1
        assert stderr.endswith("of data once decompressed and decoded; nothing was read\n")
    # A bomb's one value is read (it is in the file); a file that fits is read whole.
    held = 3 * value_kib * 1024 if bomb else 4 * decoded
    assert peak < held + FIXED_MEMORY, f"{peak / MiB:.0f} MiB"


# --- progress bars and options (issue 36) ------------------------------------------------------


def test_the_progress_bar_shows_a_file_name_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """ingest and validate name the file in their bar: an escape sequence and U+202E in the
    name reached the terminal raw (and `[bold]` was read as markup)."""
    import io

    from rich.console import Console

    from dices_cli.cli import render

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200, color_system=None)
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setattr(render, "stderr_console", lambda: console)
    monkeypatch.setattr(render._Quiet, "on", False)
    name = "reading evil\x1b]0;pwned\x07\u202e[bold]x.csv"
    with render.progress_bar(enabled=True) as progress:
        progress(name, 0.5)
        console.file.flush()
    shown = screen.getvalue()
    assert "\x1b]0;pwned" not in shown
    assert "\u202e" not in shown
    assert "reading evil\\x1b]0;pwned\\x07\\u202e[bold]x.csv" in shown


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timeout", "nan", "--timeout is a finite number of seconds, not nan"),
        ("--timeout", "inf", "--timeout is a finite number of seconds, not inf"),
        ("--deadline", "nan", "--deadline is a number of seconds, not nan"),
    ],
)
def test_download_refuses_a_time_that_is_not_a_number(
    option: str, value: str, message: str, tmp_path: Path
) -> None:
    """`download --timeout nan` or `inf` said "a bug in dices"."""
    result = CliRunner().invoke(app, ["download", "350", "--dir", str(tmp_path), option, value])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"Error: {message}\nTry 'dices download -h' for help.\n"
