"""The intervals and tests of `dices_cli.metrics.shares`, made from sums the SQL reduces.

`shares.compute` takes every rating of a row in lists (its rater, conversation and Yes)
and sums them in numpy. A declared dataset's `label-by-group` (10^7 ratings and more)
instead has DuckDB reduce them: one row per group with its counts and a struct column
SUMS holding

    rater_yes, rater_ratings  each rater's Yes and ratings, the raters in order of id:
                              what the permutation test relabels
    r_yy, r_yn, r_nn          over the group's raters, the sums of Y_r^2, Y_r N_r, N_r^2
                              (Y_r its Yes, N_r its ratings)
    c_yy, c_yn, c_nn          the same over the group's items (conversations)
    x_yy, x_yn, x_ny, x_nn    over the group's items, the sums of Y_c Y'_c, Y_c N'_c,
                              N_c Y'_c and N_c N'_c, where Y'_c, N'_c are the item's Yes and
                              ratings in the whole family (every group)
    k_yy, k_yn, k_nn          the same as r_ over rater x item cells
    f_items, f_yy, f_yn, f_nn the family's items and the sums of Y'_c^2, Y'_c N'_c, N'_c^2

(a Wilson interval needs none but the counts: the item and cell sums are then empty, the
raters' sums kept for the permutation test). A residual's
squared cluster sums are then exact in integers: over clusters k of a side with Y Yes of
n ratings, sum_k ((Y_k - Y/n N_k) / n)^2 = (n^2 yy - 2 n Y yn + Y^2 nn) / n^4. The rest of
the family is its totals less the group's; its items' sums follow from the x_ sums.
The figures equal `shares.compute`'s over the same ratings to rounding, and its p-values
exactly: the same raters in the same order are relabelled by the same seed
(tests/queries/test_share_sums.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from dices_cli.metrics.shares import (
    LEVEL,
    MIN_CLUSTERS,
    TEST_COLUMNS,
    Z_95,
    Ends,
    FamilyTest,
    Labellings,
    Relabelled,
    Variance,
    cr1,
    few_clusters,
    logit_ends,
    result_table,
    shown_columns,
    tested,
    wilson_interval,
)
from dices_cli.metrics.student_t import t_quantile
from dices_cli.output import Table

SUMS = "share_sums"  # the struct column of the SQL; the step reads and drops it

# Each family's labellings and its ratings' [labelling, group] sums, by the family's values:
# drawn once, shared by the share's test and the mean's (`dices_cli.metrics.mean_sums`).
Draws = dict[tuple[Any, ...], tuple[Labellings, NDArray[np.float64]]]


@dataclass(frozen=True)
class Sums:
    """A side's Yes and ratings and its sums of squares and products (yy, yn, nn) over
    its raters, its items and its rater x item cells."""

    yes: int
    ratings: int
    raters: int
    items: int
    by_rater: tuple[int, int, int]
    by_item: tuple[int, int, int]
    by_cell: tuple[int, int, int]

    def squares(self, sums: tuple[int, int, int]) -> float:
        """The squared sums of the side's residuals (Y_k - share N_k) / ratings over the
        clusters whose `sums` (yy, yn, nn) are given: exact, then divided."""
        yy, yn, nn = sums
        y, n = self.yes, self.ratings
        return (n * n * yy - 2 * n * y * yn + y * y * nn) / n**4

    def plus(self, other: Sums, sign: int = 1) -> Sums:
        """The sums of two sides together (sign 1), or this less `other` (sign -1)."""

        def add(a: tuple[int, ...], b: tuple[int, ...]) -> Any:
            return tuple(x + sign * z for x, z in zip(a, b, strict=True))

        yes, ratings, raters, items = add(
            (self.yes, self.ratings, self.raters, self.items),
            (other.yes, other.ratings, other.raters, other.items),
        )
        return Sums(
            yes,
            ratings,
            raters,
            items,
            add(self.by_rater, other.by_rater),
            add(self.by_item, other.by_item),
            add(self.by_cell, other.by_cell),
        )


def _group(row: dict[str, Any], values: dict[str, list[Any]], r: int) -> Sums:
    """Row `r`'s group: its counts (shown) and its SUMS."""

    def three(prefix: str) -> tuple[int, int, int]:
        return (row[f"{prefix}_yy"] or 0, row[f"{prefix}_yn"] or 0, row[f"{prefix}_nn"] or 0)

    return Sums(
        values["n_positive"][r],
        values["ratings"][r],
        values["raters"][r],
        values["items"][r],
        three("r"),
        three("c"),
        three("k"),
    )


