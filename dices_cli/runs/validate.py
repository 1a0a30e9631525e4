"""`dices validate`: every problem of the files, without storing them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.runs.common import check_choice, checked_files, max_size_named, size_of
from dices_cli.runs.ingest import DEFAULT_MAX_SIZE

if TYPE_CHECKING:
    from dices_cli.formats.validate import Progress
    from dices_cli.output import Table
    from dices_cli.problems import Report


@dataclass(frozen=True)
class ValidateRun:
    """Each file's report, in the order given, and every problem as a row of `problems`
    (file, type, severity, line, column, value, message)."""

    reports: list[Report]
    problems: Table

    @property
    def ok(self) -> bool:
        """No file has errors (warnings alone do not fail)."""
        return all(report.ok for report in self.reports)


def run_validate(
    files: Sequence[str | os.PathLike[str]],
    dataset: str = "auto",
    *,
    max_size: int | str = DEFAULT_MAX_SIZE,
    progress: Progress | None = None,
) -> ValidateRun:
    """Check each of `files` ("-": stdin) as `dataset` (auto: from its header)."""
    from dices_cli.families import grouped_members
    from dices_cli.read import checksum

    check_choice("dataset", dataset, ("auto", *grouped_members()))
    paths = checked_files(files)
    limit = size_of(max_size)
    checksum.prefetch(paths)  # counts each file's bytes on a spare core while Polars is imported
    from dices_cli.formats.validate import no_progress, validate_file
    from dices_cli.output import Table
    from dices_cli.problems import PROBLEM_FIELDS

    with max_size_named():
        reports = [validate_file(p, dataset, limit, progress or no_progress) for p in paths]
    columns = ["file", *PROBLEM_FIELDS]
    rows = [
        (report.path, *(problem.as_record()[f] for f in PROBLEM_FIELDS))
        for report in reports
        for problem in report.problems
    ]
    return ValidateRun(reports, Table(columns, [c == "line" for c in columns], rows))
