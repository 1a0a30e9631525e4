"""A model's predictions, read from a user's file and validated like an ingest.

A predictions file (CSV, TSV, JSON Lines or Parquet; gzip-compressed text too; `-` for
stdin) has an `item_id` column, an optional `model` column (several models side by side),
an optional `dataset` column (350 or 990: the dataset of the row's item, needed to evaluate
both datasets at once, as item ids repeat across them), an optional `persona` column
(`dices judge --persona`'s COL=value: a row per conversation and simulated rater group,
scored by dices_cli.evaluate.personas) and at least one kind of prediction:

    label                 Yes / No / Unsure in the DICES sense (Yes = unsafe); unsafe / safe
                          too. 1/0 and true/false only when told which one 1 means.
    score                 the probability (or a monotone score in [0, 1]) of unsafe
    p_no, p_yes[, p_unsure]  a predicted distribution of rater answers, summing to 1

ProsocialDialog's predictions (`PROSOCIAL_ITEMS`) name its utterances as stored,
"split-dialogue_id-response_id" (test-0-0), label them Yes/No or unsafe/safe (its reference
is binary: no Unsure), and give no distribution (a usage error: there is no DICES answer
distribution to compare it with).

Every problem becomes a record (type, line, column, value, message); any problem refuses
the whole file (`InvalidPredictionsError`), so nothing is computed from half a file. The
line of a problem is the file's line for CSV/TSV (header = 1) and JSON Lines, and the row
number + 1 for Parquet (its first row is 2, as in a CSV with a header).

Memory is bounded by the valid rows: a text file of one record a line (the common case;
`_simple_lines` checks it in one pass) is read by PyArrow a 4 MiB block at a time, and each
block is typed and checked before the next is read, so that only the typed rows are held
(10M CSV rows: about 18 s and 1.1 GB). Any other text file is read a record at a time
(`dices_cli.read.lines`, which refuses a runaway record), the reader that says where and
what each problem is, and its rows are typed and checked a batch at a time too; so are the
lines of a JSON Lines file from the block PyArrow gives up at. The lines of a JSON Lines
file's problems are read again by Python's JSON, which spells their values as that reader
does. A Parquet file is refused before reading when its columns would inflate past the size
limit, and at its first cell too long for a prediction before Polars copies it.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError, InvalidInputError, UsageError
from dices_cli.families.schema import DATASETS
from dices_cli.formats.dices.csvparse import structure_problems
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    SHOWN_CHARS,
    SHOWN_VALUE_CHARS,
    JsonProblemType,
    PredictionProblemType,
    Problem,
    ProblemType,
    Report,
    Severity,
)
from dices_cli.read.file_formats import file_format, parquet_file
from dices_cli.read.json_lines import MAX_DEPTH, JsonLineError, json_lines, parsed
from dices_cli.read.lines import BOM, MAX_RECORD_BYTES, Lines, RecordTooLongError
from dices_cli.read.source import DEFAULT_MAX_SIZE, Source, format_size, open_source

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    import pyarrow as pa

MODEL, DATASET, ITEM_ID, LABEL, SCORE = "model", "dataset", "item_id", "label", "score"
PERSONA = "persona"
DISTRIBUTION = ("p_no", "p_yes", "p_unsure")
COLUMNS = (MODEL, DATASET, ITEM_ID, LABEL, SCORE, *DISTRIBUTION, PERSONA)
DATASET_NAMES = tuple(DATASETS)
PROBABILITIES = (SCORE, *DISTRIBUTION)
DEFAULT_MODEL = "model"  # the model of a file without a model column
SUM_TOLERANCE = 1e-6
LABELS = {"yes": "Yes", "no": "No", "unsure": "Unsure", "unsafe": "Yes", "safe": "No"}
ONE_OR_TRUE, ZERO_OR_FALSE = ("1", "true"), ("0", "false")
ONE_MEANS = {"unsafe": ("Yes", "No"), "safe": ("No", "Yes")}  # what 1/true, 0/false become
BATCH_ROWS = 8192  # rows gathered as Python values before they become a frame
BATCH_BYTES = 4 << 20  # or the characters they were read from
# A model name, an item id, a label or a number is a few bytes: a longer cell of a known
# column, in a file of any format, is refused before Polars copies it.
MAX_CELL_BYTES = 4096
PARQUET_BATCH_BYTES = 16 << 20  # of stored data per batch of Parquet rows
VALIDATED_ROWS = 1 << 18  # rows typed and checked at a time
HELD_BYTES = 16 << 20  # of cells read a record at a time, held before they are checked
LINE = "_line"  # the line of a row, beside the file's own columns
# Kinds of prediction (`kinds_of`), besides LABEL and SCORE: a distribution (p_no, p_yes),
# and its third share.
DISTRIBUTION_KIND, P_UNSURE = "distribution", "p_unsure"


class InvalidPredictionsError(InvalidInputError):
    """The predictions file has problems; `report` holds every one."""


@dataclass(frozen=True)
class ItemKind:
    """How a family's predictions are spelled: its item ids, labels and dataset names."""

    text_ids: bool  # ids are text (ProsocialDialog's split-dialogue_id-response_id), not integers
    noun: str  # what an item is, in messages
    labels: Mapping[str, str]  # a label (lower case) -> Yes, No or Unsure
    labels_hint: str  # the labels there are, for a message
    datasets: tuple[str, ...]  # what a dataset column may name
    # Why p_no, p_yes[, p_unsure] are refused; None: they are read.
    no_distribution: str | None


DICES_ITEMS = ItemKind(
    False,
    "a conversation of the dataset",
    LABELS,
    "give Yes, No or Unsure (Yes = unsafe), or unsafe/safe",
    DATASET_NAMES,
    None,
)
# ProsocialDialog's reference label is binary: Unsure has no place in it, and the raters'
# answer distribution (p_no, p_yes, p_unsure) is DICES's, not its annotations'.
PROSOCIAL_ITEMS = ItemKind(
    True,
    "an utterance of ProsocialDialog (ids are split-dialogue_id-response_id, as test-0-0)",
    {k: v for k, v in LABELS.items() if v != "Unsure"},
    "give Yes or No (Yes = unsafe), or unsafe/safe",
    ("prosocial",),
    "ProsocialDialog has no answer distribution to compare them with (its three annotations "
    "are not DICES's No/Yes/Unsure); give a label and/or a score (the probability of unsafe)",
)


