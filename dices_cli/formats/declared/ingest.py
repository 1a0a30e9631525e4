"""The ingester and validator of every declared dataset (`FamilyIngest`, `FamilyValidate`):
the files of one call, each matched to a file of the declaration, become DIR/NAME (items,
raters, ratings, manifest)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dices_cli.errors import DicesError, InvalidInputError, UsageError
from dices_cli.families.declaration import DatasetDeclaration, FileSpec
from dices_cli.families.registered import BUILT_IN, USER_FOLDER, recogniser
from dices_cli.formats.declared.build import Built, build
from dices_cli.formats.declared.read import ROW, ReadFile, read_file
from dices_cli.formats.declared.stream import stream, streamable
from dices_cli.formats.ingest import IngestRequest, IngestResult, rejects_file, write_rejects
from dices_cli.formats.validate import ValidateRequest
from dices_cli.problems import Problem, ProblemType, Report
from dices_cli.read.source import Source
from dices_cli.store.datasets import Store

SCRATCH_PREFIX = ".scratch-"  # a folder of an ingest under way in the data directory


def ingest_declared(request: IngestRequest) -> list[IngestResult]:
    """Store the files of `request` as the declared dataset they are: all of them or (when
    any row is invalid and there is no rejects file) none."""
    family = request.family
    assert family is not None and family.declared is not None
    declared = family.declared
    request.progress(f"reading {declared.title}", 0.1)
    with _read_and_built(declared, request) as (files, built):
        return _store(request, declared, files, built)


def _store(
    request: IngestRequest, declared: DatasetDeclaration, files: list[ReadFile], built: Built
) -> list[IngestResult]:
    invalid = [one.report for one in files if not one.report.ok]
    if invalid and request.rejects is None:
        raise InvalidInputError(
            f"{invalid[0].path} is not valid {declared.title} data as declared; nothing was "
            "written",
            invalid[0],
        )
    if built.height("ratings") == 0:
        report = files[0].report
        report.add([Problem(ProblemType.NO_ROWS, None, None, None, "no rating could be read")])
        raise InvalidInputError(f"{report.path}: no rating was read; nothing was written", report)
    store = request.store
    store.check_replaceable(declared.name, request.force)
    with store.locked(), rejects_file(request) as rejected:
        if rejected is not None:
            write_rejects(
                ((one.source, _rejected(one, built, i)) for i, one in enumerate(files)), rejected
            )
        store.check_replaceable(declared.name, request.force)
        request.progress(f"writing {declared.title}", 0.8)
        stored = store.publish(declared.name, built.tables, manifest(declared, files, built))
        keep_declaration(declared, store.root)
    request.progress("done", 1.0)
    report = Report(
        ", ".join(one.source.name for one in files),
        declared.name,
        [p for one in files for p in one.report.warnings],
        rows_read=sum(one.report.rows_read for one in files),
        rows_rejected=sum(one.report.rows_rejected for one in files),
    )
    counts = stored.manifest["counts"]
    notes = [
        f"{declared.title}: {report.rows_read:,} records read = "
        f"{report.rows_read - report.rows_rejected:,} kept + {report.rows_rejected:,} rejected; "
        f"{counts['items']:,} items, {counts['raters']:,} raters, {counts['ratings']:,} "
        f"ratings -> {store.link(declared.name)}"
    ]
    notes += [f"  warning: {p.message}" for p in _published_warnings(declared, counts)]
    if report.rows_rejected and request.rejects is not None:
        notes.append(f"  rejected records and their problems: {request.rejects}")
    return [IngestResult(report, stored, tuple(notes))]


def validate_declared(request: ValidateRequest) -> Report:
    """Every problem of one file of a declared dataset (`dices validate`)."""
    from dices_cli.families import FAMILIES, families_of_files

    (family,) = families_of_files([request.first], request.choice)
    declared = FAMILIES[family.name].declared
    assert declared is not None
    files = read_all(declared, [request.source], [request.first])
    built = build(declared, files)
    _count_rejected(files, built)
    return files[0].report


@contextlib.contextmanager
def _read_and_built(
    declared: DatasetDeclaration, request: IngestRequest
) -> Iterator[tuple[list[ReadFile], Built]]:
    """The files of `request` read and their tables built: one long CSV of ratings in one
    streaming pass (`stream`), its ratings written to a folder beside the store (kept
    until the tables are stored); else, or when a record needs a problem, read whole."""
    with contextlib.ExitStack() as scratch:
        if len(request.sources) == 1:
            source = request.sources[0]
            spec = spec_of(declared, source.display_name, request.firsts[0])
            fmt = spec.format_of(source.display_name)
            if streamable(spec, fmt):
                folder = scratch.enter_context(_scratch(request.store))
                streamed = stream(declared, spec, source, fmt, folder)
                source.check_unchanged()
                if streamed is not None:
                    built, records = streamed
                    report = Report(source.name, declared.name)
                    report.rows_read = records
                    yield [ReadFile(source, spec, pl.DataFrame(), report)], built
                    return
        files = read_all(declared, request.sources, request.firsts)
        built = build(declared, files)
        _count_rejected(files, built)
        yield files, built


@contextlib.contextmanager
def _scratch(store: Store) -> Iterator[Path]:
    """A private folder in the data directory (so that its files move into the store by a
    rename), removed after."""
    import tempfile

    try:
        store.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=store.root) as folder:
            yield Path(folder)
    except OSError as error:
        raise DicesError(f"cannot write to {store.root}: {error.strerror or error}") from error


def read_all(
    declared: DatasetDeclaration, sources: Sequence[Source], firsts: Sequence[bytes]
) -> list[ReadFile]:
    """Each source read as the file of `declared` it is (by its name and its columns)."""
    files = []
    for source, first in zip(sources, firsts, strict=True):
        spec = spec_of(declared, source.display_name, first)
        report = Report(source.name, declared.name)
        files.append(read_file(source, spec, spec.format_of(source.display_name), report))
        source.check_unchanged()
    return files


def spec_of(declared: DatasetDeclaration, name: str, first: bytes) -> FileSpec:
    """The file of `declared` a given file is: the first whose name pattern it matches and
    whose columns it has; a declaration of one file takes any."""
    if len(declared.files) == 1:
        return declared.files[0]
    for spec in declared.files:
        if spec.matches(name) and (
            spec.format_of(name) == "parquet" or recogniser(_only(declared, spec))(first)
        ):
            return spec
    described = "; ".join(f"{s.role} ({s.match})" for s in declared.files)
    raise UsageError(f"{name} is none of {declared.title}'s declared files: {described}")


def _only(declared: DatasetDeclaration, spec: FileSpec) -> DatasetDeclaration:
    from dataclasses import replace

    return replace(declared, files=(spec,))


def _count_rejected(files: Sequence[ReadFile], built: Built) -> None:
    for index, one in enumerate(files):
        one.report.rows_rejected += len(built.rejected.get(index, ()))
        one.report.problems.sort(key=lambda p: p.line or 0)


def _rejected(
    one: ReadFile, built: Built, index: int
) -> Iterator[tuple[int, bytes, list[Problem]]]:
    """Each rejected record of a file: its line, its cells as read, its problems."""
    import json

    rows = sorted(built.rejected.get(index, ()))
    if not rows:
        return
    by_line: dict[int | None, list[Problem]] = {}
    for problem in one.report.errors:
        by_line.setdefault(problem.line, []).append(problem)
    cells = one.frame.filter(one.frame[ROW].is_in(rows)).unique(
        ROW, keep="first", maintain_order=True
    )
    for record in cells.iter_rows(named=True):
        line = one.line(record[ROW])
        text = json.dumps({k: v for k, v in record.items() if k != ROW}, ensure_ascii=False)
        yield (line or 0, text.encode(), by_line.get(line, []) if line is not None else [])


def _published_warnings(declared: DatasetDeclaration, counts: dict[str, Any]) -> list[Problem]:
    return [
        Problem(
            ProblemType.INCOMPLETE_DATASET,
            None,
            name,
            f"{counts[name]:,}",
            f"{counts[name]:,} {name} stored; {declared.title} publishes {published:,}",
        )
        for name, published in declared.published.items()
        if counts.get(name) != published
    ]


def manifest(
    declared: DatasetDeclaration, files: Sequence[ReadFile], built: Built
) -> dict[str, Any]:
    """The manifest of a declared dataset's version (its shape: `Family.manifest`)."""
    from datetime import UTC, datetime

    from dices_cli import __version__
    from dices_cli.families.schema import SCHEMA_VERSION

    sources = []
    for one in files:
        digest = one.source.digest()
        path = one.source.path
        sources.append(
            {
                "role": one.spec.role,
                "name": one.source.display_name,
                "path": None if path is None else str(path.resolve()),
                "size": digest.size,
                "sha256": digest.sha256,
                "rows_read": one.report.rows_read,
                "rows_rejected": one.report.rows_rejected,
            }
        )
    return {
        "dataset": declared.name,
        "title": declared.title,
        "family": declared.family,
        "declaration": declared.origin,
        "sources": sources,
        "rows": {
            "read": sum(one.report.rows_read for one in files),
            "rejected": sum(one.report.rows_rejected for one in files),
        },
        "counts": {
            "items": built.height("items"),
            "raters": built.height("raters"),
            "ratings": built.height("ratings"),
        },
        "missing": built.missing,
        # 0: each rater rated each item at most once (label-by-group's cells are ratings)
        "repeated_ratings": built.repeated,
        "published": declared.published,
        "scales": {
            label: {
                "kind": s.kind,
                "values": list(s.values),
                "missing": list(s.missing),
                "positive": list(s.positive),
            }
            for label, s in declared.scales.items()
        },
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def keep_declaration(declared: DatasetDeclaration, root: Path) -> None:
    """Keep a user's declaration in the data directory, so that later commands over it
    know the dataset (`dices_cli.families.register_directory`); a built-in needs none."""
    origin = Path(declared.origin)
    folder = root / USER_FOLDER
    if not origin.is_file() or origin.parent.resolve() in (BUILT_IN.resolve(), folder.resolve()):
        return
    folder.mkdir(exist_ok=True)
    shutil.copyfile(origin, folder / f"{declared.family}.toml")