def row_interval(side: Sums, method: str) -> tuple[float, float, str]:
    """A group's 95% interval of its share of Yes and its note, as `shares.row_interval`."""
    if side.ratings == 0:
        return math.nan, math.nan, "no ratings"
    share = side.yes / side.ratings
    if method == "wilson":
        low, high = wilson_interval(np.array([float(side.yes)]), np.array([float(side.ratings)]))
        return float(low[0]), float(high[0]), ""
    note = few_clusters(side.raters, side.items, method)
    if note:
        return math.nan, math.nan, note
    if share in (0.0, 1.0):
        return share, share, "all answers alike"
    return (*logit_ends(share, clustered_variance(side, method)), "")


def clustered_variance(side: Sums, method: str) -> Variance:
    """A group's variance of its Yes share (or mean code) over its ratings: the items'
    CR1 alone (`conversations`), else the raters' and the items' less their cells'
    (two-way, Satterthwaite degrees of freedom)."""
    conversations = cr1(side.squares(side.by_item), side.items)
    if method == "conversations":
        return Variance.of([conversations])
    raters = cr1(side.squares(side.by_rater), side.raters)
    return Variance.of([raters, conversations], side.squares(side.by_cell))


def difference_interval(
    inside: Sums,
    family: Sums,
    cross: tuple[int, int, int, int],
    family_items: tuple[int, int, int, int],
    difference: float,
    method: str,
) -> tuple[float, float]:
    """A group's 95% interval of its share minus the rest's, as
    `shares.difference_interval`: `cross` the group's x_ sums, `family_items` the family's
    items and their sums (f_)."""
    outside = family.plus(inside, -1)
    n_in, n_out = inside.ratings, outside.ratings
    y_in, y_out = inside.yes, outside.yes
    share_in, share_out = y_in / n_in, y_out / n_out
    if method == "wilson":
        half = Z_95 * math.sqrt(
            share_in * (1 - share_in) / n_in + share_out * (1 - share_out) / n_out
        )
        return difference - half, difference + half
    items = family_items[0]
    if method == "clustered" and min(inside.raters, outside.raters) < MIN_CLUSTERS:
        return math.nan, math.nan
    if items < MIN_CLUSTERS:
        return math.nan, math.nan
    conversations = cr1(_item_squares(inside, outside, cross, family_items[1:]), items)
    if method == "conversations":
        variance = Variance.of([conversations])
    else:
        parts = [cr1(side.squares(side.by_rater), side.raters) for side in (inside, outside)]
        cells = inside.squares(inside.by_cell) + outside.squares(outside.by_cell)
        variance = Variance.of([*parts, conversations], cells)
    half = t_quantile(LEVEL, variance.df) * math.sqrt(variance.total)
    return difference - half, difference + half


def _item_squares(
    inside: Sums, outside: Sums, cross: tuple[int, int, int, int], family: tuple[int, int, int]
) -> float:
    """Over the family's items c, the sum of E_c^2 for E_c = A_c / n^2 - B_c / m^2: A_c =
    n Y_c - Y N_c of the group (Y Yes of n ratings), B_c = m Y'_c - Z N'_c of the rest (Z
    of m); exact in integers, then divided."""
    n, y, m, z = inside.ratings, inside.yes, outside.ratings, outside.yes
    c_yy, c_yn, c_nn = inside.by_item
    x_yy, x_yn, x_ny, x_nn = cross
    f_yy, f_yn, f_nn = family
    # the rest's items: the family's sums less the group's
    o_yy, o_yn, o_nn = f_yy - 2 * x_yy + c_yy, f_yn - x_yn - x_ny + c_yn, f_nn - 2 * x_nn + c_nn
    # the group's items times the rest's: Y_c Y'_c, Y_c N'_c, N_c Y'_c, N_c N'_c
    p_yy, p_yn, p_ny, p_nn = x_yy - c_yy, x_yn - c_yn, x_ny - c_yn, x_nn - c_nn
    aa = n * n * c_yy - 2 * n * y * c_yn + y * y * c_nn
    bb = m * m * o_yy - 2 * m * z * o_yn + z * z * o_nn
    ab = n * m * p_yy - n * z * p_yn - y * m * p_ny + y * z * p_nn
    return (m**4 * aa - 2 * n * n * m * m * ab + n**4 * bb) / (n**4 * m**4)


