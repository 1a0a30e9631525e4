"""The mean of an ordinal label per group, with the intervals and tests of its share
(`dices_cli.metrics.share_sums`), made from sums the SQL reduces its ratings to.

A group's mean is a ratio as its share is: the sum of its ratings' values over their
number. label-by-group's SQL gives each rating the integer code t = (value - lowest) x
unit (`dices_cli.queries.declared.mean_codes`: unit 1 for a scale of whole numbers, else
the least common denominator of its values), so that every sum is exact in integers and
the same whatever order DuckDB adds in, and reduces the codes, beside share_sums'
counts, to a struct column MEAN_SUMS:

    total, squares      the group's sum of codes T and of their squares
    rater_total         each rater's T_r, the raters in order of id (share_sums' rater_yes
                        with codes in place of Yes: what the permutation test relabels)
    r_tt, r_tn          over the group's raters, the sums of T_r^2 and T_r N_r
    c_tt, c_tn          the same over the group's items
    x_tt, x_tn, x_nt    over the group's items, the sums of T_c T'_c, T_c N'_c, N_c T'_c
                        (T'_c, N'_c: the item's codes and ratings in the whole family)
    k_tt, k_tn          the same as r_ over rater x item cells
    f_tt, f_tn          over the family's items, the sums of T'_c^2 and T'_c N'_c

(the N-only sums, r_nn and the rest, are share_sums'). With codes in place of Yes,
share_sums' algebra of the residuals (t - mean) / ratings is the same, so the same
functions make the variances:

- clustered (the default): the two-way cluster-robust variance over the group's raters
  and the items, CR1 per side, Student's t with Satterthwaite degrees of freedom; made,
  as a share's is, on the logit of the mean's place on the scale, (mean - lowest) /
  (highest - lowest), and mapped back, so the interval stays inside the scale;
  conversations: the item part alone. Below 5 raters (clustered) or items the ends are
  empty, and a mean at an end of the scale gets [mean, mean]: the share's `interval_note`
  says why for both.
- wilson (every rating independent): the normal interval mean +- 1.96 s / sqrt(n), s the
  ratings' standard deviation: as the share's Wilson interval, too narrow for raters and
  items like these.
- mean_difference, the group's mean minus the rest's: the interval as the share's
  difference (share_sums.difference_interval with codes; wilson: the two sides' normal
  interval), mean_p_value by relabelling the same raters with the same seed as p_value,
  mean_p_adjusted (Benjamini-Hochberg over the family's groups) and mean_p_groups_differ
  (the ratings-weighted spread of the groups' means).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from dices_cli.metrics.share_sums import (
    SUMS,
    Draws,
    Sums,
    clustered_variance,
    difference_interval,
    families_of,
    family_draws,
)
from dices_cli.metrics.shares import (
    TEST_COLUMNS,
    Z_95,
    FamilyTest,
    Relabelled,
    Variance,
    few_clusters,
    logit_ends,
    shown_columns,
    tested,
)
from dices_cli.output import Table

MEAN_SUMS = "mean_sums"  # the struct column of the SQL; the step reads and drops it
COLUMNS = ("mean_ci_low", "mean_ci_high", *(f"mean_{name}" for name in TEST_COLUMNS))


def _side(share: dict[str, Any], mean: dict[str, Any], counts: tuple[int, int, int]) -> Sums:
    """A group's Sums with codes in place of Yes: `share` and `mean` its two structs,
    `counts` its ratings, raters and items."""

    def three(prefix: str) -> tuple[int, int, int]:
        return mean[f"{prefix}_tt"] or 0, mean[f"{prefix}_tn"] or 0, share[f"{prefix}_nn"] or 0

    return Sums(mean["total"], *counts, three("r"), three("c"), three("k"))


def _spread(total: int, squares: int, ratings: int) -> float:
    """The sample variance of `ratings` codes that sum to `total`, their squares to
    `squares`: exact in integers, then divided (none below two ratings)."""
    if ratings < 2:
        return math.nan
    return (ratings * squares - total * total) / (ratings * (ratings - 1))


def mean_interval(side: Sums, squares: int, top: int, method: str) -> tuple[float, float]:
    """A group's 95% interval of its mean code (codes from 0 to `top`; `squares` the sum
    of its codes' squares), by `method`."""
    mean = side.yes / side.ratings
    if method == "wilson":
        half = Z_95 * math.sqrt(_spread(side.yes, squares, side.ratings) / side.ratings)
        return mean - half, mean + half
    if few_clusters(side.raters, side.items, method):
        return math.nan, math.nan
    place = mean / top
    if place in (0.0, 1.0):
        return mean, mean
    variance = clustered_variance(side, method)
    low, high = logit_ends(place, Variance(variance.total / top**2, variance.df))
    return low * top, high * top


