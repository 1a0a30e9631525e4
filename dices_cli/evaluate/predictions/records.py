"""The record reader: a CSV, TSV or JSON Lines predictions file a record at a time (a Parquet
one a batch at a time), the reader that says where and what each problem is."""

from __future__ import annotations

import csv
import json
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from dices_cli.evaluate.predictions.columns import (
    COLUMNS,
    DELIMITERS,
    ITEM_ID,
    ItemKind,
    has_columns,
    header_positions,
    no_rows,
    too_long_known_cell,
    usable,
)
from dices_cli.evaluate.predictions.parquet import parquet_rows
from dices_cli.evaluate.predictions.rows import Rows, Validating
from dices_cli.evaluate.predictions.validation import Validation
from dices_cli.formats.dices.csvparse import structure_problems
from dices_cli.problems import (
    SHOWN_VALUE_CHARS,
    JsonProblemType,
    PredictionProblemType,
    Problem,
    ProblemType,
    Report,
)
from dices_cli.read.csv_records import csv_records, record_too_long
from dices_cli.read.json_lines import JsonLineError, json_lines, parsed
from dices_cli.read.source import Source

if TYPE_CHECKING:
    import polars as pl


def read_records(
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

    def validate(columns: list[str]) -> Validation | None:
        """The validation of rows of these columns; None when they cannot be validated."""
        usable = has_columns(columns, None, Report(source.name, None))
        return Validation(columns, datasets, one_means, kind) if usable else None

    if layout == "parquet":
        rows, header_line = parquet_rows(source, max_size, report, validate), None
    elif layout == "jsonl":
        rows, header_line = json_rows(source, report, validate), None
    else:
        rows, header_line = (_delimited_rows(source, DELIMITERS[layout], report, validate), 1)
    if rows is None:
        return None
    validation = rows.finish()
    assert rows.columns is not None
    if not usable(rows.columns, header_line, source, datasets, kind, report):
        return None
    if validation is None:  # a JSON Lines column first named late: read again, knowing it
        assert layout == "jsonl"
        again = json_rows(source, Report(source.name, None), validate, rows.columns)
        assert again is not None
        validation = again.finish()
        assert validation is not None
    if rows.records == 0:
        no_rows(report)
    return validation.finish(report)


def _delimited_rows(
    source: Source, delimiter: str, report: Report, validate: Validating
) -> Rows | None:
    """CSV or TSV, a record at a time; None when the header already refuses the file."""
    rows: Rows | None = None
    positions: dict[str, int] = {}
    width = 0
    with source.open_text() as text:
        for first, _, cells in csv_records(text, delimiter):
            if cells is None:
                report.add([record_too_long(first, "a prediction is a few bytes")])
                if rows is not None:
                    rows.records += 1
                continue
            if rows is None:
                if isinstance(cells, csv.Error):
                    report.add(structure_problems(first, cells, []))
                    return None
                positions, width = header_positions(cells, first, report), len(cells)
                rows = Rows([name for name in COLUMNS if name in positions], validate)
                if ITEM_ID not in positions:
                    return rows  # the rest cannot be checked: no need to read it
                continue
            if not cells:
                continue
            rows.records += 1
            problems = structure_problems(first, cells, [""] * width)
            if problems:
                report.add(problems)
                report.rows_rejected += 1
                continue
            assert not isinstance(cells, csv.Error)
            known = {name: cells[position] or None for name, position in positions.items()}
            too_long = too_long_known_cell(first, known)
            if too_long is not None:
                report.add([too_long])
                report.rows_rejected += 1
                break
            rows.add(first, known, sum(map(len, cells)))
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


def json_rows(
    source: Source,
    report: Report,
    validate: Validating,
    columns: list[str] | None = None,
    after: tuple[int, int] = (0, 0),
) -> Rows | None:
    """JSON Lines: one object per line; blank lines are skipped. `columns`: the file's
    known columns, when a first reading found them (`Rows`). `after`: where to start
    (a byte where a line starts, and the lines before it)."""
    rows = Rows(columns, validate)
    start, before = after
    with source.open_text(start) as text:
        for number, line in json_lines(text, before):
            rows.records += 1
            record = json_problem(number, line)
            cells = record if isinstance(record, Problem) else known_cells(number, record)
            if isinstance(cells, Problem):
                report.add([cells])
                report.rows_rejected += 1
                continue
            too_long = too_long_known_cell(number, cells)
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


def known_cells(line: int, record: dict[str, object]) -> Problem | dict[str, str | None]:
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


def json_problem(line: int, text: str | None) -> Problem | dict[str, object]:
    """The object on a line, or the problem that it is not one (`dices_cli.read.json_lines`)."""
    if text is None:
        return record_too_long(line, "a prediction is a few bytes")
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
