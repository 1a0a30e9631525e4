"""Predictions of a declared dataset's label, read from a user's file and validated.

A file (CSV, TSV, JSON Lines or Parquet; gzip-compressed too; `-` for stdin) has an
`item_id` column, an optional `model` column (several models side by side), an optional
`rater_id` column (per-annotator predictions: what that rater would answer) and at least
one kind of prediction of the label:

    label        a value of the label's scale (3 or 3.0 for a numeric scale's 3)
    p_VALUE      one column per value of the scale (p_1 ... p_5; p_offensive ...): a
                 predicted distribution of the raters' answers, summing to 1

Every problem becomes a record (type, line, column, value, message), and any problem refuses
the whole file (`InvalidPredictionsError`), as DICES's predictions files are refused.
Records are read one at a time by the strict readers of `dices_cli.read`, which refuse a
runaway record; so memory is bounded by the valid rows. A Parquet file's cells are read as
the text a CSV would hold (polars' cast to text: 3, 3.0, 0.25), numbered from line 2 as a
CSV's rows are, a batch at a time, a cell too long refused before it is copied.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError
from dices_cli.evaluate.predictions import (
    MAX_CELL_BYTES,
    SUM_TOLERANCE,
    InvalidPredictionsError,
)
from dices_cli.evaluate.predictions.rows import BATCH_ROWS
from dices_cli.problems import PredictionProblemType, Problem, ProblemType, Report
from dices_cli.read.csv_records import csv_records, record_too_long
from dices_cli.read.file_formats import file_format
from dices_cli.read.json_lines import JsonLineError, json_lines, parsed, too_long_message
from dices_cli.read.source import DEFAULT_MAX_SIZE, Source, open_source

if TYPE_CHECKING:
    import polars as pl

MODEL, ITEM, RATER, LABEL = "model", "item_id", "rater_id", "label"
DEFAULT_MODEL = "model"
DELIMITERS = {"csv": ",", "tsv": "\t"}

# A record: its line, and its cells by lower-case column name (None: empty), or its problem.
Cells = dict[str, str | None]


@dataclass(frozen=True)
class ScaleCheck:
    """What a row is checked against: the dataset's items and raters, and the label's
    values as stored (text), with the number each stands for on a numeric scale."""

    items: frozenset[str]
    raters: frozenset[str]
    values: tuple[str, ...]
    numbers: tuple[float, ...] | None  # None: named values

    def value(self, text: str) -> str | None:
        """The scale's value that `text` gives, or None."""
        if text in self.values:
            return text
        if self.numbers is None:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
        return next(
            (v for v, n in zip(self.values, self.numbers, strict=True) if n == number), None
        )

    @property
    def shares(self) -> tuple[str, ...]:
        """The distribution's columns, in the scale's order."""
        return tuple(f"p_{value}".lower() for value in self.values)


@dataclass(frozen=True)
class ScalePredictions:
    """A validated file: `frame` has model, item_id, rater_id (null: the item's crowd),
    label (a value as stored, or null) and, when given, one Float64 column per `shares`."""

    frame: pl.DataFrame
    source: str
    shares: tuple[str, ...]  # the distribution's columns; empty when none is given


