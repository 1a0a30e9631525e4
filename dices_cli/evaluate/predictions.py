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

Memory is bounded by the file: text is read a record at a time (`dices_cli.lines`, which
refuses a runaway record) into Polars frames of a few thousand rows, and a Parquet file is
refused before reading when its columns would inflate past the size limit.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.csvparse import _structure_problems
from dices_cli.errors import DicesError, InvalidInputError, UsageError
from dices_cli.file_formats import file_format, parquet_file
from dices_cli.json_lines import JsonLineError, json_lines, parsed
from dices_cli.lines import MAX_RECORD_BYTES, Lines, RecordTooLongError
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    SHOWN_CHARS,
    SHOWN_VALUE_CHARS,
    JsonProblemType,
    PredictionProblemType,
    Problem,
    ProblemType,
    Report,
    Severity,
)
from dices_cli.source import DEFAULT_MAX_SIZE, Source, open_source

if TYPE_CHECKING:
    import polars as pl

MODEL, DATASET, ITEM_ID, LABEL, SCORE = "model", "dataset", "item_id", "label", "score"
PERSONA = "persona"
DISTRIBUTION = ("p_no", "p_yes", "p_unsure")
COLUMNS = (MODEL, DATASET, ITEM_ID, LABEL, SCORE, *DISTRIBUTION, PERSONA)
DATASET_NAMES = ("350", "990")
PROBABILITIES = (SCORE, *DISTRIBUTION)
DEFAULT_MODEL = "model"  # the model of a file without a model column
SUM_TOLERANCE = 1e-6
LABELS = {"yes": "Yes", "no": "No", "unsure": "Unsure", "unsafe": "Yes", "safe": "No"}
ONE_OR_TRUE, ZERO_OR_FALSE = ("1", "true"), ("0", "false")
ONE_MEANS = {"unsafe": ("Yes", "No"), "safe": ("No", "Yes")}  # what 1/true, 0/false become
BATCH_ROWS = 8192
LINE = "_line"  # the line of a row, beside the file's own columns
# Kinds of prediction (`kinds_of`), besides LABEL and SCORE: a distribution (p_no, p_yes),
# and its third share.
DISTRIBUTION_KIND, P_UNSURE = "distribution", "p_unsure"


class InvalidPredictionsError(InvalidInputError):
    """The predictions file has problems; `report` holds every one."""


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
    conversations `item_ids`: of one dataset, or per dataset name ("350", "990") of those
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
        report = Report(source.name, None)
        layout = file_format(given, source)
        if layout == "parquet":
            rows, header_line = _parquet_rows(source, max_size, report), None
        elif layout == "jsonl":
            rows, header_line = _json_rows(source, report), None
        else:
            rows, header_line = (
                _delimited_rows(source, "\t" if layout == "tsv" else ",", report),
                1,
            )
        if rows is not None and len(datasets) > 1 and DATASET not in rows.columns:
            raise UsageError(
                f"{source.name} has no dataset column: to evaluate DICES-350 and DICES-990 "
                "at once, give each row's dataset (350 or 990), as item ids repeat across them"
            )
        given_distribution = [c for c in DISTRIBUTION if rows is not None and c in rows.columns]
        if given_distribution and kind.no_distribution is not None:
            raise UsageError(
                f"{source.name} has {', '.join(given_distribution)}: {kind.no_distribution}"
            )
        if rows is not None and _has_columns(rows.columns, header_line, report):
            frame = _validated(rows.frame(), datasets, one_means, report, kind)
            if rows.records == 0:
                message = "the file names its columns but holds no predictions"
                report.add([Problem(ProblemType.NO_ROWS, None, None, None, message)])
        source.check_unchanged()
        if not report.ok or rows is None:
            report.problems.sort(key=lambda problem: problem.line or 0)  # file order
            raise InvalidPredictionsError(
                f"{source.name} is not a valid predictions file; nothing was evaluated", report
            )
        return Predictions(frame, source.display_name)


