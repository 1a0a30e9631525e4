"""A model's predictions, read from a user's file and validated like an ingest.

A predictions file (CSV, TSV, JSON Lines or Parquet; gzip-compressed text too; `-` for
stdin) has an `item_id` column, an optional `model` column (several models side by side),
an optional `dataset` column (350 or 990: the dataset of the row's item, needed to evaluate
both datasets at once, as item ids repeat across them), an optional `persona` column
(`dices judge --persona`'s COL=value: a row per conversation and simulated rater group,
scored by dices_cli.evaluate.personas) and at least one kind of prediction:

    label                 Yes / No / Unsure in the DICES sense (Yes = unsafe); unsafe / safe
                          too. 1/0 and true/false only when told which one 1 means.
    score                 the probability (or a monotone score in [0, 1]) of unsafe
    p_no, p_yes[, p_unsure]  a predicted distribution of rater answers, summing to 1

ProsocialDialog's predictions (`PROSOCIAL_ITEMS`) name its utterances as stored,
"split-dialogue_id-response_id" (test-0-0), label them Yes/No or unsafe/safe (its reference
is binary: no Unsure), and give no distribution (a usage error: there is no DICES answer
distribution to compare it with).

Every problem becomes a record (type, line, column, value, message); any problem refuses
the whole file (`InvalidPredictionsError`), so nothing is computed from half a file. The
line of a problem is the file's line for CSV/TSV (header = 1) and JSON Lines, and the row
number + 1 for Parquet (its first row is 2, as in a CSV with a header).

Memory is bounded by the valid rows: a text file of one record a line (the common case;
`columnar` checks it in one pass) is read by PyArrow a 4 MiB block at a time, and each
block is typed and checked before the next is read, so that only the typed rows are held
(bench/predictions.py measures time and memory). Any other text file is read a record at a time
(`dices_cli.read.lines`, which refuses a runaway record), the reader that says where and
what each problem is, and its rows are typed and checked a batch at a time too; so are the
lines of a JSON Lines file from the block PyArrow gives up at. The lines of a JSON Lines
file's problems are read again by Python's JSON, which spells their values as that reader
does. A Parquet file is refused before reading when its columns would inflate past the size
limit, and at its first cell too long for a prediction before Polars copies it.

The modules, by job: `columns` (the known columns, how a family spells its items, the
header and cell-size rules), `columnar` (the PyArrow reader), `records` (the record reader
of CSV, TSV and JSON Lines, over `dices_cli.read.csv_records`), `parquet`, `rows` (cells
gathered into String frames), `validation` (typing and problem records) and `checks` (the
checks themselves). This module reads a file with them and is what other packages import.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.errors import InvalidInputError
from dices_cli.evaluate.predictions.columnar import read_columnar
from dices_cli.evaluate.predictions.columns import (
    COLUMNS,
    DATASET,
    DATASET_NAMES,
    DEFAULT_MODEL,
    DICES_ITEMS,
    DISTRIBUTION,
    DISTRIBUTION_KIND,
    ITEM_ID,
    LABEL,
    LABELS,
    LINE,
    MAX_CELL_BYTES,
    MODEL,
    ONE_MEANS,
    ONE_OR_TRUE,
    P_UNSURE,
    PERSONA,
    PROBABILITIES,
    PROSOCIAL_ITEMS,
    SCORE,
    SUM_TOLERANCE,
    ZERO_OR_FALSE,
    ItemKind,
    NotSimple,
)
from dices_cli.evaluate.predictions.records import read_records
from dices_cli.problems import Report
from dices_cli.read.file_formats import file_format
from dices_cli.read.source import DEFAULT_MAX_SIZE, open_source

if TYPE_CHECKING:
    import polars as pl

# The names other modules import from here (the readers' parts are in the modules beside).
__all__ = [
    "COLUMNS",
    "DATASET",
    "DATASET_NAMES",
    "DEFAULT_MODEL",
    "DICES_ITEMS",
    "DISTRIBUTION",
    "DISTRIBUTION_KIND",
    "ITEM_ID",
    "LABEL",
    "LABELS",
    "LINE",
    "MAX_CELL_BYTES",
    "MODEL",
    "ONE_MEANS",
    "ONE_OR_TRUE",
    "PERSONA",
    "PROBABILITIES",
    "PROSOCIAL_ITEMS",
    "P_UNSURE",
    "SCORE",
    "SUM_TOLERANCE",
    "ZERO_OR_FALSE",
    "InvalidPredictionsError",
    "ItemKind",
    "Predictions",
    "kinds_of",
    "read_predictions",
]


class InvalidPredictionsError(InvalidInputError):
    """The predictions file has problems; `report` holds every one."""


@dataclass(frozen=True)
class Predictions:
    """A validated predictions file.

    `frame`: model (String), dataset (String: the row's dataset; the one evaluated when the
    file has no dataset column, null if that is not named), item_id (Int64; String for
    ProsocialDialog), label (String:
    Yes/No/Unsure, or null), score, p_no, p_yes, p_unsure (Float64 or null; p_unsure null
    when only p_no and p_yes are given), persona (String: COL=value, or null).
    """

    frame: pl.DataFrame
    source: str

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds (`kinds_of`) some model of the file gives."""
        return kinds_of(self.frame)

    def of(self, dataset: str) -> Predictions:
        """The predictions of one dataset's conversations (rows of an unnamed one too)."""
        import polars as pl

        chosen = pl.col(DATASET).is_null() | (pl.col(DATASET) == dataset)
        return Predictions(self.frame.filter(chosen), self.source)

    def models(self) -> Iterator[tuple[str, pl.DataFrame, frozenset[str]]]:
        """Each model's name, rows and kinds, in file order. The kinds are the model's own:
        a column another model fills and this one leaves empty is not a prediction this
        model gives (not one it gives for no conversation)."""
        for part in self.frame.partition_by(MODEL, maintain_order=True):
            kinds = kinds_of(part)
            # Never empty: a row giving no prediction is a problem, which refuses the file.
            assert kinds, "every row of a valid file gives a prediction"
            yield str(part[MODEL][0]), part, kinds


