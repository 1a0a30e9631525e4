"""The columnar reader of predictions files (PyArrow, a block at a time) reads every file as
the record reader does: the same rows and values, or the same problem records.

Each case is read twice: as `dices evaluate` reads it, and with the columnar reader turned
off, so that the record reader (csv module, json per line) reads it. A case the columnar
reader cannot vouch for must go to the record reader, never be read differently.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from dices_cli.evaluate import predictions
from dices_cli.evaluate.predictions import InvalidPredictionsError, columnar, read_predictions
from dices_cli.evaluate.predictions import rows as gathering

ITEMS = (1, 2, 3)


def outcome(path: Path) -> object:
    """The frame read from `path`, or its problem records and counts."""
    try:
        return read_predictions(str(path), ITEMS).frame
    except InvalidPredictionsError as error:
        report = error.report
        records = [(str(p.type), p.line, p.column, p.value, p.message) for p in report.problems]
        return records, report.rows_read, report.rows_rejected, report.not_kept


def record_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    def declined(*_: object) -> None:
        raise columnar.NotSimple

    monkeypatch.setattr(predictions, "read_columnar", declined)


def columnar_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> None:
        raise AssertionError("read by the record reader")

    monkeypatch.setattr(predictions, "read_records", refused)


def assert_read_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = outcome(path)
    with monkeypatch.context() as patched:
        record_reader(patched)
        theirs = outcome(path)
    assert_frame_or_equal(ours, theirs)


def read_alike_by_the_columnar_reader(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """`assert_read_alike`, the file read as `dices evaluate` reads it by the columnar reader
    (the record reader is never asked to read it all); that outcome."""
    with monkeypatch.context() as patched:
        columnar_only(patched)
        ours = outcome(path)
    with monkeypatch.context() as patched:
        record_reader(patched)
        theirs = outcome(path)
    assert_frame_or_equal(ours, theirs)
    return ours


def assert_frame_or_equal(ours: object, theirs: object) -> None:
    if isinstance(ours, pl.DataFrame) and isinstance(theirs, pl.DataFrame):
        assert_frame_equal(ours, theirs)
    else:
        assert ours == theirs


CSV_CASES = {
    "plain": b"model,item_id,label,score\nm,1,Yes,0.9\nm,2,No,0.1\n",
    "crlf": b"model,item_id,label,score\r\nm,1,Yes,0.9\r\nm,2,No,0.1\r\n",
    "no final line end": b"item_id,label\n1,Yes\n2,No",
    "bom": b"\xef\xbb\xbfitem_id,label\n1,Yes\n",
    "quoted cells": b'model,item_id,label\n"a,b",1,"Yes"\n"say ""hi""",2,""\n"",3,No\n',
    "text after a closing quote": b'item_id,label\n1,"Ye"s\n',
    "a quote inside a cell": b'item_id,label\n1,Ye"s\n',
    "a line end inside quotes": b'model,item_id,label\n"a\nb",1,Yes\n',
    "an unclosed quote": b'item_id,label\n1,"Yes\n',
    "a lone CR": b"item_id,label\r1,Yes\r2,No\r",
    "a CR inside a cell": b"item_id,label\n1,Ye\rs\n",
    "blank lines": b"item_id,label\n\n1,Yes\n\n\n2,No\n",
    "a blank line of spaces": b"item_id,label\n1,Yes\n  \n",
    "too many cells": b"item_id,label\n1,Yes,x\n",
    "too few cells": b"item_id,label\n1\n",
    "invalid UTF-8 in a known column": b"item_id,label\n1,Y\xffs\n",
    "invalid UTF-8 elsewhere": b"item_id,label,note\n1,Yes,\xff\n",
    "a duplicate column": b"item_id,label,Label\n1,Yes,No\n",
    "blanks around names and cells": b" Item_ID ,label\n 1 , yes \n",
    "problems": b"model,item_id,label,score\nm,1,maybe,2\nm,1,Yes,x\n,9,,\n",
    "a header only": b"item_id,label\n",
    "no item_id": b"label\nYes\n",
    "a NUL": b"item_id,label\n1,Yes\x00\n",
}


