"""One file of a declared dataset read into a frame of text cells, one row per rating (or
per rater, or per item, by the file's role), each row with where it came from.

CSV, TSV and Parquet are read by Polars; JSON and JSON Lines (small, nested) in Python. A
`lists` layout (one record per item, its raters and labels as aligned lists: LeWiDi) is
spread to one row per rating here. Every cell is text: `build` types them by the
declaration. Problems found here (a missing column, lists of different lengths, a CSV
record Polars cannot split) are records with the line they start on.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from dices_cli.errors import DicesError
from dices_cli.families.declaration import FileSpec
from dices_cli.formats.declared.records_whole import PEEK_BYTES, CellCounts, header_line, whole
from dices_cli.problems import JsonProblemType, Problem, ProblemType, Report
from dices_cli.read.source import Source

ROW = "_row"  # each row's place: the record's index in the file, from 0
ITEM = "item_id"
RATER = "rater_id"
# csv's own limit on one field is 128 KiB; a long text cell is data, not an attack.
csv.field_size_limit(1 << 26)


@dataclass
class ReadFile:
    """A file read: its rows (text cells by stored name, and ROW), and how to say where a
    row is (`place`: a line number, or None for a JSON object's record and its key)."""

    source: Source
    spec: FileSpec
    frame: pl.DataFrame
    report: Report
    keys: list[str] = field(default_factory=list)  # a JSON file's record keys, by ROW
    _lines: Callable[[], list[int]] | None = None
    _known: list[int] | None = None

    def line(self, row: int) -> int | None:
        """The line record `row` starts on (1: the header), if the format has lines."""
        if self._lines is None:
            return None
        if self._known is None:
            self._known = self._lines()
        return self._known[row] if row < len(self._known) else None

    def where(self, row: int) -> str:
        """The record `row` in a message: "" when it has a line, else its key or index."""
        if self._lines is not None:
            return ""
        return f"record {self.keys[row]!r}: " if row < len(self.keys) else f"record {row + 1}: "


def read_file(source: Source, spec: FileSpec, fmt: str, report: Report) -> ReadFile:
    """Read `source` as `spec` declares it; problems go to `report`."""
    if fmt in ("json", "jsonl"):
        return _read_json(source, spec, fmt, report)
    if fmt == "parquet":
        try:
            frame = pl.read_parquet(source.text_path)
        except (OSError, pl.exceptions.PolarsError) as error:
            raise DicesError(f"{source.name} is not a readable Parquet file: {error}") from error
        frame = frame.select(pl.all().cast(pl.String))
        one = ReadFile(source, spec, frame, report, _lines=lambda: [])
        one._lines = None
        one.keys = [str(i + 1) for i in range(frame.height)]
        return _shaped(one)
    return _read_delimited(source, spec, "\t" if fmt == "tsv" else ",", report)


def _read_delimited(source: Source, spec: FileSpec, delimiter: str, report: Report) -> ReadFile:
    try:
        frame = pl.read_csv(
            source.text_path,
            separator=delimiter,
            infer_schema=False,
            raise_if_empty=False,
            extra_columns="raise",
            missing_columns="raise",
        )
        lines = lambda: _record_lines(source, delimiter)  # noqa: E731
        if not _whole(source, frame):  # a record padded, a blank line: csv's reader says which
            frame, lines = _read_by_csv(source, delimiter, report)
    except pl.exceptions.PolarsError:
        frame, lines = _read_by_csv(source, delimiter, report)
    if frame.columns and frame.columns[0].startswith("\ufeff"):
        frame = frame.rename({frame.columns[0]: frame.columns[0].removeprefix("\ufeff")})
    return _shaped(ReadFile(source, spec, frame, report, _lines=lines))


def _whole(source: Source, frame: pl.DataFrame) -> bool:
    """Whether Polars read every record of `source` whole: it pads a short record with
    nulls and reads a blank line as a record of nulls, which the file's bytes tell
    (`records_whole`)."""
    facts = source.facts()
    cells = CellCounts(quoted=facts.quotes > 0)
    cells.add(frame)
    return whole(cells, facts, header_line(source.read(PEEK_BYTES)), len(frame.columns))


def _record_lines(source: Source, delimiter: str) -> list[int]:
    """The line each record starts on (record 0: the first after the header), by a pass of
    Python's csv reader: only when a problem is to be placed."""
    with source.open_text() as handle:
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text, delimiter=delimiter)
        starts = []
        last = 0
        for _ in reader:
            starts.append(last + 1)
            last = reader.line_num
        return starts[1:]


