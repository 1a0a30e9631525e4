"""Intervals of shares of Yes over groups of ratings: the compute step of
`qoverall-by-demographic`, `degree-of-harm` and `harm-types`.

Each of those queries' SQL gives one row per result row with its counts and shares, and
three lists holding every rating behind the row: its rater, its conversation and whether it
is Yes (1) or not (0). This step adds the 95% interval of share_yes, by the method the
`interval` parameter names (docs/metrics.md, "Intervals of group shares"):

- clustered: a two-way bootstrap. A resample draws, within each rater stratum (the group
  columns of `by`: the whole pool without them), as many raters as it has, with replacement,
  and, across the dataset, as many conversations as there are; a rating's weight is its
  rater's count times its conversation's. Raters and conversations like these.
- conversations: conversations only, every rater once. This rater pool.
- wilson: the Wilson score interval over the ratings, as if they were independent.

A row's share in resample b is (w_rater[b] @ Yes @ w_conversation[b]) / (w_rater[b] @ N @
w_conversation[b]), Yes and N the row's rater x conversation counts: one matrix product per
row for all resamples at once. Weights and counts are whole numbers, so every sum is exact
and the shares do not depend on the order of summation.

Each dataset is resampled with the same seeds, so `-d 350` gives the DICES-350 rows of
`-d all`, and every row of a dataset comes from the same resamples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from dices_cli.metrics.bootstrap import bootstrap_weights, percentile_interval, rater_weights
from dices_cli.metrics.compute import array_values, dense_codes
from dices_cli.output import Table

# The columns of the SQL that list a row's ratings; the step reads and drops them.
RATING_LISTS = ("rating_rater", "rating_item", "rating_yes")
INTERVAL_COLUMNS = ("share_yes_ci_low", "share_yes_ci_high", "interval")
Z_95 = 1.959963984540054  # the normal distribution's 97.5th percentile
# Resamples whose weights are held as floats at once: 8 MB for DICES-990's conversations.
BLOCK = 2000


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


def two_way_seeds(seed: int) -> tuple[int, int]:
    """The seeds of the rater and of the conversation draws, both derived from `seed`."""
    rater, conversation = np.random.SeedSequence(seed).spawn(2)
    return int(rater.generate_state(1)[0]), int(conversation.generate_state(1)[0])


def resample_weights(
    ratings: Ratings, method: str, draws: int, seed: int
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """(draws + 1, raters) and (draws + 1, conversations) counts, row 0 all ones: raters
    within their stratum ("clustered"; "conversations": every rater once in every resample)
    and conversations."""
    rater_seed, conversation_seed = two_way_seeds(seed)
    if method == "clustered":
        raters = rater_weights(ratings.stratum_of_rater, draws, rater_seed)
    else:
        raters = np.ones((draws + 1, len(ratings.stratum_of_rater)), dtype=np.int32)
    return raters, bootstrap_weights(ratings.conversations, draws, conversation_seed)


def resampled_shares(
    ratings: Ratings, raters: NDArray[np.int32], conversations: NDArray[np.int32]
) -> NDArray[np.float64]:
    """(resamples, rows): each row's share of Yes under each resample's weights (NaN where
    a resample draws none of the row's ratings)."""
    shares = np.empty((len(raters), ratings.rows))
    counts = [_counts(ratings, row) for row in range(ratings.rows)]
    for start in range(0, len(raters), BLOCK):
        block = slice(start, start + BLOCK)
        # float32 for the product over raters: a rater-weighted count of one conversation is
        # at most a few times the group's raters, exact far below float32's 2^24 (and the
        # product 1.6x faster); the sums over conversations, which grow with the ratings,
        # are float64.
        rater_block = raters[block].astype(np.float32)
        conversation_block = conversations[block].astype(np.float32)
        for row, (row_raters, row_conversations, yes_and_all) in enumerate(counts):
            # [resample, Yes per conversation | ratings per conversation] of the row's raters
            summed = rater_block[:, row_raters] @ yes_and_all
            weights = conversation_block[:, row_conversations]
            yes, total = np.split(summed, 2, axis=1)
            with np.errstate(invalid="ignore"):
                shares[block, row] = np.einsum(
                    "bc,bc->b", yes, weights, dtype=np.float64
                ) / np.einsum("bc,bc->b", total, weights, dtype=np.float64)
    return shares


def _counts(
    ratings: Ratings, row: int
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float32]]:
    """A row's raters, its conversations, and its [rater, Yes | all] count matrix (Yes per
    conversation, then ratings per conversation)."""
    part = slice(ratings.starts[row], ratings.starts[row + 1])
    raters, rater_of = dense_codes(ratings.rater[part])
    conversations, conversation_of = dense_codes(ratings.conversation[part])
    cell = rater_of * len(conversations) + conversation_of
    size = len(raters) * len(conversations)
    yes = np.bincount(cell, weights=ratings.yes[part], minlength=size)
    total = np.bincount(cell, minlength=size).astype(np.float64)
    shape = (len(raters), len(conversations))
    counted = np.hstack([yes.reshape(shape), total.reshape(shape)])
    return raters, conversations, counted.astype(np.float32)


