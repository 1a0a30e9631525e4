"""The compute step of `dices query group-disagreement`: per-group counts in, one row per
conversation out.

sql/group-disagreement.sql gives one row per conversation and group (dataset, item_id, the
group columns, n_no, n_yes, n_unsure), sorted so that a conversation's rows are consecutive
and its groups in the columns' order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from dices_cli.metrics.independence import independence_tests
from dices_cli.metrics.permutation import benjamini_hochberg
from dices_cli.output import Table

COLUMNS = (
    "dataset",
    "item_id",
    "groups",
    "ratings",
    "highest_group",
    "highest_share_yes",
    "lowest_group",
    "lowest_share_yes",
    "gap",
    "test",
    "p_value",
    "p_adjusted",
)
NUMERIC = (False, True, True, True, False, True, False, True, True, False, True, True)
# Gaps equal to this many decimals are ties: 3/10 - 1/10 and 2/10 differ in the last bit.
GAP_DECIMALS = 12
MISSING = "(missing)"  # a group value the data lacks, in a group's name
COUNT_COLUMNS = ("n_no", "n_yes", "n_unsure")  # the answer categories' order in ANSWER


def _optional(values: np.ndarray) -> list[float | None]:
    """Python floats, None for NaN."""
    return [None if math.isnan(v) else v for v in values.tolist()]


def _cells(column: pa.ChunkedArray) -> list[Any]:
    """A column's values; an ENUM's (an Arrow dictionary's) from its codes, which is ten
    times faster than to_pylist. (Not numpy: pyarrow's conversions import pandas, 0.2 s.)"""
    if not pa.types.is_dictionary(column.type):
        return column.to_pylist()
    encoded = column.unify_dictionaries().combine_chunks()
    values = encoded.dictionary.to_pylist()
    return [None if code is None else values[code] for code in encoded.indices.to_pylist()]


def _first_where(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per conversation, the first row (in row order) where `mask` holds."""
    rows = np.where(mask, np.arange(len(mask)), len(mask))
    return np.minimum.reduceat(rows, starts)


def group_disagreement(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per conversation: its extreme groups by share of Yes, their gap, and a test
    of independence of answer and group, sorted by the gap, largest first."""
    if table.num_rows == 0:
        return Table(list(COLUMNS), list(NUMERIC), [])
    group_values = [
        _cells(table.column(name)) for name in table.column_names if name in parameters["by"]
    ]
    datasets = np.array(table.column("dataset").to_pylist())
    items = np.array(table.column("item_id").to_pylist(), dtype=np.int64)
    counts = np.column_stack(
        [np.array(table.column(name).to_pylist(), dtype=np.int64) for name in COUNT_COLUMNS]
    )
    new = (datasets[1:] != datasets[:-1]) | (items[1:] != items[:-1])
    starts = np.flatnonzero(np.concatenate([[True], new]))
    conversation = np.cumsum(np.concatenate([[0], new]))

    ratings = counts.sum(axis=1)
    share_yes = counts[:, 1] / ratings
    highest = np.maximum.reduceat(share_yes, starts)
    lowest = np.minimum.reduceat(share_yes, starts)
    highest_row = _first_where(share_yes == highest[conversation], starts)
    lowest_row = _first_where(share_yes == lowest[conversation], starts)

    p_values, tests = independence_tests(counts, starts)
    adjusted = np.full(len(starts), np.nan)
    for name in np.unique(datasets):
        mine = datasets[starts] == name
        adjusted[mine] = benjamini_hochberg(p_values[mine])

    def label(row: int) -> str:
        return " & ".join(
            MISSING if column[row] is None else str(column[row]) for column in group_values
        )

    rows = list(
        zip(
            datasets[starts].tolist(),
            items[starts].tolist(),
            np.diff(np.append(starts, len(items))).tolist(),
            np.add.reduceat(ratings, starts).tolist(),
            map(label, highest_row.tolist()),
            highest.tolist(),
            map(label, lowest_row.tolist()),
            lowest.tolist(),
            (highest - lowest).tolist(),
            tests.tolist(),
            _optional(p_values),
            _optional(adjusted),
            strict=True,
        )
    )
    gap = COLUMNS.index("gap")
    rows.sort(key=lambda row: (-round(row[gap], GAP_DECIMALS), row[0], row[1]))
    return Table(list(COLUMNS), list(NUMERIC), rows)
