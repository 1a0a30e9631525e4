"""Typing and validating the String cells of a predictions file a batch at a time, its
problems as records."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING

from dices_cli.evaluate.predictions.checks import (
    BAD,
    SHARES_GIVEN,
    UNSURE_GIVEN,
    Check,
    row_checks,
    whole_file_checks,
)
from dices_cli.evaluate.predictions.columns import (
    COLUMNS,
    DATASET,
    DEFAULT_MODEL,
    DISTRIBUTION,
    ITEM_ID,
    LABEL,
    LINE,
    MODEL,
    ONE_MEANS,
    ONE_OR_TRUE,
    P_UNSURE,
    PERSONA,
    PROBABILITIES,
    ZERO_OR_FALSE,
    ItemKind,
    NotSimple,
)
from dices_cli.problems import MAX_KEPT_PROBLEMS, SHOWN_VALUE_CHARS, Problem, Report, Severity

if TYPE_CHECKING:
    import polars as pl


# The cells (LINE and String cells of known columns) of the lines given, as the record
# reader spells them, a batch at a time.
Respelling = Callable[[list[int]], Iterator["pl.DataFrame"]]


def _records(both: pl.DataFrame, first: int, checks: list[Check]) -> pl.DataFrame:
    """The problem records `checks` (numbered from `first`) find in `both`: LINE, order,
    check, value, message; grouped by check."""
    import polars as pl

    return pl.concat(
        both.filter(check.when).select(
            pl.col(LINE),
            pl.lit(check.order).alias("order"),
            pl.lit(first + i).alias("check"),
            check.value.cast(pl.String).str.slice(0, SHOWN_VALUE_CHARS).alias("value"),
            check.message.alias("message"),
        )
        for i, check in enumerate(checks)
    )


class Validation:
    """Typed rows and the problems of their cells, a batch of String cells at a time, so
    that only the typed rows of a file are held, never its text, nor more than
    MAX_KEPT_PROBLEMS problem records. The checks over several rows (a duplicate
    prediction, a distribution's third share) run once every batch is in (`finish`).

    `present`: the file's known columns."""

    def __init__(
        self,
        present: list[str],
        datasets: Mapping[str | None, Collection[int] | Collection[str]],
        one_means: str | None,
        kind: ItemKind,
    ) -> None:
        self.present, self.datasets, self.one_means, self.kind = present, datasets, one_means, kind
        self.row_checks = row_checks(present, datasets, one_means, kind)
        self.checks = [*self.row_checks, *whole_file_checks(present)]
        self.typed: list[pl.DataFrame] = []
        self.found: list[pl.DataFrame] = []  # the first problems found (records, as frames)
        self.totals = [0] * len(self.checks)
        self.rejected = 0

    def add(self, raw: pl.DataFrame) -> None:
        """A batch of rows: LINE and String cells of some of the known columns."""
        import polars as pl

        both = self._both(raw)
        typed_columns = both.columns[len(COLUMNS) :]
        bad = self._find(both, 0, self.row_checks)
        shares = [f"raw_{name}" for name in DISTRIBUTION if name in self.present]
        helpers: list[pl.Expr | pl.Series] = [bad.alias(BAD)]
        if shares:
            helpers += [
                pl.any_horizontal(pl.col(shares).is_not_null()).alias(SHARES_GIVEN),
                pl.col(f"raw_{P_UNSURE}").is_not_null().alias(UNSURE_GIVEN),
            ]
        self.typed.append(both.select(*typed_columns, *helpers))

    def _both(self, raw: pl.DataFrame) -> pl.DataFrame:
        """The cells as given (stripped; raw_*, one for each known column), then the typed
        columns (and LINE), of a batch as `add` takes it."""
        import polars as pl

        cells = raw.with_columns(pl.col(c).str.strip_chars() for c in raw.columns if c != LINE)
        cells = cells.with_columns(
            pl.lit(None, pl.String).alias(name) for name in COLUMNS if name not in cells.columns
        )
        typed = _typed(cells, self.present, self.datasets, self.one_means, self.kind)
        given = cells.select(pl.col(name).alias(f"raw_{name}") for name in COLUMNS)
        return pl.concat([given, typed], how="horizontal")

    def _find(self, both: pl.DataFrame, first: int, checks: list[Check]) -> pl.Series:
        """Count and keep the problems `checks` (numbered from `first`) find in `both`; the
        rows with one."""
        import polars as pl

        flags = both.select(c.when.fill_null(False).alias(str(i)) for i, c in enumerate(checks))
        bad = flags.select(pl.any_horizontal(pl.all())).to_series()
        for i, total in enumerate(flags.sum().row(0)):
            self.totals[first + i] += int(total)
        shown = both.filter(bad).head(MAX_KEPT_PROBLEMS)  # every kept problem is on these
        self.found = [
            pl.concat([*self.found, _records(shown, first, checks)])
            .sort(LINE, "order", "check")
            .head(MAX_KEPT_PROBLEMS)
        ]
        return bad

    def finish(self, report: Report, respell: Respelling | None = None) -> pl.DataFrame:
        """The typed frame of every row added; every problem into `report`: the first
        records kept (up to MAX_KEPT_PROBLEMS in all, in file order), the others counted,
        so that a file of millions of bad rows never holds a message for each.

        `respell`, when the cells were read otherwise than the record reader reads them
        (PyArrow spells the JSON number 2.0 as "2", Python as "2.0"): the cells of the
        lines it is given as the record reader spells them, whose records then replace the
        values and messages of the checks of one row. Which checks fail does not change
        (the typed values are the same), nor do the records of checks over several rows,
        which quote typed values only."""
        import polars as pl

        typed = pl.concat(self.typed, rechunk=False) if self.typed else _typed_schema_frame()
        self.typed = []
        earlier = typed.get_column(BAD)  # rows with a problem of their own
        first = len(self.row_checks)  # the duplicate check, then the distribution's
        suspects = _suspects(typed)
        duplicate = self._find(suspects, first, self.checks[first : first + 1])
        duplicates = suspects.filter(duplicate & ~suspects.get_column(BAD)).get_column(LINE)
        report.rows_rejected += int(earlier.sum()) + duplicates.len()
        if UNSURE_GIVEN in typed.columns:
            # p_unsure is each model's choice: a model that gives it on no row predicts two
            # shares.
            unsure = typed.filter(UNSURE_GIVEN).get_column(MODEL).unique().implode()
            both = typed.with_columns(pl.col(MODEL).is_in(unsure).alias("gives_p_unsure"))
            bad = self._find(both, first + 1, self.checks[first + 1 :])
            also = bad & ~earlier & ~typed.get_column(LINE).is_in(duplicates.implode())
            report.rows_rejected += int(also.sum())
        room = max(MAX_KEPT_PROBLEMS - len(report.problems), 0)
        records = self.found[0].head(room) if self.found else None
        if records is not None and respell is not None:
            records = self._respelled(records, respell)
        kept: dict[int, int] = {}
        if records is not None:
            for line, _, i, value, message in records.iter_rows():
                check = self.checks[i]
                report.add([Problem(check.type, line, check.column, value, message)])
                kept[i] = kept.get(i, 0) + 1
        for i, check in enumerate(self.checks):
            report.count_not_kept(check.type, Severity.ERROR, self.totals[i] - kept.get(i, 0))
        return typed.select(MODEL, DATASET, ITEM_ID, LABEL, *PROBABILITIES, PERSONA)

    def _respelled(self, records: pl.DataFrame, respell: Respelling) -> pl.DataFrame:
        """`records` with the value and message of each check of one row as found in the
        cells `respell` gives of its line; NotSimple if one is not found there."""
        import polars as pl

        own = pl.col("check") < len(self.row_checks)
        lines = records.filter(own).get_column(LINE).unique().sort().to_list()
        spelled = {
            (line, check): (value, message)
            for cells in respell(lines)
            for line, _, check, value, message in _records(
                self._both(cells), 0, self.row_checks
            ).iter_rows()
        }
        rows = []
        for line, order, check, value, message in records.iter_rows():
            if check < len(self.row_checks):
                if (line, check) not in spelled:
                    raise NotSimple  # the readers disagree: the record reader decides
                value, message = spelled[line, check]
            rows.append((line, order, check, value, message))
        return pl.DataFrame(rows, schema=records.schema, orient="row")


def _suspects(typed: pl.DataFrame) -> pl.DataFrame:
    """The rows that may repeat another's model, dataset and item, with first_line, the
    first line of their three. Rows are told apart by a 64-bit hash of the three, and only
    rows whose hash repeats (duplicates, and hash collisions, which the grouping tells from
    them) are grouped by the three: grouping every row by the three takes several times
    the memory of the hash (bench/predictions.py). (Expressions over `typed` itself, not a
    Series beside it: a mask chunked otherwise than the frame made Polars copy the frame.)"""
    import polars as pl

    key = pl.struct(MODEL, DATASET, ITEM_ID, PERSONA).hash()
    keys = typed.select(key).to_series()
    repeated = keys.filter(~keys.is_first_distinct()).unique().implode()
    return typed.filter(key.is_in(repeated)).with_columns(
        pl.col(LINE).min().over(MODEL, DATASET, ITEM_ID, PERSONA).alias("first_line")
    )


def _typed_schema_frame() -> pl.DataFrame:
    """No rows, with the columns of a typed batch."""
    import polars as pl

    strings = dict.fromkeys((MODEL, DATASET, ITEM_ID, LABEL, PERSONA), pl.String)
    numbers = dict.fromkeys(PROBABILITIES, pl.Float64)
    return pl.DataFrame(schema={LINE: pl.Int64, **strings, **numbers, BAD: pl.Boolean})


def _typed(
    cells: pl.DataFrame,
    present: list[str],
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
) -> pl.DataFrame:
    """The typed columns (and LINE) of stripped String `cells`."""
    import polars as pl

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
    return pl.DataFrame(
        {
            LINE: cells.get_column(LINE),
            MODEL: cells.get_column(MODEL).fill_null(DEFAULT_MODEL)
            if MODEL not in present
            else cells.get_column(MODEL),
            DATASET: pl.repeat(next(iter(datasets)), cells.height, dtype=pl.String, eager=True)
            if DATASET not in present
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
