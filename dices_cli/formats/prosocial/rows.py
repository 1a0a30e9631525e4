"""The line-by-line reading of a ProsocialDialog file: every problem of every line, with
its number. The slow path (a few seconds per 100,000 lines): `dices_cli.formats.prosocial.read`
takes it only for a file the fast path found a problem in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from dices_cli.families.prosocial import (
    ANNOTATIONS,
    ANNOTATORS_PER_ITEM,
    ENUM_FIELDS,
    FIELDS,
    ID_LIMITS,
)
from dices_cli.problems import JsonProblemType, Problem, ProblemType, Report, shortened
from dices_cli.read.json_lines import JsonLineError, json_lines, parsed, too_long_message
from dices_cli.read.source import Source

_JSON_TYPE_NAMES = {str: "text", list: "a list", int: "a whole number", bool: "true or false"}


def lines(source: Source) -> Iterator[tuple[int, str | None]]:
    """(number, text without the line end) of every line that is not blank, decoded with
    surrogateescape; None for a line too long to hold (`dices_cli.read.json_lines`)."""
    with source.open_text() as text:
        for number, line in json_lines(text):
            yield number, None if line is None else line.rstrip("\r\n")


def read_lines(source: Source, report: Report) -> tuple[dict[str, list[Any]], list[int], list[int]]:
    """Check every line: its problems go to `report`. Returns the valid rows' values by
    field, their line numbers, and the rejected lines' numbers."""
    columns: dict[str, list[Any]] = {key: [] for key in FIELDS}
    valid: list[int] = []
    rejected: list[int] = []
    seen: set[tuple[int, int]] = set()
    for number, line in lines(source):
        report.rows_read += 1
        row, problems = _parsed(number, line, seen)
        report.add(problems)
        if problems:
            rejected.append(number)
        else:
            valid.append(number)
            for key, values in columns.items():
                values.append(row[key])
    return columns, valid, rejected


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _is(value: Any, allowed: tuple[type | None, ...]) -> bool:
    # JSON true/false are Python bools, which are ints too: a boolean is never an id.
    if isinstance(value, bool):
        return bool in allowed
    return any(value is None if t is None else isinstance(value, t) for t in allowed)


def _row_problems(line: int, row: Any) -> Iterator[Problem]:
    """Every problem of one parsed line."""
    if not isinstance(row, dict):
        yield Problem(
            JsonProblemType.WRONG_TYPE, line, None, None, f"the line is {_kind(row)}, not an object"
        )
        return
    for key in FIELDS:
        if key not in row:
            yield Problem(JsonProblemType.MISSING_FIELD, line, key, None, f"the line has no {key}")
    for key in row:
        if key not in FIELDS:
            yield Problem(
                JsonProblemType.UNEXPECTED_FIELD,
                line,
                shortened(key),
                None,
                f"{shortened(key)!r} is not a ProsocialDialog field",
            )
    for key, allowed in FIELDS.items():
        if key in row and not _is(row[key], allowed):
            wanted = " or ".join("null" if t is None else _JSON_TYPE_NAMES[t] for t in allowed)
            yield Problem(
                JsonProblemType.WRONG_TYPE,
                line,
                key,
                shortened(json.dumps(row[key])),
                f"{key} is {_kind(row[key])}, not {wanted}",
            )
        elif key in ENUM_FIELDS and key in row and row[key] not in ENUM_FIELDS[key]:
            yield Problem(
                ProblemType.NOT_IN_ENUM,
                line,
                key,
                shortened(row[key]),
                f"{shortened(row[key])!r} is not one of {', '.join(ENUM_FIELDS[key])}",
            )
        elif key in ID_LIMITS and key in row and not 0 <= row[key] < ID_LIMITS[key]:
            yield Problem(
                ProblemType.OUT_OF_RANGE,
                line,
                key,
                str(row[key]),
                f"{key} {row[key]} is outside 0 to {ID_LIMITS[key] - 1:,}",
            )
    yield from _list_problems(line, row)


def _list_problems(line: int, row: dict[str, Any]) -> Iterator[Problem]:
    for key in ("rots", "safety_annotations", "safety_annotation_reasons"):
        values = row.get(key)
        if not isinstance(values, list):
            continue
        if key != "rots" and len(values) != ANNOTATORS_PER_ITEM:
            yield Problem(
                JsonProblemType.WRONG_COUNT,
                line,
                key,
                str(len(values)),
                f"{key} holds {len(values)} values, not {ANNOTATORS_PER_ITEM}",
            )
        for position, value in enumerate(values):
            if not isinstance(value, str):
                yield Problem(
                    JsonProblemType.WRONG_TYPE,
                    line,
                    key,
                    shortened(json.dumps(value)),
                    f"{key}[{position}] is {_kind(value)}, not text",
                )
            elif key == "safety_annotations" and value not in ANNOTATIONS:
                yield Problem(
                    ProblemType.NOT_IN_ENUM,
                    line,
                    key,
                    shortened(value),
                    f"{shortened(value)!r} is not one of {', '.join(ANNOTATIONS)}",
                )


def _parsed(number: int, line: str | None, seen: set[tuple[int, int]]) -> tuple[Any, list[Problem]]:
    """One line's object and its problems (none when it is valid)."""
    if line is None:
        message = too_long_message("a ProsocialDialog line")
        return None, [Problem(ProblemType.RECORD_TOO_LONG, number, None, None, message)]
    try:
        row: Any = parsed(line)
    except JsonLineError as error:
        value = error.value
        if error.type is JsonProblemType.INVALID_JSON:
            value = shortened(line.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
        return None, [Problem(error.type, number, None, value, error.message)]
    problems = list(_row_problems(number, row))
    if not problems:
        key = (row["dialogue_id"], row["response_id"])
        if key in seen:
            problems.append(
                Problem(
                    ProblemType.DUPLICATE_ID,
                    number,
                    "dialogue_id, response_id",
                    f"{key[0]}, {key[1]}",
                    f"dialogue {key[0]} response {key[1]} appears on an earlier line too",
                )
            )
        seen.add(key)
    return row, problems
