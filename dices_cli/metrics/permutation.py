"""Permutation tests of group metrics and Benjamini-Hochberg adjustment of their p-values."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import Array
from dices_cli.metrics.distance import Distance
from dices_cli.metrics.groups import group_metrics

# A permuted value this close to the observed one counts as a tie: the same groups can be
# summed in another order and differ in the last bits.
RELATIVE_TIE = 1e-12
# The central 95% of a metric over the relabellings: its null range.
NULL_RANGE = (0.025, 0.975)


def shuffled_labellings(labels: NDArray[np.intp], permutations: int, seed: int) -> NDArray[np.intp]:
    """`permutations` random reorderings of `labels` (one row each), reproducible from `seed`.

    All are drawn at once, so the draws do not depend on how they are later batched. They
    are shuffled as the smallest integers that hold the labels: numpy draws the same swaps
    whatever the type, and moves fewer bytes per swap.
    """
    rng = np.random.default_rng(seed)
    small = (
        np.promote_types(
            np.min_scalar_type(int(labels.min())), np.min_scalar_type(int(labels.max()))
        )
        if labels.size
        else labels.dtype
    )
    shuffled = rng.permuted(np.tile(labels.astype(small), (permutations, 1)), axis=1)
    return shuffled.astype(labels.dtype)


# The alternatives of a permutation test, as scipy.stats.permutation_test names them: the
# metric differs from its null either way, is greater, or is less.
ALTERNATIVES = ("two-sided", "greater", "less")


def p_values(observed: Array, null: Array, alternative: str = "two-sided") -> Array:
    """Permutation p-values of `observed` against `null` for `alternative`.

    greater: P(T >= t); less: P(T <= t); two-sided: 2 * min of the two, capped at 1. Each
    counts t itself: the +1 in (count + 1) / (N + 1) counts the observed labelling as one of
    the permutations, so p is never 0. observed: [...]; null: [permutation, ...].
    Permutations where the metric is undefined (NaN) are left out; p is NaN where the
    observed metric is.
    """
    tie = RELATIVE_TIE * np.maximum(1.0, np.abs(observed))
    with np.errstate(invalid="ignore"):
        at_least = (null >= observed - tie).sum(axis=0)
        at_most = (null <= observed + tie).sum(axis=0)
    defined = (~np.isnan(null)).sum(axis=0)
    tails = {"greater": (at_least + 1) / (defined + 1), "less": (at_most + 1) / (defined + 1)}
    if alternative == "two-sided":
        p = np.minimum(1.0, 2 * np.minimum(tails["greater"], tails["less"]))
    else:
        p = tails[alternative]
    return np.where(np.isnan(observed) | (defined == 0), np.nan, p)


def two_sided_p_values(observed: Array, null: Array) -> Array:
    """p = 2 * min(P(T >= t), P(T <= t)), capped at 1 (p_values' two-sided one)."""
    return p_values(observed, null, "two-sided")


def null_range(null: Array) -> tuple[Array, Array]:
    """The 2.5th and 97.5th percentiles of each metric over the permutations (numpy's
    default linear interpolation between order statistics), each [...] like null[0].

    null: [permutation, ...]. As in the p-values, permutations where the metric is
    undefined (NaN) are left out; both ends are NaN where no permutation defines it.
    """
    if len(null) == 0:  # numpy's quantiles of no values lose the quantiles' axis
        return np.full(null.shape[1:], np.nan), np.full(null.shape[1:], np.nan)
    with warnings.catch_warnings():  # a metric no permutation defines: NaN, said by a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(null, NULL_RANGE, axis=0)
    return low, high


class PermutationTest(NamedTuple):
    """Each group's metrics, their two-sided permutation p-values and the range the middle
    95% of the relabelled values fall in, all [group, metric]."""

    observed: Array
    p: Array
    null_low: Array
    null_high: Array


def permutation_test(
    answers: Array,
    labels: NDArray[np.intp],
    groups: int,
    permutations: int,
    seed: int,
    distance: Distance | None = None,
) -> PermutationTest:
    """Each group's metrics, their p-values and their null ranges.

    The null hypothesis: group labels are exchangeable between raters, i.e. a group's
    metric is no different from that of as many raters drawn at random from the pool; the
    null range is where 95% of those raters' values lie. IRR and XRR with `distance`
    (None: nominal).
    """
    labellings = np.vstack([labels, shuffled_labellings(labels, permutations, seed)])
    values = group_metrics(answers, labellings, groups, distance)
    observed, null = values[0], values[1:]
    return PermutationTest(observed, two_sided_p_values(observed, null), *null_range(null))


def benjamini_hochberg(p_values: Array) -> Array:
    """Benjamini-Hochberg adjusted p-values (false discovery rate) of a 1-D family.

    NaN p-values are not tests: they stay NaN and do not count in the family size.
    """
    adjusted = np.full(p_values.shape, np.nan)
    tested = ~np.isnan(p_values)
    values = p_values[tested]
    order = np.argsort(values)
    ranked = values[order] * len(values) / np.arange(1, len(values) + 1)
    step_up = np.minimum.accumulate(ranked[::-1])[::-1]
    result = np.empty_like(values)
    result[order] = np.minimum(step_up, 1.0)
    adjusted[tested] = result
    return adjusted