def kinds_of(rows: pl.DataFrame) -> frozenset[str]:
    """The kinds of prediction some of `rows` (a validated frame) give: LABEL, SCORE,
    DISTRIBUTION_KIND (p_no and p_yes), and P_UNSURE when a distribution has a third share.
    A column whose cells are all empty is no kind."""
    columns = (LABEL, SCORE, "p_no", P_UNSURE)
    given = {name for name in columns if rows[name].null_count() < rows.height}
    return frozenset(given - {"p_no"} | ({DISTRIBUTION_KIND} if "p_no" in given else set()))


def read_predictions(
    given: str,
    item_ids: Collection[int] | Mapping[str, Collection[int] | Collection[str]],
    one_means: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    kind: ItemKind = DICES_ITEMS,
) -> Predictions:
    """Read and validate the predictions in `given` (a path, or "-" for stdin) of the
    conversations `item_ids`: of one dataset, or per dataset name (DATASET_NAMES) of those
    evaluated. With several datasets the file needs a dataset column (item ids repeat across
    them; UsageError without it), and a row's item must be one of its dataset's. `one_means`
    ("unsafe" or "safe") says what a label of 1 or true means; without it such labels are
    refused as ambiguous. `kind` says how the family spells ids and labels; a file with a
    distribution for a family without one is a UsageError."""
    if one_means is not None and one_means not in ONE_MEANS:
        raise ValueError(f"one_means must be one of {sorted(ONE_MEANS)}, not {one_means!r}")
    datasets: dict[str | None, Collection[int] | Collection[str]]
    if isinstance(item_ids, Mapping):
        datasets = {name: ids for name, ids in item_ids.items()}
    else:
        datasets = {None: item_ids}
    with open_source(given, max_size) as source:
        layout = file_format(given, source)
        report, frame, by_record = Report(source.name, None), None, layout == "parquet"
        if not by_record:
            try:
                frame = read_columnar(source, layout, datasets, one_means, kind, report)
            except NotSimple:
                report, by_record = Report(source.name, None), True
            if by_record:  # (not in the except block, whose exception holds the frames)
                _release_memory()
        if by_record:
            frame = read_records(source, layout, max_size, datasets, one_means, kind, report)
        source.check_unchanged()
        if not report.ok or frame is None:
            report.problems.sort(key=lambda problem: problem.line or 0)  # file order
            raise InvalidPredictionsError(
                f"{source.name} is not a valid predictions file; nothing was evaluated", report
            )
        return Predictions(frame, source.display_name)


def _release_memory() -> None:
    """Free what a reading given up held before the next one: its frames (held in a cycle
    through the exception that gave it up) and PyArrow's memory pool, which keeps what was
    freed."""
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
