"""Read a DICES CSV into a frame of cells, one row per record, with the line each starts on.

Polars parses well-formed files fast, but pads short rows and gives no line numbers, so its
result is trusted only when facts gathered from the raw bytes prove it saw every record
whole (`_fast_parse`). Anything else goes through Python's strict csv reader, which can say
exactly where a file is broken (`_strict_parse`). Both return the same `ParsedFile`.

Memory is bounded by the data, never by how broken it is. The file is never held in Python:
it is counted in chunks (line breaks, quotes, NUL bytes) in the pass that hashes it
(`dices_cli.read.checksum`, which a command starts before it imports Polars, or the spool of
a gzip file or a pipe), and columns with few distinct values (answers, demographics, the
conversation text repeated on every row) are parsed as Categorical, which stores each
distinct string once. Input that would make Polars build far more than the data (a line or a
quoted cell of many MiB, more lines than DICES records could fill, say millions of blank
lines) skips it, as does input whose counts already say its result could not be trusted:
those counts are known before Polars starts (`_polars_can_hold`). The strict path streams
records (`dices_cli.read.lines`) and keeps only the valid cells, in batches, and where the
broken records are (`PackedInts`), to read their bytes back.
"""

from __future__ import annotations

import csv
import io
import mmap
import re
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field

import polars as pl

from dices_cli.problems import SHOWN_VALUE_CHARS, Problem, ProblemType, Report, shortened
from dices_cli.read.checksum import BOM, ByteFacts, CellSums, adds_up
from dices_cli.read.csv_records import csv_records, record_too_long
from dices_cli.read.source import Source

LINE = "_line"  # the line where a record starts; a column no DICES file has
LINE_COUNT = "_line_count"  # how many physical lines the record spans
HEADER_PREFIX = 1 << 20  # the header must end within the first MiB
# Every DICES record has 40 or more separators, a Q1 answer of 38 or more letters and 23 or
# more answers of two or more, so a file of N bytes holds fewer than N // MIN_RECORD_BYTES
# records. Polars, which turns every line (a blank one too) into a row of 41 cells, is not
# asked for more rows than that.
MIN_RECORD_BYTES = 128
# Polars turns every line outside quotes into a row of every column before its row limit
# applies, so a file with more lines than DICES data could hold goes to the strict path
# unparsed. A DICES file has a line break every MIN_LINE_BYTES or more bytes on average (its
# contexts hold some; the ratings of the conversation with the most have one every 76).
MIN_LINE_BYTES = 64
# Polars holds about three times a line's bytes while it parses it, and a quoted cell it
# cannot close costs about fourteen times its bytes (its error message holds the cell three
# times over); a longer line or quoted cell (the CSV text of a DICES record is a few KB) goes
# to the strict path, which streams.
POLARS_MAX_LINE = 8 << 20
# An odd run of quotes, where a quoted cell opens or closes: inside one, quotes come in
# escaped pairs. Possessive, so that a long run of quotes is looked at once.
_ODD_QUOTES = re.compile(rb'(?<!")(?:"")*+"(?!")')
BATCH_ROWS = 8192  # the strict path turns rows into a frame this many at a time
CELL, CODE = "_cell", "_code"  # a distinct cell and its category code


class EmptyFileError(Exception):
    """The file has no header at all."""


def prefix(source: Source) -> bytes:
    """The first bytes of the CSV text, without a UTF-8 BOM."""
    return source.read(HEADER_PREFIX).removeprefix(BOM)


class PackedInts:
    """Integers appended and read back in order, each kept as its difference from the one
    before in as few bytes as it needs (zigzag LEB128: one byte within -64..63).

    The broken records of a file may be millions of two-byte lines ("y\\n" after an open
    quote): their starts rise by a line or a few, their line counts repeat, so each costs
    two bytes here, not the sixteen of two machine integers.
    """

    def __init__(self) -> None:
        self._packed = bytearray()
        self._count = 0
        self._last = 0

    def append(self, value: int) -> None:
        difference, self._last = value - self._last, value
        rest = 2 * difference if difference >= 0 else -2 * difference - 1
        while rest >= 0x80:
            self._packed.append(rest & 0x7F | 0x80)
            rest >>= 7
        self._packed.append(rest)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        value = rest = shift = 0
        for byte in self._packed:
            rest |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:  # the last byte of this difference
                value += rest >> 1 if rest % 2 == 0 else -(rest >> 1) - 1
                yield value
                rest = shift = 0

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sys.getsizeof(self._packed)


