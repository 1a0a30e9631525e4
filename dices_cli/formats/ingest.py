"""Ingest dataset files into the data directory as typed Parquet: only what validated.

`ingest` opens the files of one call, tells the family they belong to
(`dices_cli.families.families_of_files`, as `dices validate` does) and hands them to the
ingester that family's declaration names: DICES's is `dices_cli.formats.dices.ingest`,
ProsocialDialog's `dices_cli.formats.prosocial.ingest`. Adding a family adds a declaration and its
ingester, not a branch here. What every ingester shares is here too: the request and the
result, and the rejects file.
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from dices_cli.errors import Option, UsageError
from dices_cli.families import FAMILIES, Family, all_members, families_of_files, listed, named
from dices_cli.formats.dices.csvparse import prefix
from dices_cli.formats.validate import Progress, first_bytes, no_progress
from dices_cli.output import Format, Output, check_output
from dices_cli.problems import MAX_KEPT_PROBLEMS, Problem, Report
from dices_cli.read import checksum
from dices_cli.read.source import DEFAULT_MAX_SIZE, STDIN, Source, open_source
from dices_cli.store.datasets import Store, StoredDataset

REJECT_FIELDS = ("file", "line", "problems", "record")
# The option naming the file rejected records go to, for messages about that file.
REJECTS = Option("rejects")
SPLIT = Option("split")

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
    family: Family | None = None  # the family the files are of
    split: str | None = None  # the split the files hold, of a family with splits (None: each
    # file's name says it)


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
    declaration: Path | None = None,
    split: str | None = None,
) -> list[IngestResult]:
    """Validate every file, then write each dataset atomically; all or nothing per call.

    Without `rejects`, any error refuses the whole call and writes nothing. With it,
    valid rows are written and every rejected record goes to `rejects`. A path `-` is
    stdin; a compressed or piped input may hold at most `max_size` bytes of text. The
    files of one call are of one family. `declaration`: a TOML file declaring the files'
    dataset (`dices_cli.families.declaration`), registered first. `split`: the split the
    files hold, for a family whose files are splits (`Family.splits`) and whose names do
    not say which.
    """
    choice, declared = _declared_choice(declaration, choice)
    if choice != "auto" and choice not in all_members():
        raise UsageError(
            f"{choice!r} is not a dataset dices knows: auto, {listed(all_members(), 'or')}"
        )
    files = [Path(path) for path in paths if str(path) != STDIN]
    if rejects is not None:  # before reading anything: the files may be large
        check_output(rejects, force, [*files, store.root], option=REJECTS)
    # One pass per plain file, on a spare core: the manifest's checksum and the byte counts
    # that the parsers check Polars against.
    checksum.prefetch(files)
    with contextlib.ExitStack() as opened:
        sources = [opened.enter_context(open_source(path, max_size)) for path in paths]
        firsts = [first_bytes(source) if declared is None else prefix(source) for source in sources]
        families = (
            families_of_files(firsts, choice)
            if declared is None or choice != "auto"
            else _recognised(declared, firsts)
        )
        if len(families) > 1:
            raise UsageError(
                f"{listed([f.title for f in families], 'and')} files are ingested separately; "
                "give the files of one family at a time"
            )
        _check_split(families[0], split)
        ingests: FamilyIngest = named(families[0].ingests)
        return ingests(
            IngestRequest(
                sources, firsts, choice, store, force, rejects, progress, families[0], split
            )
        )


def _check_split(family: Family, split: str | None) -> None:
    """A split is given only for a family whose files are splits, and is one of them."""
    if split is None or split in family.splits:
        return
    if family.splits:
        raise UsageError(
            SPLIT, f" is {listed(family.splits, 'or')} for {family.title} (got {split!r})"
        )
    split_files = [f.title for f in FAMILIES.values() if f.splits]
    raise UsageError(
        f"{family.title} files hold no splits: ", SPLIT, f" is for {listed(split_files, 'and')}"
    )


def _declared_choice(declaration: Path | None, choice: str) -> tuple[str, list[Family] | None]:
    """The dataset asked for, and the families a declaration file registers (None: none
    given); a declaration of one dataset chooses it."""
    if declaration is None:
        return choice, None
    from dices_cli.families import register
    from dices_cli.families.declaration import DeclarationError, read_declaration

    try:
        declared = register(read_declaration(declaration))
    except DeclarationError as error:
        raise UsageError(str(error)) from None
    names = [family.name for family in declared]
    if choice == "auto" and len(declared) == 1:
        return declared[0].name, declared
    if choice not in ("auto", *names):
        raise UsageError(f"{declaration} declares {listed(names, 'and')}, not {choice}")
    return choice, declared


def _recognised(declared: list[Family], firsts: list[bytes]) -> list[Family]:
    """The declared families whose files these are, by their first bytes."""
    found = [
        f for f in declared if any(f.recognises is not None and f.recognises(b) for b in firsts)
    ]
    if not found:
        raise UsageError(
            "none of the files has the columns of a dataset of the declaration "
            f"({listed([f.name for f in declared], 'or')}); name it with ",
            Option("dataset"),
        )
    return found


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
