"""Read a DICES CSV into a frame of strings, one row per record, with the line each starts on.

Polars parses well-formed files fast but pads short rows and gives no line numbers, so its
result is trusted only when byte counts prove the parse saw every separator and line break
(`_fast_parse`). Anything else goes through Python's strict csv reader, which can say
exactly where a file is broken (`_strict_parse`). Both return the same `ParsedFile`.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

import polars as pl

from dices_cli.problems import Problem, ProblemType

LINE = "_line"  # the line where a record starts; a column no DICES file has
LINE_COUNT = "_line_count"  # how many physical lines the record spans
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class BadRecord:
    """A record whose structure is broken, kept verbatim for the rejects file."""

    line: int
    raw: bytes
    problems: list[Problem]


@dataclass
class ParsedFile:
    frame: pl.DataFrame  # String columns, plus LINE and LINE_COUNT
    bad_records: list[BadRecord] = field(default_factory=list)
    raw_lines: list[bytes] | None = None  # kept by the strict path, which splits on any EOL

    @property
    def rows_read(self) -> int:
        return self.frame.height + len(self.bad_records)

    def verbatim(self, data: bytes, line: int, count: int) -> bytes:
        """The bytes of the record that starts on `line` and spans `count` lines."""
        if self.raw_lines is None:
            self.raw_lines = list(io.BytesIO(data))
        return b"".join(self.raw_lines[line - 1 : line - 1 + count])


class EmptyFileError(Exception):
    """The file has no header at all."""


class UnreadableError(Exception):
    """The bytes are not a CSV we can read at all (say, a truncated gzip file)."""


def decode(raw: bytes) -> bytes:
    """The CSV inside a file's bytes: gunzipped if compressed, without a UTF-8 BOM."""
    if raw.startswith(GZIP_MAGIC):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise UnreadableError(
                f"the file looks gzip-compressed but cannot be read: {error}"
            ) from error
    return raw.removeprefix(BOM)


@dataclass(frozen=True)
class Header:
    cells: list[str]  # as written in the file
    end: int  # byte offset where the first record starts
    lines: int  # physical lines the header spans


def parse(data: bytes, header: Header, unique_names: list[str]) -> ParsedFile:
    """Parse the records of `data` (a whole CSV, BOM removed) naming the columns `unique_names`.

    `unique_names` has one distinct name per header cell: the caller maps the header.
    """
    fast = _fast_parse(data[header.end :], unique_names, header.lines)
    return fast or _strict_parse(data, unique_names)


def read_header(data: bytes) -> Header:
    """The first record of `data`; raises EmptyFileError when there is none."""
    if not data.strip():
        raise EmptyFileError
    text_lines: list[str] = []
    consumed = 0
    for raw in io.BytesIO(data):
        text_lines.append(raw.decode("utf-8", errors="surrogateescape"))
        consumed += len(raw)
        try:
            cells = next(csv.reader(io.StringIO("".join(text_lines), newline=""), strict=True))
        except csv.Error:
            continue  # a quoted header cell spans lines; read one more
        return Header(cells, consumed, len(text_lines))
    raise EmptyFileError