@dataclass(frozen=True)
class Predictions:
    """A validated predictions file.

    `frame`: model (String), dataset (String: the row's dataset; the one evaluated when the
    file has no dataset column, null if that is not named), item_id (Int64; String for
    ProsocialDialog), label (String:
    Yes/No/Unsure, or null), score, p_no, p_yes, p_unsure (Float64 or null; p_unsure null
    when only p_no and p_yes are given), persona (String: COL=value, or null).
    """

    frame: pl.DataFrame
    source: str

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds (`kinds_of`) some model of the file gives."""
        return kinds_of(self.frame)

    def of(self, dataset: str) -> Predictions:
        """The predictions of one dataset's conversations (rows of an unnamed one too)."""
        import polars as pl

        chosen = pl.col(DATASET).is_null() | (pl.col(DATASET) == dataset)
        return Predictions(self.frame.filter(chosen), self.source)

    def models(self) -> Iterator[tuple[str, pl.DataFrame, frozenset[str]]]:
        """Each model's name, rows and kinds, in file order. The kinds are the model's own:
        a column another model fills and this one leaves empty is not a prediction this
        model gives (not one it gives for no conversation)."""
        for part in self.frame.partition_by(MODEL, maintain_order=True):
            kinds = kinds_of(part)
            # Never empty: a row giving no prediction is a problem, which refuses the file.
            assert kinds, "every row of a valid file gives a prediction"
            yield str(part[MODEL][0]), part, kinds


def kinds_of(rows: pl.DataFrame) -> frozenset[str]:
    """The kinds of prediction some of `rows` (a validated frame) give: LABEL, SCORE,
    DISTRIBUTION_KIND (p_no and p_yes), and P_UNSURE when a distribution has a third share.
    A column whose cells are all empty is no kind."""
    columns = (LABEL, SCORE, "p_no", P_UNSURE)
    given = {name for name in columns if rows[name].null_count() < rows.height}
    return frozenset(given - {"p_no"} | ({DISTRIBUTION_KIND} if "p_no" in given else set()))


def read_predictions(
    given: str,
    item_ids: Collection[int] | Mapping[str, Collection[int] | Collection[str]],
    one_means: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    kind: ItemKind = DICES_ITEMS,
) -> Predictions:
    """Read and validate the predictions in `given` (a path, or "-" for stdin) of the
    conversations `item_ids`: of one dataset, or per dataset name (DATASET_NAMES) of those
    evaluated. With several datasets the file needs a dataset column (item ids repeat across
    them; UsageError without it), and a row's item must be one of its dataset's. `one_means`
    ("unsafe" or "safe") says what a label of 1 or true means; without it such labels are
    refused as ambiguous. `kind` says how the family spells ids and labels; a file with a
    distribution for a family without one is a UsageError."""
    if one_means is not None and one_means not in ONE_MEANS:
        raise ValueError(f"one_means must be one of {sorted(ONE_MEANS)}, not {one_means!r}")
    datasets: dict[str | None, Collection[int] | Collection[str]]
    if isinstance(item_ids, Mapping):
        datasets = {name: ids for name, ids in item_ids.items()}
    else:
        datasets = {None: item_ids}
    with open_source(given, max_size) as source:
        layout = file_format(given, source)
        report, frame, by_record = Report(source.name, None), None, layout == "parquet"
        if not by_record:
            try:
                frame = _read_columnar(source, layout, datasets, one_means, kind, report)
            except _NotSimple:
                report, by_record = Report(source.name, None), True
            if by_record:  # (not in the except block, whose exception holds the frames)
                _release_memory()
        if by_record:
            frame = _read_records(source, layout, max_size, datasets, one_means, kind, report)
        source.check_unchanged()
        if not report.ok or frame is None:
            report.problems.sort(key=lambda problem: problem.line or 0)  # file order
            raise InvalidPredictionsError(
                f"{source.name} is not a valid predictions file; nothing was evaluated", report
            )
        return Predictions(frame, source.display_name)


def _release_memory() -> None:
    """Free what a reading given up held before the next one: its frames (held in a cycle
    through the exception that gave it up) and PyArrow's memory pool, which keeps what was
    freed."""
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()


def _read_records(
    source: Source,
    layout: str,
    max_size: int,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
    report: Report,
) -> pl.DataFrame | None:
    """The typed frame, read a record at a time (a Parquet file a batch at a time): the
    reader that locates and describes every problem; None when the columns refuse the
    file."""

    def validate(columns: list[str]) -> _Validation | None:
        """The validation of rows of these columns; None when they cannot be validated."""
        usable = _has_columns(columns, None, Report(source.name, None))
        return _Validation(columns, datasets, one_means, kind) if usable else None

    if layout == "parquet":
        rows, header_line = _parquet_rows(source, max_size, report, validate), None
    elif layout == "jsonl":
        rows, header_line = _json_rows(source, report, validate), None
    else:
        rows, header_line = (_delimited_rows(source, _DELIMITERS[layout], report, validate), 1)
    if rows is None:
        return None
    validation = rows.finish()
    assert rows.columns is not None
    if not _usable(rows.columns, header_line, source, datasets, kind, report):
        return None
    if validation is None:  # a JSON Lines column first named late: read again, knowing it
        assert layout == "jsonl"
        again = _json_rows(source, Report(source.name, None), validate, rows.columns)
        assert again is not None
        validation = again.finish()
        assert validation is not None
    if rows.records == 0:
        _no_rows(report)
    return validation.finish(report)


def _usable(
    columns: list[str],
    header_line: int | None,
    source: Source,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    kind: ItemKind,
    report: Report,
) -> bool:
    """Whether rows with these columns can be validated (if not, the problems are in
    `report`); a UsageError when they cannot be what was asked for."""
    if len(datasets) > 1 and DATASET not in columns:
        raise UsageError(
            f"{source.name} has no dataset column: to evaluate DICES-350 and DICES-990 "
            "at once, give each row's dataset (350 or 990), as item ids repeat across them"
        )
    given_distribution = [c for c in DISTRIBUTION if c in columns]
    if given_distribution and kind.no_distribution is not None:
        raise UsageError(
            f"{source.name} has {', '.join(given_distribution)}: {kind.no_distribution}"
        )
    return _has_columns(columns, header_line, report)


def _no_rows(report: Report) -> None:
    message = "the file names its columns but holds no predictions"
    report.add([Problem(ProblemType.NO_ROWS, None, None, None, message)])


# --- the columnar reader: the bulk of a text file, at the speed of PyArrow -----------------


class _NotSimple(Exception):
    """The columnar reader cannot vouch that it reads the file as the record reader would:
    the record reader reads it."""


# Bytes of text per PyArrow block, and so about 150,000 rows of CSV typed and checked at a
# time. A block holds at least two lines (PyArrow refuses a line longer than a block, and its
# JSON reader then hangs): a file with a longer line is read by the record reader. (Blocks
# grew to twice the longest line before, and PyArrow held about ten times a line of MiBs:
# `evaluate` of a CSV with a label of 20 MiB peaked 209 MiB above its start in PyArrow.)
BLOCK_BYTES = 1 << 22
LONGEST_COLUMNAR_LINE = BLOCK_BYTES // 2
SCAN_BYTES = 1 << 22  # bytes looked at a time by `_simple_lines`
# Blank lines whose numbers `_simple_lines` keeps (8 MiB of them); a file of more is read by
# the record reader, so that memory stays bounded by the rows, not by the blank lines.
MAX_BLANK_LINES = 1 << 20
_DELIMITERS = {"csv": ",", "tsv": "\t"}
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # may escape half of a UTF-16 pair
_LF, _CR, _QUOTE, _BRACE, _BRACKET = (ord(c) for c in '\n\r"{[')


