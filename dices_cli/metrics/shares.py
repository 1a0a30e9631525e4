"""Intervals and tests of shares of Yes over groups of ratings: the compute step of
`qoverall-by-demographic`, `degree-of-harm` and `harm-types`.

Each of those queries' SQL gives one row per result row with its counts and shares, and
three lists holding every rating behind the row: its rater, its conversation and whether it
is Yes (1) or not (0). This step adds the 95% interval of share_yes, by the method the
`interval` parameter names (docs/metrics.md, "Intervals of group shares"):

- clustered: raters and conversations like these. The share's variance is the two-way
  cluster-robust one (Cameron, Gelbach & Miller 2011) of the ratio of Yes to ratings:
  rater sums plus conversation sums minus rater x conversation sums of the linearised
  residuals, each one-way part scaled by G / (G - 1) for its G clusters (CR1). Its
  quantile is Student's t with Satterthwaite degrees of freedom: the rater part has the
  group's raters - 1, so a group of 5 raters gets about 4 (t = 2.8), not the normal's
  1.96, which is where a percentile bootstrap falls short with few raters. The interval is
  made on the logit of the share and mapped back: it lies in (0, 1), holds the share, and
  follows the skew of a share near 0 or 1.
- conversations: this rater pool; the conversation part alone, conversations - 1 degrees
  of freedom, on the logit too.
- wilson: the Wilson score interval over the ratings, as if they were independent.

Below MIN_CLUSTERS raters (clustered) or conversations (both) no construction holds its
level: the row's ends are empty and `interval_note` says why.

A query with a `by` parameter also gets each group's test against the rest of its family
(the rows that differ only in the `by` columns: a dataset, or a dataset's degree of harm):
`difference` (the group's share minus the rest's) with its interval, made as the share's
(clustered: each side's raters and the shared conversations, Satterthwaite across the
three), `p_value` from permuting the raters' group labels (group sizes kept) for the
`alternative` parameter (two-sided; greater: the group's share is higher; less: lower),
`p_adjusted` (Benjamini-Hochberg over the family's p_values) and `p_groups_differ`, the
permutation p-value of the family's between-group spread of shares (do the groups differ
at all? no direction).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from dices_cli.metrics.compute import array_values, dense_codes
from dices_cli.metrics.permutation import (
    RELATIVE_TIE,
    benjamini_hochberg,
    p_values,
    shuffled_labellings,
)
from dices_cli.metrics.student_t import t_quantile
from dices_cli.output import Table

# The columns of the SQL that list a row's ratings; the step reads and drops them.
RATING_LISTS = ("rating_rater", "rating_item", "rating_yes")
INTERVAL_COLUMNS = ("share_yes_ci_low", "share_yes_ci_high", "interval", "interval_note")
TEST_COLUMNS = (
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_value",
    "p_adjusted",
    "p_groups_differ",
)
Z_95 = 1.959963984540054  # the normal distribution's 97.5th percentile
LEVEL = 0.95
# Fewest raters (clustered) and conversations of a row whose interval holds its level: the
# smallest group size of the calibration (docs/metrics.md).
MIN_CLUSTERS = 5


def wilson_interval(
    successes: NDArray[np.float64], trials: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The 95% Wilson score interval of successes / trials, elementwise (NaN for 0 trials)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = successes / trials
        centre = share + Z_95**2 / (2 * trials)
        half = Z_95 * np.sqrt(share * (1 - share) / trials + Z_95**2 / (4 * trials**2))
        scale = 1 + Z_95**2 / trials
        return (centre - half) / scale, (centre + half) / scale


@dataclass(frozen=True)
class Ratings:
    """One dataset's ratings behind a query's rows, each numbered: row r's ratings are
    [starts[r], starts[r + 1]). Raters are numbered within their stratum (a rater who rates
    in two strata, e.g. two phases, is a rater of each) and conversations across the
    dataset."""

    starts: NDArray[np.intp]
    rater: NDArray[np.intp]
    conversation: NDArray[np.intp]
    yes: NDArray[np.float64]
    stratum_of_rater: NDArray[np.intp]
    conversations: int

    @property
    def rows(self) -> int:
        return len(self.starts) - 1

    def part(self, row: int) -> slice:
        return slice(self.starts[row], self.starts[row + 1])


@dataclass(frozen=True)
class Variance:
    """A variance made of parts, each with its degrees of freedom: its total and the
    Satterthwaite degrees of freedom of the total."""

    total: float
    df: float

    @classmethod
    def of(cls, parts: Sequence[tuple[float, float]], overlap: float = 0.0) -> Variance:
        """The sum of `parts` ((variance, df) each) less `overlap`, the part counted twice
        (never below the largest single sum of parts: a two-way variance is at least its
        one-way ones)."""
        summed = sum(v for v, _ in parts)
        total = max(summed - overlap, max(v for v, _ in parts))
        spread = sum(v * v / df for v, df in parts if df > 0)
        return cls(total, total * total / spread if spread > 0 else math.inf)


def _squared_sums(residual: NDArray[np.float64], keys: NDArray[np.intp]) -> tuple[float, int]:
    """The sum over the values of `keys` of their residuals' squared sum, and how many
    values `keys` has."""
    codes, of = dense_codes(keys)
    return float((np.bincount(of, weights=residual) ** 2).sum()), len(codes)


def _one_way(residual: NDArray[np.float64], keys: NDArray[np.intp]) -> tuple[float, float]:
    """The CR1 cluster-robust variance of a sum of residuals over the clusters `keys`, and
    its degrees of freedom (clusters - 1)."""
    return cr1(*_squared_sums(residual, keys))


def cr1(squares: float, clusters: int) -> tuple[float, float]:
    """The CR1 variance of a sum over `clusters` clusters whose sums' squares add up to
    `squares`, and its degrees of freedom (clusters - 1); none below two clusters."""
    if clusters < 2:
        return 0.0, 0.0
    return clusters / (clusters - 1) * squares, clusters - 1.0


def two_way_variance(
    residual: NDArray[np.float64],
    rater: NDArray[np.intp],
    conversation: NDArray[np.intp],
    side: NDArray[np.intp],
    method: str,
) -> Variance:
    """The variance of a sum of linearised residuals: clustered by each side's raters (a
    share has one side; a difference two, whose raters differ) and by conversations
    (shared by the sides), less the rater x conversation part counted in both;
    "conversations": by conversations alone."""
    conversations = _one_way(residual, conversation)
    if method == "conversations":
        return Variance.of([conversations])
    parts = [_one_way(residual[side == s], rater[side == s]) for s in dense_codes(side)[0]]
    cells = rater.astype(np.int64) * (int(conversation.max()) + 1) + conversation
    return Variance.of([*parts, conversations], _squared_sums(residual, cells)[0])


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def row_interval(
    rater: NDArray[np.intp],
    conversation: NDArray[np.intp],
    yes: NDArray[np.float64],
    method: str,
) -> tuple[float, float, str]:
    """One row's 95% interval of its share of Yes and its note ("" where it holds)."""
    ratings = len(yes)
    if ratings == 0:
        return math.nan, math.nan, "no ratings"
    share = float(yes.mean())
    if method == "wilson":
        low, high = wilson_interval(np.array([yes.sum()]), np.array([float(ratings)]))
        return float(low[0]), float(high[0]), ""
    note = few_clusters(_distinct(rater), _distinct(conversation), method)
    if note:
        return math.nan, math.nan, note
    if share in (0.0, 1.0):
        return share, share, "all answers alike"
    residual = (yes - share) / ratings
    variance = two_way_variance(residual, rater, conversation, np.zeros_like(rater), method)
    return (*logit_ends(share, variance), "")


