"""The records of a CSV or TSV text by Python's strict csv reader, one at a time, each with the
lines it spans: the reader that says where a file is broken.

A record the csv module refuses (a quote where none may be, a NUL byte) is its `csv.Error`;
a record longer than MAX_RECORD_BYTES (`dices_cli.read.lines`) is None, and reading starts
again at the next line. Blank lines between records are skipped.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import BinaryIO

from dices_cli.problems import Problem, ProblemType
from dices_cli.read.lines import MAX_RECORD_BYTES, Lines, RecordTooLongError

# The csv module refuses fields over 128 KiB by default, which would report a long but valid
# cell as broken quoting; a cell may be as long as the file (2 GiB fits every C long).
csv.field_size_limit(2**31 - 1)

# A record's first line, the lines it spans, and its cells: the csv module's error when it
# refuses them, None when the record is too long to read.
Record = tuple[int, int, "list[str] | csv.Error | None"]


def csv_records(text: BinaryIO, delimiter: str = ",") -> Iterator[Record]:
    """Each record of `text` (binary, from its start): its first line, the number of lines it
    spans and its cells (`Record`)."""
    lines = Lines(text)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    while True:
        lines.start_record()
        try:
            cells: list[str] | csv.Error | None = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            cells = error
        except RecordTooLongError:
            yield lines.first, lines.count - lines.first + 1, None
            reader = csv.reader(lines, delimiter=delimiter, strict=True)  # afresh, next line
            continue
        yield lines.first, lines.count - lines.first + 1, cells


def record_too_long(line: int, usual: str) -> Problem:
    """The problem of a record too long to read, starting at `line`; `usual` says how long a
    record of this file's kind is ("a prediction is a few bytes")."""
    return Problem(
        ProblemType.RECORD_TOO_LONG,
        line,
        None,
        None,
        f"the record starting here is longer than {MAX_RECORD_BYTES >> 20} MiB, and {usual}; "
        "reading goes on at the next line",
    )
