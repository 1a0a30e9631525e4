"""Ingest DICES CSV files into the data directory as typed Parquet: only what validated."""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from dices_cli import __version__, checksum
from dices_cli.csvparse import (
    LINE,
    LINE_COUNT,
)
from dices_cli.errors import InvalidInputError, Option, UsageError
from dices_cli.lines import verbatim_records
from dices_cli.output import Format, Output, check_output
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    WARNING_TYPES,
    Problem,
    Report,
)
from dices_cli.prosocial import tables as prosocial_tables
from dices_cli.prosocial.read import CheckedSplit, check_split, is_prosocial, rejected_records
from dices_cli.schema import SCHEMA_VERSION
from dices_cli.source import DEFAULT_MAX_SIZE, STDIN, open_source
from dices_cli.store import Store, StoredDataset
from dices_cli.tables import new_values, split
from dices_cli.validate import CheckedFile, Progress, check_file, first_bytes, no_progress

REJECT_FIELDS = ("file", "line", "problems", "record")
# The option naming the file rejected records go to, for messages about that file.
REJECTS = Option("rejects")


def write_rejects(checked_files: Sequence[CheckedFile | CheckedSplit], handle: BinaryIO) -> int:
    """Every rejected record, verbatim, with its problems, as CSV. Returns how many."""
    written = 0
    text = io.TextIOWrapper(handle, newline="", encoding="utf-8", errors="surrogateescape")
    writer = csv.writer(text)
    writer.writerow(REJECT_FIELDS)
    for checked in checked_files:
        records = (
            rejected_records(checked)
            if isinstance(checked, CheckedSplit)
            else _rejected_records(checked)
        )
        for line, record, problems in records:
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
    # What to tell the user, for a family whose summary is not DICES's (DICES: none).
    notes: tuple[str, ...] = ()


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
    progress: Progress = no_progress,
    max_size: int = DEFAULT_MAX_SIZE,
) -> list[IngestResult]:
    """Validate every file, then write each dataset atomically; all or nothing per call.

    Without `rejects`, any error refuses the whole call and writes nothing. With it,
    valid rows are written and every rejected record goes to `rejects`. A path `-` is
    stdin; a compressed or piped input may hold at most `max_size` bytes of CSV text.
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
        prosocial = [choice == "auto" and is_prosocial(first) for first in firsts]
        if any(prosocial):
            if not all(prosocial):
                raise UsageError(
                    "ProsocialDialog and DICES files are ingested separately; "
                    "give the files of one family at a time"
                )
            splits = [check_split(source, progress) for source in sources]
            return [_write_prosocial(splits, store, force, rejects, progress)]
        checked_files = [
            check_file(source, choice, progress, first)
            for source, first in zip(sources, firsts, strict=True)
        ]
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
        else Output.build(
            Format.CSV, rejects, force, [*_given_files(checked_files), store.root], REJECTS
        ).open()
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


def _given_files(checked_files: Sequence[CheckedFile | CheckedSplit]) -> list[Path]:
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


def _write_prosocial(
    splits: list[CheckedSplit],
    store: Store,
    force: bool,
    rejects: Path | None,
    progress: Progress,
) -> IngestResult:
    """Store the ProsocialDialog files of one call as one dataset, DIR/prosocial: all of
    them or (when any is invalid and there is no rejects file) none."""
    seen: dict[str, str] = {}
    for one in splits:
        if one.split in seen:
            raise UsageError(
                f"{seen[one.split]} and {one.source.name} are both the {one.split} split; "
                "give each split once"
            )
        if one.split is not None:
            seen[one.split] = one.source.name
    invalid = [one for one in splits if not one.report.ok]
    if invalid and (rejects is None or not all(one.writable for one in invalid)):
        first = invalid[0].report
        raise InvalidInputError(
            f"{first.path} is not valid ProsocialDialog data; nothing was written", first
        )
    store.check_replaceable("prosocial", force)
    if sum(one.report.rows_valid for one in splits) == 0:
        names = ", ".join(one.source.name for one in splits)
        raise InvalidInputError(
            f"{names}: every line was rejected; nothing was written", splits[0].report
        )
    rejects_file = (
        contextlib.nullcontext(None)
        if rejects is None
        else Output.build(
            Format.CSV, rejects, force, [*_given_files(splits), store.root], REJECTS
        ).open()
    )
    with store.locked(), rejects_file as rejected:
        if rejected is not None:
            write_rejects(splits, rejected)
        store.check_replaceable("prosocial", force)
        progress("writing ProsocialDialog", 0.8)
        tables = prosocial_tables.build_tables(splits)
        stored = store.publish("prosocial", tables, prosocial_tables.manifest(splits, tables))
    progress("done", 1.0)
    report = Report(
        ", ".join(one.report.path for one in splits),
        "prosocial",
        [p for one in splits for p in one.report.warnings],
        rows_read=sum(one.report.rows_read for one in splits),
        rows_rejected=sum(one.report.rows_rejected for one in splits),
    )
    notes = _prosocial_notes(stored, store.link(stored.name), report, rejects)
    return IngestResult(report, stored, notes)


def _prosocial_notes(
    stored: StoredDataset, link: Path, report: Report, rejects: Path | None
) -> tuple[str, ...]:
    counts = stored.manifest["counts"]
    notes = [
        f"ProsocialDialog: {_counted(report.rows_read, 'line')} read = "
        f"{counts['items']:,} written + {report.rows_rejected:,} rejected; "
        f"{_counted(counts['items'], 'utterance')} in {_counted(counts['dialogues'], 'dialogue')}, "
        f"{_counted(counts['ratings'], 'annotation')} -> {link}"
    ]
    if report.rows_rejected:
        notes.append(f"  rejected lines and their problems: {rejects}")
    if mismatches := counts["label_mismatches"]:
        notes.append(
            f"  warning: {mismatches:,} of {_counted(counts['items'], 'utterance')} "
            "carry a published safety_label other than the one their three annotations "
            "imply; kept as published"
        )
    return tuple(notes)


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")