# --- reading: each format into frames of String cells, with the line of each row ----------


class _Rows:
    """The cells of the known columns, gathered into String frames a batch at a time.

    `columns`: the known columns the file has (for JSON Lines, those some record names).
    """

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns
        self.lines: list[int] = []
        self.cells: dict[str, list[str | None]] = {name: [] for name in COLUMNS}
        self.frames: list[pl.DataFrame] = []
        self.records = 0  # read, broken ones too

    def add(self, line: int, cells: Mapping[str, str | None]) -> None:
        self.lines.append(line)
        for name in COLUMNS:
            self.cells[name].append(cells.get(name))
        if len(self.lines) == BATCH_ROWS:
            self._flush()

    def add_frame(self, first: int, frame: pl.DataFrame) -> None:
        """String cells of some known columns, the first on line `first`."""
        import polars as pl

        self._flush()
        lines = pl.int_range(first, first + frame.height, dtype=pl.Int64, eager=True)
        missing = [pl.lit(None, pl.String).alias(n) for n in COLUMNS if n not in frame.columns]
        self.frames.append(frame.with_columns(*missing, lines.alias(LINE)).select(LINE, *COLUMNS))

    def _flush(self) -> None:
        import polars as pl

        if not self.lines:
            return
        self.frames.append(
            pl.DataFrame(
                {LINE: self.lines, **self.cells},
                schema={LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)},
            )
        )
        self.lines, self.cells = [], {name: [] for name in COLUMNS}

    def frame(self) -> pl.DataFrame:
        import polars as pl

        self._flush()
        schema = {LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)}
        return pl.concat([pl.DataFrame(schema=schema), *self.frames]).select(LINE, *self.columns)


def _record_too_long(line: int) -> Problem:
    return Problem(
        ProblemType.RECORD_TOO_LONG,
        line,
        None,
        None,
        f"the record starting here is longer than {MAX_RECORD_BYTES >> 20} MiB, and a "
        "prediction is a few bytes; reading goes on at the next line",
    )


def _header(names: list[str], line: int | None, report: Report) -> dict[str, int]:
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


def _has_columns(columns: list[str], line: int | None, report: Report) -> bool:
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


def _delimited_rows(source: Source, delimiter: str, report: Report) -> _Rows | None:
    """CSV or TSV, a record at a time; None when the header already refuses the file."""
    rows: _Rows | None = None
    positions: dict[str, int] = {}
    width = 0
    with source.open_text() as text:
        lines = Lines(text)
        reader = csv.reader(lines, delimiter=delimiter, strict=True)
        while True:
            lines.start_record()
            try:
                cells: list[str] | csv.Error = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                cells = error
            except RecordTooLongError:
                report.add([_record_too_long(lines.first)])
                if rows is not None:
                    rows.records += 1
                reader = csv.reader(lines, delimiter=delimiter, strict=True)
                continue
            if rows is None:
                if isinstance(cells, csv.Error):
                    report.add(_structure_problems(lines.first, cells, []))
                    return None
                positions, width = _header(cells, lines.first, report), len(cells)
                rows = _Rows([name for name in COLUMNS if name in positions])
                if ITEM_ID not in positions:
                    return rows  # the rest cannot be checked: no need to read it
                continue
            if not cells:
                continue
            rows.records += 1
            problems = _structure_problems(lines.first, cells, [""] * width)
            if problems:
                report.add(problems)
                report.rows_rejected += 1
                continue
            assert not isinstance(cells, csv.Error)
            rows.add(
                lines.first,
                {name: cells[position] or None for name, position in positions.items()},
            )
    if rows is None:
        report.add([_empty_file()])
    else:
        report.rows_read = rows.records
    return rows


def _empty_file() -> Problem:
    return Problem(ProblemType.EMPTY_FILE, None, None, None, "the file is empty: no predictions")