def read_scale_predictions(
    given: str, check: ScaleCheck, max_size: int = DEFAULT_MAX_SIZE
) -> ScalePredictions:
    """Read and validate `given` (a path, or "-" for stdin) against `check`."""
    import polars as pl

    with open_source(given, max_size) as source:
        layout = file_format(given, source)
        report = Report(source.name, None)
        rows: list[tuple[str, str, str | None, str | None, *tuple[float | None, ...]]] = []
        columns: set[str] = set()
        seen: dict[tuple[str, str, str | None], int] = {}
        for line, cells in _records(source, layout, report, max_size):
            report.rows_read += 1
            columns |= cells.keys()
            row = _row(line, cells, check, report)
            if row is None:
                report.rows_rejected += 1
                continue
            key = (row[0], row[1], row[2])
            if key in seen:
                message = (
                    f"a second prediction of this item by this model (first on line {seen[key]})"
                )
                report.add([Problem(PredictionProblemType.DUPLICATE_PREDICTION, line, ITEM,
                                    row[1], message)])  # fmt: skip
                continue
            seen[key] = line
            rows.append(row)
        source.check_unchanged()
        _check_columns(columns, check, report, bool(report.rows_read))
        if not report.ok:
            report.problems.sort(key=lambda problem: problem.line or 0)
            raise InvalidPredictionsError(
                f"{source.name} is not a valid predictions file; nothing was evaluated", report
            )
        shares = check.shares if set(check.shares) & columns else ()
        names = [MODEL, ITEM, RATER, LABEL, *check.shares]
        frame = pl.DataFrame(rows, schema=[*[(n, pl.String) for n in names[:4]],
                                           *[(n, pl.Float64) for n in check.shares]],
                             orient="row")  # fmt: skip
        return ScalePredictions(frame.select(names[: 4 + len(shares)]), source.display_name, shares)


def _records(
    source: Source, layout: str, report: Report, max_size: int
) -> Iterator[tuple[int, Cells]]:
    """Each record's line and cells; the problems of the rest go to `report`."""
    if layout == "jsonl":
        yield from _json_records(source, report)
        return
    if layout == "parquet":
        yield from _parquet_records(source, report, max_size)
        return
    header: list[str] | None = None
    with source.open_text() as text:
        for first, _, cells in csv_records(text, DELIMITERS[layout]):
            if cells is None:
                report.add([record_too_long(first, "a prediction is a few bytes")])
            elif isinstance(cells, csv.Error):
                report.add([Problem(ProblemType.BAD_QUOTING, first, None, None, str(cells))])
                if header is None:
                    return
            elif header is None:
                header = [name.strip().lower() for name in cells]
            elif len(cells) != len(header):
                message = f"the row has {len(cells)} fields and the header {len(header)}"
                report.add([Problem(ProblemType.WRONG_FIELD_COUNT, first, None, None, message)])
            else:
                yield first, {n: (c.strip() or None) for n, c in zip(header, cells, strict=True)}


def _parquet_records(source: Source, report: Report, max_size: int) -> Iterator[tuple[int, Cells]]:
    """Each row of a Parquet file, numbered from 2, its cells as text; a cell longer than
    MAX_CELL_BYTES ends the reading with its problem."""
    import polars as pl

    from dices_cli.evaluate.predictions.columns import too_long_cell
    from dices_cli.read.file_formats import parquet_file

    parquet = parquet_file(source, max_size)
    names = parquet.schema_arrow.names
    header = [name.strip().lower() for name in names]
    line = 2
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
        too_long = too_long_cell(batch, line, names)
        if too_long is not None:
            report.add([too_long])
            return
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        try:
            text = frame.select(pl.all().cast(pl.String))
        except pl.exceptions.PolarsError as error:
            raise DicesError(
                f"{source.name}: a column holds values that are neither text nor numbers ({error})"
            ) from error
        for row in text.iter_rows():
            yield (
                line,
                {n: (c.strip() or None) if c else None for n, c in zip(header, row, strict=True)},
            )
            line += 1


def _json_records(source: Source, report: Report) -> Iterator[tuple[int, Cells]]:
    with source.open_text() as text:
        for number, line in json_lines(text):
            if line is None:
                report.add([Problem(ProblemType.RECORD_TOO_LONG, number, None, None,
                                    too_long_message("a prediction"))])  # fmt: skip
                continue
            try:
                record = parsed(line)
            except JsonLineError as error:
                report.add([Problem(error.type, number, None, error.value, error.message)])
                continue
            if not isinstance(record, dict):
                message = "each line must be a JSON object of a prediction's fields"
                report.add([Problem(PredictionProblemType.INVALID_JSON, number, None, None,
                                    message)])  # fmt: skip
                continue
            yield number, {str(k).lower(): _json_cell(v) for k, v in record.items()}


