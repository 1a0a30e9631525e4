"""The columnar reader: the bulk of a text predictions file of one record a line, read by
PyArrow a block at a time."""

from __future__ import annotations

import codecs
import csv
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING

from dices_cli.evaluate.predictions.columns import (
    COLUMNS,
    DELIMITERS,
    LINE,
    PROBABILITIES,
    ItemKind,
    NotSimple,
    header_positions,
    no_rows,
    too_long_cell,
    usable,
)
from dices_cli.evaluate.predictions.records import json_problem, json_rows, known_cells
from dices_cli.evaluate.predictions.rows import Rows
from dices_cli.evaluate.predictions.validation import Respelling, Validation
from dices_cli.problems import Problem, Report
from dices_cli.read.json_lines import MAX_DEPTH
from dices_cli.read.lines import BOM
from dices_cli.read.source import Source

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    import pyarrow as pa


# Bytes of text per PyArrow block, and so about 150,000 rows of CSV typed and checked at a
# time. A block holds at least two lines (PyArrow refuses a line longer than a block, and its
# JSON reader then hangs): a file with a longer line is read by the record reader. (Blocks
# grew to twice the longest line before, and PyArrow held about ten times a line of MiBs.)
BLOCK_BYTES = 1 << 22
LONGEST_COLUMNAR_LINE = BLOCK_BYTES // 2
SCAN_BYTES = 1 << 22  # bytes looked at a time by `_simple_lines`
# Blank lines whose numbers `_simple_lines` keeps (8 MiB of them); a file of more is read by
# the record reader, so that memory stays bounded by the rows, not by the blank lines.
MAX_BLANK_LINES = 1 << 20
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # may escape half of a UTF-16 pair
_LF, _CR, _QUOTE, _BRACE, _BRACKET = (ord(c) for c in '\n\r"{[')


def read_columnar(
    source: Source,
    layout: str,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
    report: Report,
) -> pl.DataFrame | None:
    """The typed frame of a CSV, TSV or JSON Lines file of one record per line, read by
    PyArrow a block at a time (many times faster than the record reader; bench/predictions.py),
    its problems in `report`; None when the columns refuse the file. NotSimple when the
    file is not plainly one record per line (`_simple_lines`) or when PyArrow finds it
    invalid: the record reader then reads it and says where and what each problem is. (A
    JSON Lines file PyArrow gives up on after its first block is read on by the record
    reader from there, `_json_tail`; the lines of its problems are read again by Python's
    JSON, for their values and messages, `_json_lines_again`.)"""
    import pyarrow as pa

    lines, blanks = _simple_lines(source, layout)
    validation: Validation | None = None
    first = 1 if layout == "jsonl" else 2  # the line of the first row
    line_of = _row_lines(first, blanks)
    try:
        columns, batches = _arrow_batches(source, layout, BLOCK_BYTES, report)
        if not usable(columns, 1 if layout != "jsonl" else None, source, datasets, kind, report):
            return None
        validation, rows = Validation(columns, datasets, one_means, kind), 0
        for batch in batches:
            validation.add(batch.with_columns(line_of(rows, batch.height)))
            rows += batch.height
    except (pa.ArrowException, UnicodeDecodeError) as error:
        if layout != "jsonl" or validation is None:
            raise NotSimple from error
        gave_up = True
    else:
        gave_up = False
    if gave_up:  # (out of the except block, whose exception holds PyArrow's last block)
        # PyArrow gave up at a block (a line not JSON, a type changing, a key twice): the
        # record reader reads the lines from there on, into the same checks.
        assert validation is not None
        rows += _json_tail(source, int(line_of(rows, 1)[0]), columns, validation, report)
    if rows != lines - (first - 1) - len(blanks):
        raise NotSimple  # PyArrow saw a record where no line starts one
    report.rows_read = rows
    if rows == 0:
        no_rows(report)
    # PyArrow and Python spell some JSON values apart (2.0 is "2" to PyArrow): the lines of
    # problems are read again, for the record reader's values and messages.
    return validation.finish(report, _json_lines_again(source) if layout == "jsonl" else None)


def _json_tail(
    source: Source, line: int, columns: list[str], validation: Validation, report: Report
) -> int:
    """The records from line `line` on of a JSON Lines file of one record a line (as
    `_simple_lines` vouched), read by the record reader into `validation`; NotSimple when
    one names a known column that `columns` lack (the record reader reads the file)."""
    (_, start, _), *_ = _line_spans(source, [line])
    tail = json_rows(source, report, lambda _: validation, columns, (start, line - 1))
    if tail is None or tail.finish() is None:
        raise NotSimple
    return tail.records


def _json_lines_again(source: Source) -> Respelling:
    """The cells of some lines of a JSON Lines file of one record a line (as
    `_simple_lines` vouched), read as the record reader reads them, about a BLOCK_BYTES of
    lines at a time; NotSimple if Python's JSON refuses one of them."""

    def cells(lines: list[int]) -> Iterator[pl.DataFrame]:
        rows, held = Rows(list(COLUMNS)), 0
        for line, start, end in _line_spans(source, lines):
            text = os.pread(source.fileno, end - start, start).decode("utf-8", "surrogateescape")
            record = json_problem(line, text)
            known = record if isinstance(record, Problem) else known_cells(line, record)
            if isinstance(known, Problem):
                raise NotSimple  # the readers disagree: the record reader decides
            rows.add(line, known, end - start)
            held += end - start
            if held >= BLOCK_BYTES:
                yield rows.frame()
                rows, held = Rows(list(COLUMNS)), 0
        yield rows.frame()

    return cells


