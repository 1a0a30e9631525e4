"""Validation has one owner: a file in, a `Report` of every problem out.

`validate_file` opens one input, tells its family (`dices_cli.families.families_of_files`, as
ingest does) and calls the validator that family's declaration names. DICES's is here:
`check_file` reads one DICES file (structure, header, cells, consistency: the row
checks are in `dices_cli.formats.dices.checks`) and keeps what a writer needs;
`validate_dices` is its report alone. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import polars as pl

from dices_cli.errors import DicesError
from dices_cli.families import FAMILIES, families_of_files, named
from dices_cli.families.schema import DATASETS, Dataset, canonical_names, detect
from dices_cli.formats.dices.checks import incomplete_warnings, validate_rows
from dices_cli.formats.dices.csvparse import (
    EmptyFileError,
    HeaderError,
    ParsedFile,
    header_problems,
    parse,
    prefix,
    read_header,
)
from dices_cli.problems import Problem, ProblemType, Report, Severity, shortened
from dices_cli.read.file_formats import other_format
from dices_cli.read.source import DEFAULT_MAX_SIZE, Source, open_source

Progress = Callable[[str, float], None]  # (what is happening, fraction of the file done)


def no_progress(_stage: str, _fraction: float) -> None:
    return None


@dataclass
class CheckedFile:
    """A file read and validated, with everything needed to write it or its rejects."""

    source: Source
    report: Report
    dataset: Dataset | None = None
    header: list[str] = field(default_factory=list)
    parsed: ParsedFile | None = None
    rejected: pl.Series | None = None  # per row of parsed.frame

    @property
    def writable(self) -> bool:
        """True when the header is sound, so valid rows can be written despite bad ones."""
        return self.parsed is not None and not any(
            p.line is None or p.line == 1 for p in self.report.errors
        )

    def valid_cells(self) -> pl.DataFrame:
        assert self.parsed is not None and self.rejected is not None
        return self.parsed.frame.filter(~self.rejected)


def _header_problems(dataset: Dataset, header: list[str], names: list[str]) -> list[Problem]:
    problems = []
    seen: set[str] = set()
    for position, (cell, name) in enumerate(zip(header, names, strict=True), start=1):
        # An unnamed column (a spreadsheet's index, say) is named by its place.
        label = name if cell.strip() else f"#{position}"
        if name in seen:
            problems.append(
                Problem(
                    ProblemType.DUPLICATE_COLUMN,
                    1,
                    label,
                    cell,
                    f"column {name} appears twice"
                    if cell.strip()
                    else f"header cell {position} is empty, as an earlier one is",
                )
            )
        elif not cell.strip():
            message = f"header cell {position} is empty; every {dataset.title} column has a name"
            problems.append(Problem(ProblemType.UNEXPECTED_COLUMN, 1, label, cell, message))
        elif name not in dataset.names:
            problems.append(
                Problem(
                    ProblemType.UNEXPECTED_COLUMN,
                    1,
                    cell,
                    cell,
                    f"{shortened(cell)!r} is not a {dataset.title} column",
                )
            )
        seen.add(name)
    problems += [
        Problem(
            ProblemType.MISSING_COLUMN,
            1,
            name,
            None,
            f"the header has no {name} column, which {dataset.title} requires",
        )
        for name in dataset.names
        if name not in seen
    ]
    return problems


def _choose_dataset(choice: str, header: list[str]) -> Dataset | None:
    return DATASETS[choice] if choice in DATASETS else detect(header)


def first_bytes(source: Source) -> bytes:
    """The first MiB of the text (the room of a CSV header), which also tells a file of
    another family: read once for both. A file no family reads (Parquet, Excel, JSON that is
    not ProsocialDialog's) is refused here, in one line that says what it is."""
    try:
        first = prefix(source)
    except OSError as error:
        raise DicesError(f"cannot read {source.name}: {error.strerror}") from error
    kind = other_format(first)
    if kind is not None and not any(
        family.recognises is not None and family.recognises(first) for family in FAMILIES.values()
    ):
        compressed = " (gzip-compressed)" if source.compressed else ""
        raise DicesError(
            f"{source.name} is {kind}{compressed}, not a table dices reads: DICES CSV files "
            "(plain or gzip-compressed) and ProsocialDialog's JSON Lines files"
        )
    return first


def check_file(
    source: Source,
    choice: str = "auto",
    progress: Progress = no_progress,
    first: bytes | None = None,
) -> CheckedFile:
    """Read and validate one file (`first`: its `first_bytes`, if already read). Problems
    go into the report; nothing raises for bad data."""
    progress(f"reading {source.name}", 0.0)
    checked = CheckedFile(source, Report(source.name, None))
    report = checked.report
    try:
        header = read_header(first_bytes(source) if first is None else first)
    except EmptyFileError:
        report.problems.append(
            Problem(
                ProblemType.EMPTY_FILE, None, None, None, "the file is empty: no header, no rows"
            )
        )
        return checked
    except HeaderError as error:
        report.problems.append(error.problem)
        return checked
    if unreadable := header_problems(header):
        report.problems += unreadable
        return checked
    dataset = _choose_dataset(choice, header.cells)
    if dataset is None:
        report.problems.append(
            Problem(
                ProblemType.UNKNOWN_DATASET,
                1,
                None,
                None,
                "the header matches neither DICES-350 nor DICES-990; "
                "check that this is a DICES file or give its dataset (350 or 990)",
            )
        )
        return checked
    checked.dataset, checked.header = dataset, header.cells
    report.dataset = dataset.name
    names = canonical_names(dataset, header.cells)
    report.problems += _header_problems(dataset, header.cells, names)
    if any(p.type is ProblemType.DUPLICATE_COLUMN for p in report.problems):
        return checked
    progress(f"parsing {source.name}", 0.2)
    repeating = {c.name for c in dataset.columns if c.repeats}
    try:
        parsed = parse(source, header, names, repeating)
    except OSError as error:
        raise DicesError(f"cannot read {source.name}: {error.strerror or error}") from error
    source.check_unchanged()  # the cells must be the bytes the checksum describes
    checked.parsed = parsed
    progress(f"validating {source.name}", 0.5)
    report.add(parsed.bad_problems.problems)
    report.not_kept += parsed.bad_problems.not_kept
    rejected = validate_rows(dataset, parsed.frame, report)
    checked.rejected = rejected
    report.problems.sort(key=lambda p: (p.line or 0, p.severity is Severity.WARNING))
    report.rows_read = parsed.rows_read
    report.rows_rejected = len(parsed.bad_starts) + int(rejected.sum())
    if report.rows_read == 0:
        report.problems.append(
            Problem(ProblemType.NO_ROWS, None, None, None, "the file has a header but no rows")
        )
    if report.ok:  # a file with errors is refused, or its rejected rows listed one by one
        report.problems[:0] = incomplete_warnings(dataset, parsed.frame)  # line None: first
    return checked


@dataclass(frozen=True)
class ValidateRequest:
    """One file for `dices validate`, opened: what a family's validator is given."""

    source: Source
    first: bytes  # its first bytes (`first_bytes`), read once
    choice: str  # "auto", or the stored dataset the file was said to be
    progress: Progress


class FamilyValidate(Protocol):
    """What a family's declaration names in `validates`: every problem of the file of
    `request`, in a report; bad data never raises."""

    def __call__(self, request: ValidateRequest) -> Report: ...


def validate_dices(request: ValidateRequest) -> Report:
    """DICES's `FamilyValidate`."""
    return check_file(request.source, request.choice, request.progress, request.first).report


def validate_file(
    given: str | Path,
    choice: str = "auto",
    max_size: int = DEFAULT_MAX_SIZE,
    progress: Progress = no_progress,
) -> Report:
    """Every problem of one input (a path, or `-` for stdin), without writing anything."""
    with open_source(given, max_size) as source:
        first = first_bytes(source)
        (family,) = families_of_files([first], choice)
        validates: FamilyValidate = named(family.validates)
        return validates(ValidateRequest(source, first, choice, progress))