def _json_cell(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return (
        value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
    )


def _row(
    line: int, cells: Cells, check: ScaleCheck, report: Report
) -> tuple[str, str, str | None, str | None, *tuple[float | None, ...]] | None:
    """The typed row, or None with its problems in `report`."""
    problems: list[Problem] = []
    for name, cell in cells.items():
        if cell is not None and len(cell.encode()) > MAX_CELL_BYTES:
            message = (
                f"the {name} cell is longer than {MAX_CELL_BYTES} bytes, and a prediction is a few"
            )
            report.add(
                [Problem(PredictionProblemType.CELL_TOO_LONG, line, name, cell[:40], message)]
            )
            return None
    item = cells.get(ITEM)
    if item is None:
        problems.append(Problem(ProblemType.MISSING_VALUE, line, ITEM, None, "no item_id"))
    elif item not in check.items:
        problems.append(Problem(PredictionProblemType.UNKNOWN_ITEM, line, ITEM, item,
                                "not an item of the dataset"))  # fmt: skip
    rater = cells.get(RATER)
    if rater is not None and rater not in check.raters:
        problems.append(Problem(PredictionProblemType.UNKNOWN_ITEM, line, RATER, rater,
                                "not a rater of the dataset"))  # fmt: skip
    label = cells.get(LABEL)
    value = None if label is None else check.value(label)
    if label is not None and value is None:
        message = f"not a value of the label's scale ({', '.join(check.values)})"
        problems.append(Problem(ProblemType.NOT_IN_ENUM, line, LABEL, label, message))
    shares = _shares(line, cells, check, problems)
    if label is None and shares is None and not problems:
        message = f"the row predicts nothing: give a label or {', '.join(check.shares)}"
        problems.append(Problem(ProblemType.MISSING_VALUE, line, LABEL, None, message))
    if rater is not None and shares is not None:
        message = "a rater's prediction is one value: give its label, not a distribution"
        problems.append(
            Problem(PredictionProblemType.BAD_DISTRIBUTION, line, RATER, rater, message)
        )
    if problems:
        report.add(problems)
        return None
    assert item is not None
    model = cells.get(MODEL) or DEFAULT_MODEL
    padded: list[float | None] = list(shares) if shares else [None] * len(check.values)
    return (model, item, rater, value, *padded)


def _shares(
    line: int, cells: Cells, check: ScaleCheck, problems: list[Problem]
) -> list[float] | None:
    """The row's distribution, or None when it gives none (problems added)."""
    given = [cells.get(name) for name in check.shares]
    if all(cell is None for cell in given):
        return None
    shares = []
    for name, cell in zip(check.shares, given, strict=True):
        try:
            share = float(cell) if cell is not None else float("nan")
        except ValueError:
            share = float("nan")
        if not 0.0 <= share <= 1.0:  # False for NaN
            message = "a share must be a number from 0 to 1 (every p_ column of the row)"
            problems.append(Problem(PredictionProblemType.NOT_A_NUMBER, line, name, cell, message))
            return None
        shares.append(share)
    if abs(sum(shares) - 1.0) > SUM_TOLERANCE:
        message = f"the shares sum to {sum(shares):.6g}, not 1"
        problems.append(Problem(PredictionProblemType.BAD_DISTRIBUTION, line, None, None, message))
        return None
    return shares


def _check_columns(columns: set[str], check: ScaleCheck, report: Report, any_rows: bool) -> None:
    def missing(column: str | None, message: str) -> None:
        report.add([Problem(ProblemType.MISSING_COLUMN, None, column, None, message)])

    if not any_rows:
        report.add(
            [Problem(ProblemType.NO_ROWS, None, None, None, "the file holds no predictions")]
        )
        return
    if ITEM not in columns:
        missing(ITEM, "the file has no item_id column, which says which item")
    partial = [name for name in check.shares if name in columns]
    if partial and len(partial) != len(check.shares):
        lacking = [name for name in check.shares if name not in columns]
        missing(lacking[0], f"a distribution needs every p_ column: {', '.join(check.shares)}")