def _read_columnar(
    source: Source,
    layout: str,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
    report: Report,
) -> pl.DataFrame | None:
    """The typed frame of a CSV, TSV or JSON Lines file of one record per line, read by
    PyArrow a block at a time (a 10M-row file in seconds; the record reader took minutes),
    its problems in `report`; None when the columns refuse the file. _NotSimple when the
    file is not plainly one record per line (`_simple_lines`) or when PyArrow finds it
    invalid: the record reader then reads it and says where and what each problem is. (A
    JSON Lines file PyArrow gives up on after its first block is read on by the record
    reader from there, `_json_tail`; the lines of its problems are read again by Python's
    JSON, for their values and messages, `_json_lines_again`.)"""
    import pyarrow as pa

    lines, blanks = _simple_lines(source, layout)
    validation: _Validation | None = None
    first = 1 if layout == "jsonl" else 2  # the line of the first row
    line_of = _row_lines(first, blanks)
    try:
        columns, batches = _arrow_batches(source, layout, BLOCK_BYTES, report)
        if not _usable(columns, 1 if layout != "jsonl" else None, source, datasets, kind, report):
            return None
        validation, rows = _Validation(columns, datasets, one_means, kind), 0
        for batch in batches:
            validation.add(batch.with_columns(line_of(rows, batch.height)))
            rows += batch.height
    except (pa.ArrowException, UnicodeDecodeError) as error:
        if layout != "jsonl" or validation is None:
            raise _NotSimple from error
        gave_up = True
    else:
        gave_up = False
    if gave_up:  # (out of the except block, whose exception holds PyArrow's last block)
        # PyArrow gave up at a block (a line not JSON, a type changing, a key twice): the
        # record reader reads the lines from there on, into the same checks.
        assert validation is not None
        rows += _json_tail(source, int(line_of(rows, 1)[0]), columns, validation, report)
    if rows != lines - (first - 1) - len(blanks):
        raise _NotSimple  # PyArrow saw a record where no line starts one
    report.rows_read = rows
    if rows == 0:
        _no_rows(report)
    # PyArrow and Python spell some JSON values apart (2.0 is "2" to PyArrow): the lines of
    # problems are read again, for the record reader's values and messages.
    return validation.finish(report, _json_lines_again(source) if layout == "jsonl" else None)


def _json_tail(
    source: Source, line: int, columns: list[str], validation: _Validation, report: Report
) -> int:
    """The records from line `line` on of a JSON Lines file of one record a line (as
    `_simple_lines` vouched), read by the record reader into `validation`; _NotSimple when
    one names a known column that `columns` lack (the record reader reads the file)."""
    (_, start, _), *_ = _line_spans(source, [line])
    tail = _json_rows(source, report, lambda _: validation, columns, (start, line - 1))
    if tail is None or tail.finish() is None:
        raise _NotSimple
    return tail.records