def _read_by_csv(
    source: Source, delimiter: str, report: Report
) -> tuple[pl.DataFrame, Callable[[], list[int]]]:
    """The records Python's csv reader can split, each record with the header's number of
    fields; the others are problems. For what Polars refused (ragged rows, bad quoting)."""
    with source.open_text() as handle:
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return pl.DataFrame(), lambda: []
        rows: list[list[str | None]] = []
        starts: list[int] = []
        last = reader.line_num
        try:
            for record in reader:
                start, last = last + 1, reader.line_num
                if len(record) != len(header):
                    report.add(
                        [
                            Problem(
                                ProblemType.WRONG_FIELD_COUNT,
                                start,
                                None,
                                None,
                                f"{len(record)} field{'' if len(record) == 1 else 's'}, "
                                f"the header has {len(header)}",
                            )
                        ]
                    )
                    report.rows_rejected += 1
                    report.rows_read += 1
                    continue
                rows.append([cell if cell != "" else None for cell in record])
                starts.append(start)
        except csv.Error as error:
            report.add([Problem(ProblemType.BAD_QUOTING, last + 1, None, None, str(error))])
    frame = pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row")
    return frame, lambda: starts


def _read_json(source: Source, spec: FileSpec, fmt: str, report: Report) -> ReadFile:
    keys: list[str] = []
    lines: list[int] = []
    records: list[Any] = []
    with source.open_text() as handle:
        data = handle.read()
    if fmt == "jsonl":
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
                lines.append(number)
            except (ValueError, RecursionError) as error:
                report.add(
                    [
                        Problem(
                            JsonProblemType.INVALID_JSON,
                            number,
                            None,
                            None,
                            f"not a JSON object ({error})",
                        )
                    ]
                )
                report.rows_read += 1
                report.rows_rejected += 1
    else:
        try:
            parsed = _loads_lenient(data)
        except (ValueError, RecursionError) as error:
            raise DicesError(f"{source.name} is not valid JSON: {error}") from None
        if isinstance(parsed, dict) and spec.json_records != "array":
            keys = list(map(str, parsed))
            records = [
                {**v, spec.json_key: k} if isinstance(v, dict) else v for k, v in parsed.items()
            ]
        elif isinstance(parsed, list) and spec.json_records != "object":
            records = parsed
            keys = [str(i + 1) for i in range(len(parsed))]
        else:
            want = "an object of records" if spec.json_records == "object" else "an array"
            raise DicesError(f"{source.name} is not {want}, as its declaration says")
    columns = _json_columns(spec)
    rows: dict[str, list[Any]] = {name: [] for name in columns}
    rows[ROW] = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            place = lines[index] if lines else None
            report.add(
                [
                    Problem(
                        JsonProblemType.WRONG_TYPE,
                        place,
                        None,
                        None,
                        f"{_key(keys, index)}is not a JSON object",
                    )
                ]
            )
            continue
        for name, path in columns.items():
            rows[name].append(_cell(_at(record, path)))
        rows[ROW].append(index)
    nested = set(spec.rater_attribute_maps.values())
    if spec.layout == "lists":
        nested |= set(_aligned(spec))
    schema = {n: pl.Object if n in nested else pl.String for n in columns}
    for name in columns:
        if name not in nested:
            rows[name] = [
                v if isinstance(v, str) or v is None else json.dumps(v) for v in rows[name]
            ]
    frame = pl.DataFrame(rows, schema={**schema, ROW: pl.Int64}, strict=False)
    one = ReadFile(source, spec, frame, report, keys=keys)
    if fmt == "jsonl":
        one._lines = lambda: lines
    return _shaped(one, from_json=True)


# A string, or a comma before a closing bracket (outside strings).
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[}\]])')


def _loads_lenient(data: bytes) -> Any:
    """JSON text parsed; a comma before a closing bracket, which JSON forbids and some
    published files have (LeWiDi 2025's annotator files), is read as absent."""
    try:
        return json.loads(data)
    except ValueError as error:
        text = data.decode("utf-8-sig", errors="replace")
        relaxed = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)
        if relaxed == text:
            raise
        try:
            return json.loads(relaxed)
        except ValueError:
            raise error from None


def _key(keys: list[str], index: int) -> str:
    return f"record {keys[index]!r}: " if index < len(keys) else ""


