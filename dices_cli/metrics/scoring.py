"""Metrics of a model's predictions against a reference, for every bootstrap resample at once.

Every function takes `weights`, an array (B, n) of non-negative integer counts: how often
conversation i is in resample b (dices_cli.metrics.bootstrap.bootstrap_weights; row 0, all
ones, gives the point estimate). It returns, per metric, an array (B,) whose value b is
exactly what the reference implementation (scikit-learn, scipy) gives on the data with item i
repeated weights[b, i] times. Where the metric is undefined (a zero denominator, one class
or one value only in the resample) the value is NaN, also where scikit-learn would warn and
return 0. Nothing loops over resamples: sums are matrix products `weights @ x`, and the rank
metrics sort the items once, then take each resample's cumulative counts in that order
(int32 cumulative sums, which are fast). Booleans: True = unsafe = positive.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dices_cli.metrics.agreement import Array, _ratio

# Predicted probabilities are clipped to this before the logarithm of the cross-entropy, as
# scikit-learn's log_loss used to: a confident wrong answer costs ln(1e15) ~ 34.5, not infinity.
PROBABILITY_FLOOR = 1e-15

Counts = NDArray[np.int32]
Scalar = TypeVar("Scalar", bound=np.generic)
Metrics = dict[str, Array]


def _counts(weights: ArrayLike) -> Counts:
    """The weights as row-major int32 counts (no copy if they are already): cumulative sums
    of int32 along rows are exact and several times faster than of float64. (A selection of
    columns, weights[:, items], is column-major: it is copied.)"""
    return np.ascontiguousarray(weights, dtype=np.int32)


def _columns(matrix: NDArray[Scalar], indices: NDArray[np.intp]) -> NDArray[Scalar]:
    """matrix[:, indices], laid out row by row: numpy's matrix[:, indices] is laid out column
    by column, which makes every later sum along a row several times slower."""
    return np.take(matrix, indices, axis=1)


def _cumulative_counts(
    counts: Counts, values: Array, thresholds: Array, counted: NDArray[np.bool_] | None = None
) -> tuple[Array, Array]:
    """Each resample's count of the items (those `counted`, or all) whose value is <= each
    of the ascending thresholds, and whose value is between it and the threshold before,
    both (B, len(thresholds)).

    The items are sorted once; a resample's count up to a threshold is then its cumulative
    count at the last item at or below it.
    """
    items = np.arange(len(values)) if counted is None else np.flatnonzero(counted)
    order = items[np.argsort(values[items], kind="stable")]
    cumulative = np.zeros((counts.shape[0], len(order) + 1), dtype=np.int32)
    np.cumsum(_columns(counts, order), axis=1, out=cumulative[:, 1:])
    # Column 0 of the cumulative counts is 0: the count up to "before the first threshold".
    ends = np.searchsorted(values[order], thresholds, side="right")
    up_to = _columns(cumulative, np.concatenate([[0], ends]))
    return up_to[:, 1:].astype(np.float64), np.diff(up_to, axis=1).astype(np.float64)


def label_metrics(predicted: ArrayLike, actual: ArrayLike, weights: ArrayLike) -> Metrics:
    """n (sum of weights), accuracy, precision, recall, f1, kappa (Cohen) and mcc (Matthews).

    References: scikit-learn's accuracy_score, precision_score, recall_score, f1_score,
    cohen_kappa_score, matthews_corrcoef (unsafe = positive class). Where scikit-learn warns
    and returns 0 (precision with no positive prediction, recall with no positive in the
    reference, f1 with neither, mcc when either side has one class only) and where kappa
    is undefined (both sides one and the same class), the value is NaN; so is every metric
    of an empty resample.
    """
    predicted = np.asarray(predicted, dtype=bool)
    actual = np.asarray(actual, dtype=bool)
    cells = np.column_stack(
        [predicted & actual, predicted & ~actual, ~predicted & actual, ~predicted & ~actual]
    )
    tp, fp, fn, tn = (_counts(weights) @ cells.astype(np.float64)).T
    n = tp + fp + fn + tn
    predicted_yes, predicted_no = tp + fp, fn + tn
    actual_yes, actual_no = tp + fn, fp + tn
    # n times the number of disagreements expected by chance, from the two sides' margins.
    chance_disagreements = actual_yes * predicted_no + actual_no * predicted_yes
    return {
        "n": n,
        "accuracy": _ratio(tp + tn, n),
        "precision": _ratio(tp, predicted_yes),
        "recall": _ratio(tp, actual_yes),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "kappa": 1 - _ratio((fp + fn) * n, chance_disagreements),
        "mcc": _ratio(
            tp * tn - fp * fn, np.sqrt(predicted_yes * predicted_no * actual_yes * actual_no)
        ),
    }


def score_metrics(
    score: ArrayLike, actual: ArrayLike, weights: ArrayLike, bins: int = 10
) -> Metrics:
    """roc_auc, average_precision, brier and ece (expected calibration error) of a score.

    score: the predicted probability of unsafe, in [0, 1]. References: scikit-learn's
    roc_auc_score (NaN, where it raises, when the resample has one class only),
    average_precision_score (NaN, where it warns, when the resample has no unsafe item),
    brier_score_loss. ece: the `bins` equal-width bins of [0, 1], [i/bins, (i+1)/bins) and
    the last one closed; the sum over bins of the share of items in the bin times
    |mean(actual) - mean(score)| in the bin, i.e. |sum(actual - score)| in the bin / n.
    """
    score = np.asarray(score, dtype=np.float64)
    actual = np.asarray(actual, dtype=bool)
    counts = _counts(weights)

    error = score - actual
    edges = np.arange(bins + 1) / bins
    bin_of = np.minimum(np.searchsorted(edges, score, side="right") - 1, bins - 1)
    columns = np.zeros((len(score), bins + 3))
    columns[:, 0] = 1
    columns[:, 1] = actual
    columns[:, 2] = error**2
    columns[np.arange(len(score)), 3 + bin_of] = error
    sums = counts @ columns
    n, unsafe_total, squared_error = sums[:, :3].T
    safe_total = n - unsafe_total

    # Thresholds: the distinct scores, highest first; an item is flagged at a threshold when
    # its score is at or above it. Sorting the negated scores makes that a count "<=".
    thresholds = np.unique(-score)
    unsafe_flagged, unsafe_at = _cumulative_counts(counts, -score, thresholds, actual)
    safe_flagged, safe_at = _cumulative_counts(counts, -score, thresholds, ~actual)

    # AUC = P(score of an unsafe item > that of a safe one), ties counting one half: an unsafe
    # item at a threshold outranks the safe ones not flagged yet, and ties with those at it.
    outranked = (
        unsafe_total * safe_total
        - np.einsum("bt,bt->b", unsafe_at, safe_flagged)
        + np.einsum("bt,bt->b", unsafe_at, safe_at) / 2
    )
    roc_auc = _ratio(outranked, unsafe_total * safe_total)

    # AP = sum over thresholds of the recall gained there times the precision there.
    flagged = unsafe_flagged + safe_flagged
    precision = np.divide(unsafe_flagged, flagged, out=np.zeros_like(flagged), where=flagged > 0)
    average_precision = _ratio(np.einsum("bt,bt->b", unsafe_at, precision), unsafe_total)
    return {
        "roc_auc": roc_auc,
        "average_precision": average_precision,
        "brier": _ratio(squared_error, n),
        "ece": _ratio(np.abs(sums[:, 3:]).sum(axis=1), n),
    }


def _relative_entropy(p: Array, q: Array) -> Array:
    """sum_k p log(p / q) per row (natural log), with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):  # fixed by the where
        return np.where(p > 0, p * np.log(p / q), 0.0).sum(axis=1)