@dataclass
class ParsedFile:
    frame: pl.DataFrame  # one column per header cell, plus LINE and LINE_COUNT
    # Records whose structure is broken: where each starts and how many lines it spans
    # (compact: a file may hold millions), and their problems, up to MAX_KEPT_PROBLEMS.
    bad_starts: PackedInts = field(default_factory=PackedInts)
    bad_line_counts: PackedInts = field(default_factory=PackedInts)
    bad_problems: Report = field(default_factory=lambda: Report("", None))

    @property
    def rows_read(self) -> int:
        return self.frame.height + len(self.bad_starts)

    def add_bad(self, first: int, count: int, problems: list[Problem]) -> None:
        self.bad_starts.append(first)
        self.bad_line_counts.append(count)
        self.bad_problems.add(problems)


@dataclass(frozen=True)
class Header:
    cells: list[str]  # as written in the file
    lines: int  # physical lines the header spans
    raw: bytes  # the header's bytes, line ends included


def parse(
    source: Source, header: Header, names: list[str], categorical: Collection[str]
) -> ParsedFile:
    """Parse the records of `source`, naming the columns `names` (one per header cell).

    Columns in `categorical` are Categorical, the others String, whichever path parses.
    """
    # Categories of their own: they then hold exactly this file's distinct strings.
    categories = pl.Categories.random()
    types: dict[str, pl.DataType] = {
        n: pl.Categorical(categories) if n in categorical else pl.String() for n in names
    }
    # Counted in the pass that hashed the file: a command's prefetch, started before it
    # imported Polars (waited for if it is still going), the spool's, or now.
    facts = source.facts()
    if _polars_can_hold(source, facts):
        fast = _trusted(_polars_parse(source, header, types), facts, header, categories)
        if fast is not None:
            return fast
    return _strict_parse(source, types)


def _polars_parse(
    source: Source, header: Header, types: Mapping[str, pl.DataType]
) -> pl.DataFrame | None:
    row_limit = source.size // MIN_RECORD_BYTES + 1
    try:
        frame = pl.read_csv(
            source.text_path,
            has_header=False,
            skip_lines=header.lines,
            new_columns=list(types),
            schema=types,
            infer_schema=False,
            empty_string_is_null=False,
            raise_if_empty=False,
            n_rows=row_limit,
        )
    except pl.exceptions.PolarsError:
        # Invalid UTF-8, too many fields, stray quotes, a short first record (SchemaError):
        # the strict path says where.
        return None
    except BaseException as error:  # a Rust panic is a BaseException (pyo3's PanicException)
        if type(error).__name__ != "PanicException":
            raise
        return None
    if frame.height >= row_limit:
        return None  # more rows than DICES records could fill: blank or broken lines
    # Polars reads some empty Categorical cells as null despite empty_string_is_null=False.
    nulls = [
        name for name, count in zip(frame.columns, frame.null_count().row(0), strict=True) if count
    ]
    return frame.with_columns(pl.col(nulls).fill_null("")) if nulls else frame


def _polars_can_hold(source: Source, facts: ByteFacts) -> bool:
    """False when Polars' result could not be trusted anyway (a NUL byte, a lone CR), when
    the file has more lines than MIN_LINE_BYTES allow, and when some line or quoted cell may
    be longer than POLARS_MAX_LINE: every window of half that size must hold a line break,
    and an odd run of quotes that is not cut by its edges (a line or a quoted cell twice as
    long covers a window whole, and holds neither). Each window is searched in place, only
    up to its first line break and its first quotes: a few milliseconds for a DICES file."""
    if facts.has_nul or facts.has_lone_cr or facts.newlines > source.size // MIN_LINE_BYTES:
        return False
    size, window = source.size, POLARS_MAX_LINE // 2
    if size <= window:
        return True
    with mmap.mmap(source.fileno, 0, access=mmap.ACCESS_READ) as text:
        return all(
            text.find(b"\n", start, start + window) != -1
            and _holds_odd_quotes(text, start + 1, start + window)
            for start in range(0, size - window, window)
        )


def _holds_odd_quotes(text: mmap.mmap, start: int, end: int) -> bool:
    """Whether text[start:end] holds a whole odd run of quotes; one that reaches `end` might
    go on past it, and does not count."""
    first = text.find(b'"', start, end)  # at memchr speed: the regex engine is far slower
    found = _ODD_QUOTES.search(text, first, end) if first != -1 else None
    return found is not None and found.end() < end