def _json_columns(spec: FileSpec) -> dict[str, str]:
    """Every field the file's roles read, by the name it is read as (its path)."""
    paths = [*spec.item, *([spec.rater] if spec.rater else [])]
    for role in ("labels", "text", "item_attributes", "rater_attributes", "answers"):
        paths += getattr(spec, role).values()
    paths += spec.rater_attribute_maps.values()
    return {path: path for path in dict.fromkeys(p for p in paths if p not in spec.from_name)}


def _at(record: dict[str, Any], path: str) -> Any:
    value: Any = record
    for part in path.split("/"):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


_ABSENT = object()


def _cell(value: Any) -> Any:
    """A JSON value as a text cell (a list stays a list of text: a lists layout's cell; an
    object stays an object: a map of rater attributes)."""
    if value is _ABSENT or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_cell(v) for v in value]
    if isinstance(value, dict):
        return value
    return str(value)


def _shaped(one: ReadFile, from_json: bool = False) -> ReadFile:
    """The frame with ROW, the file-name columns, each role's column under its stored
    name, and (layout lists) one row per rating."""
    spec, frame = one.spec, one.frame
    if ROW not in frame.columns:
        frame = frame.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))
    one.report.rows_read += frame.height
    for column, pattern in spec.from_name.items():
        found = re.search(pattern, one.source.display_name)
        frame = frame.with_columns(
            pl.lit(found.group(1) if found else None, pl.String).alias(column)
        )
    missing = [c for c in spec.required() if c not in frame.columns and not from_json]
    if from_json:
        missing = [c for c in _json_columns(spec) if c in frame.columns and _all_null(frame[c])]
    if missing:
        one.report.add(
            Problem(
                ProblemType.MISSING_COLUMN,
                1 if not from_json else None,
                c,
                None,
                f"the file has no {c} {'field' if from_json else 'column'}, which its "
                "declaration reads",
            )
            for c in missing
        )
        one.frame = frame.clear()
        return one
    if spec.layout == "lists":
        frame = _spread(one, frame)
    one.frame = frame
    return one


def _all_null(series: pl.Series) -> bool:
    return series.len() > 0 and all(v is None for v in series.to_list())


def _spread(one: ReadFile, frame: pl.DataFrame) -> pl.DataFrame:
    """One row per rating from records of aligned lists: the rater column, each label and
    answer, and each rater attribute hold one value per rater."""
    spec = one.spec
    aligned = _aligned(spec)
    maps = spec.rater_attribute_maps
    per_record = [c for c in frame.columns if c not in aligned and c not in maps.values()]
    rows: dict[str, list[Any]] = {c: [] for c in [*per_record, *aligned, *maps.values()]}
    for record in frame.iter_rows(named=True):
        lists = {c: _as_list(record[c], spec.separator) for c in aligned}
        lengths = {c: len(v) for c, v in lists.items() if isinstance(v, list)}
        count = lengths.get(spec.rater or "", 0)
        if uneven := [c for c, n in lengths.items() if n != count]:
            row = record[ROW]
            one.report.add(
                [
                    Problem(
                        JsonProblemType.WRONG_COUNT,
                        one.line(row),
                        uneven[0],
                        None,
                        f"{one.where(row)}{uneven[0]} has {lengths[uneven[0]]} "
                        f"values for {count} raters",
                    )
                ]
            )
            one.report.rows_rejected += 1
            continue
        for position in range(count):
            for c in per_record:
                rows[c].append(record[c])
            rater = lists[spec.rater or ""][position]  # type: ignore[index]
            for c in aligned:
                values = lists[c]
                if isinstance(values, dict):
                    value = values.get(str(rater))
                    rows[c].append(None if value is None else str(value).strip())
                else:
                    rows[c].append(None if values is None else values[position])
            for path in maps.values():
                by_rater = record[path]
                value = by_rater.get(rater) if isinstance(by_rater, dict) else None
                rows[path].append(None if value is None else str(value))
    schema: dict[str, Any] = {c: pl.String for c in rows}
    schema[ROW] = pl.Int64
    return pl.DataFrame(rows, schema=schema, strict=False)


def _aligned(spec: FileSpec) -> list[str]:
    """The columns of a lists layout that hold one value per rater."""
    aligned = [spec.rater or "", *spec.labels.values(), *spec.answers.values()]
    return [*aligned, *spec.rater_attributes.values()]


def _as_list(value: Any, separator: str) -> list[str | None] | dict[str, Any] | None:
    """A cell of a lists layout as its values; an object keyed by rater id (LeWiDi 2025's
    annotations) stays one, and each rater's value is looked up in it."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, list):
        return [None if v is None else str(v).strip() for v in value]
    return [part.strip() for part in str(value).split(separator)]