def _json_lines_again(source: Source) -> Respelling:
    """The cells of some lines of a JSON Lines file of one record a line (as
    `_simple_lines` vouched), read as the record reader reads them, about a BLOCK_BYTES of
    lines at a time; _NotSimple if Python's JSON refuses one of them."""

    def cells(lines: list[int]) -> Iterator[pl.DataFrame]:
        rows, held = _Rows(list(COLUMNS)), 0
        for line, start, end in _line_spans(source, lines):
            text = os.pread(source.fileno, end - start, start).decode("utf-8", "surrogateescape")
            record = _json_problem(line, text)
            known = record if isinstance(record, Problem) else _known_cells(line, record)
            if isinstance(known, Problem):
                raise _NotSimple  # the readers disagree: the record reader decides
            rows.add(line, known, end - start)
            held += end - start
            if held >= BLOCK_BYTES:
                yield rows.frame()
                rows, held = _Rows(list(COLUMNS)), 0
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
                raise _NotSimple  # two keys for one column, or a value not read as such
            if name in COLUMNS:
                names[name] = field.name
        columns = [name for name in COLUMNS if name in names]
        batches: Iterator[pa.RecordBatch] = iter(reader)
        given = [names[name] for name in columns]
    else:
        header = _header_cells(source, _DELIMITERS[layout])
        positions = _header(header, 1, report)
        if not report.ok:
            raise _NotSimple  # the record reader says what is wrong with the header
        columns = [name for name in COLUMNS if name in positions]
        generated = [f"c{i}" for i in range(len(header))]
        given = [generated[positions[name]] for name in columns]
        batches = iter(
            pacsv.open_csv(
                source.text_path,
                read_options=pacsv.ReadOptions(
                    column_names=generated, skip_rows=1, block_size=block
                ),
                parse_options=pacsv.ParseOptions(delimiter=_DELIMITERS[layout]),
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
            if _too_long_cell(pa.record_batch(cells, names=columns), 0, columns) is not None:
                raise _NotSimple  # the record reader says where, before Polars copies it
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
    lines; _NotSimple for any other. Such a file is UTF-8, with no NUL byte and no line
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
    delimiter = _LF if json else ord(_DELIMITERS[layout])  # (JSON Lines: not looked at)
    fd, size = source.fileno, source.size
    start = offset = len(BOM) if source.read(len(BOM)) == BOM else 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    line_start, parity, openers, lines, longest = start, 0, 0, 0, 0
    blanks: list[np.ndarray] = []
    held_blanks = 0
    previous = _LF  # the byte before the block: the start of the file is a line's
    if offset >= size:
        raise _NotSimple  # empty: the record reader says so
    while offset < size:
        chunk = os.pread(fd, SCAN_BYTES + 8, offset)  # a few bytes of the next block too
        length = min(SCAN_BYTES, len(chunk))
        try:
            decoder.decode(chunk[:length], final=offset + length >= size)
        except UnicodeDecodeError:
            raise _NotSimple from None
        data = np.frombuffer(chunk, np.uint8)
        if not data.all():
            raise _NotSimple  # a NUL byte, which the record reader reports
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
            raise _NotSimple
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
            raise _NotSimple  # the record reader skips them, holding nothing
        if json:
            if (firsts[~blank] != _BRACE).any() or _SURROGATE.search(chunk):
                raise _NotSimple
            found = np.flatnonzero((block == _BRACE) | (block == _BRACKET))
            cuts = np.concatenate(([0], feeds + 1, [length]))
            counts = np.diff(np.searchsorted(found, cuts))
            counts[0] += openers
            if (counts > MAX_DEPTH).any():
                raise _NotSimple
            openers = int(counts[-1])
        else:
            if offset == start and blank[0]:
                raise _NotSimple  # no header: the record reader says so
            returns = np.flatnonzero(block == _CR)
            if (after[returns + 1] != _LF).any():
                raise _NotSimple
            quotes = np.flatnonzero(block == _QUOTE)
            opening = (parity + np.arange(len(quotes))) % 2 == 0
            before = np.where(quotes > 0, data[np.maximum(quotes - 1, 0)], previous)
            if (opening & ~np.isin(before, (delimiter, _LF, _QUOTE))).any():
                raise _NotSimple  # a quote inside an unquoted cell
            if (~opening & ~np.isin(after[quotes + 1], (delimiter, _LF, _CR, _QUOTE))).any():
                raise _NotSimple  # text after a closing quote
            if ((parity + np.searchsorted(quotes, feeds)) % 2).any():
                raise _NotSimple  # a line end inside quotes
            parity = (parity + len(quotes)) % 2
        lines += len(feeds)
        previous = int(block[-1])
        offset += length
    if parity:
        raise _NotSimple  # an unclosed quote
    return lines + (line_start < size), np.concatenate(blanks)


# --- reading: each format into frames of String cells, with the line of each row ----------


class _Rows:
    """The cells of the known columns, gathered into String frames a batch at a time and,
    with `validate`, handed to its _Validation a VALIDATED_ROWS (or HELD_BYTES) at a time,
    so that only the typed rows of a file are held, never its cells (a 10M-row JSON Lines
    file held both: 4 GB).

    `columns`: the known columns the file has; None for a JSON Lines file, whose columns
    are those some record names (`seen`): they are taken from the records read before the
    first hand-over, and a record naming another one later makes the rows handed over
    stale (`finish` then says None, and the caller reads the file again, knowing them), as
    does a first guess that cannot be validated (`validate` says None).
    """

    def __init__(
        self,
        columns: list[str] | None,
        validate: Validating | None = None,
    ) -> None:
        self.columns, self.validate = columns, validate
        self.validation = validate(columns) if validate and columns is not None else None
        self.seen: set[str] = set()
        self.lines: list[int] = []
        self.rows: list[Mapping[str, str | None]] = []  # the cells of each row of `lines`
        self.batch_size = 0  # the characters they were read from
        self.frames: list[pl.DataFrame] = []
        self.held = self.held_bytes = 0  # rows in frames, and their cells' bytes
        self.stale = False
        self.records = 0  # read, broken ones too

    def add(self, line: int, cells: Mapping[str, str | None], size: int) -> None:
        """The cells of a row (a known column it lacks is None), read from `size`
        characters of text."""
        self.lines.append(line)
        self.rows.append(cells)
        self.batch_size += size
        if len(self.lines) == BATCH_ROWS or self.batch_size >= BATCH_BYTES:
            self._flush()

    def add_frame(self, first: int, frame: pl.DataFrame) -> None:
        """String cells of some known columns, the first on line `first`."""
        import polars as pl

        self._flush()
        lines = pl.int_range(first, first + frame.height, dtype=pl.Int64, eager=True)
        missing = [pl.lit(None, pl.String).alias(n) for n in COLUMNS if n not in frame.columns]
        self._held(frame.with_columns(*missing, lines.alias(LINE)).select(LINE, *COLUMNS))

    def _flush(self) -> None:
        import polars as pl

        if not self.lines:
            return
        cells = {name: [row.get(name) for row in self.rows] for name in COLUMNS}
        frame = pl.DataFrame(
            {LINE: self.lines, **cells},
            schema={LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)},
        )
        self.lines, self.rows, self.batch_size = [], [], 0
        self._held(frame)

    def _held(self, frame: pl.DataFrame) -> None:
        self.frames.append(frame)
        self.held += frame.height
        self.held_bytes += int(frame.estimated_size())
        full = self.held >= VALIDATED_ROWS or self.held_bytes >= HELD_BYTES
        if self.validate is not None and full:
            self._hand_over()

    def _hand_over(self) -> None:
        """The rows held, to the validation (dropped when it is stale)."""
        import polars as pl

        assert self.validate is not None
        frames, self.frames, self.held, self.held_bytes = self.frames, [], 0, 0
        if self.columns is None:
            self.columns = [name for name in COLUMNS if name in self.seen]
            self.validation = self.validate(self.columns)
        self.stale = self.stale or not self.seen <= set(self.columns)
        if frames and not self.stale and self.validation is not None:
            # One chunk a column, as PyArrow's batches are: typed columns chunked apart
            # made the duplicate check copy the typed frame (1M rows: 190 MB).
            self.validation.add(pl.concat(frames).select(LINE, *self.columns).rechunk())

    def finish(self) -> _Validation | None:
        """The validation of every row (None when the columns were taken too early, and
        with them the rows handed over), once the file is read; `columns` are then the
        file's."""
        self._flush()
        self._hand_over()
        assert self.columns is not None
        self.columns = [name for name in COLUMNS if name in self.seen or name in self.columns]
        return None if self.stale else self.validation

    def frame(self) -> pl.DataFrame:
        """The rows held, of the known columns (all of them when `columns` is None)."""
        import polars as pl

        self._flush()
        schema = {LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)}
        columns = COLUMNS if self.columns is None else self.columns
        return pl.concat([pl.DataFrame(schema=schema), *self.frames]).select(LINE, *columns)


def _too_long_known_cell(line: int, cells: Mapping[str, str | None]) -> Problem | None:
    """The problem of a known cell of a record longer than MAX_CELL_BYTES, if any, found
    before the record's cells go to Polars: a label of 12 MiB took Polars' checks about
    eight copies of it (`evaluate` peaked at 303 -> 354 MiB, a 23 MiB one at 414 MiB)."""
    for name, cell in cells.items():
        if (
            cell is not None
            and len(cell) > MAX_CELL_BYTES // 4
            and (len(cell.encode()) > MAX_CELL_BYTES)
        ):
            return _cell_too_long(line, name, cell)
    return None


def _cell_too_long(line: int, name: str, cell: str) -> Problem:
    message = (
        f"the {name} cell is {format_size(len(cell.encode()))} long, "
        f"and a {name} is a few bytes (at most {MAX_CELL_BYTES} here); reading stopped "
        "at this row"
    )
    return Problem(
        PredictionProblemType.CELL_TOO_LONG, line, name, cell[:SHOWN_VALUE_CHARS], message
    )


def _record_too_long(line: int) -> Problem:
    return Problem(
        ProblemType.RECORD_TOO_LONG,
        line,
        None,
        None,
        f"the record starting here is longer than {MAX_RECORD_BYTES >> 20} MiB, and a "
        "prediction is a few bytes; reading goes on at the next line",
    )


def _header(names: list[str], line: int | None, report: Report) -> dict[str, int]:
    """The position of each known column among `names`; a known one named twice is a
    problem."""
    positions: dict[str, int] = {}
    for position, given in enumerate(names):
        name = given.strip().lower()
        if name not in COLUMNS:
            continue  # other columns (the text, a note) are the user's own business
        if name in positions:
            message = f"column {name} appears twice"
            report.add([Problem(ProblemType.DUPLICATE_COLUMN, line, name, given, message)])
        positions[name] = position
    return positions