class HeaderError(Exception):
    """The header record itself is broken (its quoting); `problem` says how."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def read_header(prefix: bytes) -> Header:
    """The first record of the CSV text that `prefix` starts.

    Raises EmptyFileError when there is none, HeaderError when its quoting is broken or it
    does not end within the prefix.
    """
    if not prefix or prefix.isspace():
        raise EmptyFileError
    consumed: list[bytes] = []

    def lines() -> Iterator[str]:
        for raw in io.BytesIO(prefix):
            consumed.append(raw)
            yield raw.decode("utf-8", errors="surrogateescape")

    full = len(prefix) >= HEADER_PREFIX - len(BOM)  # the file may go on after the prefix
    try:
        # The reader pulls one more line while a quoted header cell is open, and no further.
        cells = next(csv.reader(lines(), strict=True))
    except csv.Error as error:
        if full and "unexpected end of data" in str(error):
            raise HeaderError(_header_too_long()) from error
        raise HeaderError(structure_problems(1, error, [])[0]) from error
    if full and not consumed[-1].endswith(b"\n"):
        raise HeaderError(_header_too_long())
    return Header(cells, len(consumed), b"".join(consumed))


def _header_too_long() -> Problem:
    return Problem(
        ProblemType.UNKNOWN_DATASET,
        1,
        None,
        None,
        f"the header does not end within its first {HEADER_PREFIX >> 20} MiB, and a DICES "
        "header is a few KB; check that this is a DICES file",
    )


@dataclass(frozen=True)
class _CellTotals:
    """Sums over every cell of the frame, to reconcile with the raw bytes."""

    bytes: int
    quotes: int
    carriage_returns: int
    line_breaks: list[pl.Expr]  # per row, one for each column where some cell has any


_MEASURES: dict[str, Callable[[pl.Expr], pl.Expr]] = {
    "bytes": lambda cells: cells.str.len_bytes(),
    "quotes": lambda cells: cells.str.count_matches('"', literal=True),
    "carriage_returns": lambda cells: cells.str.count_matches("\r", literal=True),
    "line_breaks": lambda cells: cells.str.count_matches("\n", literal=True),
}
_RARE = ("quotes", "carriage_returns", "line_breaks")  # in few distinct cells, if any


def _cell_totals(frame: pl.DataFrame, categories: pl.Categories) -> _CellTotals:
    """Every measure summed over every cell, in three queries whatever the column count.

    The Categorical columns repeat their values (the conversation text is on every rating
    of it) and share `categories`, which holds each distinct string once: strings are
    measured there, and cells by their category codes.
    """
    categorical = [
        name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Categorical)
    ]
    plain = [name for name in frame.columns if name not in categorical]
    distinct = pl.DataFrame({CELL: categories.to_series()}).with_row_index(CODE)
    rare = distinct.select(
        CODE, *(_MEASURES[m](pl.col(CELL)).cast(pl.Int64).alias(m) for m in _RARE)
    ).filter(pl.any_horizontal(pl.col(m) > 0 for m in _RARE))
    codes = rare.get_column(CODE)
    found = [measured for measured in _RARE if (rare.get_column(measured) > 0).any()]

    def rare_counts(measured: str, cells: pl.Expr) -> pl.Expr:
        return cells.to_physical().replace_strict(codes, rare.get_column(measured), default=0)

    per_row = {
        name: {
            "bytes": pl.col(name).cat.len_bytes(),
            **{m: rare_counts(m, pl.col(name)) for m in found},
        }
        for name in categorical
    } | {name: {m: _MEASURES[m](pl.col(name)) for m in _MEASURES} for name in plain}
    sums = frame.select(
        counts.cast(pl.Int64).sum().alias(f"{measured}/{name}")
        for name, measures in per_row.items()
        for measured, counts in measures.items()
    )
    totals = dict.fromkeys(_MEASURES, 0)
    multiline = []
    for key, value in sums.row(0, named=True).items():
        measured, _, name = key.partition("/")
        totals[measured] += value
        if measured == "line_breaks" and value:
            multiline.append(per_row[name]["line_breaks"])
    return _CellTotals(totals["bytes"], totals["quotes"], totals["carriage_returns"], multiline)


def _trusted(
    frame: pl.DataFrame | None, facts: ByteFacts, header: Header, categories: pl.Categories
) -> ParsedFile | None:
    """The Polars parse with line numbers, if the raw bytes prove it complete, else None."""
    if frame is None:
        return None
    cells = _cell_totals(frame, categories)
    lines_per_record = pl.sum_horizontal(pl.repeat(1, pl.len(), dtype=pl.Int64), *cells.line_breaks)
    start = header.lines + 1 + lines_per_record.cum_sum() - lines_per_record
    columns = frame.width
    frame = frame.with_columns(
        start.cast(pl.Int64).alias(LINE), lines_per_record.cast(pl.Int64).alias(LINE_COUNT)
    )
    sums = CellSums(
        records=frame.height,
        bytes=cells.bytes,
        quotes=cells.quotes,
        line_breaks=int(frame.get_column(LINE_COUNT).sum()) - frame.height,
        carriage_returns=cells.carriage_returns,
    )
    if not adds_up(sums, facts, header.raw, header.lines, columns):
        return None  # a line break or bytes Polars did not account for: the strict path says
    return ParsedFile(frame)


class _Rows:
    """Valid records gathered into Polars frames, a batch at a time."""

    def __init__(self, types: Mapping[str, pl.DataType]) -> None:
        self.types = pl.Schema(types)
        self.cells: list[list[str]] = []
        self.spans: list[tuple[int, int]] = []  # (first line, line count)
        self.frames: list[pl.DataFrame] = []

    def add(self, cells: list[str], first: int, count: int) -> None:
        self.cells.append(cells)
        self.spans.append((first, count))
        if len(self.cells) == BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        strings = pl.DataFrame(
            self.cells, schema=dict.fromkeys(self.types, pl.String), orient="row"
        )
        self.frames.append(
            strings.cast(self.types).with_columns(
                pl.Series(LINE, [first for first, _ in self.spans], dtype=pl.Int64),
                pl.Series(LINE_COUNT, [count for _, count in self.spans], dtype=pl.Int64),
            )
        )
        self.cells, self.spans = [], []

    def frame(self) -> pl.DataFrame:
        if self.cells or not self.frames:
            self._flush()
        return pl.concat(self.frames)


def _strict_parse(source: Source, types: Mapping[str, pl.DataType]) -> ParsedFile:
    """Python's strict csv reader, one record at a time, which says where a file is broken."""
    names = list(types)
    rows, parsed = _Rows(types), ParsedFile(pl.DataFrame())
    with source.open_text() as text:
        records = csv_records(text)
        next(records, None)  # the header, already read by read_header
        for first, count, cells in records:
            if cells is None:
                parsed.add_bad(first, count, [record_too_long(first, "a DICES record is a few KB")])
                continue
            problems = structure_problems(first, cells, names)
            if problems:
                parsed.add_bad(first, count, problems)
            elif cells:  # a record of one empty cell (a line of only a BOM, say) holds nothing
                rows.add(cells, first, count)  # type: ignore[arg-type]
    parsed.frame = rows.frame()
    return parsed


