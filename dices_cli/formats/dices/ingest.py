"""DICES's ingester (`dices_cli.formats.ingest.FamilyIngest`): each file of one call becomes one
stored dataset, DIR/350 or DIR/990, checked by `dices_cli.formats.validate` and split into items,
raters and ratings by `dices_cli.formats.dices.tables`."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from dices_cli import __version__
from dices_cli.errors import InvalidInputError, UsageError
from dices_cli.families.schema import SCHEMA_VERSION
from dices_cli.formats.dices.checks import warning_lines
from dices_cli.formats.dices.csvparse import LINE, LINE_COUNT
from dices_cli.formats.dices.tables import new_values, split
from dices_cli.formats.ingest import (
    IngestRequest,
    IngestResult,
    Rejected,
    rejects_file,
    write_rejects,
)
from dices_cli.formats.validate import CheckedFile, check_file
from dices_cli.problems import WARNING_TYPES, Problem
from dices_cli.read.lines import verbatim_records
from dices_cli.store.datasets import StoredDataset


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
    """(line, bytes, problems) of every rejected record, in file order, streamed: the broken
    records (millions, maybe) are read from their packed starts, never listed."""
    parsed = checked.parsed
    if parsed is None or checked.rejected is None:
        return
    by_line: dict[int, list[Problem]] = {}
    for problem in checked.report.errors:
        by_line.setdefault(problem.line or 0, []).append(problem)
    spans = heapq.merge(  # each in file order
        zip(parsed.bad_starts, parsed.bad_line_counts, strict=True),
        parsed.frame.filter(checked.rejected).select(LINE, LINE_COUNT).iter_rows(),
    )
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
