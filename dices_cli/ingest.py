"""Check DICES CSV files and ingest them into the data directory as typed Parquet."""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from dices_cli import __version__, checksum
from dices_cli.csvparse import (
    LINE,
    LINE_COUNT,
    EmptyFileError,
    HeaderError,
    ParsedFile,
    header_problems,
    parse,
    prefix,
    read_header,
)
from dices_cli.errors import DicesError, InvalidInputError, UsageError
from dices_cli.lines import verbatim_records
from dices_cli.output import check_output, open_output
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    WARNING_TYPES,
    Problem,
    ProblemType,
    Report,
    Severity,
    shortened,
)
from dices_cli.schema import DATASETS, SCHEMA_VERSION, Dataset, canonical_names, detect
from dices_cli.source import DEFAULT_MAX_SIZE, STDIN, Source, open_source
from dices_cli.store import Store, StoredDataset
from dices_cli.tables import new_values, split
from dices_cli.validate import incomplete_warnings, validate_rows

Progress = Callable[[str, float], None]  # (what is happening, fraction of the file done)


def _no_progress(_stage: str, _fraction: float) -> None:
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


def check_file(
    source: Source, choice: str = "auto", progress: Progress = _no_progress
) -> CheckedFile:
    """Read and validate one file. Problems go into the report; nothing raises for bad data."""
    progress(f"reading {source.name}", 0.0)
    checked = CheckedFile(source, Report(source.name, None))
    report = checked.report
    try:
        header = read_header(prefix(source))
    except OSError as error:
        raise DicesError(f"cannot read {source.name}: {error.strerror}") from error
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
                "check that this is a DICES file or pass --dataset 350|990",
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


REJECT_FIELDS = ("file", "line", "problems", "record")


def write_rejects(checked_files: Sequence[CheckedFile], handle: BinaryIO) -> int:
    """Every rejected record, verbatim, with its problems, as CSV. Returns how many."""
    written = 0
    text = io.TextIOWrapper(handle, newline="", encoding="utf-8", errors="surrogateescape")
    writer = csv.writer(text)
    writer.writerow(REJECT_FIELDS)
    for checked in checked_files:
        for line, record, problems in _rejected_records(checked):
            described = (
                "; ".join(
                    f"{p.type} in {p.column}: {p.message}" if p.column else f"{p.type}: {p.message}"
                    for p in problems
                )
                or f"(more than {MAX_KEPT_PROBLEMS:,} problems in this file: not listed)"
            )
            writer.writerow(
                [
                    checked.source.name
                    if checked.source.path is None
                    else checked.source.path.name,
                    line,
                    described,
                    record.decode("utf-8", "surrogateescape"),
                ]
            )
            written += 1
    text.detach()  # flushed; `handle` stays open for its owner
    return written


def _rejected_records(checked: CheckedFile) -> Iterator[tuple[int, bytes, list[Problem]]]:
    """(line, bytes, problems) of every rejected record, in file order, streamed."""
    parsed = checked.parsed
    if parsed is None or checked.rejected is None:
        return
    by_line: dict[int, list[Problem]] = {}
    for problem in checked.report.errors:
        by_line.setdefault(problem.line or 0, []).append(problem)
    spans = list(zip(parsed.bad_starts, parsed.bad_line_counts, strict=True))
    spans += parsed.frame.filter(checked.rejected).select(LINE, LINE_COUNT).iter_rows()
    with checked.source.open_text() as text:
        for line, record in verbatim_records(text, spans):
            yield line, record, by_line.get(line, [])


@dataclass(frozen=True)
class IngestResult:
    report: Report
    stored: StoredDataset