def header_problems(header: Header) -> list[Problem]:
    """Header cells that are not valid UTF-8: no column can be known by such a name."""
    shown = [_shown(cell) for cell in header.cells if not _is_utf8(cell)]
    return [
        Problem(ProblemType.INVALID_UTF8, 1, cell, cell, f"'{shortened(cell)}' is not valid UTF-8")
        for cell in shown
    ]


def _shown(cell: str) -> str:
    """A cell read with surrogateescape, each undecodable byte written as \\xNN."""
    return cell.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_utf8(cell: str) -> bool:
    try:
        cell.encode("utf-8")
    except UnicodeEncodeError:  # surrogateescape left a lone surrogate for each bad byte
        return False
    return True


def structure_problems(line: int, cells: list[str] | csv.Error, names: list[str]) -> list[Problem]:
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
    for name, full in zip(names, cells, strict=True):
        cell = full[:SHOWN_VALUE_CHARS]  # a value in a problem record is never huge
        if not _is_utf8(full):
            shown = _shown(cell)
            problems.append(
                Problem(
                    ProblemType.INVALID_UTF8,
                    line,
                    name,
                    shown,
                    f"'{shortened(shown)}' is not valid UTF-8",
                )
            )
        elif "\x00" in full:
            shown = cell.replace("\x00", "\\x00")
            problems.append(
                Problem(
                    ProblemType.NUL_CHARACTER,
                    line,
                    name,
                    shown,
                    f"'{shortened(shown)}' holds a NUL byte",
                )
            )
    return problems
