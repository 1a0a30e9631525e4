"""`dices_cli.read.lines.verbatim_records`: the bytes of the records at given lines, read back
in one pass (for `dices ingest --rejects`), holding neither the file nor the list of spans: a
file may have millions of broken records, whose starts are kept packed."""

from __future__ import annotations

import io
from collections.abc import Iterator

from dices_cli.read.lines import verbatim_records

TEXT = b'h\r\na,1\r\n\r\n"b\nc",2\nd,3\ne'


def test_each_record_is_its_lines_verbatim() -> None:
    spans = [(2, 1), (4, 2), (7, 1)]
    assert list(verbatim_records(io.BytesIO(TEXT), spans)) == [
        (2, b"a,1\r\n"),
        (4, b'"b\nc",2\n'),
        (7, b"e"),
    ]


def test_the_spans_are_taken_one_at_a_time() -> None:
    """Each span is asked for only once the record before it is out: millions of spans
    cost nothing held."""
    asked: list[int] = []

    def spans() -> Iterator[tuple[int, int]]:
        for first, count in [(2, 1), (4, 2), (6, 1)]:
            asked.append(first)
            yield first, count

    records = verbatim_records(io.BytesIO(TEXT), spans())
    assert (next(records), asked) == ((2, b"a,1\r\n"), [2])
    assert (next(records), asked) == ((4, b'"b\nc",2\n'), [2, 4])
    assert (next(records), asked) == ((6, b"d,3\n"), [2, 4, 6])
    assert next(records, None) is None
