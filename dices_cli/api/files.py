"""The Python API's functions that read files rather than a data directory: `ingest`,
`validate` and `describe`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.api.frames import warn

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class IngestSummary:
    """What `ingest` did: rows read from the files, written to the data directory, and
    rejected (only with `rejects`), and the datasets stored."""

    rows_read: int
    rows_written: int
    rows_rejected: int
    datasets: tuple[str, ...]


def ingest(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,
    dataset: str = "auto",
    *,
    force: bool = False,
    rejects: str | os.PathLike[str] | None = None,
) -> IngestSummary:
    """Validate DICES CSV files (or ProsocialDialog's JSON Lines) and store them in the data
    directory `dir` (None: as `open` resolves it), as `dices ingest` does: all or nothing,
    unless `rejects` names a file for the rejected rows.

    >>> dices.ingest(sample_paths(), d.root)
    Traceback (most recent call last):
    ...
    dices_cli.errors.DatasetExistsError: DICES-350 is already ingested in ...; use force to ...

    """
    from dices_cli.runs.ingest import run_ingest
    from dices_cli.store.datasets import Store, resolve_data_dir

    given = [paths] if isinstance(paths, str | os.PathLike) else paths
    store = Store(resolve_data_dir(None if dir is None else Path(dir)))
    results = run_ingest(store, given, dataset, force=force, rejects=rejects)
    return IngestSummary(
        rows_read=sum(r.report.rows_read for r in results),
        rows_written=sum(r.report.rows_valid for r in results),
        rows_rejected=sum(r.report.rows_rejected for r in results),
        datasets=tuple(r.stored.name for r in results),
    )


@dataclass(frozen=True)
class ValidationReport:
    """What `validate` found in one file: `ok` (no errors), every problem as a row of
    `problems` (type, severity, line, column, value, message), and the `summary` line
    `dices validate` prints."""

    ok: bool
    problems: pl.DataFrame
    rows_read: int
    rows_rejected: int
    summary: str


def validate(path: str | os.PathLike[str], dataset: str = "auto") -> ValidationReport:
    """Check one DICES CSV file (or ProsocialDialog JSON Lines file) without ingesting it
    (`dices validate`).

    >>> report = dices.validate(sample_paths()[0])
    >>> report.ok
    True
    >>> report.problems.select("type", "severity", "value").rows()
    [('incomplete-dataset', 'warning', '40 of 350 conversations'),
     ('incomplete-dataset', 'warning', '4,920 of 43,050 ratings')]
    """
    import polars as pl

    from dices_cli.problems import PROBLEM_FIELDS
    from dices_cli.runs.validate import run_validate

    (report,) = run_validate([path], dataset).reports
    records = [problem.as_record() for problem in report.problems]
    schema = {name: pl.Int64 if name == "line" else pl.String for name in PROBLEM_FIELDS}
    problems = pl.DataFrame(
        [tuple(r[name] for name in PROBLEM_FIELDS) for r in records],
        schema=schema,
        orient="row",
    )
    return ValidationReport(
        report.ok, problems, report.rows_read, report.rows_rejected, report.summary()
    )


def describe(paths: Sequence[str | os.PathLike[str]], name: str | None = None) -> str:
    """A draft declaration (TOML text) for files dices does not know (`dices describe`):
    what it guessed is each a `DicesNote`; what it could not decide, a `DicesNote` too and
    an UNDECIDED comment where the draft needs an edit before `ingest` takes it."""
    from dices_cli.runs.describe import run_describe

    draft = run_describe(paths, name)
    for said in [*draft.guessed, *(f"could not decide: {u}" for u in draft.undecided)]:
        warn(said)
    return draft.text
