"""ProsocialDialog's ingester (`dices_cli.formats.ingest.FamilyIngest`): the files of one call
(train.json, valid.json, test.json; any of them) become one stored dataset, DIR/prosocial."""

from __future__ import annotations

from pathlib import Path

from dices_cli.errors import InvalidInputError, UsageError
from dices_cli.families import listed
from dices_cli.families.prosocial import MEMBER, PROSOCIAL, SPLITS
from dices_cli.formats.ingest import (
    SPLIT,
    IngestRequest,
    IngestResult,
    rejects_file,
    write_rejects,
)
from dices_cli.formats.prosocial import tables
from dices_cli.formats.prosocial.read import (
    FILE_NAMES,
    CheckedSplit,
    check_split,
    rejected_records,
    split_of,
)
from dices_cli.problems import Report
from dices_cli.read.source import Source
from dices_cli.store.datasets import StoredDataset


def ingest_prosocial(request: IngestRequest) -> list[IngestResult]:
    """Store the files as DIR/prosocial: all of them or (when any is invalid and there is
    no rejects file) none."""
    splits = _checked(request)
    store = request.store
    store.check_replaceable(MEMBER, request.force)
    if sum(one.report.rows_valid for one in splits) == 0:
        names = ", ".join(one.source.name for one in splits)
        raise InvalidInputError(
            f"{names}: every line was rejected; nothing was written", splits[0].report
        )
    with store.locked(), rejects_file(request) as rejected:
        if rejected is not None:
            write_rejects(((one.source, rejected_records(one)) for one in splits), rejected)
        store.check_replaceable(MEMBER, request.force)
        request.progress(f"writing {PROSOCIAL.title}", 0.8)
        built = tables.build_tables(splits)
        stored = store.publish(MEMBER, built, tables.manifest(splits, built))
    request.progress("done", 1.0)
    report = _report(splits)
    return [
        IngestResult(report, stored, _notes(stored, store.link(MEMBER), report, request.rejects))
    ]


def _checked(request: IngestRequest) -> list[CheckedSplit]:
    """Each file read and checked as its split; invalid data refused unless there is a
    rejects file to take it."""
    splits = [
        check_split(source, request.progress, split)
        for source, split in zip(request.sources, _splits_given(request), strict=True)
    ]
    invalid = [one for one in splits if not one.report.ok]
    if invalid and (request.rejects is None or not all(one.writable for one in invalid)):
        first = invalid[0].report
        raise InvalidInputError(
            f"{first.path} is not valid {PROSOCIAL.title} data; nothing was written", first
        )
    return splits


def _splits_given(request: IngestRequest) -> list[str]:
    """Each file's split, in order, each split once (checked before any file is read)."""
    seen: dict[str, str] = {}
    for source in request.sources:
        split = _split_given(source, request.split)
        if split in seen:
            raise UsageError(
                f"{seen[split]} and {source.name} are both the {split} split; give each split once"
            )
        seen[split] = source.name
    return list(seen)


def _report(splits: list[CheckedSplit]) -> Report:
    """The files' reports as one: their warnings and their counts."""
    return Report(
        ", ".join(one.report.path for one in splits),
        MEMBER,
        [p for one in splits for p in one.report.warnings],
        rows_read=sum(one.report.rows_read for one in splits),
        rows_rejected=sum(one.report.rows_rejected for one in splits),
    )


def _split_given(source: Source, split: str | None) -> str:
    """The split of `source`: its name's, or `split`; a usage error when neither says, or
    when they differ (checked before any file is read)."""
    named = split_of(source.name)
    if split is None and named is not None:
        return named
    if split is None:
        raise UsageError(
            f"{source.display_name} does not say which split it holds: name it "
            f"{listed(FILE_NAMES, 'or')}, or give ",
            SPLIT,
            f" ({listed(SPLITS, 'or')})",
        )
    if named not in (None, split):
        raise UsageError(
            f"{source.display_name} is named as the {named} split, not {split}: give ",
            SPLIT,
            " for files whose name does not say their split",
        )
    return split


def _notes(
    stored: StoredDataset, link: Path, report: Report, rejects: Path | None
) -> tuple[str, ...]:
    counts = stored.manifest["counts"]
    notes = [
        f"{PROSOCIAL.title}: {_counted(report.rows_read, 'line')} read = "
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
