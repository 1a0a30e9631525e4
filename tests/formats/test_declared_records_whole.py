"""Whether Polars saw every record of a delimited file whole (records_whole): true for any
well-formed CSV text, false once a record is short or a blank line is in it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dices_cli.formats.declared.records_whole import (
    CellCounts,
    header_line,
    whole,
)
from dices_cli.read.checksum import BOM, TextCounts

PIECES = st.sampled_from(["a", "é", " ", ",", '"', "\n", "\r\n", "\t"])
CELLS = st.lists(PIECES, max_size=4).map("".join)


def encoded(rows: list[list[str]], line_end: str, final: bool) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator=line_end).writerows(rows)
    text = out.getvalue()
    return (text if final else text.removesuffix(line_end)).encode()


def judged(text: bytes, tmp_path: Path) -> bool | None:
    """`whole` of Polars' parse of `text`, as the stream reads it; None when Polars refuses."""
    path = tmp_path / "x.csv"
    path.write_bytes(text)
    try:
        frame = pl.read_csv(path, infer_schema=False, raise_if_empty=False, extra_columns="raise")
    except pl.exceptions.PolarsError:
        return None
    cells = CellCounts(quoted=b'"' in text)
    cells.add(frame)
    counts = TextCounts()
    counts.add(text)
    return whole(cells, counts.facts(), header_line(text), len(frame.columns))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    columns=st.integers(2, 4),
    data=st.data(),
    line_end=st.sampled_from(["\n", "\r\n"]),
    final=st.booleans(),
    bom=st.booleans(),
)
def test_a_well_formed_text_is_whole_and_a_short_record_is_not(
    tmp_path: Path, columns: int, data: st.DataObject, line_end: str, final: bool, bom: bool
) -> None:
    header = [f"c{i}" for i in range(columns)]
    body = data.draw(st.lists(st.lists(CELLS, min_size=columns, max_size=columns), max_size=5))
    # A record Polars reads as nulls only: csv writes [""] as '""', so keep one cell.
    body = [row for row in body if any(row)] or [["a"] * columns]
    prefix = BOM if bom else b""
    assert judged(prefix + encoded([header, *body], line_end, final), tmp_path)
    broken = data.draw(st.integers(0, len(body) - 1))
    short = [*body[:broken], body[broken][:-1], *body[broken + 1 :]]
    assert not judged(prefix + encoded([header, *short], line_end, final), tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        b"a,b\n1,2\n\n3,4\n",  # a blank line
        b"a,b\n1,2\n3\n",  # a short record
        b"a,b\n1,2\r3,4\n",  # a lone carriage return
        b"a,b\n1,2\x00\n",  # a NUL byte
    ],
)
def test_a_text_polars_reads_otherwise_than_written_is_not_whole(
    tmp_path: Path, text: bytes
) -> None:
    assert judged(text, tmp_path) is not True


def test_a_quote_after_the_first_bytes_leaves_the_text_untrusted(tmp_path: Path) -> None:
    text = b'a,b\n1,2\n3,"x"\n'
    path = tmp_path / "x.csv"
    path.write_bytes(text)
    frame = pl.read_csv(path, infer_schema=False)
    counts = TextCounts()
    counts.add(text)
    cells = CellCounts(quoted=False)  # as if the quote came after the bytes looked at
    cells.add(frame)
    assert not whole(cells, counts.facts(), header_line(text), 2)
    cells = CellCounts(quoted=True)
    cells.add(frame)
    assert whole(cells, counts.facts(), header_line(text), 2)


def test_a_header_alone_is_whole_with_or_without_its_line_end(tmp_path: Path) -> None:
    for text in (b"a,b\n", b"a,b"):
        assert judged(text, tmp_path)
