"""Read and validate ProsocialDialog JSON Lines files.

`check_split` reads one file into a `CheckedSplit`: a `Report` of every problem (with its
line number) and the valid rows as a typed frame, ready to be stored. A file is read whole
by the fast path (`fast`) and, only when that finds a doubt, line by line (`rows`), which
holds the valid rows' values and the ids seen, never the file; a rejected line is kept by
its number only, and read again for a rejects file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath

import polars as pl

from dices_cli.families.prosocial import PROSOCIAL, SPLITS
from dices_cli.formats.prosocial import fast, rows
from dices_cli.formats.prosocial.labels import recomputed_label
from dices_cli.formats.validate import Progress, ValidateRequest
from dices_cli.problems import JsonProblemType, Problem, ProblemType, Report, Severity
from dices_cli.read.source import Source

FILE_NAMES = [file.name for file in PROSOCIAL.files]
# The valid rows, typed as the line-by-line reader builds them (the fast path's match).
ROW_SCHEMA = pl.Schema(
    {
        "context": pl.String(),
        "response": pl.String(),
        "rots": pl.List(pl.String()),
        "safety_label": pl.String(),
        "safety_annotations": pl.List(pl.String()),
        "safety_annotation_reasons": pl.List(pl.String()),
        "source": pl.String(),
        "etc": pl.String(),
        "dialogue_id": pl.Int64(),
        "response_id": pl.Int32(),
        "episode_done": pl.Boolean(),
    }
)


def split_of(name: str) -> str | None:
    """The split a file holds, from its name's stem (train.json -> train), if it names one."""
    stem = PurePath(name).name.split(".", 1)[0].lower()
    return stem if stem in SPLITS else None


@dataclass
class CheckedSplit:
    """One file read and validated: its report and its valid rows with their lines."""

    source: Source
    split: str | None
    report: Report
    frame: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ROW_SCHEMA))
    lines: list[int] = field(default_factory=list)  # of the rows of `frame`
    rejected_lines: list[int] = field(default_factory=list)
    label_mismatches: int = 0

    @property
    def writable(self) -> bool:
        """Valid rows can be stored (the rest go to a rejects file): the split is known."""
        return self.split is not None


def check_split(source: Source, progress: Progress, split: str | None = None) -> CheckedSplit:
    """Read and validate one file, of `split` (None: the one its name says); bad data
    becomes problems in the report, never raises."""
    progress(f"reading {source.name}", 0.0)
    split = split or split_of(source.name)
    checked = CheckedSplit(source, split, Report(source.name, "prosocial"))
    report = checked.report
    if split is None:
        report.problems.append(
            Problem(
                JsonProblemType.UNKNOWN_SPLIT,
                None,
                None,
                source.display_name,
                f"{source.display_name} does not name its split: a ProsocialDialog file is "
                f"named {', '.join(FILE_NAMES[:-1])} or {FILE_NAMES[-1]}, or ingested with "
                "its split given",
            )
        )
    frame = fast.read_valid(source)
    if frame is not None:
        checked.frame, checked.lines = frame, list(range(1, frame.height + 1))
        report.rows_read = frame.height
    else:
        progress(f"looking closer at {source.name}", 0.3)
        columns, checked.lines, checked.rejected_lines = rows.read_lines(source, report)
        checked.frame = pl.DataFrame(columns, schema=ROW_SCHEMA)
    source.check_unchanged()  # the rows must be the bytes the checksum describes
    report.rows_rejected = len(checked.rejected_lines)
    _check_labels(checked)
    if report.rows_read == 0:
        report.problems.append(
            Problem(ProblemType.NO_ROWS, None, None, None, "the file holds no lines")
        )
    return checked


def validate_split(request: ValidateRequest) -> Report:
    """ProsocialDialog's `dices_cli.formats.validate.FamilyValidate`: one file, whichever split its
    name says."""
    return check_split(request.source, request.progress).report


def _check_labels(checked: CheckedSplit) -> None:
    """Warn of each valid row whose published label is not the one its annotations imply."""
    differing = (
        checked.frame.with_row_index("row")
        .with_columns(recomputed_label(pl.col("safety_annotations")).alias("recomputed"))
        .filter(pl.col("safety_label") != pl.col("recomputed").cast(pl.String))
    )
    checked.label_mismatches = differing.height
    checked.report.add(
        Problem(
            JsonProblemType.LABEL_MISMATCH,
            checked.lines[row["row"]],
            "safety_label",
            row["safety_label"],
            f"the annotations {', '.join(row['safety_annotations'])} imply "
            f"{row['recomputed']}; the published label is kept",
            Severity.WARNING,
        )
        for row in differing.iter_rows(named=True)
    )
    checked.report.problems.sort(key=lambda p: p.line or 0)


def rejected_records(checked: CheckedSplit) -> Iterator[tuple[int, bytes, list[Problem]]]:
    """(line, bytes, problems) of every rejected line, in file order, read again (a line
    too long to hold is left out: its problem says so)."""
    by_line: dict[int, list[Problem]] = {}
    for problem in checked.report.errors:
        by_line.setdefault(problem.line or 0, []).append(problem)
    rejected = set(checked.rejected_lines)
    for number, line in rows.lines(checked.source):
        if number in rejected and line is not None:
            yield number, line.encode("utf-8", "surrogateescape"), by_line.get(number, [])
