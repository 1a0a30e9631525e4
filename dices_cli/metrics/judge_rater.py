"""A judge as one more rater: its agreement with each rater group, and how alike judges err.

A judge's label on a conversation is one rating. Beside a group of raters, it is measured as
the group association index measures a group (Prendergast et al.'s GAI, as DICES's analyses
use it): by the cross-replication reliability (Wong, Paritosh and Aroyo 2021) of the judge
with the group's raters, over the group's own reliability (Krippendorff's alpha among its
raters). `xrr_over_irr` is 1 when the judge agrees with the group as well as the group's
raters agree with each other, and 0 when it agrees no more than chance.

The test is `agreement`'s: the raters' group labels are permuted (group sizes kept), so the
null is "this judge agrees with the group no more than with as many raters drawn at random
from the pool". Several judges: the correlation of their errors against the crowd label (per
conversation, 1 where the judge's label differs from the crowd's) and the effective number
of independent judges, Kish's design effect read backwards: n_eff = n / (1 + (n - 1) * rho),
rho the mean pairwise error correlation (Kish 1965, Survey Sampling, section 5.4).
Formulas: docs/evaluate.md, "Judges as raters".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import (
    Array,
    cross_replication_reliability,
    krippendorff_alpha_nominal,
    ratio,
)
from dices_cli.metrics.permutation import null_range, p_values, shuffled_labellings

FIGURES = ("xrr", "irr", "xrr_over_irr")  # of a judge beside a set of raters
# Count cells (labellings x judges x groups x categories x conversations) per batch.
BATCH_CELLS = 2_000_000


def judge_counts(labels: NDArray[np.intp], categories: int) -> Array:
    """[judge, category, conversation] one rating per judge and conversation: 1 in the
    category of its label; a label outside 0 .. categories - 1 (unlabelled) is no rating."""
    judges, conversations = labels.shape
    counts = np.zeros((judges, categories, conversations))
    judge, conversation = np.nonzero((labels >= 0) & (labels < categories))
    counts[judge, labels[judge, conversation], conversation] = 1.0
    return counts


def beside(judges: Array, raters: Array) -> Array:
    """FIGURES of each judge [judge, category, conversation] beside each set of raters'
    counts [..., category, conversation]: [judge, ..., figure]."""
    shape = (len(judges),) + (1,) * (raters.ndim - 2) + judges.shape[1:]
    xrr = cross_replication_reliability(judges.reshape(shape), raters[None])
    irr = np.broadcast_to(krippendorff_alpha_nominal(raters)[None], xrr.shape)
    relative = np.where(irr > 0, ratio(xrr, np.where(irr > 0, irr, 1.0)), np.nan)
    return np.stack([xrr, irr, relative], axis=-1)


class JudgeTest(NamedTuple):
    """Each judge beside each group: FIGURES [judge, group, figure], their two-sided
    permutation p-values and null ranges (the middle 95% over the relabellings)."""

    observed: Array
    p: Array
    null_low: Array
    null_high: Array


def _counts(
    answers: Array, labellings: NDArray[np.intp], groups: int
) -> Iterator[tuple[slice, Array]]:
    """Each labelling's groups' counts [labelling, group, category, conversation], a batch
    of labellings at a time. answers: [rater, category, conversation]."""
    raters = len(answers)
    flat = answers.reshape(raters, -1)
    size = max(1, BATCH_CELLS // (groups * flat.shape[1]))
    for start in range(0, len(labellings), size):
        chunk = labellings[start : start + size]
        membership = (chunk[:, None, :] == np.arange(groups)[None, :, None]).astype(np.float64)
        counts = membership.reshape(-1, raters) @ flat
        shape = (len(chunk), groups, *answers.shape[1:])
        yield slice(start, start + len(chunk)), counts.reshape(shape)


def judge_test(
    judges: Array,
    answers: Array,
    labels: NDArray[np.intp],
    groups: int,
    permutations: int,
    seed: int,
) -> JudgeTest:
    """FIGURES of each judge (counts [judge, category, conversation]) beside each group of
    raters (answers [rater, category, conversation], one-hot; labels [rater] group numbers),
    tested against `permutations` relabellings of the raters (shuffled_labellings of
    `seed`: `agreement`'s)."""
    labellings = np.vstack([labels, shuffled_labellings(labels, permutations, seed)])
    values = np.empty((len(labellings), len(judges), groups, len(FIGURES)))
    for rows, counts in _counts(answers, labellings, groups):
        values[rows] = np.moveaxis(beside(judges, counts), 0, 1)
    observed, null = values[0], values[1:]
    return JudgeTest(observed, p_values(observed, null), *null_range(null))


class ErrorCorrelation(NamedTuple):
    """How alike judges err: per judge its error rate and conversations; per pair the
    Pearson correlation of their errors and the conversations both judged; the mean
    pairwise correlation and the effective number of independent judges."""

    error_rate: Array  # [judge]
    judged: NDArray[np.intp]  # [judge]
    correlation: Array  # [judge, judge], 1 on the diagonal where defined
    pairs: NDArray[np.intp]  # [judge, judge]
    mean: float
    effective: float


def error_correlation(wrong: NDArray[np.bool_], judged: NDArray[np.bool_]) -> ErrorCorrelation:
    """wrong, judged: [judge, conversation], the judge's label differs from the crowd's
    where both are defined (`judged`). Each pair's correlation is over the conversations
    both judged (NaN where either's errors are constant there); the mean is over the pairs
    that define one; n_eff = n / (1 + (n - 1) * mean) (NaN with fewer than two judges or no
    pair defined, or a mean of -1 / (n - 1) or below, where it has no finite value)."""
    n = len(wrong)
    errors = np.where(judged, wrong, 0).astype(np.float64)
    rates = ratio(errors.sum(axis=1), judged.sum(axis=1).astype(np.float64))
    both = judged[:, None, :] & judged[None, :, :]
    count = both.sum(axis=-1).astype(np.float64)
    x, y = errors[:, None, :], errors[None, :, :]
    mean_x = ratio((x * both).sum(axis=-1), count)[..., None]
    mean_y = ratio((y * both).sum(axis=-1), count)[..., None]
    dx, dy = np.where(both, x - mean_x, 0.0), np.where(both, y - mean_y, 0.0)
    covariance = (dx * dy).sum(axis=-1)
    spread = np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    correlation = ratio(covariance, spread)
    pair_values = correlation[np.triu_indices(n, k=1)]
    defined = pair_values[~np.isnan(pair_values)]
    mean = float(defined.mean()) if len(defined) else float("nan")
    design_effect = 1 + (n - 1) * mean
    effective = n / design_effect if n >= 2 and design_effect > 0 else float("nan")
    return ErrorCorrelation(
        rates, judged.sum(axis=1), correlation, both.sum(axis=-1), mean, float(effective)
    )