@pytest.mark.parametrize("case", sorted(CSV_CASES))
def test_csv_cases_are_read_alike(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(CSV_CASES[case])
    assert_read_alike(path, monkeypatch)


JSON_CASES = {
    "plain": b'{"model":"m","item_id":1,"label":"Yes","score":0.9}\n{"item_id":2,"score":1}\n',
    "crlf": b'{"item_id":1,"label":"Yes"}\r\n{"item_id":2,"label":"No"}\r\n',
    "bom": b'\xef\xbb\xbf{"item_id":1,"label":"Yes"}\n',
    "a fraction as an item id": b'{"item_id":1.0,"label":"Yes"}\n',
    "a fraction as a label": b'{"item_id":1,"label":1.0}\n',
    "a number as a label": b'{"item_id":1,"label":1}\n',
    "true as a label": b'{"item_id":1,"label":true}\n',
    "a score of 5.0": b'{"item_id":1,"score":5.0}\n',
    "a score of 1e-7": b'{"item_id":1,"score":1e-7}\n{"item_id":2,"score":0.5}\n',
    "NaN": b'{"item_id":1,"score":NaN}\n',
    "a list": b'{"item_id":1,"label":["Yes"]}\n',
    "an object elsewhere": b'{"item_id":1,"label":"Yes","meta":{"a":1}}\n',
    "a duplicate key": b'{"item_id":1,"label":"Yes","label":"No"}\n',
    "a duplicate key nested": b'{"item_id":1,"label":"Yes","m":{"a":1,"a":2}}\n',
    "keys naming one column": b'{"item_id":1,"label":"Yes","Label":"No"}\n',
    "keys naming one column on two lines": (
        b'{"item_id":1,"label":"Yes"}\n{"item_id":2,"Label":"No"}\n'
    ),
    "a lone surrogate": b'{"item_id":1,"label":"\\ud800"}\n',
    "a surrogate pair": b'{"item_id":1,"label":"Yes","note":"\\ud83d\\ude00"}\n',
    "invalid UTF-8": b'{"item_id":1,"label":"Yes","note":"\xff"}\n',
    "deep nesting": b'{"item_id":1,"label":"Yes","n":' + b"[" * 70 + b"]" * 70 + b"}\n",
    "two objects on a line": b'{"item_id":1,"label":"Yes"}{"item_id":2,"label":"No"}\n\n',
    "not an object": b'{"item_id":1,"label":"Yes"}\n[1,2]\n',
    "blank lines": b'{"item_id":1,"label":"Yes"}\n\n  \n{"item_id":2,"label":"No"}\n',
    "a raw tab in a string": b'{"item_id":1,"label":"Ye\ts"}\n',
    "a type changing": b'{"item_id":1,"label":"Yes"}\n{"item_id":"2","label":"No"}\n',
    "a key appearing late": (
        b'{"item_id":1,"label":"Yes"}\n{"item_id":2,"label":"No","score":0.5}\n'
    ),
    "a timestamp-like string": b'{"item_id":1,"label":"Yes","model":"2024-01-01"}\n',
    "a duplicate prediction": b'{"item_id":1,"label":"Yes"}\n{"item_id":1,"label":"No"}\n',
    "invalid JSON": b'{"item_id":1,"label":"Yes"}\n{"item_id":2,\n',
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_json_lines_cases_are_read_alike(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(JSON_CASES[case])
    assert_read_alike(path, monkeypatch)


CELL = st.text(alphabet='ab, "\t\r\n1Y\xe9', max_size=6)


@pytest.mark.slow
@settings(max_examples=max(50, settings.default.max_examples), deadline=None)
@given(rows=st.lists(st.tuples(CELL, CELL), max_size=5), tsv=st.booleans())
def test_any_small_table_is_read_alike(rows: list[tuple[str, str]], tsv: bool) -> None:
    """Cells of quotes, delimiters, CRs, LFs and tabs, joined without escaping: whatever
    that makes of the file, both readers make the same of it."""
    import tempfile

    delimiter = "\t" if tsv else ","
    text = "item_id" + delimiter + "label\n" + "".join(delimiter.join(r) + "\n" for r in rows)
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder) / ("p.tsv" if tsv else "p.csv")
        path.write_bytes(text.encode())
        assert_read_alike(path, patch)


def test_plain_files_are_read_by_the_columnar_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path is taken for the files it is for (gzip and stdin spool to a plain file)."""
    columnar_only(monkeypatch)
    text = "model,item_id,label,score\n" + "".join(
        f"m{m},{i},Yes,0.5\n" for m in range(3) for i in ITEMS
    )
    (tmp_path / "p.csv").write_text(text)
    (tmp_path / "p.tsv").write_text(text.replace(",", "\t"))
    (tmp_path / "p.csv.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "p.jsonl").write_text('{"item_id":1,"label":"Yes"}\n{"item_id":2,"score":0.5}\n')
    for name in ("p.csv", "p.tsv", "p.csv.gz", "p.jsonl"):
        assert read_predictions(str(tmp_path / name), ITEMS).frame.height in (9, 2)


def test_a_file_of_many_blocks_keeps_its_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of a few KB, so that rows, line numbers and the checks over several rows
    (a duplicate in another block) span blocks."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 10)
    monkeypatch.setattr(columnar, "SCAN_BYTES", 1 << 9)
    # Quoted names (some with a quote or a comma inside) put quotes on block edges.
    lines = [f'"m{m}",{i},Yes,0.5\n' for m in range(400) for i in ITEMS]
    lines[500:600] = [f'"m,""{n}""",1,"No",0.5\r\n' for n in range(100)]
    lines[1000] = "m0,2,No,0.5\n"  # m0's item 2 again, blocks after line 3
    lines[1100] = "m9,1,Yes,7\n"
    path = tmp_path / "p.csv"
    path.write_text("model,item_id,label,score\n" + "".join(lines))
    records, *_ = read_alike_by_the_columnar_reader(path, monkeypatch)  # type: ignore[misc]
    assert records == [
        (
            "duplicate-prediction",
            1002,
            "item_id",
            "2",
            "model m0 already has a prediction for item 2 (line 3)",
        ),
        (
            "duplicate-prediction",
            1102,
            "item_id",
            "1",
            "model m9 already has a prediction for item 1 (line 29)",
        ),
        ("out-of-range", 1102, "score", "7", "7 is outside [0, 1]; score is a probability"),
    ]


def test_json_lines_with_problems_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON Lines file PyArrow reads is not read again by the record reader for its
    problems: only their lines are, for Python's spelling of their values (2.0, not PyArrow's
    "2"), over blocks of a few KB so that the lines are found across blocks."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(columnar, "SCAN_BYTES", 1 << 11)
    row = '{{"model":"m{}","item_id":{},"label":"{}","score":{}}}\n'
    lines = [row.format(m, i, "Yes", 0.5) for m in range(400) for i in ITEMS]
    lines[700] = row.format(0, 2, "No", 0.25)  # m0's item 2 again
    lines[900] = row.format("late", 1, "Yes", "2.0")
    lines[901] = row.format("late", 99, "maybe", "1e-7")
    path = tmp_path / "p.jsonl"
    path.write_text("".join(lines))
    records, *_ = read_alike_by_the_columnar_reader(path, monkeypatch)  # type: ignore[misc]
    assert records == [
        (
            "duplicate-prediction",
            701,
            "item_id",
            "2",
            "model m0 already has a prediction for item 2 (line 2)",
        ),
        ("out-of-range", 901, "score", "2.0", "2.0 is outside [0, 1]; score is a probability"),
        ("unknown-item", 902, "item_id", "99", "item 99 is not a conversation of the dataset"),
        (
            "not-in-enum",
            902,
            "label",
            "maybe",
            "'maybe' is not a label: give Yes, No or Unsure (Yes = unsafe), or unsafe/safe",
        ),
    ]


@pytest.mark.slow
def test_the_record_reader_reads_alike_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record reader hands its rows to the checks a batch at a time (only typed rows
    are held): batches of two rows read every case as one batch does, a JSON Lines key
    first named after the first batch included (the columns were taken too early: the file
    is read again, knowing them)."""
    record_reader(monkeypatch)
    cases = {f"{name}.csv": data for name, data in CSV_CASES.items()}
    cases |= {f"{name}.jsonl": data for name, data in JSON_CASES.items()}
    late = [f'{{"model":"m","item_id":{i},"label":"Yes"}}\n' for i in ITEMS] * 3
    late += ['\n{"model":"n","item_id":1,"label":"No","score":2.0}\n', '{"item_id":9}\n']
    cases["a key named late.jsonl"] = "".join(late).encode()
    outcomes = {}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        outcomes[name] = outcome(path)
    monkeypatch.setattr(gathering, "BATCH_ROWS", 2)
    monkeypatch.setattr(gathering, "VALIDATED_ROWS", 4)
    for name in cases:
        assert_frame_or_equal(outcome(tmp_path / name), outcomes[name])
    records, *_ = outcomes["a key named late.jsonl"]  # type: ignore[misc]
    assert records[-4:] == [  # (line 10 is blank)
        ("out-of-range", 11, "score", "2.0", "2.0 is outside [0, 1]; score is a probability"),
        ("missing-value", 12, "model", None, "the row names no model"),
        ("unknown-item", 12, "item_id", "9", "item 9 is not a conversation of the dataset"),
        ("missing-value", 12, None, None, "the row gives no prediction: label and score empty"),
    ]


@pytest.mark.parametrize(
    "late",
    [
        '{"model":"late","item_id":2,\n',  # not JSON
        '{"model":"late","item_id":2,"label":"Yes","label":"No","score":0.5}\n',  # a key twice
        '{"model":"late","item_id":"2","label":"Yes","score":0.5}\n',  # a type changing
        '{"model":"late","item_id":2,"label":["Yes"],"score":0.5}\n',  # a list
    ],
)
def test_json_lines_that_pyarrow_gives_up_on_late_are_read_on_from_there(
    late: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyArrow's reader gives up at a block: the lines before it stay read (and checked),
    the record reader reads from there on; the records are the record reader's, lines,
    duplicates across the two and the spelling of 2.0 included."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(columnar, "SCAN_BYTES", 1 << 11)
    row = '{{"model":"m{}","item_id":{},"label":"{}","score":{}}}\n'
    lines = [row.format(m, i, "Yes", 0.5) for m in range(400) for i in ITEMS]
    lines[300] = row.format("late", 1, "Yes", "2.0")
    lines[1000] = late
    lines[1001] = row.format("late", 1, "maybe", "3.0")  # the model's item 1 again
    path = tmp_path / "p.jsonl"
    path.write_text("".join(lines))
    records, *_ = read_alike_by_the_columnar_reader(path, monkeypatch)  # type: ignore[misc]
    label = "'maybe' is not a label: give Yes, No or Unsure (Yes = unsafe), or unsafe/safe"
    assert [r for r in records if r[1] != 1001] == [  # (line 1001's record is its own)
        ("out-of-range", 301, "score", "2.0", "2.0 is outside [0, 1]; score is a probability"),
        (
            "duplicate-prediction",
            1002,
            "item_id",
            "1",
            "model mlate already has a prediction for item 1 (line 301)",
        ),
        ("not-in-enum", 1002, "label", "maybe", label),
        ("out-of-range", 1002, "score", "3.0", "3.0 is outside [0, 1]; score is a probability"),
    ]


@pytest.mark.parametrize("layout", ["csv", "jsonl"])
def test_blank_lines_leave_a_file_to_the_columnar_reader(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blank lines (empty, or a CR alone; a file's last line end is often followed by one)
    used to send a file to the record reader: 10M rows took minutes, not seconds. Both
    readers skip them; the lines of the records past them, in later blocks and after
    PyArrow gives up (a type changing), are the record reader's."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 10)
    monkeypatch.setattr(columnar, "SCAN_BYTES", 1 << 9)
    if layout == "csv":
        row, header = "m{},{},{},{}\n", "model,item_id,label,score\n"
    else:
        row, header = '{{"model":"m{}","item_id":{},"label":"{}","score":{}}}\n', ""
    lines = [row.format(m, i, "Yes", 0.5) for m in range(300) for i in ITEMS]
    lines[150] = row.format(0, 2, "No", 0.5)  # m0's item 2 again
    lines[700] = row.format(9, 1, "maybe", 7)
    if layout == "jsonl":
        lines[800] = '{"model":"x","item_id":"2","label":"No"}\n'  # PyArrow gives up
        lines[801] = row.format(0, 3, "Yes", 0.5)  # m0's item 3 again, after it
    for at in (800, 701, 700, 400, 150, 41, 40, 0):  # from the end, so that each stays put
        lines.insert(at, "\n" if at % 2 else "\r\n")
    path = tmp_path / f"p.{layout}"
    path.write_text(header + "".join(lines) + "\n\r\n\n")
    records, rows, *_ = read_alike_by_the_columnar_reader(path, monkeypatch)  # type: ignore[misc]
    assert rows == 900
    lines_of = {(kind, line) for kind, line, *_ in records}
    first = 2 if layout == "csv" else 1
    assert ("duplicate-prediction", first + 150 + 4) in lines_of  # after 4 blank lines
    assert ("not-in-enum", first + 700 + 6) in lines_of  # after 6
    if layout == "jsonl":
        assert ("duplicate-prediction", first + 801 + 8) in lines_of  # read on from line 809


JSON_PIECES = st.sampled_from(
    [
        '{"model":"m","item_id":1,"label":"Yes"}\n',
        '{"model":"m","item_id":2,"label":"maybe","score":2.0}\n',
        '{"model":"n","item_id":3,"label":"No","score":0.5}\r\n',
        '{"model":"n","item_id":"3","label":"No"}\n',  # a type changing: PyArrow gives up
        "\n",
        "\r\n",
    ]
)


@pytest.mark.slow
@settings(max_examples=max(40, settings.default.max_examples), deadline=None)
@given(pieces=st.lists(JSON_PIECES, max_size=60), csv=st.booleans())
def test_any_file_with_blank_lines_is_read_alike(pieces: list[str], csv: bool) -> None:
    """Rows, problems, duplicates and blank lines in any order, over blocks of a few hundred
    bytes: both readers make the same of the file, lines included."""
    import tempfile

    if csv:
        pieces = [
            piece
            if not piece.startswith("{")
            else ",".join(str(value) for value in json.loads(piece).values()) + "\n"
            for piece in pieces
        ]
    header = "model,item_id,label,score\n" if csv else ""
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(columnar, "BLOCK_BYTES", 1 << 8)
        patch.setattr(columnar, "SCAN_BYTES", 1 << 7)
        path = Path(folder) / ("p.csv" if csv else "p.jsonl")
        path.write_text(header + "".join(pieces))
        assert_read_alike(path, patch)


def test_more_blank_lines_than_are_kept_go_to_the_record_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columnar reader keeps the number of each blank line (to give each row its line):
    past MAX_BLANK_LINES of them the record reader reads the file, which holds none, so that
    a file of a billion line ends takes no 8 GB."""
    monkeypatch.setattr(columnar, "MAX_BLANK_LINES", 2)
    path = tmp_path / "p.csv"
    path.write_text("item_id,label\n1,Yes\n\n2,No\n\n\n3,maybe\n")
    assert_read_alike(path, monkeypatch)
    read_by: list[str] = []
    record_reader = predictions.read_records

    def spied(*args: object) -> object:
        read_by.append("record reader")
        return record_reader(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(predictions, "read_records", spied)
    records, *_ = outcome(path)  # type: ignore[misc]
    assert read_by == ["record reader"]
    assert [(kind, line) for kind, line, *_ in records] == [("not-in-enum", 7)]


def test_a_json_lines_key_first_named_where_pyarrow_gave_up_is_read_by_the_record_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(columnar, "SCAN_BYTES", 1 << 11)
    lines = [f'{{"model":"m{m}","item_id":{i},"label":"Yes"}}\n' for m in range(400) for i in ITEMS]
    lines[1000] = '{"model":"late","item_id":2,"label":"Yes","score":2.0}\n'
    lines[1001] = '{"model":"late","item_id":3,\n'
    path = tmp_path / "p.jsonl"
    path.write_text("".join(lines))
    assert_read_alike(path, monkeypatch)