def _line_spans(source: Source, lines: list[int]) -> Iterator[tuple[int, int, int]]:
    """(line, start, end) of each of `lines` (ascending numbers) of a text of one record a
    line: the bytes of the line, without its LF. One pass over the bytes, at numpy speed."""
    import numpy as np

    start = len(BOM) if source.read(len(BOM)) == BOM else 0
    offset, line_start, number, wanted = start, start, 1, iter(lines)
    line = next(wanted, None)
    while line is not None and offset < source.size:
        chunk = os.pread(source.fileno, SCAN_BYTES, offset)
        feeds = offset + np.flatnonzero(np.frombuffer(chunk, np.uint8) == _LF)
        while line is not None and line < number + len(feeds):  # it ends in this chunk
            i = line - number
            yield line, line_start if i == 0 else int(feeds[i - 1]) + 1, int(feeds[i])
            line = next(wanted, None)
        if len(feeds):
            line_start, number = int(feeds[-1]) + 1, number + len(feeds)
        offset += len(chunk)
    if line is not None:  # the last line, with no LF after it
        yield line, line_start, source.size


def _row_lines(first: int, blanks: np.ndarray) -> Callable[[int, int], pl.Series]:
    """The line of each of `count` rows from row `start` (counted from 0) of a file whose
    first row is on line `first`, the blank lines `blanks` (ascending) skipped."""
    import numpy as np
    import polars as pl

    rows_before = blanks - first - np.arange(len(blanks))  # rows above each blank line

    def lines(start: int, count: int) -> pl.Series:
        rows = np.arange(start, start + count, dtype=np.int64)
        return pl.Series(LINE, first + rows + np.searchsorted(rows_before, rows, side="right"))

    return lines