def _has_columns(columns: list[str], line: int | None, report: Report) -> bool:
    """Whether the file has the columns needed to read its rows; if not, the problems."""
    before = len(report.problems)

    def missing(column: str | None, message: str) -> None:
        report.add([Problem(ProblemType.MISSING_COLUMN, line, column, None, message)])

    if ITEM_ID not in columns:
        missing(ITEM_ID, "the file has no item_id column, which says which conversation")
    given = [name for name in DISTRIBUTION if name in columns]
    if given and not {"p_no", "p_yes"} <= set(given):
        lacking = "p_yes" if "p_no" in given else "p_no"
        missing(lacking, f"a distribution needs p_no and p_yes; the file has {', '.join(given)}")
    elif not ({LABEL, SCORE} & set(columns) or given):
        missing(None, "the file has no label, score or p_no/p_yes column: it predicts nothing")
    return len(report.problems) == before


def _delimited_rows(
    source: Source, delimiter: str, report: Report, validate: Validating
) -> _Rows | None:
    """CSV or TSV, a record at a time; None when the header already refuses the file."""
    rows: _Rows | None = None
    positions: dict[str, int] = {}
    width = 0
    with source.open_text() as text:
        lines = Lines(text)
        reader = csv.reader(lines, delimiter=delimiter, strict=True)
        while True:
            lines.start_record()
            try:
                cells: list[str] | csv.Error = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                cells = error
            except RecordTooLongError:
                report.add([_record_too_long(lines.first)])
                if rows is not None:
                    rows.records += 1
                reader = csv.reader(lines, delimiter=delimiter, strict=True)
                continue
            if rows is None:
                if isinstance(cells, csv.Error):
                    report.add(structure_problems(lines.first, cells, []))
                    return None
                positions, width = _header(cells, lines.first, report), len(cells)
                rows = _Rows([name for name in COLUMNS if name in positions], validate)
                if ITEM_ID not in positions:
                    return rows  # the rest cannot be checked: no need to read it
                continue
            if not cells:
                continue
            rows.records += 1
            problems = structure_problems(lines.first, cells, [""] * width)
            if problems:
                report.add(problems)
                report.rows_rejected += 1
                continue
            assert not isinstance(cells, csv.Error)
            known = {name: cells[position] or None for name, position in positions.items()}
            too_long = _too_long_known_cell(lines.first, known)
            if too_long is not None:
                report.add([too_long])
                report.rows_rejected += 1
                break
            rows.add(lines.first, known, sum(map(len, cells)))
    if rows is None:
        report.add([_empty_file()])
    else:
        report.rows_read = rows.records
    return rows


def _empty_file() -> Problem:
    return Problem(ProblemType.EMPTY_FILE, None, None, None, "the file is empty: no predictions")


