"""The checks of a predictions file's cells, as Polars expressions: those of one row at a
time, then those that look at other rows."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.evaluate.predictions.columns import (
    DATASET,
    DISTRIBUTION,
    ITEM_ID,
    LABEL,
    LINE,
    MODEL,
    ONE_OR_TRUE,
    P_UNSURE,
    PERSONA,
    PROBABILITIES,
    SCORE,
    SUM_TOLERANCE,
    ZERO_OR_FALSE,
    ItemKind,
)
from dices_cli.problems import SHOWN_CHARS, PredictionProblemType, ProblemType

if TYPE_CHECKING:
    import polars as pl


# Helper columns of the checked frame: a row with a problem of its own, one giving some share
# of a distribution, one giving p_unsure.
BAD, SHARES_GIVEN, UNSURE_GIVEN = "_bad", "_shares_given", "_p_unsure_given"


def _shown(cell: pl.Expr) -> pl.Expr:
    """A cell for a message: its first SHOWN_CHARS characters and "..." when longer."""
    import polars as pl

    return (
        pl.when(cell.str.len_chars() > SHOWN_CHARS)
        .then(cell.str.slice(0, SHOWN_CHARS) + "...")
        .otherwise(cell)
    )


@dataclass(frozen=True)
class Check:
    """A problem found where `when` holds, as Polars expressions over the checked frame."""

    order: int  # of the column, so that a line's problems are reported left to right
    when: pl.Expr
    type: ProblemType | PredictionProblemType
    column: str | None
    value: pl.Expr
    message: pl.Expr


def row_checks(
    present: list[str],
    datasets: Mapping[str | None, Collection[int] | Collection[str]],
    one_means: str | None,
    kind: ItemKind,
) -> list[Check]:
    """The checks of one row at a time, over the cells as given (stripped; columns named
    raw_*) beside the typed ones; `present` are the file's known columns."""
    import polars as pl

    def raw(name: str) -> pl.Expr:
        return pl.col(f"raw_{name}")

    check = Check

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
                any_given & raw(name).is_null(),
                ProblemType.MISSING_VALUE,
                name,
                pl.lit(None),
                pl.lit(f"the row gives a distribution without {name}"),
            )
            for name in given
            if name != P_UNSURE  # whether a row lacks it depends on its model's other rows
        ]
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
    return found


def whole_file_checks(present: list[str]) -> list[Check]:
    """The checks that look at other rows, over typed rows: first the duplicate (over the
    `_suspects`, with first_line), then a distribution's (over every row, with
    gives_p_unsure: whether the row's model gives p_unsure on any row)."""
    import polars as pl

    first_line, three = pl.col("first_line"), pl.col("gives_p_unsure")
    found = [
        Check(
            2,
            pl.col(ITEM_ID).is_not_null() & (pl.col(LINE) != first_line),
            PredictionProblemType.DUPLICATE_PREDICTION,
            ITEM_ID,
            pl.col(ITEM_ID),
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
    ]
    given = [name for name in DISTRIBUTION if name in present]
    if not given:
        return found
    if P_UNSURE in given:
        found.append(
            Check(
                8,
                pl.col(SHARES_GIVEN) & ~pl.col(UNSURE_GIVEN) & three,
                ProblemType.MISSING_VALUE,
                P_UNSURE,
                pl.lit(None),
                pl.lit(
                    f"the row gives a distribution without {P_UNSURE}, which other rows of "
                    "its model give"
                ),
            )
        )
    total = pl.sum_horizontal(pl.col(name) for name in given)
    in_range = pl.all_horizontal(
        pl.col(name).is_between(0, 1) | (~three if name == P_UNSURE else pl.lit(False))
        for name in given
    )
    two, all_three = " + ".join(DISTRIBUTION[:2]), " + ".join(DISTRIBUTION)
    shares = pl.when(three).then(pl.lit(all_three)).otherwise(pl.lit(two))
    found.append(
        Check(
            9,
            in_range & ((total - 1).abs() > SUM_TOLERANCE),
            PredictionProblemType.BAD_DISTRIBUTION,
            None,
            total,
            pl.format("{} sum to {}, not 1", shares, total),
        )
    )
    return found
