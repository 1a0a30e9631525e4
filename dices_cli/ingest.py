"""Ingest dataset files into the data directory as typed Parquet: only what validated.

`ingest` opens the files of one call, tells the family they belong to (`dices_cli.families`:
the first family whose recogniser knows a file, else the family that takes the rest) and
hands them to the ingester that family's declaration names. Adding a family adds a
declaration and its ingester, not a branch here. DICES's ingester is here, beside the
helpers every ingester shares (the rejects file, the result); ProsocialDialog's is
`dices_cli.prosocial.ingest`.
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import polars as pl

from dices_cli import __version__, checksum
from dices_cli.checks import warning_lines
from dices_cli.csvparse import (
    LINE,
    LINE_COUNT,
)
from dices_cli.errors import InvalidInputError, Option, UsageError
from dices_cli.families import FAMILIES, Family, family_of
from dices_cli.lines import verbatim_records
from dices_cli.output import Format, Output, check_output
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    WARNING_TYPES,
    Problem,
    Report,
)
from dices_cli.schema import SCHEMA_VERSION
from dices_cli.source import DEFAULT_MAX_SIZE, STDIN, Source, open_source
from dices_cli.store import Store, StoredDataset
from dices_cli.tables import new_values, split
from dices_cli.validate import CheckedFile, Progress, check_file, first_bytes, no_progress

REJECT_FIELDS = ("file", "line", "problems", "record")
# The option naming the file rejected records go to, for messages about that file.
REJECTS = Option("rejects")

# One rejected record: its first line, its bytes as read, and its problems.
Rejected = tuple[int, bytes, list[Problem]]


@dataclass(frozen=True)
class IngestRequest:
    """The files of one `dices ingest` call, all of one family, opened; and how to store them."""

    sources: list[Source]
    firsts: list[bytes]  # each source's first bytes (`first_bytes`), read once
    choice: str  # "auto", or the stored dataset the files were said to be
    store: Store
    force: bool  # replace what is stored, and an existing rejects file
    # Store the valid rows and write every rejected record here; None: any error refuses
    # the whole call.
    rejects: Path | None
    progress: Progress


@dataclass(frozen=True)
class IngestResult:
    """One stored dataset: the report of its files, where it is, and its summary."""

    report: Report
    stored: StoredDataset
    notes: tuple[str, ...]  # what to tell the user of it, one line each


class FamilyIngest(Protocol):
    """What a family's declaration names in `ingests`: check the files of `request` and
    store them, all or nothing; bad data raises `InvalidInputError` with its report."""

    def __call__(self, request: IngestRequest) -> list[IngestResult]: ...


def ingest(
    paths: Sequence[Path | str],
    store: Store,
    choice: str = "auto",
    force: bool = False,
    rejects: Path | None = None,
    progress: Progress = no_progress,
    max_size: int = DEFAULT_MAX_SIZE,
) -> list[IngestResult]:
    """Validate every file, then write each dataset atomically; all or nothing per call.

    Without `rejects`, any error refuses the whole call and writes nothing. With it,
    valid rows are written and every rejected record goes to `rejects`. A path `-` is
    stdin; a compressed or piped input may hold at most `max_size` bytes of text. The
    files of one call are of one family.
    """
    files = [Path(path) for path in paths if str(path) != STDIN]
    if rejects is not None:  # before reading anything: the files may be large
        check_output(rejects, force, [*files, store.root], option=REJECTS)
    # One pass per plain file, on a spare core: the manifest's checksum and the byte counts
    # that the parser checks Polars against.
    checksum.prefetch(files)
    with contextlib.ExitStack() as opened:
        sources = [opened.enter_context(open_source(path, max_size)) for path in paths]
        firsts = [first_bytes(source) for source in sources]
        family = family_of(choice) if choice != "auto" else _family_of_files(firsts)
        module, _, name = family.ingests.partition(":")
        ingests: FamilyIngest = getattr(importlib.import_module(module), name)
        return ingests(IngestRequest(sources, firsts, choice, store, force, rejects, progress))


def _family_of_files(firsts: Sequence[bytes]) -> Family:
    """The one family of files whose first bytes are `firsts`: a file is the first family's
    that recognises it, else the family that takes the rest."""
    trying = [f for f in FAMILIES.values() if f.recognises is not None]
    trying += [f for f in FAMILIES.values() if f.recognises is None]
    found = {
        next(f.name for f in trying if f.recognises is None or f.recognises(first))
        for first in firsts
    }
    families = [f for f in trying if f.name in found]
    if len(families) > 1:
        titles = [f.title for f in families]
        raise UsageError(
            f"{', '.join(titles[:-1])} and {titles[-1]} files are ingested separately; "
            "give the files of one family at a time"
        )
    return families[0]


def write_rejects(files: Iterable[tuple[Source, Iterable[Rejected]]], handle: BinaryIO) -> int:
    """Every rejected record of each file, verbatim, with its problems, as CSV. Returns how
    many."""
    written = 0
    text = io.TextIOWrapper(handle, newline="", encoding="utf-8", errors="surrogateescape")
    writer = csv.writer(text)
    writer.writerow(REJECT_FIELDS)
    for source, records in files:
        for line, record, problems in records:
            described = (
                "; ".join(
                    f"{p.type} in {p.column}: {p.message}" if p.column else f"{p.type}: {p.message}"
                    for p in problems
                )
                or f"(more than {MAX_KEPT_PROBLEMS:,} problems in this file: not listed)"
            )
            writer.writerow(
                [source.display_name, line, described, record.decode("utf-8", "surrogateescape")]
            )
            written += 1
    text.detach()  # flushed; `handle` stays open for its owner
    return written


def rejects_file(request: IngestRequest) -> contextlib.AbstractContextManager[BinaryIO | None]:
    """The rejects file, opened, if the request names one (else None). Open it only once the
    data is to be published: a refused or failed ingest leaves none behind to block the rerun."""
    if request.rejects is None:
        return contextlib.nullcontext(None)
    given = [source.path for source in request.sources if source.path is not None]
    output = Output.build(
        Format.CSV, request.rejects, request.force, [*given, request.store.root], REJECTS
    )
    return output.open()


# DICES: each file is one stored dataset (350 or 990), checked by `dices_cli.validate`.


def ingest_dices(request: IngestRequest) -> list[IngestResult]:
    """DICES's `FamilyIngest`: each file becomes DIR/350 or DIR/990."""
    checked_files = [
        check_file(source, request.choice, request.progress, first)
        for source, first in zip(request.sources, request.firsts, strict=True)
    ]
    _refuse_same_dataset_twice(checked_files)
    invalid = [c for c in checked_files if not c.report.ok]
    if invalid and (request.rejects is None or not all(c.writable for c in invalid)):
        first = invalid[0].report
        raise InvalidInputError(f"{first.path} is not valid DICES data; nothing was written", first)
    store = request.store
    for checked in checked_files:
        assert checked.dataset is not None
        store.check_replaceable(checked.dataset.name, request.force)
        if checked.report.rows_valid == 0:
            raise InvalidInputError(
                f"{checked.source.name}: every row was rejected; nothing was written",
                checked.report,
            )
    results = []
    with store.locked(), rejects_file(request) as rejected:
        if rejected is not None:
            write_rejects(((c.source, _rejected_records(c)) for c in checked_files), rejected)
        for checked in checked_files:
            assert checked.dataset is not None
            store.check_replaceable(checked.dataset.name, request.force)
            request.progress(f"writing DICES-{checked.dataset.name}", 0.8)
            tables = split(checked.dataset, checked.valid_cells())
            stored = store.publish(checked.dataset.name, tables, _manifest(checked, tables))
            notes = _dices_notes(checked, stored, store.link(stored.name), request.rejects)
            results.append(IngestResult(checked.report, stored, notes))
    request.progress("done", 1.0)
    return results


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


def _rejected_records(checked: CheckedFile) -> Iterator[Rejected]:
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


def _dices_notes(
    checked: CheckedFile, stored: StoredDataset, link: Path, rejects: Path | None
) -> tuple[str, ...]:
    assert checked.dataset is not None
    report = checked.report
    counts = stored.manifest["counts"]
    notes = [
        f"DICES-{stored.name}: {report.rows_read:,} rows read = "
        f"{counts['ratings']:,} written + {report.rows_rejected:,} rejected; "
        f"{counts['conversations']:,} conversations, {counts['raters']:,} raters -> {link}"
    ]
    if report.rows_rejected:
        notes.append(f"  rejected rows and their problems: {rejects}")
    notes += [f"  warning: {line}" for line in warning_lines(checked.dataset, report)]
    return tuple(notes)


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