def distribution_metrics(predicted: ArrayLike, observed: ArrayLike, weights: ArrayLike) -> Metrics:
    """cross_entropy, jsd and tvd of predicted against observed answer distributions, (n, k).

    Each is a mean over items of a per-item value:
    - cross_entropy: -sum_k observed * ln(clip(predicted, 1e-15, 1));
    - jsd: the Jensen-Shannon divergence in bits, scipy.spatial.distance.jensenshannon(p, q,
      base=2) ** 2 (which, like scipy, first scales each row to sum to 1);
    - tvd: the total-variation distance, half the L1 distance.
    A score s is the distribution [1 - s, s]. NaN for an empty resample.
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    cross_entropy = -(observed * np.log(np.clip(predicted, PROBABILITY_FLOOR, 1))).sum(axis=1)
    p = predicted / predicted.sum(axis=1, keepdims=True)
    q = observed / observed.sum(axis=1, keepdims=True)
    middle = (p + q) / 2
    jsd = (_relative_entropy(p, middle) + _relative_entropy(q, middle)) / (2 * np.log(2))
    tvd = np.abs(predicted - observed).sum(axis=1) / 2
    sums = _counts(weights) @ np.column_stack([np.ones(len(p)), cross_entropy, jsd, tvd])
    means = _ratio(sums[:, 1:], sums[:, :1])
    return dict(zip(["cross_entropy", "jsd", "tvd"], means.T, strict=True))


def _mid_ranks(counts: Counts, values: Array) -> tuple[Array, Array, Array]:
    """In each resample: each item's mid-rank, (B, n); the weighted sum of squared mid-ranks
    and the count of distinct values, both (B,).

    In the data repeated by a row of weights, the copies of a value take the ranks after all
    lower values: their mid-rank is the count up to the value minus (its count - 1) / 2.
    """
    distinct, value_of = np.unique(values, return_inverse=True)
    up_to, at = _cumulative_counts(counts, values, distinct)
    mid_ranks = up_to - (at - 1) / 2
    return (
        _columns(mid_ranks, value_of),
        np.einsum("bv,bv,bv->b", at, mid_ranks, mid_ranks),
        np.count_nonzero(at, axis=1),
    )


def _pearson(weights: Array, x: Array, y: Array) -> Array:
    """Pearson's correlation of x and y, (n,), in each resample.

    Deviations are taken from each resample's own means (two passes), so a resample whose
    values sit far from the others' loses no digits to the offset.
    """
    n, sum_x, sum_y = (weights @ np.column_stack([np.ones(len(x)), x, y])).T
    x_deviation = x - _ratio(sum_x, n)[:, None]
    y_deviation = y - _ratio(sum_y, n)[:, None]
    weighted_x = weights * x_deviation
    covariance = np.einsum("bi,bi->b", weighted_x, y_deviation)
    spread = np.sqrt(
        np.einsum("bi,bi->b", weighted_x, x_deviation)
        * np.einsum("bi,bi,bi->b", weights, y_deviation, y_deviation)
    )
    return np.clip(_ratio(covariance, spread), -1, 1)


def correlation_metrics(x: ArrayLike, y: ArrayLike, weights: ArrayLike) -> Metrics:
    """pearson and spearman correlation of x and y (scipy's pearsonr and spearmanr).

    Spearman's is Pearson's of the mid-ranks of the repeated data. NaN where x or y takes a
    single value in the resample (scipy warns and returns NaN), or the resample is empty.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    counts = _counts(weights)
    float_weights = counts.astype(np.float64)
    x_ranks, x_squares, x_values = _mid_ranks(counts, x)
    y_ranks, y_squares, y_values = _mid_ranks(counts, y)
    single_value = (x_values < 2) | (y_values < 2)

    # Mid-ranks are multiples of 1/2 and their mean is (n + 1) / 2: every sum below is exact,
    # so a single value has a spread of exactly 0.
    n = counts.sum(axis=1, dtype=np.float64)
    n_times_mean_squared = n * (n + 1) ** 2 / 4
    spearman = _ratio(
        np.einsum("bi,bi,bi->b", float_weights, x_ranks, y_ranks) - n_times_mean_squared,
        np.sqrt((x_squares - n_times_mean_squared) * (y_squares - n_times_mean_squared)),
    )
    return {
        # A mean of copies of one value may differ from it in the last bit: no spread then.
        "pearson": np.where(single_value, np.nan, _pearson(float_weights, x, y)),
        "spearman": np.clip(spearman, -1, 1),
    }