def _json_text(value: object) -> str | None:
    """A JSON value as the text a CSV cell would hold."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)[:SHOWN_VALUE_CHARS]


def _json_rows(source: Source, report: Report) -> _Rows | None:
    """JSON Lines: one object per line; blank lines are skipped."""
    rows, seen = _Rows(list(COLUMNS)), set[str]()
    with source.open_text() as text:
        for number, line in json_lines(text):
            rows.records += 1
            problem = _json_problem(number, line)
            if isinstance(problem, Problem):
                report.add([problem])
                report.rows_rejected += 1
                continue
            record = _known_values(number, problem)
            if isinstance(record, Problem):
                report.add([record])
                report.rows_rejected += 1
                continue
            seen |= record.keys()
            rows.add(number, {name: _json_text(record.get(name)) for name in COLUMNS})
    if rows.records == 0:
        report.add([_empty_file()])
        return None
    report.rows_read = rows.records
    rows.columns = [name for name in COLUMNS if name in seen]
    return rows


def _known_values(line: int, record: dict[str, object]) -> Problem | dict[str, object]:
    """The values of the known columns, by their names (keys are read as a header's names
    are: blanks around them and case do not count); two keys naming one is a problem."""
    known: dict[str, object] = {}
    for key, value in record.items():
        name = key.strip().lower()
        if name in known:
            message = f"the keys of the line name {name} twice"
            return Problem(JsonProblemType.DUPLICATE_KEY, line, name, key, message)
        if name in COLUMNS:
            known[name] = value
    return known


def _json_problem(line: int, text: str | None) -> Problem | dict[str, object]:
    """The object on a line, or the problem that it is not one (`dices_cli.json_lines`)."""
    if text is None:
        return _record_too_long(line)
    shown = text.strip()[:SHOWN_VALUE_CHARS].encode("utf-8", "backslashreplace").decode()
    try:
        record = parsed(text)
    except JsonLineError as error:
        if error.type is JsonProblemType.INVALID_JSON:
            return Problem(PredictionProblemType.INVALID_JSON, line, None, shown, error.message)
        return Problem(error.type, line, None, error.value, error.message)
    if not isinstance(record, dict):
        message = "the line is JSON but not an object ({...}) of named values"
        return Problem(PredictionProblemType.INVALID_JSON, line, None, shown, message)
    return record


def _parquet_rows(source: Source, max_size: int, report: Report) -> _Rows | None:
    import polars as pl

    parquet = parquet_file(source, max_size)
    positions = _header(parquet.schema_arrow.names, None, report)
    rows = _Rows([name for name in COLUMNS if name in positions])
    if not report.ok:
        return rows
    names = [parquet.schema_arrow.names[positions[name]] for name in rows.columns]
    first = 2
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=names):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        try:
            cells = frame.select(
                pl.col(given).cast(pl.String).alias(name)
                for given, name in zip(names, rows.columns, strict=True)
            )
        except pl.exceptions.PolarsError as error:
            raise DicesError(
                f"{source.name}: a column holds values that are neither text nor numbers ({error})"
            ) from error
        rows.add_frame(first, cells)
        first += cells.height
    rows.records = report.rows_read = first - 2
    return rows


# --- validation: every problem of the cells, as records ---------------------------------------

_PROBLEM_SCHEMA = ("type", "line", "column", "value", "message")


def _shown(cell: pl.Expr) -> pl.Expr:
    """A cell for a message: its first SHOWN_CHARS characters and "..." when longer."""
    import polars as pl

    return (
        pl.when(cell.str.len_chars() > SHOWN_CHARS)
        .then(cell.str.slice(0, SHOWN_CHARS) + "...")
        .otherwise(cell)
    )


def _validated(
    raw: pl.DataFrame,
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    report: Report,
    kind: ItemKind,
) -> pl.DataFrame:
    """The typed frame; every problem of the cells goes into `report`, in file order."""
    import polars as pl

    cells = raw.with_columns(pl.col(c).str.strip_chars() for c in raw.columns if c != LINE)
    for name in COLUMNS:
        if name not in cells.columns:
            cells = cells.with_columns(pl.lit(None, pl.String).alias(name))
    label = cells.get_column(LABEL).str.to_lowercase()
    numbers = {
        name: cells.get_column(name).cast(pl.Float64, strict=False) for name in PROBABILITIES
    }
    labels = label.replace_strict(kind.labels, default=None, return_dtype=pl.String)
    if one_means is not None:
        one, zero = ONE_MEANS[one_means]
        labels = labels.fill_null(
            label.replace_strict(
                dict.fromkeys(ONE_OR_TRUE, one) | dict.fromkeys(ZERO_OR_FALSE, zero),
                default=None,
                return_dtype=pl.String,
            )
        )
    typed = pl.DataFrame(
        {
            LINE: cells.get_column(LINE),
            MODEL: cells.get_column(MODEL).fill_null(DEFAULT_MODEL)
            if MODEL not in raw.columns
            else cells.get_column(MODEL),
            DATASET: pl.repeat(next(iter(datasets)), cells.height, dtype=pl.String, eager=True)
            if DATASET not in raw.columns
            else cells.get_column(DATASET).replace_strict(
                {name: name for name in kind.datasets}, default=None, return_dtype=pl.String
            ),
            ITEM_ID: cells.get_column(ITEM_ID)
            if kind.text_ids
            else cells.get_column(ITEM_ID).cast(pl.Int64, strict=False),
            LABEL: labels,
            **numbers,
            PERSONA: cells.get_column(PERSONA),
        }
    )
    present = [name for name in raw.columns if name != LINE]
    both, checks = _checks(cells, typed, present, datasets, one_means, kind)
    _report(both, checks, report)
    return typed.drop(LINE)


@dataclass(frozen=True)
class _Check:
    """A problem found where `when` holds, as Polars expressions over the checked frame."""

    order: int  # of the column, so that a line's problems are reported left to right
    when: pl.Expr
    type: ProblemType | PredictionProblemType
    column: str | None
    value: pl.Expr
    message: pl.Expr


def _report(both: pl.DataFrame, checks: list[_Check], report: Report) -> None:
    """Every problem the `checks` find in `both` into `report`, in file order: the first
    records kept (up to MAX_KEPT_PROBLEMS in all), the others counted, so that a file of
    millions of bad rows never holds a message for each."""
    import polars as pl

    flags = both.select(
        pl.col(LINE), *(c.when.fill_null(False).alias(str(i)) for i, c in enumerate(checks))
    )
    bad = flags.select(pl.any_horizontal(pl.exclude(LINE))).to_series()
    totals = dict(zip(range(len(checks)), flags.drop(LINE).sum().row(0), strict=True))
    report.rows_rejected += int(bad.sum())
    room = max(MAX_KEPT_PROBLEMS - len(report.problems), 0)
    shown = both.filter(bad).head(room)  # every kept problem is on one of these rows
    records = (
        pl.concat(
            [
                shown.filter(check.when).select(
                    pl.col(LINE),
                    pl.lit(check.order).alias("order"),
                    pl.lit(i).alias("check"),
                    check.value.cast(pl.String).str.slice(0, SHOWN_VALUE_CHARS).alias("value"),
                    check.message.alias("message"),
                )
                for i, check in enumerate(checks)
            ]
        )
        .sort(LINE, "order")
        .head(room)
    )
    for line, _, i, value, message in records.iter_rows():
        check = checks[i]
        report.add([Problem(check.type, line, check.column, value, message)])
    kept = dict(records.group_by("check").len().iter_rows())
    for i, check in enumerate(checks):
        report.count_not_kept(check.type, Severity.ERROR, totals[i] - kept.get(i, 0))


def _checks(
    cells: pl.DataFrame,
    typed: pl.DataFrame,
    present: list[str],
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
) -> tuple[pl.DataFrame, list[_Check]]:
    """The frame to check (the `cells` as given, columns named raw_*, beside them `typed`)
    and every check on it; `present` are the file's known columns."""
    import polars as pl

    first_line, three = pl.col("first_line"), pl.col("gives_p_unsure")
    # Columns over several rows are computed here, on every row: the checks run again on
    # the rows with problems only (`_report`), where a window would see those alone.
    both = pl.concat([cells.rename(lambda c: f"raw_{c}"), typed], how="horizontal").with_columns(
        pl.col(LINE).min().over(MODEL, DATASET, ITEM_ID, PERSONA).alias("first_line"),
        # p_unsure is each model's choice: a model that gives it on no row predicts two shares.
        pl.col(f"raw_{P_UNSURE}").is_not_null().any().over(MODEL).alias("gives_p_unsure"),
    )

    def raw(name: str) -> pl.Expr:
        return pl.col(f"raw_{name}")

    check = _Check

    valid_id = pl.col(ITEM_ID).is_not_null()
    named = [name for name in datasets if name is not None]
    valid_dataset = pl.col(DATASET).is_not_null()
    # A row's item is looked up among its dataset's (among the one dataset's, unnamed).
    unknown = pl.lit(False)  # a row of no dataset evaluated: that is its problem
    for name, item_ids in datasets.items():
        id_type = pl.String if kind.text_ids else pl.Int64
        known = pl.Series(sorted(set(item_ids)), dtype=id_type).implode()
        ours = pl.lit(True) if name is None else pl.col(DATASET) == name
        unknown = pl.when(ours).then(~pl.col(ITEM_ID).is_in(known)).otherwise(unknown)
    found = [
        check(
            0,
            raw(MODEL).is_null() if MODEL in present else pl.lit(False),
            ProblemType.MISSING_VALUE,
            MODEL,
            pl.lit(None),
            pl.lit("the row names no model"),
        ),
        check(
            1,
            raw(DATASET).is_null() if DATASET in present else pl.lit(False),
            ProblemType.MISSING_VALUE,
            DATASET,
            pl.lit(None),
            pl.lit("the row names no dataset"),
        ),
        check(
            1,
            raw(DATASET).is_not_null() & ~valid_dataset,
            ProblemType.NOT_IN_ENUM,
            DATASET,
            raw(DATASET),
            pl.format(
                f"'{{}}' is not a dataset: give {' or '.join(kind.datasets)}",
                _shown(raw(DATASET)),
            ),
        ),
        check(
            1,
            valid_dataset & ~pl.col(DATASET).is_in(named) if named else pl.lit(False),
            ProblemType.NOT_IN_ENUM,
            DATASET,
            raw(DATASET),
            pl.format(
                "the row is for DICES-{}, which is not evaluated (DICES-{})",
                pl.col(DATASET),
                pl.lit(" and DICES-".join(named)),
            ),
        ),
        check(
            2,
            raw(ITEM_ID).is_null(),
            ProblemType.MISSING_VALUE,
            ITEM_ID,
            pl.lit(None),
            pl.lit("the row has no item_id"),
        ),
        check(
            2,
            raw(ITEM_ID).is_not_null() & ~valid_id,
            ProblemType.NOT_AN_INTEGER,
            ITEM_ID,
            raw(ITEM_ID),
            pl.format("'{}' is not an item id (a whole number)", _shown(raw(ITEM_ID))),
        ),
        check(
            2,
            valid_id & unknown,
            PredictionProblemType.UNKNOWN_ITEM,
            ITEM_ID,
            raw(ITEM_ID),
            pl.format(
                f"item {{}} is not {kind.noun}",
                _shown(pl.col(ITEM_ID)) if kind.text_ids else pl.col(ITEM_ID),
            ),
        ),
    ]
    found.append(
        check(
            2,
            valid_id & (pl.col(LINE) != first_line),
            PredictionProblemType.DUPLICATE_PREDICTION,
            ITEM_ID,
            raw(ITEM_ID),
            pl.format(
                "model {} already has a prediction for item {}{} (line {})",
                _shown(pl.col(MODEL)),
                pl.col(ITEM_ID),
                pl.when(pl.col(PERSONA).is_null())
                .then(pl.lit(""))
                .otherwise(pl.format(" as {}", _shown(pl.col(PERSONA)))),
                first_line,
            ),
        )
    )
    numeric_label = raw(LABEL).str.to_lowercase().is_in([*ONE_OR_TRUE, *ZERO_OR_FALSE])
    bad_label = raw(LABEL).is_not_null() & pl.col(LABEL).is_null()
    ambiguous = bad_label & numeric_label if one_means is None else pl.lit(False)
    found += [
        check(
            3,
            ambiguous,
            PredictionProblemType.AMBIGUOUS_LABEL,
            LABEL,
            raw(LABEL),
            pl.format(
                "'{}' is ambiguous as a label: numeric and true/false labels need to be told "
                "whether 1 (true) means unsafe or safe",
                raw(LABEL),
            ),
        ),
        check(
            3,
            bad_label & ~ambiguous,
            ProblemType.NOT_IN_ENUM,
            LABEL,
            raw(LABEL),
            pl.format(
                f"'{{}}' is not a label: {kind.labels_hint}",
                _shown(raw(LABEL)),
            ),
        ),
    ]
    for order, name in enumerate(PROBABILITIES, start=4):
        number = pl.col(name)
        not_number = raw(name).is_not_null() & (number.is_null() | number.is_nan())
        found += [
            check(
                order,
                not_number,
                PredictionProblemType.NOT_A_NUMBER,
                name,
                raw(name),
                pl.format("'{}' is not a number", _shown(raw(name))),
            ),
            check(
                order,
                ~not_number & ((number < 0) | (number > 1)),
                ProblemType.OUT_OF_RANGE,
                name,
                raw(name),
                pl.format("{} is outside [0, 1]; {} is a probability", raw(name), pl.lit(name)),
            ),
        ]
    given = [name for name in DISTRIBUTION if name in present]
    if given:
        any_given = pl.any_horizontal(raw(name).is_not_null() for name in given)
        found += [
            check(
                8,
                any_given & raw(name).is_null() & (three if name == P_UNSURE else pl.lit(True)),
                ProblemType.MISSING_VALUE,
                name,
                pl.lit(None),
                pl.lit(
                    f"the row gives a distribution without {name}"
                    + (", which other rows of its model give" if name == P_UNSURE else "")
                ),
            )
            for name in given
        ]
        total = pl.sum_horizontal(pl.col(name) for name in given)
        in_range = pl.all_horizontal(
            pl.col(name).is_between(0, 1) | (~three if name == P_UNSURE else pl.lit(False))
            for name in given
        )
        two, all_three = " + ".join(DISTRIBUTION[:2]), " + ".join(DISTRIBUTION)
        shares = pl.when(three).then(pl.lit(all_three)).otherwise(pl.lit(two))
        found.append(
            check(
                9,
                in_range & ((total - 1).abs() > SUM_TOLERANCE),
                PredictionProblemType.BAD_DISTRIBUTION,
                None,
                total,
                pl.format("{} sum to {}, not 1", shares, total),
            )
        )
    predictions = [name for name in (LABEL, SCORE, *given) if name in present]
    found.append(
        check(
            10,
            pl.all_horizontal(raw(name).is_null() for name in predictions),
            ProblemType.MISSING_VALUE,
            None,
            pl.lit(None),
            pl.lit(f"the row gives no prediction: {' and '.join(predictions)} empty"),
        )
    )
    return both, found