def share_intervals(
    ratings: Ratings, method: str, draws: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each row's 95% interval of its share of Yes, by `method` (see the module's doc)."""
    if method == "wilson":
        trials = np.diff(ratings.starts)
        row_of = np.repeat(np.arange(ratings.rows), trials)
        successes = np.bincount(row_of, weights=ratings.yes, minlength=ratings.rows).astype(
            np.float64
        )
        return wilson_interval(successes, trials.astype(np.float64))
    shares = resampled_shares(ratings, *resample_weights(ratings, method, draws, seed))
    ends = [percentile_interval(shares[:, row]) for row in range(ratings.rows)]
    return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])


def _list_column(table: pa.Table, name: str) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """A list column's offsets (row r's items are [offsets[r], offsets[r + 1])) and items.
    Read from the buffers: `flatten` would import pyarrow.compute (0.12 s)."""
    lists = table.column(name).combine_chunks()
    return array_values(lists.offsets).astype(np.intp), array_values(lists.values)


def _dataset_ratings(
    rows: Sequence[int], strata: Sequence[int], offsets: NDArray[np.intp], lists: list[NDArray[Any]]
) -> Ratings:
    """The Ratings of `rows` (a dataset's), each in rater stratum `strata[i]`."""
    parts = [np.arange(offsets[row], offsets[row + 1]) for row in rows]
    taken = np.concatenate(parts)
    starts = np.concatenate([[0], np.cumsum([len(part) for part in parts])]).astype(np.intp)
    rater, conversation, yes = (values[taken] for values in lists)
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
    """The SQL's rows without their rating lists, with the interval of share_yes and the
    method that made it (`interval`). Raters are resampled within the groups of the `by`
    columns (the whole pool when the query has none)."""
    method, draws, seed = parameters["interval"], parameters["bootstrap"], parameters["seed"]
    by = [name for name in table.column_names if name in parameters.get("by", [])]
    shown = [name for name in table.column_names if name not in RATING_LISTS]
    values = {name: table.column(name).to_pylist() for name in shown}
    offsets, rater = _list_column(table, "rating_rater")
    lists = [rater, *(_list_column(table, name)[1] for name in RATING_LISTS[1:])]
    low = np.full(table.num_rows, math.nan)
    high = np.full(table.num_rows, math.nan)
    for dataset in dict.fromkeys(values["dataset"]):
        rows = [row for row, name in enumerate(values["dataset"]) if name == dataset]
        keys = [tuple(values[name][row] for name in by) for row in rows]
        stratum = {key: number for number, key in enumerate(dict.fromkeys(keys))}
        ratings = _dataset_ratings(rows, [stratum[key] for key in keys], offsets, lists)
        low[rows], high[rows] = share_intervals(ratings, method, draws, seed)
    columns = [*shown, *INTERVAL_COLUMNS]
    numeric = [_is_number(table.schema.field(name).type) for name in shown]
    ends = [(_cell(a), _cell(b)) for a, b in zip(low, high, strict=True)]
    rows_out = [
        (*(values[name][row] for name in shown), *ends[row], method)
        for row in range(table.num_rows)
    ]
    return Table(columns, [*numeric, True, True, False], rows_out)


def _is_number(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


def _cell(number: float) -> float | None:
    return None if math.isnan(number) else float(number)
