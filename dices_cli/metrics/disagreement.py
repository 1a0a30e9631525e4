"""The compute step of `dices query group-disagreement`: per-group counts in, one row per
conversation out.

sql/group-disagreement.sql gives one row per conversation and group (dataset, item_id, the
group columns, n_no, n_yes, n_unsure), sorted so that a conversation's rows are consecutive
and its groups in the columns' order. A rater answers a conversation once, so a group's
ratings of a conversation are its raters there.
"""

from __future__ import annotations

import math
import zlib
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
    "groups_left_out",
    "ratings_left_out",
    "highest_group",
    "highest_raters",
    "highest_share_yes",
    "lowest_group",
    "lowest_raters",
    "lowest_share_yes",
    "gap",
    "test",
    "p_value",
    "p_adjusted",
)
NUMERIC = tuple(
    name not in ("dataset", "highest_group", "lowest_group", "test") for name in COLUMNS
)
# Gaps (and adjusted p-values) equal to this many decimals are ties: 3/10 - 1/10 and 2/10
# differ in the last bit.
GAP_DECIMALS = 12
MISSING = "(missing)"  # a group value the data lacks, in a group's name
COUNT_COLUMNS = ("n_no", "n_yes", "n_unsure")  # the answer categories' order in ANSWER


def _optional(values: np.ndarray) -> list[float | None]:
    """Python floats, None for NaN."""
    return [None if math.isnan(v) else v for v in values.tolist()]


def _cells(column: pa.ChunkedArray) -> list[Any]:
    """A column's values; an ENUM's (an Arrow dictionary's) from its codes, which is many
    times faster than to_pylist. (Not numpy: pyarrow's conversions import pandas.)"""
    if not pa.types.is_dictionary(column.type):
        return column.to_pylist()
    encoded = column.unify_dictionaries().combine_chunks()
    values = encoded.dictionary.to_pylist()
    return [None if code is None else values[code] for code in encoded.indices.to_pylist()]


def _first_where(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per conversation, the first row (in row order) where `mask` holds; the row count
    where it holds nowhere."""
    rows = np.where(mask, np.arange(len(mask)), len(mask))
    return np.minimum.reduceat(rows, starts)


def dataset_rng(seed: int, dataset: str) -> np.random.Generator:
    """The random numbers of one dataset's Monte Carlo tests: from the seed and the
    dataset's name, so that a dataset's p-values do not depend on which others are asked for."""
    return np.random.default_rng([seed, zlib.crc32(dataset.encode())])


def group_disagreement(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per conversation: its extreme groups by share of Yes, their gap, and a test
    of independence of answer and group, over the groups of at least `min_raters` raters
    there; sorted by adjusted p-value (smallest first, none last), then gap (largest first).
    """
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

    raters = counts.sum(axis=1)
    compared = raters >= parameters["min_raters"]
    groups = np.add.reduceat(compared, starts)
    ratings = np.add.reduceat(np.where(compared, raters, 0), starts)
    share_yes = counts[:, 1] / raters
    highest = np.maximum.reduceat(np.where(compared, share_yes, -np.inf), starts)
    lowest = np.minimum.reduceat(np.where(compared, share_yes, np.inf), starts)
    highest_row = _first_where(compared & (share_yes == highest[conversation]), starts)
    lowest_row = _first_where(compared & (share_yes == lowest[conversation]), starts)

    p_values = np.full(len(starts), np.nan)
    tests = np.full(len(starts), None, dtype=object)
    adjusted = np.full(len(starts), np.nan)
    for name in np.unique(datasets):
        its_compared = compared & (datasets == name)
        numbers, first = np.unique(conversation[its_compared], return_index=True)
        if len(numbers):
            p_values[numbers], tests[numbers] = independence_tests(
                counts[its_compared],
                first,
                parameters["permutations"],
                dataset_rng(parameters["seed"], name),
            )
        mine = datasets[starts] == name
        adjusted[mine] = benjamini_hochberg(p_values[mine])

    def group(row: int) -> str | None:
        """The group's name; None for no group (a conversation with none compared)."""
        if row == len(datasets):
            return None
        return " & ".join(
            MISSING if column[row] is None else str(column[row]) for column in group_values
        )

    def size(row: int) -> int | None:
        return None if row == len(datasets) else int(raters[row])

    nothing = groups == 0
    rows = list(
        zip(
            datasets[starts].tolist(),
            items[starts].tolist(),
            groups.tolist(),
            ratings.tolist(),
            (np.diff(np.append(starts, len(items))) - groups).tolist(),
            (np.add.reduceat(raters, starts) - ratings).tolist(),
            map(group, highest_row.tolist()),
            map(size, highest_row.tolist()),
            _optional(np.where(nothing, np.nan, highest)),
            map(group, lowest_row.tolist()),
            map(size, lowest_row.tolist()),
            _optional(np.where(nothing, np.nan, lowest)),
            _optional(np.where(nothing, np.nan, highest - lowest)),
            tests.tolist(),
            _optional(p_values),
            _optional(adjusted),
            strict=True,
        )
    )
    rows.sort(key=_rank)
    return Table(list(COLUMNS), list(NUMERIC), rows)


P_ADJUSTED, GAP = COLUMNS.index("p_adjusted"), COLUMNS.index("gap")


def _rank(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The rows' order: adjusted p-value, smallest first; then gap, largest first (either
    missing last; equal to `GAP_DECIMALS` decimals is a tie); then dataset and item_id."""
    p_adjusted, gap = row[P_ADJUSTED], row[GAP]
    return (
        p_adjusted is None,
        0.0 if p_adjusted is None else round(p_adjusted, GAP_DECIMALS),
        gap is None,
        0.0 if gap is None else -round(gap, GAP_DECIMALS),
        row[0],
        row[1],
    )