def compute(table: pa.Table, parameters: dict[str, Any], draws: Draws | None = None) -> Table:
    """The SQL's rows without SUMS, with the interval of share_yes, the method that made
    it and its note, and each group's test against the rest of its family (TEST_COLUMNS),
    as `shares.compute` gives them; each family's relabellings from `draws` when another
    test drew them (else drawn and kept there)."""
    method = parameters["interval"]
    by = [name for name in table.column_names if name in parameters.get("by", [])]
    shown, family_columns = shown_columns(table, by, (SUMS,))
    values = shown.values
    sums: list[dict[str, Any]] = table.column(SUMS).to_pylist()
    sides = [_group(row, values, r) for r, row in enumerate(sums)]
    ends = [row_interval(side, method) for side in sides]
    tests = np.full((table.num_rows, len(TEST_COLUMNS)), math.nan)
    asked = "permutations" in parameters  # a query that asks for the test
    families = families_of(values, family_columns, table.num_rows * asked)
    draws = {} if draws is None else draws
    for key, members in families.items():
        counted = np.concatenate([sums[r]["rater_ratings"] for r in members]).astype(np.float64)
        sizes = [len(sums[r]["rater_ratings"]) for r in members]
        drawn = family_draws(draws, key, sizes, counted, parameters)
        test = _family_test(
            [sides[r] for r in members], [sums[r] for r in members], method, parameters, drawn
        )
        tests[members, :5] = np.transpose(test[:5])
        tests[members, 5] = test.p_groups_differ
    low, high, notes = (
        np.array([e[0] for e in ends], dtype=np.float64),
        np.array([e[1] for e in ends], dtype=np.float64),
        [e[2] for e in ends],
    )
    return result_table(shown, Ends(low, high, notes), method, tests if asked else None)


def families_of(
    values: dict[str, list[Any]], family_columns: list[str], rows: int
) -> dict[tuple[Any, ...], list[int]]:
    """The first `rows` rows by family: the rows sharing every value of `family_columns`
    (the groups one test compares), in their order."""
    families: dict[tuple[Any, ...], list[int]] = {}
    for row in range(rows):
        families.setdefault(tuple(values[n][row] for n in family_columns), []).append(row)
    return families


def family_draws(
    draws: Draws,
    key: tuple[Any, ...],
    sizes: list[int],
    counted: NDArray[np.float64],
    parameters: dict[str, Any],
) -> tuple[Labellings, NDArray[np.float64]]:
    """The family `key`'s relabellings of its raters (`sizes` of each group's, in order)
    and the sums of their ratings `counted` over them, drawn (by the query's permutations
    and seed) when `draws` lacks them, and kept there."""
    if key not in draws:
        label = np.repeat(np.arange(len(sizes)), sizes)
        drawn = Labellings.drawn(label, len(sizes), parameters["permutations"], parameters["seed"])
        draws[key] = (drawn, drawn.sums(counted))
    return draws[key]


def _family_test(
    sides: list[Sums],
    sums: list[dict[str, Any]],
    method: str,
    parameters: dict[str, Any],
    drawn: tuple[Labellings, NDArray[np.float64]],
) -> FamilyTest:
    """The tests of one family's groups (`shares.family_test`), relabelled as `drawn`."""
    yes = np.concatenate([row["rater_yes"] for row in sums]).astype(np.float64)
    counted = np.concatenate([row["rater_ratings"] for row in sums]).astype(np.float64)
    relabelled = Relabelled.by(drawn[0], yes, counted, drawn[1])
    family = sides[0]
    for side in sides[1:]:
        family = family.plus(side)
    f_items, f_yy, f_yn, f_nn = (sums[0][f] or 0 for f in ("f_items", "f_yy", "f_yn", "f_nn"))

    def interval(g: int, difference: float) -> tuple[float, float]:
        x_yy, x_yn, x_ny, x_nn = (sums[g][f] or 0 for f in ("x_yy", "x_yn", "x_ny", "x_nn"))
        return difference_interval(
            sides[g],
            family,
            (x_yy, x_yn, x_ny, x_nn),
            (f_items, f_yy, f_yn, f_nn),
            difference,
            method,
        )

    return tested(relabelled, interval, parameters.get("alternative", "two-sided"))