def _manifest(checked: CheckedFile, tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    assert checked.dataset is not None and checked.parsed is not None
    report = checked.report
    digest = checked.source.digest()
    checked.source.check_unchanged()  # the digest describes the bytes that were parsed
    path = checked.source.path
    return {
        "dataset": checked.dataset.name,
        "title": checked.dataset.title,
        "source": {
            "name": checked.source.display_name,
            "path": None if path is None else str(path.resolve()),
            "size": digest.size,
            "sha256": digest.sha256,
        },
        "rows": {
            "read": report.rows_read,
            "written": tables["ratings"].height,
            "rejected": report.rows_rejected,
        },
        "counts": {
            "conversations": tables["items"].height,
            "raters": tables["raters"].height,
            "ratings": tables["ratings"].height,
        },
        "warnings": dict(sorted((t, n) for t, n in report.counts().items() if t in WARNING_TYPES)),
        # Rater demographics beyond the schema's values: the queries' ENUM types need them.
        "new_values": new_values(checked.dataset, tables),
        "header": checked.header,
        "filter": None,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def ingest(
    paths: Sequence[Path | str],
    store: Store,
    choice: str = "auto",
    force: bool = False,
    rejects: Path | None = None,
    progress: Progress = _no_progress,
    max_size: int = DEFAULT_MAX_SIZE,
) -> list[IngestResult]:
    """Validate every file, then write each dataset atomically; all or nothing per call.

    Without `rejects`, any error refuses the whole call and writes nothing. With it,
    valid rows are written and every rejected record goes to `rejects`. A path `-` is
    stdin; a compressed or piped input may hold at most `max_size` bytes of CSV text.
    """
    files = [Path(path) for path in paths if str(path) != STDIN]
    if rejects is not None:  # before reading anything: the files may be large
        check_output(rejects, force, [*files, store.root], option="--rejects")
    checksum.prefetch(files)  # for the manifests, on a spare core while the files are checked
    with contextlib.ExitStack() as opened:
        sources = [opened.enter_context(open_source(path, max_size)) for path in paths]
        checked_files = [check_file(source, choice, progress) for source in sources]
        return _write(checked_files, store, force, rejects, progress)


def _write(
    checked_files: list[CheckedFile],
    store: Store,
    force: bool,
    rejects: Path | None,
    progress: Progress,
) -> list[IngestResult]:
    _refuse_same_dataset_twice(checked_files)
    invalid = [c for c in checked_files if not c.report.ok]
    if invalid and (rejects is None or not all(c.writable for c in invalid)):
        first = invalid[0].report
        raise InvalidInputError(f"{first.path} is not valid DICES data; nothing was written", first)
    for checked in checked_files:
        assert checked.dataset is not None
        store.check_replaceable(checked.dataset.name, force)
        if checked.report.rows_valid == 0:
            raise InvalidInputError(
                f"{checked.source.name}: every row was rejected; nothing was written",
                checked.report,
            )
    # The rejects file appears only once the data is published: a refused or failed
    # ingest leaves none behind to block the rerun.
    rejects_file = (
        contextlib.nullcontext(None)
        if rejects is None
        else open_output(rejects, force, [*_given_files(checked_files), store.root], "--rejects")
    )
    results = []
    with store.locked(), rejects_file as rejected:
        if rejected is not None:
            write_rejects(checked_files, rejected)
        for checked in checked_files:
            assert checked.dataset is not None
            store.check_replaceable(checked.dataset.name, force)
            progress(f"writing DICES-{checked.dataset.name}", 0.8)
            tables = split(checked.dataset, checked.valid_cells())
            stored = store.publish(checked.dataset.name, tables, _manifest(checked, tables))
            results.append(IngestResult(checked.report, stored))
    progress("done", 1.0)
    return results


def _given_files(checked_files: Sequence[CheckedFile]) -> list[Path]:
    return [checked.source.path for checked in checked_files if checked.source.path is not None]


def _refuse_same_dataset_twice(checked_files: Sequence[CheckedFile]) -> None:
    seen: dict[str, str] = {}
    for checked in checked_files:
        if checked.dataset is None:
            continue
        name, given = checked.dataset.name, checked.source.name
        if name in seen:
            raise UsageError(
                f"{seen[name]} and {given} are both DICES-{name}; ingest one at a time"
            )
        seen[name] = given
