"""The columns and cells of a predictions file: the known columns, how a family spells its
items, the header's rules, and the longest cell a prediction may have.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.errors import UsageError
from dices_cli.families.schema import DATASETS
from dices_cli.problems import (
    SHOWN_VALUE_CHARS,
    PredictionProblemType,
    Problem,
    ProblemType,
    Report,
)
from dices_cli.read.source import Source, format_size

if TYPE_CHECKING:
    import pyarrow as pa


MODEL, DATASET, ITEM_ID, LABEL, SCORE = "model", "dataset", "item_id", "label", "score"
PERSONA = "persona"
DISTRIBUTION = ("p_no", "p_yes", "p_unsure")
COLUMNS = (MODEL, DATASET, ITEM_ID, LABEL, SCORE, *DISTRIBUTION, PERSONA)
DATASET_NAMES = tuple(DATASETS)
PROBABILITIES = (SCORE, *DISTRIBUTION)
DEFAULT_MODEL = "model"  # the model of a file without a model column
SUM_TOLERANCE = 1e-6
LABELS = {"yes": "Yes", "no": "No", "unsure": "Unsure", "unsafe": "Yes", "safe": "No"}
ONE_OR_TRUE, ZERO_OR_FALSE = ("1", "true"), ("0", "false")
ONE_MEANS = {"unsafe": ("Yes", "No"), "safe": ("No", "Yes")}  # what 1/true, 0/false become
# A model name, an item id, a label or a number is a few bytes: a longer cell of a known
# column, in a file of any format, is refused before Polars copies it.
MAX_CELL_BYTES = 4096
LINE = "_line"  # the line of a row, beside the file's own columns
# Kinds of prediction (`kinds_of`), besides LABEL and SCORE: a distribution (p_no, p_yes),
# and its third share.
DISTRIBUTION_KIND, P_UNSURE = "distribution", "p_unsure"


class NotSimple(Exception):
    """The columnar reader cannot vouch that it reads the file as the record reader would:
    the record reader reads it."""


DELIMITERS = {"csv": ",", "tsv": "\t"}


@dataclass(frozen=True)
class ItemKind:
    """How a family's predictions are spelled: its item ids, labels and dataset names."""

    text_ids: bool  # ids are text (ProsocialDialog's split-dialogue_id-response_id), not integers
    noun: str  # what an item is, in messages
    labels: Mapping[str, str]  # a label (lower case) -> Yes, No or Unsure
    labels_hint: str  # the labels there are, for a message
    datasets: tuple[str, ...]  # what a dataset column may name
    # Why p_no, p_yes[, p_unsure] are refused; None: they are read.
    no_distribution: str | None


DICES_ITEMS = ItemKind(
    False,
    "a conversation of the dataset",
    LABELS,
    "give Yes, No or Unsure (Yes = unsafe), or unsafe/safe",
    DATASET_NAMES,
    None,
)
# ProsocialDialog's reference label is binary: Unsure has no place in it, and the raters'
# answer distribution (p_no, p_yes, p_unsure) is DICES's, not its annotations'.
PROSOCIAL_ITEMS = ItemKind(
    True,
    "an utterance of ProsocialDialog (ids are split-dialogue_id-response_id, as test-0-0)",
    {k: v for k, v in LABELS.items() if v != "Unsure"},
    "give Yes or No (Yes = unsafe), or unsafe/safe",
    ("prosocial",),
    "ProsocialDialog has no answer distribution to compare them with (its three annotations "
    "are not DICES's No/Yes/Unsure); give a label and/or a score (the probability of unsafe)",
)


def usable(
    columns: list[str],
    header_line: int | None,
    source: Source,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    kind: ItemKind,
    report: Report,
) -> bool:
    """Whether rows with these columns can be validated (if not, the problems are in
    `report`); a UsageError when they cannot be what was asked for."""
    if len(datasets) > 1 and DATASET not in columns:
        raise UsageError(
            f"{source.name} has no dataset column: to evaluate DICES-350 and DICES-990 "
            "at once, give each row's dataset (350 or 990), as item ids repeat across them"
        )
    given_distribution = [c for c in DISTRIBUTION if c in columns]
    if given_distribution and kind.no_distribution is not None:
        raise UsageError(
            f"{source.name} has {', '.join(given_distribution)}: {kind.no_distribution}"
        )
    return has_columns(columns, header_line, report)


def no_rows(report: Report) -> None:
    message = "the file names its columns but holds no predictions"
    report.add([Problem(ProblemType.NO_ROWS, None, None, None, message)])


def header_positions(names: list[str], line: int | None, report: Report) -> dict[str, int]:
    """The position of each known column among `names`; a known one named twice is a
    problem."""
    positions: dict[str, int] = {}
    for position, given in enumerate(names):
        name = given.strip().lower()
        if name not in COLUMNS:
            continue  # other columns (the text, a note) are the user's own business
        if name in positions:
            message = f"column {name} appears twice"
            report.add([Problem(ProblemType.DUPLICATE_COLUMN, line, name, given, message)])
        positions[name] = position
    return positions


def has_columns(columns: list[str], line: int | None, report: Report) -> bool:
    """Whether the file has the columns needed to read its rows; if not, the problems."""
    before = len(report.problems)

    def missing(column: str | None, message: str) -> None:
        report.add([Problem(ProblemType.MISSING_COLUMN, line, column, None, message)])

    if ITEM_ID not in columns:
        missing(ITEM_ID, "the file has no item_id column, which says which conversation")
    given = [name for name in DISTRIBUTION if name in columns]
    if given and not {"p_no", "p_yes"} <= set(given):
        lacking = "p_yes" if "p_no" in given else "p_no"
        missing(lacking, f"a distribution needs p_no and p_yes; the file has {', '.join(given)}")
    elif not ({LABEL, SCORE} & set(columns) or given):
        missing(None, "the file has no label, score or p_no/p_yes column: it predicts nothing")
    return len(report.problems) == before


def too_long_known_cell(line: int, cells: Mapping[str, str | None]) -> Problem | None:
    """The problem of a known cell of a record longer than MAX_CELL_BYTES, if any, found
    before the record's cells go to Polars, whose checks take several copies of a long
    cell (bench/predictions.py)."""
    for name, cell in cells.items():
        if (
            cell is not None
            and len(cell) > MAX_CELL_BYTES // 4
            and (len(cell.encode()) > MAX_CELL_BYTES)
        ):
            return cell_too_long(line, name, cell)
    return None


def cell_too_long(line: int, name: str, cell: str) -> Problem:
    message = (
        f"the {name} cell is {format_size(len(cell.encode()))} long, "
        f"and a {name} is a few bytes (at most {MAX_CELL_BYTES} here); reading stopped "
        "at this row"
    )
    return Problem(
        PredictionProblemType.CELL_TOO_LONG, line, name, cell[:SHOWN_VALUE_CHARS], message
    )


def too_long_cell(batch: pa.RecordBatch, first: int, columns: list[str]) -> Problem | None:
    """The problem of the first cell of `batch` (rows from line `first`; its columns are
    `columns`) longer than MAX_CELL_BYTES, if any: measured by PyArrow, nothing copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(columns, batch.columns, strict=True):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue  # numbers have a width; Polars refuses binary and nested columns
        long = pc.greater(pc.binary_length(column), MAX_CELL_BYTES)
        if pc.any(long).as_py():
            row = pc.index(long, True).as_py()
            return cell_too_long(first + row, name, column[row].as_py())
    return None