def _arrow_batches(
    source: Source, layout: str, block: int, report: Report
) -> tuple[list[str], Iterator[pl.DataFrame]]:
    """The known columns of the file and its rows, String cells of those columns a `block`
    of bytes at a time (without LINE)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson

    if layout == "jsonl":
        reader = pajson.open_json(
            source.text_path,
            read_options=pajson.ReadOptions(block_size=block),
            parse_options=pajson.ParseOptions(unexpected_field_behavior="infer"),
        )
        names: dict[str, str] = {}  # a known column -> its name in the file
        for field in reader.schema:
            name = field.name.strip().lower()
            if name in COLUMNS and (name in names or not _json_type(name, field.type)):
                raise NotSimple  # two keys for one column, or a value not read as such
            if name in COLUMNS:
                names[name] = field.name
        columns = [name for name in COLUMNS if name in names]
        batches: Iterator[pa.RecordBatch] = iter(reader)
        given = [names[name] for name in columns]
    else:
        header = _header_cells(source, DELIMITERS[layout])
        positions = header_positions(header, 1, report)
        if not report.ok:
            raise NotSimple  # the record reader says what is wrong with the header
        columns = [name for name in COLUMNS if name in positions]
        generated = [f"c{i}" for i in range(len(header))]
        given = [generated[positions[name]] for name in columns]
        batches = iter(
            pacsv.open_csv(
                source.text_path,
                read_options=pacsv.ReadOptions(
                    column_names=generated, skip_rows=1, block_size=block
                ),
                parse_options=pacsv.ParseOptions(delimiter=DELIMITERS[layout]),
                convert_options=pacsv.ConvertOptions(
                    include_columns=given,
                    column_types=dict.fromkeys(given, pa.string()),
                    strings_can_be_null=True,
                    null_values=[""],  # an empty cell, quoted or not, is no value
                ),
            )
        )

    def frames() -> Iterator[pl.DataFrame]:
        import polars as pl

        for batch in batches:
            cells = [batch.column(name).cast(pa.string()) for name in given]
            if too_long_cell(pa.record_batch(cells, names=columns), 0, columns) is not None:
                raise NotSimple  # the record reader says where, before Polars copies it
            yield pl.DataFrame(
                [pl.Series(name, cell) for name, cell in zip(columns, cells, strict=True)],
                schema=dict.fromkeys(columns, pl.String),
            )

    return columns, frames()


def _json_type(name: str, given: pa.DataType) -> bool:
    """Whether PyArrow reads a JSON value of this type as text that Python's JSON would
    spell alike (`_json_text`): a string, a whole number, true/false, null; a fraction only
    where it is read as a number (a fraction's digits differ: 1.0 is "1" to PyArrow)."""
    import pyarrow as pa

    spelled_alike = (pa.string(), pa.int64(), pa.bool_(), pa.null())
    return given in spelled_alike or (name in PROBABILITIES and given == pa.float64())


def _header_cells(source: Source, delimiter: str) -> list[str]:
    """The names in the first line (within LONGEST_COLUMNAR_LINE, as `_simple_lines`
    checked)."""
    first = source.read(LONGEST_COLUMNAR_LINE + 3).split(b"\n", 1)[0]
    text = first.removeprefix(BOM).removesuffix(b"\r").decode("utf-8")
    return next(csv.reader([text], delimiter=delimiter, strict=True))


def _simple_lines(source: Source, layout: str) -> tuple[int, np.ndarray]:
    """The lines and the numbers of the blank lines (empty, or a CR alone), of a file that
    PyArrow reads exactly as the record reader does, one record a line, both skipping blank
    lines; NotSimple for any other. Such a file is UTF-8, with no NUL byte and no line
    longer than LONGEST_COLUMNAR_LINE; a CSV or TSV file has a first line (its header)
    that is not blank, CR only before LF, no line end inside quotes, and quotes only around
    whole cells (PyArrow reads "a"b as ab, where Python's csv module refuses it); a JSON
    Lines file starts every line but a blank one with {, escapes no UTF-16 surrogate
    (\\ud800) and nests at most MAX_DEPTH deep (counting every [ and { of a line). One pass
    over the bytes, a block at a time, at numpy speed. (A blank line, even the one a file's
    last line end is often followed by, used to send a 10M-row file to the
    record reader: minutes instead of seconds.)"""
    import numpy as np

    json = layout == "jsonl"
    delimiter = _LF if json else ord(DELIMITERS[layout])  # (JSON Lines: not looked at)
    fd, size = source.fileno, source.size
    start = offset = len(BOM) if source.read(len(BOM)) == BOM else 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    line_start, parity, openers, lines, longest = start, 0, 0, 0, 0
    blanks: list[np.ndarray] = []
    held_blanks = 0
    previous = _LF  # the byte before the block: the start of the file is a line's
    if offset >= size:
        raise NotSimple  # empty: the record reader says so
    while offset < size:
        chunk = os.pread(fd, SCAN_BYTES + 8, offset)  # a few bytes of the next block too
        length = min(SCAN_BYTES, len(chunk))
        try:
            decoder.decode(chunk[:length], final=offset + length >= size)
        except UnicodeDecodeError:
            raise NotSimple from None
        data = np.frombuffer(chunk, np.uint8)
        if not data.all():
            raise NotSimple  # a NUL byte, which the record reader reports
        after = np.append(data, np.uint8(_LF))  # a file's end is after a line end
        block = data[:length]
        feeds = np.flatnonzero(block == _LF)
        ends = offset + feeds  # of the lines ending in the block, and their starts:
        begins = np.concatenate(([line_start], ends[:-1] + 1))
        line_start = int(ends[-1]) + 1 if len(feeds) else line_start
        longest = max(
            longest, int((ends - begins).max(initial=0)) + 1, offset + length - line_start
        )
        if longest > LONGEST_COLUMNAR_LINE:
            raise NotSimple
        starts = feeds + 1  # in the block, where lines start (the next block's first too)
        starts = starts[starts < len(data)]
        numbers = lines + 2 + np.arange(len(starts))  # the line each of them starts
        if offset == start:
            starts, numbers = np.concatenate(([0], starts)), np.concatenate(([1], numbers))
        firsts = data[starts]
        blank = (firsts == _LF) | ((firsts == _CR) & (after[starts + 1] == _LF))
        blanks.append(numbers[blank])
        held_blanks += len(blanks[-1])
        if held_blanks > MAX_BLANK_LINES:
            raise NotSimple  # the record reader skips them, holding nothing
        if json:
            if (firsts[~blank] != _BRACE).any() or _SURROGATE.search(chunk):
                raise NotSimple
            found = np.flatnonzero((block == _BRACE) | (block == _BRACKET))
            cuts = np.concatenate(([0], feeds + 1, [length]))
            counts = np.diff(np.searchsorted(found, cuts))
            counts[0] += openers
            if (counts > MAX_DEPTH).any():
                raise NotSimple
            openers = int(counts[-1])
        else:
            if offset == start and blank[0]:
                raise NotSimple  # no header: the record reader says so
            returns = np.flatnonzero(block == _CR)
            if (after[returns + 1] != _LF).any():
                raise NotSimple
            quotes = np.flatnonzero(block == _QUOTE)
            opening = (parity + np.arange(len(quotes))) % 2 == 0
            before = np.where(quotes > 0, data[np.maximum(quotes - 1, 0)], previous)
            if (opening & ~np.isin(before, (delimiter, _LF, _QUOTE))).any():
                raise NotSimple  # a quote inside an unquoted cell
            if (~opening & ~np.isin(after[quotes + 1], (delimiter, _LF, _CR, _QUOTE))).any():
                raise NotSimple  # text after a closing quote
            if ((parity + np.searchsorted(quotes, feeds)) % 2).any():
                raise NotSimple  # a line end inside quotes
            parity = (parity + len(quotes)) % 2
        lines += len(feeds)
        previous = int(block[-1])
        offset += length
    if parity:
        raise NotSimple  # an unclosed quote
    return lines + (line_start < size), np.concatenate(blanks)
