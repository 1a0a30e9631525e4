"""Bootstrap resampling of conversations and raters: resample weights and intervals.

A resample is a row of weights: how often each conversation is drawn. The metric functions
of dices_cli.metrics.scoring take all rows at once and return one value per row; row 0 is
the point estimate (every conversation once), the rows after it the bootstrap
distribution that the helpers here summarise.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import Array

__all__ = ["bootstrap_weights", "percentile_interval", "rater_weights"]


def bootstrap_weights(n: int, draws: int, seed: int) -> NDArray[np.int32]:
    """(draws + 1, n) resample counts: row 0 all ones, then `draws` bootstrap resamples.

    A resample draws n conversations with replacement (so its counts are multinomial, and
    sum to n). Reproducible from `seed`.
    """
    weights = np.ones((draws + 1, n), dtype=np.int32)
    if n > 0:
        drawn = np.random.default_rng(seed).integers(0, n, size=(draws, n))
        # Count the draws of each resample at once: resample r's item i is cell r * n + i.
        cells = (drawn + n * np.arange(draws)[:, None]).ravel()
        weights[1:] = np.bincount(cells, minlength=draws * n).reshape(draws, n)
    return weights


def rater_weights(group_of_rater: NDArray[np.intp], draws: int, seed: int) -> NDArray[np.int32]:
    """(draws + 1, raters) resample counts of raters: row 0 all ones, then `draws` resamples
    that each draw, within every group, as many raters as it has, with replacement.

    group_of_rater: per rater, its group number (all 0: the whole pool is one group). Drawing
    within groups keeps every group's size, so a group's figure in a resample is that of a
    group of the same size, and groups stay disjoint (their differences stay paired with the
    same conversations). The rater half of the two-way (rater x conversation) bootstrap;
    combine it with `bootstrap_weights` of the conversations, drawn from another seed: a
    rating's weight is its rater's times its conversation's. Reproducible from `seed`.
    """
    raters = len(group_of_rater)
    weights = np.ones((draws + 1, raters), dtype=np.int32)
    if raters == 0 or draws == 0:
        return weights
    weights[1:] = 0
    rng = np.random.default_rng(seed)
    rows = np.arange(draws)[:, None] * raters
    for group in np.unique(group_of_rater):
        members = np.flatnonzero(group_of_rater == group)
        drawn = members[rng.integers(0, len(members), size=(draws, len(members)))]
        weights[1:] += (
            np.bincount((drawn + rows).ravel(), minlength=draws * raters)
            .reshape(draws, raters)
            .astype(np.int32)
        )
    return weights


def _bootstrap_values(values: Array) -> Array:
    """The defined (non-NaN) values of the resamples, i.e. of values[1:]."""
    resampled = np.asarray(values, dtype=np.float64)[1:]
    return resampled[~np.isnan(resampled)]


def percentile_interval(values: Array, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of values[1:] (numpy's linear interpolation).

    Resamples where the metric is undefined (NaN) are left out; (nan, nan) if none is
    defined. values[0], the point estimate, takes no part.
    """
    defined = _bootstrap_values(values)
    if defined.size == 0:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)