def logit_ends(share: float, variance: Variance) -> tuple[float, float]:
    """The 95% interval of a share (strictly between 0 and 1) made on its logit, from the
    variance of the share."""
    half = t_quantile(LEVEL, variance.df) * math.sqrt(variance.total) / (share * (1 - share))
    return _expit(_logit(share) - half), _expit(_logit(share) + half)


def _distinct(numbers: NDArray[np.intp]) -> int:
    """How many different values `numbers` holds: raters' and conversations' numbers of
    Ratings, small and from 0, counted rather than sorted."""
    return int(np.count_nonzero(np.bincount(numbers)))


def few_clusters(raters: int, conversations: int, method: str) -> str:
    """Why an interval over ratings of so many raters and conversations cannot hold its
    level, or ""."""
    if method == "clustered" and raters < MIN_CLUSTERS:
        return f"fewer than {MIN_CLUSTERS} raters"
    if conversations < MIN_CLUSTERS:
        return f"fewer than {MIN_CLUSTERS} conversations"
    return ""


def share_intervals(
    ratings: Ratings, method: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[str]]:
    """Each row's 95% interval of its share of Yes, by `method` (see the module's doc), and
    its note."""
    ends = [
        row_interval(ratings.rater[part], ratings.conversation[part], ratings.yes[part], method)
        for part in map(ratings.part, range(ratings.rows))
    ]
    return (
        np.array([e[0] for e in ends], dtype=np.float64),
        np.array([e[1] for e in ends], dtype=np.float64),
        [e[2] for e in ends],
    )


