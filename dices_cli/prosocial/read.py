"""Read and validate ProsocialDialog JSON Lines files, one line at a time.

`check_split` reads one file into a `CheckedSplit`: a `Report` of every problem (with its
line number) and the valid rows as columns, ready to be stored. Memory holds the valid
rows' values and the set of ids seen, never the file; a rejected line is kept by its
number only, and read again for a rejects file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from dices_cli.families.prosocial import (
    ANNOTATIONS,
    ANNOTATORS_PER_ITEM,
    ENUM_FIELDS,
    FIELDS,
    PROSOCIAL,
    SPLITS,
    recognises,
)
from dices_cli.problems import JsonProblemType, Problem, ProblemType, Report, Severity, shortened
from dices_cli.prosocial.labels import recomputed_label
from dices_cli.source import Source

Progress = Callable[[str, float], None]
RECOGNITION_BYTES = 1 << 20  # the first line must fit: a ProsocialDialog line is a few KB
# The limits of the stored integer types (dialogue_id BIGINT, response_id INTEGER).
ID_LIMITS = {"dialogue_id": 2**63, "response_id": 2**31}
FILE_NAMES = [file.name for file in PROSOCIAL.files]
_JSON_TYPE_NAMES = {str: "text", list: "a list", int: "a whole number", bool: "true or false"}


def is_prosocial(source: Source) -> bool:
    """True when the source's first line is a JSON object with ProsocialDialog's keys."""
    first = source.read(RECOGNITION_BYTES).split(b"\n", 1)[0]
    try:
        return recognises(json.loads(first))
    except ValueError:  # CSV, or not UTF-8, or a first line longer than we read
        return False


def split_of(name: str) -> str | None:
    """The split a file holds, from its name's stem (train.json -> train), if it names one."""
    stem = PurePath(name).name.split(".", 1)[0].lower()
    return stem if stem in SPLITS else None


@dataclass
class CheckedSplit:
    """One file read and validated: its report and its valid rows, column by column."""

    source: Source
    split: str | None
    report: Report
    columns: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in FIELDS})
    rejected_lines: list[int] = field(default_factory=list)
    label_mismatches: int = 0

    @property
    def writable(self) -> bool:
        """Valid rows can be stored (the rest go to a rejects file): the split is known."""
        return self.split is not None


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


def _lines(source: Source) -> Iterator[tuple[int, bytes]]:
    """(number, bytes without the line end) of every line that is not blank."""
    with source.open_text() as text:
        for number, raw in enumerate(text, start=1):
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield number, line


def check_split(source: Source, progress: Progress) -> CheckedSplit:
    """Read and validate one file; bad data becomes problems in the report, never raises."""
    progress(f"reading {source.name}", 0.0)
    split = split_of(source.name)
    checked = CheckedSplit(source, split, Report(source.name, "prosocial"))
    report = checked.report
    if split is None:
        report.problems.append(
            Problem(
                JsonProblemType.UNKNOWN_SPLIT,
                None,
                None,
                source.display_name,
                f"{source.display_name} does not name its split: a ProsocialDialog file is "
                f"named {', '.join(FILE_NAMES[:-1])} or {FILE_NAMES[-1]}",
            )
        )
    seen: set[tuple[int, int]] = set()
    for number, line in _lines(source):
        report.rows_read += 1
        problems = list(_parsed_problems(number, line, seen, checked))
        report.add(problems)
        if any(p.severity is Severity.ERROR for p in problems):
            checked.rejected_lines.append(number)
    report.rows_rejected = len(checked.rejected_lines)
    source.check_unchanged()  # the rows must be the bytes the checksum describes
    if report.rows_read == 0:
        report.problems.append(
            Problem(ProblemType.NO_ROWS, None, None, None, "the file holds no lines")
        )
    return checked


def _parsed_problems(
    number: int, line: bytes, seen: set[tuple[int, int]], checked: CheckedSplit
) -> Iterator[Problem]:
    """The problems of one line; a valid line's values are added to `checked.columns`."""
    try:
        row = json.loads(line)
    except UnicodeDecodeError:
        yield Problem(ProblemType.INVALID_UTF8, number, None, None, "the line is not valid UTF-8")
        return
    except ValueError as error:
        yield Problem(
            JsonProblemType.INVALID_JSON,
            number,
            None,
            shortened(line.decode("utf-8", "replace")),
            f"the line is not valid JSON ({error})",
        )
        return
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
    yield from problems
    if problems:
        return
    recomputed = recomputed_label(row["safety_annotations"])
    if recomputed != row["safety_label"]:
        checked.label_mismatches += 1
        yield Problem(
            JsonProblemType.LABEL_MISMATCH,
            number,
            "safety_label",
            row["safety_label"],
            f"the annotations {', '.join(row['safety_annotations'])} imply {recomputed}; "
            "the published label is kept",
            Severity.WARNING,
        )
    for name, values in checked.columns.items():
        values.append(row[name])


def rejected_records(checked: CheckedSplit) -> Iterator[tuple[int, bytes, list[Problem]]]:
    """(line, bytes, problems) of every rejected line, in file order, read again."""
    by_line: dict[int, list[Problem]] = {}
    for problem in checked.report.errors:
        by_line.setdefault(problem.line or 0, []).append(problem)
    rejected = set(checked.rejected_lines)
    for number, line in _lines(checked.source):
        if number in rejected:
            yield number, line, by_line.get(number, [])