def _json_text(value: object) -> str | None:
    """A JSON value as the text a CSV cell would hold."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)[:SHOWN_VALUE_CHARS]


def _json_rows(
    source: Source,
    report: Report,
    validate: Validating,
    columns: list[str] | None = None,
    after: tuple[int, int] = (0, 0),
) -> _Rows | None:
    """JSON Lines: one object per line; blank lines are skipped. `columns`: the file's
    known columns, when a first reading found them (`_Rows`). `after`: where to start
    (a byte where a line starts, and the lines before it)."""
    rows = _Rows(columns, validate)
    start, before = after
    with source.open_text(start) as text:
        for number, line in json_lines(text, before):
            rows.records += 1
            record = _json_problem(number, line)
            cells = record if isinstance(record, Problem) else _known_cells(number, record)
            if isinstance(cells, Problem):
                report.add([cells])
                report.rows_rejected += 1
                continue
            too_long = _too_long_known_cell(number, cells)
            if too_long is not None:
                report.add([too_long])
                report.rows_rejected += 1
                break
            rows.seen.update(cells)
            rows.add(number, cells, len(line or ""))
    if rows.records == 0:
        report.add([_empty_file()])
        return None
    report.rows_read = rows.records
    return rows


def _known_cells(line: int, record: dict[str, object]) -> Problem | dict[str, str | None]:
    """The values of the known columns as text (`_json_text`), by their names (keys are
    read as a header's names are: blanks around them and case do not count); two keys
    naming one is a problem."""
    known: dict[str, str | None] = {}
    for key, value in record.items():
        name = _KEY_NAMES.get(key)
        if name is None:
            name = key.strip().lower()
            if len(_KEY_NAMES) < MAX_KEY_NAMES:
                _KEY_NAMES[key] = name
        if name in known:
            message = f"the keys of the line name {name} twice"
            return Problem(JsonProblemType.DUPLICATE_KEY, line, name, key, message)
        if name in _KNOWN:
            known[name] = value if type(value) is str else _json_text(value)
    return known


# The name each key read so far stands for (the keys of a file's lines are mostly the same
# few: looked up, not spelled again, on each of millions of lines), up to MAX_KEY_NAMES.
_KEY_NAMES: dict[str, str] = {}
MAX_KEY_NAMES = 1024
_KNOWN = frozenset(COLUMNS)


def _json_problem(line: int, text: str | None) -> Problem | dict[str, object]:
    """The object on a line, or the problem that it is not one (`dices_cli.read.json_lines`)."""
    if text is None:
        return _record_too_long(line)
    try:
        record = parsed(text)
    except JsonLineError as error:
        if error.type is JsonProblemType.INVALID_JSON:
            return Problem(
                PredictionProblemType.INVALID_JSON, line, None, _shown_line(text), error.message
            )
        return Problem(error.type, line, None, error.value, error.message)
    if not isinstance(record, dict):
        message = "the line is JSON but not an object ({...}) of named values"
        return Problem(PredictionProblemType.INVALID_JSON, line, None, _shown_line(text), message)
    return record


def _shown_line(text: str) -> str:
    """The start of a line, as a problem's value."""
    return text.strip()[:SHOWN_VALUE_CHARS].encode("utf-8", "backslashreplace").decode()


def _parquet_rows(
    source: Source, max_size: int, report: Report, validate: Validating
) -> _Rows | None:
    """A batch of rows at a time, each batch about PARQUET_BATCH_BYTES; a cell longer than
    MAX_CELL_BYTES stops the reading, before Polars copies it (64 MiB of 64 KiB labels
    ended in SIGABRT under a 2 GiB address-space cap)."""
    import polars as pl

    parquet = parquet_file(source, max_size)
    positions = _header(parquet.schema_arrow.names, None, report)
    columns = [name for name in COLUMNS if name in positions]
    rows = _Rows(columns, validate)
    if not report.ok:
        return rows
    names = [parquet.schema_arrow.names[positions[name]] for name in columns]
    metadata = parquet.metadata
    stored = sum(metadata.row_group(g).total_byte_size for g in range(metadata.num_row_groups))
    per_row = max(stored // max(metadata.num_rows, 1), 1)
    first = 2
    for batch in parquet.iter_batches(
        batch_size=max(1, min(BATCH_ROWS, PARQUET_BATCH_BYTES // per_row)), columns=names
    ):
        too_long = _too_long_cell(batch, first, columns)
        if too_long is not None:
            report.add([too_long])
            report.rows_rejected += 1
            rows.records = report.rows_read = (too_long.line or first) - 1
            return rows
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        try:
            cells = frame.select(
                pl.col(given).cast(pl.String).alias(name)
                for given, name in zip(names, columns, strict=True)
            )
        except pl.exceptions.PolarsError as error:
            raise DicesError(
                f"{source.name}: a column holds values that are neither text nor numbers ({error})"
            ) from error
        rows.add_frame(first, cells)
        first += cells.height
    rows.records = report.rows_read = first - 2
    return rows


def _too_long_cell(batch: pa.RecordBatch, first: int, columns: list[str]) -> Problem | None:
    """The problem of the first cell of `batch` (rows from line `first`; its columns are
    `columns`) longer than MAX_CELL_BYTES, if any: measured by PyArrow, nothing copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(columns, batch.columns, strict=True):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue  # numbers have a width; Polars refuses binary and nested columns
        long = pc.greater(pc.binary_length(column), MAX_CELL_BYTES)
        if pc.any(long).as_py():
            row = pc.index(long, True).as_py()
            return _cell_too_long(first + row, name, column[row].as_py())
    return None


# --- validation: every problem of the cells, as records ---------------------------------------

_PROBLEM_SCHEMA = ("type", "line", "column", "value", "message")


def _shown(cell: pl.Expr) -> pl.Expr:
    """A cell for a message: its first SHOWN_CHARS characters and "..." when longer."""
    import polars as pl

    return (
        pl.when(cell.str.len_chars() > SHOWN_CHARS)
        .then(cell.str.slice(0, SHOWN_CHARS) + "...")
        .otherwise(cell)
    )


def _records(both: pl.DataFrame, first: int, checks: list[_Check]) -> pl.DataFrame:
    """The problem records `checks` (numbered from `first`) find in `both`: LINE, order,
    check, value, message; grouped by check."""
    import polars as pl

    return pl.concat(
        both.filter(check.when).select(
            pl.col(LINE),
            pl.lit(check.order).alias("order"),
            pl.lit(first + i).alias("check"),
            check.value.cast(pl.String).str.slice(0, SHOWN_VALUE_CHARS).alias("value"),
            check.message.alias("message"),
        )
        for i, check in enumerate(checks)
    )


class _Validation:
    """Typed rows and the problems of their cells, a batch of String cells at a time, so
    that only the typed rows of a file are held, never its text, nor more than
    MAX_KEPT_PROBLEMS problem records. The checks over several rows (a duplicate
    prediction, a distribution's third share) run once every batch is in (`finish`).

    `present`: the file's known columns."""

    def __init__(
        self,
        present: list[str],
        datasets: Mapping[str | None, Collection[int] | Collection[str]],
        one_means: str | None,
        kind: ItemKind,
    ) -> None:
        self.present, self.datasets, self.one_means, self.kind = present, datasets, one_means, kind
        self.row_checks = _row_checks(present, datasets, one_means, kind)
        self.checks = [*self.row_checks, *_whole_file_checks(present)]
        self.typed: list[pl.DataFrame] = []
        self.found: list[pl.DataFrame] = []  # the first problems found (records, as frames)
        self.totals = [0] * len(self.checks)
        self.rejected = 0

    def add(self, raw: pl.DataFrame) -> None:
        """A batch of rows: LINE and String cells of some of the known columns."""
        import polars as pl

        both = self._both(raw)
        typed_columns = both.columns[len(COLUMNS) :]
        bad = self._find(both, 0, self.row_checks)
        shares = [f"raw_{name}" for name in DISTRIBUTION if name in self.present]
        helpers: list[pl.Expr | pl.Series] = [bad.alias(_BAD)]
        if shares:
            helpers += [
                pl.any_horizontal(pl.col(shares).is_not_null()).alias(_SHARES_GIVEN),
                pl.col(f"raw_{P_UNSURE}").is_not_null().alias(_UNSURE_GIVEN),
            ]
        self.typed.append(both.select(*typed_columns, *helpers))

    def _both(self, raw: pl.DataFrame) -> pl.DataFrame:
        """The cells as given (stripped; raw_*, one for each known column), then the typed
        columns (and LINE), of a batch as `add` takes it."""
        import polars as pl

        cells = raw.with_columns(pl.col(c).str.strip_chars() for c in raw.columns if c != LINE)
        cells = cells.with_columns(
            pl.lit(None, pl.String).alias(name) for name in COLUMNS if name not in cells.columns
        )
        typed = _typed(cells, self.present, self.datasets, self.one_means, self.kind)
        given = cells.select(pl.col(name).alias(f"raw_{name}") for name in COLUMNS)
        return pl.concat([given, typed], how="horizontal")

    def _find(self, both: pl.DataFrame, first: int, checks: list[_Check]) -> pl.Series:
        """Count and keep the problems `checks` (numbered from `first`) find in `both`; the
        rows with one."""
        import polars as pl

        flags = both.select(c.when.fill_null(False).alias(str(i)) for i, c in enumerate(checks))
        bad = flags.select(pl.any_horizontal(pl.all())).to_series()
        for i, total in enumerate(flags.sum().row(0)):
            self.totals[first + i] += int(total)
        shown = both.filter(bad).head(MAX_KEPT_PROBLEMS)  # every kept problem is on these
        self.found = [
            pl.concat([*self.found, _records(shown, first, checks)])
            .sort(LINE, "order", "check")
            .head(MAX_KEPT_PROBLEMS)
        ]
        return bad

    def finish(self, report: Report, respell: Respelling | None = None) -> pl.DataFrame:
        """The typed frame of every row added; every problem into `report`: the first
        records kept (up to MAX_KEPT_PROBLEMS in all, in file order), the others counted,
        so that a file of millions of bad rows never holds a message for each.

        `respell`, when the cells were read otherwise than the record reader reads them
        (PyArrow spells the JSON number 2.0 as "2", Python as "2.0"): the cells of the
        lines it is given as the record reader spells them, whose records then replace the
        values and messages of the checks of one row. Which checks fail does not change
        (the typed values are the same), nor do the records of checks over several rows,
        which quote typed values only."""
        import polars as pl

        typed = pl.concat(self.typed, rechunk=False) if self.typed else _typed_schema_frame()
        self.typed = []
        earlier = typed.get_column(_BAD)  # rows with a problem of their own
        first = len(self.row_checks)  # the duplicate check, then the distribution's
        suspects = _suspects(typed)
        duplicate = self._find(suspects, first, self.checks[first : first + 1])
        duplicates = suspects.filter(duplicate & ~suspects.get_column(_BAD)).get_column(LINE)
        report.rows_rejected += int(earlier.sum()) + duplicates.len()
        if _UNSURE_GIVEN in typed.columns:
            # p_unsure is each model's choice: a model that gives it on no row predicts two
            # shares.
            unsure = typed.filter(_UNSURE_GIVEN).get_column(MODEL).unique().implode()
            both = typed.with_columns(pl.col(MODEL).is_in(unsure).alias("gives_p_unsure"))
            bad = self._find(both, first + 1, self.checks[first + 1 :])
            also = bad & ~earlier & ~typed.get_column(LINE).is_in(duplicates.implode())
            report.rows_rejected += int(also.sum())
        room = max(MAX_KEPT_PROBLEMS - len(report.problems), 0)
        records = self.found[0].head(room) if self.found else None
        if records is not None and respell is not None:
            records = self._respelled(records, respell)
        kept: dict[int, int] = {}
        if records is not None:
            for line, _, i, value, message in records.iter_rows():
                check = self.checks[i]
                report.add([Problem(check.type, line, check.column, value, message)])
                kept[i] = kept.get(i, 0) + 1
        for i, check in enumerate(self.checks):
            report.count_not_kept(check.type, Severity.ERROR, self.totals[i] - kept.get(i, 0))
        return typed.select(MODEL, DATASET, ITEM_ID, LABEL, *PROBABILITIES, PERSONA)

    def _respelled(self, records: pl.DataFrame, respell: Respelling) -> pl.DataFrame:
        """`records` with the value and message of each check of one row as found in the
        cells `respell` gives of its line; _NotSimple if one is not found there."""
        import polars as pl

        own = pl.col("check") < len(self.row_checks)
        lines = records.filter(own).get_column(LINE).unique().sort().to_list()
        spelled = {
            (line, check): (value, message)
            for cells in respell(lines)
            for line, _, check, value, message in _records(
                self._both(cells), 0, self.row_checks
            ).iter_rows()
        }
        rows = []
        for line, order, check, value, message in records.iter_rows():
            if check < len(self.row_checks):
                if (line, check) not in spelled:
                    raise _NotSimple  # the readers disagree: the record reader decides
                value, message = spelled[line, check]
            rows.append((line, order, check, value, message))
        return pl.DataFrame(rows, schema=records.schema, orient="row")


# The validation of rows of some known columns, None when they cannot be validated.
Validating = Callable[[list[str]], "_Validation | None"]
# The cells (LINE and String cells of known columns) of the lines given, as the record
# reader spells them, a batch at a time.
Respelling = Callable[[list[int]], Iterator["pl.DataFrame"]]

_BAD, _SHARES_GIVEN, _UNSURE_GIVEN = "_bad", "_shares_given", "_p_unsure_given"


def _suspects(typed: pl.DataFrame) -> pl.DataFrame:
    """The rows that may repeat another's model, dataset and item, with first_line, the
    first line of their three. Rows are told apart by a 64-bit hash of the three, and only
    rows whose hash repeats (duplicates, and hash collisions, which the grouping tells from
    them) are grouped by the three: grouping 10M rows by the three took 1.6 GB more, the
    hash 0.3 GB. (Expressions over `typed` itself, not a Series beside it: a mask chunked
    otherwise than the frame made Polars copy the frame.)"""
    import polars as pl

    key = pl.struct(MODEL, DATASET, ITEM_ID, PERSONA).hash()
    keys = typed.select(key).to_series()
    repeated = keys.filter(~keys.is_first_distinct()).unique().implode()
    return typed.filter(key.is_in(repeated)).with_columns(
        pl.col(LINE).min().over(MODEL, DATASET, ITEM_ID, PERSONA).alias("first_line")
    )


def _typed_schema_frame() -> pl.DataFrame:
    """No rows, with the columns of a typed batch."""
    import polars as pl

    strings = dict.fromkeys((MODEL, DATASET, ITEM_ID, LABEL, PERSONA), pl.String)
    numbers = dict.fromkeys(PROBABILITIES, pl.Float64)
    return pl.DataFrame(schema={LINE: pl.Int64, **strings, **numbers, _BAD: pl.Boolean})


def _typed(
    cells: pl.DataFrame,
    present: list[str],
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
) -> pl.DataFrame:
    """The typed columns (and LINE) of stripped String `cells`."""
    import polars as pl

    label = cells.get_column(LABEL).str.to_lowercase()
    numbers = {
        name: cells.get_column(name).cast(pl.Float64, strict=False) for name in PROBABILITIES
    }
    labels = label.replace_strict(kind.labels, default=None, return_dtype=pl.String)
    if one_means is not None:
        one, zero = ONE_MEANS[one_means]
        labels = labels.fill_null(
            label.replace_strict(
                dict.fromkeys(ONE_OR_TRUE, one) | dict.fromkeys(ZERO_OR_FALSE, zero),
                default=None,
                return_dtype=pl.String,
            )
        )
    return pl.DataFrame(
        {
            LINE: cells.get_column(LINE),
            MODEL: cells.get_column(MODEL).fill_null(DEFAULT_MODEL)
            if MODEL not in present
            else cells.get_column(MODEL),
            DATASET: pl.repeat(next(iter(datasets)), cells.height, dtype=pl.String, eager=True)
            if DATASET not in present
            else cells.get_column(DATASET).replace_strict(
                {name: name for name in kind.datasets}, default=None, return_dtype=pl.String
            ),
            ITEM_ID: cells.get_column(ITEM_ID)
            if kind.text_ids
            else cells.get_column(ITEM_ID).cast(pl.Int64, strict=False),
            LABEL: labels,
            **numbers,
            PERSONA: cells.get_column(PERSONA),
        }
    )


@dataclass(frozen=True)
class _Check:
    """A problem found where `when` holds, as Polars expressions over the checked frame."""

    order: int  # of the column, so that a line's problems are reported left to right
    when: pl.Expr
    type: ProblemType | PredictionProblemType
    column: str | None
    value: pl.Expr
    message: pl.Expr


def _row_checks(
    present: list[str],
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
) -> list[_Check]:
    """The checks of one row at a time, over the cells as given (stripped; columns named
    raw_*) beside the typed ones; `present` are the file's known columns."""
    import polars as pl

    def raw(name: str) -> pl.Expr:
        return pl.col(f"raw_{name}")

    check = _Check

    valid_id = pl.col(ITEM_ID).is_not_null()
    named = [name for name in datasets if name is not None]
    valid_dataset = pl.col(DATASET).is_not_null()
    # A row's item is looked up among its dataset's (among the one dataset's, unnamed).
    unknown = pl.lit(False)  # a row of no dataset evaluated: that is its problem
    for name, item_ids in datasets.items():
        id_type = pl.String if kind.text_ids else pl.Int64
        known = pl.Series(sorted(set(item_ids)), dtype=id_type).implode()
        ours = pl.lit(True) if name is None else pl.col(DATASET) == name
        unknown = pl.when(ours).then(~pl.col(ITEM_ID).is_in(known)).otherwise(unknown)
    found = [
        check(
            0,
            raw(MODEL).is_null() if MODEL in present else pl.lit(False),
            ProblemType.MISSING_VALUE,
            MODEL,
            pl.lit(None),
            pl.lit("the row names no model"),
        ),
        check(
            1,
            raw(DATASET).is_null() if DATASET in present else pl.lit(False),
            ProblemType.MISSING_VALUE,
            DATASET,
            pl.lit(None),
            pl.lit("the row names no dataset"),
        ),
        check(
            1,
            raw(DATASET).is_not_null() & ~valid_dataset,
            ProblemType.NOT_IN_ENUM,
            DATASET,
            raw(DATASET),
            pl.format(
                f"'{{}}' is not a dataset: give {' or '.join(kind.datasets)}",
                _shown(raw(DATASET)),
            ),
        ),
        check(
            1,
            valid_dataset & ~pl.col(DATASET).is_in(named) if named else pl.lit(False),
            ProblemType.NOT_IN_ENUM,
            DATASET,
            raw(DATASET),
            pl.format(
                "the row is for DICES-{}, which is not evaluated (DICES-{})",
                pl.col(DATASET),
                pl.lit(" and DICES-".join(named)),
            ),
        ),
        check(
            2,
            raw(ITEM_ID).is_null(),
            ProblemType.MISSING_VALUE,
            ITEM_ID,
            pl.lit(None),
            pl.lit("the row has no item_id"),
        ),
        check(
            2,
            raw(ITEM_ID).is_not_null() & ~valid_id,
            ProblemType.NOT_AN_INTEGER,
            ITEM_ID,
            raw(ITEM_ID),
            pl.format("'{}' is not an item id (a whole number)", _shown(raw(ITEM_ID))),
        ),
        check(
            2,
            valid_id & unknown,
            PredictionProblemType.UNKNOWN_ITEM,
            ITEM_ID,
            raw(ITEM_ID),
            pl.format(
                f"item {{}} is not {kind.noun}",
                _shown(pl.col(ITEM_ID)) if kind.text_ids else pl.col(ITEM_ID),
            ),
        ),
    ]
    numeric_label = raw(LABEL).str.to_lowercase().is_in([*ONE_OR_TRUE, *ZERO_OR_FALSE])
    bad_label = raw(LABEL).is_not_null() & pl.col(LABEL).is_null()
    ambiguous = bad_label & numeric_label if one_means is None else pl.lit(False)
    found += [
        check(
            3,
            ambiguous,
            PredictionProblemType.AMBIGUOUS_LABEL,
            LABEL,
            raw(LABEL),
            pl.format(
                "'{}' is ambiguous as a label: numeric and true/false labels need to be told "
                "whether 1 (true) means unsafe or safe",
                raw(LABEL),
            ),
        ),
        check(
            3,
            bad_label & ~ambiguous,
            ProblemType.NOT_IN_ENUM,
            LABEL,
            raw(LABEL),
            pl.format(
                f"'{{}}' is not a label: {kind.labels_hint}",
                _shown(raw(LABEL)),
            ),
        ),
    ]
    for order, name in enumerate(PROBABILITIES, start=4):
        number = pl.col(name)
        not_number = raw(name).is_not_null() & (number.is_null() | number.is_nan())
        found += [
            check(
                order,
                not_number,
                PredictionProblemType.NOT_A_NUMBER,
                name,
                raw(name),
                pl.format("'{}' is not a number", _shown(raw(name))),
            ),
            check(
                order,
                ~not_number & ((number < 0) | (number > 1)),
                ProblemType.OUT_OF_RANGE,
                name,
                raw(name),
                pl.format("{} is outside [0, 1]; {} is a probability", raw(name), pl.lit(name)),
            ),
        ]
    given = [name for name in DISTRIBUTION if name in present]
    if given:
        any_given = pl.any_horizontal(raw(name).is_not_null() for name in given)
        found += [
            check(
                8,
                any_given & raw(name).is_null(),
                ProblemType.MISSING_VALUE,
                name,
                pl.lit(None),
                pl.lit(f"the row gives a distribution without {name}"),
            )
            for name in given
            if name != P_UNSURE  # whether a row lacks it depends on its model's other rows
        ]
    predictions = [name for name in (LABEL, SCORE, *given) if name in present]
    found.append(
        check(
            10,
            pl.all_horizontal(raw(name).is_null() for name in predictions),
            ProblemType.MISSING_VALUE,
            None,
            pl.lit(None),
            pl.lit(f"the row gives no prediction: {' and '.join(predictions)} empty"),
        )
    )
    return found


def _whole_file_checks(present: list[str]) -> list[_Check]:
    """The checks that look at other rows, over typed rows: first the duplicate (over the
    `_suspects`, with first_line), then a distribution's (over every row, with
    gives_p_unsure: whether the row's model gives p_unsure on any row)."""
    import polars as pl

    first_line, three = pl.col("first_line"), pl.col("gives_p_unsure")
    found = [
        _Check(
            2,
            pl.col(ITEM_ID).is_not_null() & (pl.col(LINE) != first_line),
            PredictionProblemType.DUPLICATE_PREDICTION,
            ITEM_ID,
            pl.col(ITEM_ID),
            pl.format(
                "model {} already has a prediction for item {}{} (line {})",
                _shown(pl.col(MODEL)),
                pl.col(ITEM_ID),
                pl.when(pl.col(PERSONA).is_null())
                .then(pl.lit(""))
                .otherwise(pl.format(" as {}", _shown(pl.col(PERSONA)))),
                first_line,
            ),
        )
    ]
    given = [name for name in DISTRIBUTION if name in present]
    if not given:
        return found
    if P_UNSURE in given:
        found.append(
            _Check(
                8,
                pl.col(_SHARES_GIVEN) & ~pl.col(_UNSURE_GIVEN) & three,
                ProblemType.MISSING_VALUE,
                P_UNSURE,
                pl.lit(None),
                pl.lit(
                    f"the row gives a distribution without {P_UNSURE}, which other rows of "
                    "its model give"
                ),
            )
        )
    total = pl.sum_horizontal(pl.col(name) for name in given)
    in_range = pl.all_horizontal(
        pl.col(name).is_between(0, 1) | (~three if name == P_UNSURE else pl.lit(False))
        for name in given
    )
    two, all_three = " + ".join(DISTRIBUTION[:2]), " + ".join(DISTRIBUTION)
    shares = pl.when(three).then(pl.lit(all_three)).otherwise(pl.lit(two))
    found.append(
        _Check(
            9,
            in_range & ((total - 1).abs() > SUM_TOLERANCE),
            PredictionProblemType.BAD_DISTRIBUTION,
            None,
            total,
            pl.format("{} sum to {}, not 1", shares, total),
        )
    )
    return found