def compute(table: pa.Table, parameters: dict[str, Any], draws: Draws | None = None) -> Table:
    """COLUMNS for each of the SQL's rows (an ordinal label's): its mean's interval and,
    when the query asks for the test, the test of its mean against the rest of its
    family's, on the label's scale: relabelled as the share's test is (`draws`, shared
    with `share_sums.compute`)."""
    method = parameters["interval"]
    lowest, unit = parameters["mean_origin"], parameters["mean_unit"]
    top = round((max(parameters["positions"]) - lowest) * unit)
    by = [name for name in table.column_names if name in parameters.get("by", [])]
    shown, family_columns = shown_columns(table, by, (SUMS, MEAN_SUMS))
    values = shown.values
    shares: list[dict[str, Any]] = table.column(SUMS).to_pylist()
    means: list[dict[str, Any]] = table.column(MEAN_SUMS).to_pylist()
    counts = [
        (values["ratings"][r], values["raters"][r], values["items"][r])
        for r in range(table.num_rows)
    ]
    sides = [_side(s, m, c) for s, m, c in zip(shares, means, counts, strict=True)]
    found = np.full((table.num_rows, len(COLUMNS)), math.nan)
    for r, side in enumerate(sides):
        found[r, :2] = mean_interval(side, means[r]["squares"], top, method)
    asked = "permutations" in parameters
    families = families_of(values, family_columns, table.num_rows * asked)
    draws = {} if draws is None else draws
    for key, members in families.items():
        counted = np.concatenate([shares[r]["rater_ratings"] for r in members]).astype(np.float64)
        sizes = [len(shares[r]["rater_ratings"]) for r in members]
        drawn = family_draws(draws, key, sizes, counted, parameters)
        relabelled = Relabelled.by(
            drawn[0],
            np.concatenate([means[r]["rater_total"] for r in members]).astype(np.float64),
            counted,
            drawn[1],
        )
        test = _family_test(members, sides, shares, means, method, relabelled, parameters)
        found[members, 2:7] = np.transpose(test[:5])
        found[members, 7] = test.p_groups_differ
    found[:, :5] /= unit
    found[:, :2] += lowest
    shown_columns_ = COLUMNS if asked else COLUMNS[:2]
    rows = [
        tuple(None if math.isnan(v) else float(v) for v in row[: len(shown_columns_)])
        for row in found
    ]
    return Table(list(shown_columns_), [True] * len(shown_columns_), rows)


def _family_test(
    members: list[int],
    sides: list[Sums],
    shares: list[dict[str, Any]],
    means: list[dict[str, Any]],
    method: str,
    relabelled: Relabelled,
    parameters: dict[str, Any],
) -> FamilyTest:
    """The tests of one family's groups' mean codes (`shares.family_test` of their means),
    from their `relabelled` differences."""
    family = sides[members[0]]
    for r in members[1:]:
        family = family.plus(sides[r])
    squares = sum(means[r]["squares"] for r in members)
    first_share, first_mean = shares[members[0]], means[members[0]]
    family_items = (
        first_share["f_items"] or 0,
        first_mean["f_tt"] or 0,
        first_mean["f_tn"] or 0,
        first_share["f_nn"] or 0,
    )

    def interval(g: int, difference: float) -> tuple[float, float]:
        r = members[g]
        inside = sides[r]
        if method == "wilson":
            outside = family.plus(inside, -1)
            half = Z_95 * math.sqrt(
                _spread(inside.yes, means[r]["squares"], inside.ratings) / inside.ratings
                + _spread(outside.yes, squares - means[r]["squares"], outside.ratings)
                / outside.ratings
            )
            return difference - half, difference + half
        m = means[r]
        cross = (m["x_tt"] or 0, m["x_tn"] or 0, m["x_nt"] or 0, shares[r]["x_nn"] or 0)
        return difference_interval(inside, family, cross, family_items, difference, method)

    return tested(relabelled, interval, parameters.get("alternative", "two-sided"))