class FamilyTest(NamedTuple):
    """Per group of a family (in the order of its rows): the difference from the rest, its
    interval, its p-values; and the family's p-value of any difference."""

    difference: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    p_value: NDArray[np.float64]
    p_adjusted: NDArray[np.float64]
    p_groups_differ: float


class Labellings(NamedTuple):
    """The raters' own labelling and `permutations` relabellings of them (group sizes kept)
    drawn from `seed`, as the cell of a [labelling, group] table each rater falls in: drawn
    once, they serve every figure the test relabels (a share's Yes, a mean's codes)."""

    cells: NDArray[np.intp]
    labellings: int
    groups: int

    @classmethod
    def drawn(
        cls, label: NDArray[np.intp], groups: int, permutations: int, seed: int
    ) -> Labellings:
        """From each rater's group `label`."""
        labellings = np.vstack([label, shuffled_labellings(label, permutations, seed)])
        cells = labellings + groups * np.arange(len(labellings))[:, None]
        return cls(cells.ravel(), len(labellings), groups)

    def sums(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """[labelling, group] sums of `values` (one per rater) over each group's raters."""
        summed = np.bincount(
            self.cells,
            weights=np.tile(values, self.labellings),
            minlength=self.groups * self.labellings,
        )
        return summed.astype(np.float64).reshape(self.labellings, self.groups)


def family_test(
    ratings: Ratings,
    rows: list[int],
    method: str,
    permutations: int,
    seed: int,
    alternative: str = "two-sided",
) -> FamilyTest:
    """The tests of the groups `rows` (rows of `ratings`, one family) against each other:
    each group's p_value for `alternative` (two-sided, greater: its share is above the
    rest's, less: below), BH over them; the omnibus test has no direction."""
    groups = len(rows)
    parts = [np.arange(ratings.starts[r], ratings.starts[r + 1]) for r in rows]
    taken = np.concatenate(parts)
    group_of_rating = np.repeat(np.arange(groups), [len(p) for p in parts])
    units, unit_of = dense_codes(ratings.rater[taken])
    label = np.zeros(len(units), dtype=np.intp)
    label[unit_of] = group_of_rating
    yes = np.bincount(unit_of, weights=ratings.yes[taken], minlength=len(units)).astype(np.float64)
    counted = np.bincount(unit_of, minlength=len(units)).astype(np.float64)
    return tested(
        Relabelled.of(label, yes, counted, groups, permutations, seed),
        lambda g, difference: difference_interval(
            ratings, taken, group_of_rating == g, difference, method
        ),
        alternative,
    )


class Relabelled(NamedTuple):
    """Each group's share minus the rest's, [labelling, group], and the groups' spread of
    shares per labelling: the raters' own labelling first, then the permuted ones."""

    difference: NDArray[np.float64]
    spread: NDArray[np.float64]

    @classmethod
    def of(
        cls,
        label: NDArray[np.intp],
        yes: NDArray[np.float64],
        counted: NDArray[np.float64],
        groups: int,
        permutations: int,
        seed: int,
    ) -> Relabelled:
        """From each rater's group `label`, Yes and ratings, and `permutations` relabellings
        (group sizes kept) drawn from `seed`."""
        drawn = Labellings.drawn(label, groups, permutations, seed)
        return cls.by(drawn, yes, counted, drawn.sums(counted))

    @classmethod
    def by(
        cls,
        drawn: Labellings,
        yes: NDArray[np.float64],
        counted: NDArray[np.float64],
        counted_in: NDArray[np.float64],
    ) -> Relabelled:
        """From labellings `drawn` once, each rater's Yes and ratings, and the ratings'
        [labelling, group] sums (`drawn.sums(counted)`: the same for every figure)."""
        yes_in = drawn.sums(yes)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = yes_in / counted_in
            difference = share - (yes.sum() - yes_in) / (counted.sum() - counted_in)
            spread = (counted_in * (share - yes.sum() / counted.sum()) ** 2).sum(axis=1)
        return cls(difference, spread)


def tested(
    relabelled: Relabelled,
    interval: Callable[[int, float], tuple[float, float]],
    alternative: str,
) -> FamilyTest:
    """The family's test from its relabelled differences: `interval(g, difference)` gives
    group g's interval of its difference."""
    difference, spread = relabelled
    groups, permutations = difference.shape[1], difference.shape[0] - 1
    nan = np.full(groups, math.nan)
    if groups < 2:
        return FamilyTest(nan, nan, nan, nan, nan, math.nan)
    low, high = np.transpose([interval(g, difference[0, g]) for g in range(groups)])
    if permutations == 0:
        return FamilyTest(difference[0], low, high, nan, nan, math.nan)
    p = p_values(difference[0], difference[1:], alternative)
    tie = RELATIVE_TIE * max(1.0, spread[0])
    p_groups_differ = float(((spread[1:] >= spread[0] - tie).sum() + 1) / (permutations + 1))
    return FamilyTest(difference[0], low, high, p, benjamini_hochberg(p), p_groups_differ)


def difference_interval(
    ratings: Ratings,
    taken: NDArray[np.intp],
    inside: NDArray[np.bool_],
    difference: float,
    method: str,
) -> tuple[float, float]:
    """The 95% interval of a group's share minus the rest's: the family's ratings `taken`,
    `inside` those of the group."""
    yes = ratings.yes[taken]
    rater, conversation = ratings.rater[taken], ratings.conversation[taken]
    n_in, n_out = inside.sum(), (~inside).sum()
    share_in, share_out = yes[inside].mean(), yes[~inside].mean()
    if method == "wilson":
        half = Z_95 * math.sqrt(
            share_in * (1 - share_in) / n_in + share_out * (1 - share_out) / n_out
        )
        return difference - half, difference + half
    if (
        method == "clustered"
        and min(_distinct(rater[inside]), _distinct(rater[~inside])) < MIN_CLUSTERS
    ):
        return math.nan, math.nan
    if _distinct(conversation) < MIN_CLUSTERS:
        return math.nan, math.nan
    residual = np.where(inside, (yes - share_in) / n_in, -(yes - share_out) / n_out)
    variance = two_way_variance(residual, rater, conversation, (~inside).astype(np.intp), method)
    half = t_quantile(LEVEL, variance.df) * math.sqrt(variance.total)
    return difference - half, difference + half


def _list_column(table: pa.Table, name: str) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """A list column's offsets (row r's items are [offsets[r], offsets[r + 1])) and items.
    Read from the buffers: `flatten` would import pyarrow.compute (bench/startup.py)."""
    lists = table.column(name).combine_chunks()
    return array_values(lists.offsets).astype(np.intp), array_values(lists.values)


def _dataset_ratings(
    rows: Sequence[int], strata: Sequence[int], offsets: NDArray[np.intp], lists: list[NDArray[Any]]
) -> Ratings:
    """The Ratings of `rows` (a dataset's), each in rater stratum `strata[i]`. A row's
    ratings are put in one order (rater, conversation, answer), whatever order the SQL
    listed them in (DuckDB's threads choose it): the sums behind an interval then add up
    in the same order, so the same data give the same last digits."""
    parts = [np.arange(offsets[row], offsets[row + 1]) for row in rows]
    taken = np.concatenate(parts)
    sizes = [len(part) for part in parts]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    rater, conversation, yes = (values[taken] for values in lists)
    order = np.lexsort((yes, conversation, rater, np.repeat(np.arange(len(parts)), sizes)))
    rater, conversation, yes = rater[order], conversation[order], yes[order]
    rater_ids, rater_of = np.unique(rater, return_inverse=True)
    stratum = np.repeat(np.asarray(strata, dtype=np.intp), np.diff(starts))
    units, unit_of = dense_codes(stratum * len(rater_ids) + rater_of)
    conversation_ids, conversation_of = np.unique(conversation, return_inverse=True)
    return Ratings(
        starts,
        unit_of,
        conversation_of.astype(np.intp),
        yes.astype(np.float64),
        units // len(rater_ids),
        len(conversation_ids),
    )


def compute(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """The SQL's rows without their rating lists, with the interval of share_yes, the method
    that made it (`interval`) and its note; for a query with a `by` parameter, each group's
    test against the rest of its family (TEST_COLUMNS) when it also takes permutations."""
    method = parameters["interval"]
    asked = "by" in parameters and "permutations" in parameters  # a query that asks for the test
    by = [name for name in table.column_names if name in parameters.get("by", [])]
    (shown, numeric, values), family_columns = shown_columns(table, by, RATING_LISTS)
    offsets, rater = _list_column(table, "rating_rater")
    lists = [rater, *(_list_column(table, name)[1] for name in RATING_LISTS[1:])]
    low = np.full(table.num_rows, math.nan)
    high = np.full(table.num_rows, math.nan)
    notes = [""] * table.num_rows
    tests = np.full((table.num_rows, len(TEST_COLUMNS)), math.nan)
    for dataset in dict.fromkeys(values["dataset"]):
        rows = [row for row, name in enumerate(values["dataset"]) if name == dataset]
        keys = [tuple(values[name][row] for name in by) for row in rows]
        stratum = {key: number for number, key in enumerate(dict.fromkeys(keys))}
        ratings = _dataset_ratings(rows, [stratum[key] for key in keys], offsets, lists)
        low[rows], high[rows], row_notes = share_intervals(ratings, method)
        for row, note in zip(rows, row_notes, strict=True):
            notes[row] = note
        if not asked:
            continue
        families: dict[tuple[Any, ...], list[int]] = {}
        for local, row in enumerate(rows):
            key = tuple(values[name][row] for name in family_columns)
            families.setdefault(key, []).append(local)
        for members in families.values():
            test = family_test(
                ratings,
                members,
                method,
                parameters["permutations"],
                parameters["seed"],
                parameters.get("alternative", "two-sided"),
            )
            at = [rows[local] for local in members]
            tests[at, :5] = np.transpose(test[:5])
            tests[at, 5] = test.p_groups_differ
    return result_table(
        Shown(shown, numeric, values), Ends(low, high, notes), method, tests if asked else None
    )


class Shown(NamedTuple):
    """The SQL's columns shown, whether each is a number, and their values by name."""

    names: list[str]
    numeric: list[bool]
    values: dict[str, list[Any]]


def shown_columns(
    table: pa.Table, by: Sequence[str], hidden: Sequence[str]
) -> tuple[Shown, list[str]]:
    """The columns of `table` but `hidden`, and the family's: those of text, but `by`
    (a family's rows differ only in their `by` columns)."""
    shown = [name for name in table.column_names if name not in hidden]
    numeric = [_is_number(table.schema.field(name).type) for name in shown]
    family_columns = [n for n, number in zip(shown, numeric, strict=True) if not number]
    family_columns = [n for n in family_columns if n not in by]
    values = {name: table.column(name).to_pylist() for name in shown}
    return Shown(shown, numeric, values), family_columns


class Ends(NamedTuple):
    """Each row's interval of its share and its note ("" where it holds)."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    notes: list[str]


def result_table(shown: Shown, ends: Ends, method: str, tests: NDArray[np.float64] | None) -> Table:
    """The rows shown with their INTERVAL_COLUMNS and, when `tests` (one row of
    TEST_COLUMNS each) is given, their tests."""
    columns = [*shown.names, *INTERVAL_COLUMNS, *(TEST_COLUMNS if tests is not None else ())]
    kinds = [*shown.numeric, True, True, False, False]
    kinds += [True for _ in TEST_COLUMNS if tests is not None]
    rows_out = [
        (
            *(shown.values[name][row] for name in shown.names),
            _cell(ends.low[row]),
            _cell(ends.high[row]),
            method,
            ends.notes[row] or None,  # no note is an empty cell, as in CSV
            *(_cell(v) for v in (tests[row] if tests is not None else ())),
        )
        for row in range(len(ends.notes))
    ]
    return Table(columns, kinds, rows_out)


def _is_number(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


def _cell(number: float) -> float | None:
    return None if math.isnan(number) else float(number)