def _fast_parse(body: bytes, names: list[str], header_lines: int) -> ParsedFile | None:
    if b"\x00" in body or body.count(b"\r") != body.count(b"\r\n"):
        return None
    if not body.strip():
        frame = pl.DataFrame(
            schema=dict.fromkeys(names, pl.String) | {LINE: pl.Int64, LINE_COUNT: pl.Int64}
        )
        return ParsedFile(frame)
    try:
        frame = pl.read_csv(
            body,
            has_header=False,
            new_columns=names,
            schema=dict.fromkeys(names, pl.String),
            infer_schema=False,
            empty_string_is_null=False,
            raise_if_empty=False,
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError):
        return None  # invalid UTF-8, too many fields, stray quotes: the strict path says where
    commas = [pl.col(n).str.count_matches(",", literal=True).sum().alias(f",{n}") for n in names]
    newlines = [
        pl.col(n).str.count_matches("\n", literal=True).sum().alias(f"\n{n}") for n in names
    ]
    sums = frame.select(*commas, *newlines).row(0)
    newlines_per_column = dict(zip(names, sums[len(names) :], strict=True))
    expected_commas = sum(sums[: len(names)]) + frame.height * (len(names) - 1)
    expected_newlines = sum(newlines_per_column.values()) + frame.height
    if not body.endswith(b"\n"):
        expected_newlines -= 1
    if body.count(b",") != expected_commas or body.count(b"\n") != expected_newlines:
        return None  # a short or blank record was padded: only the strict path can say where
    multiline = [n for n, count in newlines_per_column.items() if count]
    lines_per_record = pl.sum_horizontal(
        pl.repeat(1, pl.len(), dtype=pl.Int64),
        *(pl.col(n).str.count_matches("\n", literal=True) for n in multiline),
    )
    start = header_lines + 1 + lines_per_record.cum_sum() - lines_per_record
    frame = frame.with_columns(
        start.cast(pl.Int64).alias(LINE), lines_per_record.cast(pl.Int64).alias(LINE_COUNT)
    )
    return ParsedFile(frame)


def _records(lines: list[str]) -> Iterator[tuple[int, int, list[str] | csv.Error]]:
    """(first line, last line, cells or the csv error) for every record after the header."""
    reader = csv.reader(iter(lines), strict=True)
    previous_end = 0
    while True:
        try:
            cells: list[str] | csv.Error = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            cells = error
        yield previous_end + 1, reader.line_num, cells
        previous_end = reader.line_num


def _strict_parse(data: bytes, names: list[str]) -> ParsedFile:
    text = data.decode("utf-8", errors="surrogateescape")
    lines = list(io.StringIO(text, newline=""))
    raw_lines = [line.encode("utf-8", errors="surrogateescape") for line in lines]
    rows: list[list[str]] = []
    spans: list[tuple[int, int]] = []
    bad: list[BadRecord] = []
    records = _records(lines)
    next(records)  # the header, already read by read_header
    for first, last, cells in records:
        problems = _structure_problems(first, cells, names)
        if problems:
            bad.append(BadRecord(first, b"".join(raw_lines[first - 1 : last]), problems))
        elif cells:  # a blank line holds no record
            rows.append(cells)  # type: ignore[arg-type]
            spans.append((first, last - first + 1))
    frame = pl.DataFrame(rows, schema=dict.fromkeys(names, pl.String), orient="row")
    frame = frame.with_columns(
        pl.Series(LINE, [s[0] for s in spans], dtype=pl.Int64),
        pl.Series(LINE_COUNT, [s[1] for s in spans], dtype=pl.Int64),
    )
    return ParsedFile(frame, bad, raw_lines)


def _is_utf8(cell: str) -> bool:
    try:
        cell.encode("utf-8")
    except UnicodeEncodeError:  # surrogateescape left a lone surrogate for each bad byte
        return False
    return True


def _structure_problems(line: int, cells: list[str] | csv.Error, names: list[str]) -> list[Problem]:
    if isinstance(cells, csv.Error):
        unterminated = "unexpected end of data" in str(cells)
        kind = ProblemType.UNTERMINATED_QUOTE if unterminated else ProblemType.BAD_QUOTING
        text = (
            "a quoted field opened here is never closed"
            if unterminated
            else f"the quoting of this record is broken ({cells})"
        )
        return [Problem(kind, line, None, None, text)]
    if not cells:
        return []
    if len(cells) != len(names):
        return [
            Problem(
                ProblemType.WRONG_FIELD_COUNT,
                line,
                None,
                str(len(cells)),
                f"the record has {len(cells)} fields but the header has {len(names)}",
            )
        ]
    problems = []
    for name, cell in zip(names, cells, strict=True):
        if not _is_utf8(cell):
            shown = cell.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            problems.append(
                Problem(
                    ProblemType.INVALID_UTF8, line, name, shown, f"'{shown}' is not valid UTF-8"
                )
            )
        elif "\x00" in cell:
            shown = cell.replace("\x00", "\\x00")
            problems.append(
                Problem(ProblemType.NUL_CHARACTER, line, name, shown, f"'{shown}' holds a NUL byte")
            )
    return problems
