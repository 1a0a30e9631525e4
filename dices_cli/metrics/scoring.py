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

from dataclasses import dataclass
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
    of int32 along rows are exact and several times faster than of float64."""
    return np.ascontiguousarray(weights, dtype=np.int32)


def _columns(matrix: NDArray[Scalar], indices: NDArray[np.intp]) -> NDArray[Scalar]:
    """matrix[:, indices], laid out row by row: numpy's matrix[:, indices] is laid out column
    by column, which makes every later sum along a row several times slower."""
    return np.take(matrix, indices, axis=1)


class Resamples:
    """The resample counts (B, n) in the forms the metrics read, made once and shared by
    every model, reference and group of an evaluation.

    Where a metric uses some items only (`used`), it does not copy their columns out of the
    counts: it gives the others' columns a weight of 0 instead (the sums are the same).
    """

    def __init__(self, weights: ArrayLike) -> None:
        self.counts = _counts(weights)
        # The float64 copy the matrix products need, made once: `int32 counts @ float64`
        # converts the counts on every call, which took a quarter of an evaluation's time.
        self.floats = self.counts.astype(np.float64)
        self._scratch = np.empty(self.counts.shape, dtype=np.int32)

    def sums(self, columns: Array, used: NDArray[np.bool_] | None) -> Array:
        """Each resample's weighted sum of each column over the `used` items, (B, k)."""
        if used is not None:
            columns = np.where(used[:, None], columns, 0.0)
        return self.floats @ columns

    def scratch(self, width: int) -> Counts:
        """A (B, width) int32 work array, the same memory on every call: the cumulative
        counts of every reference reuse it instead of allocating 4 MB each (DICES-990)."""
        return self._scratch[:, :width]


def resamples_of(weights: ArrayLike | Resamples) -> Resamples:
    return weights if isinstance(weights, Resamples) else Resamples(weights)


@dataclass(frozen=True)
class Ranking:
    """Items sorted by a value once, with every resample's counts in that order, so that
    any subset of the items can be ranked in all resamples by one cumulative sum: a model's
    scores are sorted once for all its references and groups."""

    order: NDArray[np.intp]  # the items with a value (not NaN), ascending
    ends: NDArray[np.intp]  # per distinct value, ascending: the position after its last item
    value_of: NDArray[np.intp]  # per item (of all): its distinct value's index (0 for NaN)
    counts: Counts  # the resample counts of the items in `order`, (B, len(order))


def rank(values: Array, resamples: Resamples) -> Ranking:
    """The Ranking of `values` (NaN: no value) in the resamples."""
    items = np.flatnonzero(~np.isnan(values))
    order = items[np.argsort(values[items], kind="stable")]
    ordered = values[order]
    starts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    ends = np.append(starts, len(order)).astype(np.intp) if len(order) else starts
    first_of_value = np.zeros(len(order), dtype=np.intp)
    first_of_value[starts] = 1
    value_of = np.zeros(len(values), dtype=np.intp)
    value_of[order] = np.cumsum(first_of_value)
    return Ranking(order, ends, value_of, _columns(resamples.counts, order))


def _cumulative_counts(
    ranking: Ranking, counted: NDArray[np.bool_], resamples: Resamples
) -> tuple[Array, Array]:
    """Each resample's count of the `counted` items whose value is <= each distinct value
    of the ranking, and whose value is that value, both (B, distinct values).

    A resample's count up to a value is its cumulative count, in the ranking's order, at
    the last item of that value.
    """
    cumulative = resamples.scratch(len(ranking.order))
    np.multiply(ranking.counts, counted[ranking.order], out=cumulative)
    np.cumsum(cumulative, axis=1, out=cumulative)
    up_to = _columns(cumulative, ranking.ends - 1).astype(np.float64)
    return up_to, np.diff(up_to, axis=1, prepend=0.0)


Used = NDArray[np.bool_] | None  # the items a metric is computed on (None: all)


def label_metrics(
    predicted: ArrayLike, actual: ArrayLike, weights: ArrayLike | Resamples, used: Used = None
) -> Metrics:
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
    tp, fp, fn, tn = resamples_of(weights).sums(cells.astype(np.float64), used).T
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


def _everything(used: Used, n: int) -> NDArray[np.bool_]:
    return np.ones(n, dtype=bool) if used is None else used


def score_metrics(
    score: ArrayLike,
    actual: ArrayLike,
    weights: ArrayLike | Resamples,
    bins: int = 10,
    used: Used = None,
    highest_first: Ranking | None = None,
) -> Metrics:
    """roc_auc, average_precision, brier and ece (expected calibration error) of a score.

    score: the predicted probability of unsafe, in [0, 1] (NaN only where not `used`).
    highest_first: rank(-score) in the same resamples, when the caller shares it among
    several calls. References: scikit-learn's roc_auc_score (NaN, where it raises, when
    the resample has one class only), average_precision_score (NaN, where it warns, when
    the resample has no unsafe item), brier_score_loss. ece: the `bins` equal-width bins of
    [0, 1], [i/bins, (i+1)/bins) and the last one closed; the sum over bins of the share of
    items in the bin times |mean(actual) - mean(score)| in the bin, i.e.
    |sum(actual - score)| in the bin / n.
    """
    score = np.asarray(score, dtype=np.float64)
    actual = np.asarray(actual, dtype=bool)
    used = _everything(used, len(score))
    resamples = resamples_of(weights)

    error = np.where(used, score - actual, 0.0)
    edges = np.arange(bins + 1) / bins
    bin_of = np.minimum(np.searchsorted(edges, score, side="right") - 1, bins - 1)
    columns = np.zeros((len(score), bins + 3))
    columns[:, 0] = 1
    columns[:, 1] = actual
    columns[:, 2] = error**2
    columns[np.arange(len(score)), 3 + bin_of] = error
    sums = resamples.sums(columns, used)
    n, unsafe_total, squared_error = sums[:, :3].T
    safe_total = n - unsafe_total

    # Thresholds: the distinct scores, highest first; an item is flagged at a threshold when
    # its score is at or above it. Ranking the negated scores makes that a count "<=".
    ranking = highest_first if highest_first is not None else rank(-score, resamples)
    unsafe_flagged, unsafe_at = _cumulative_counts(ranking, used & actual, resamples)
    flagged, flagged_at = _cumulative_counts(ranking, used, resamples)
    safe_flagged, safe_at = flagged - unsafe_flagged, flagged_at - unsafe_at

    # AUC = P(score of an unsafe item > that of a safe one), ties counting one half: an unsafe
    # item at a threshold outranks the safe ones not flagged yet, and ties with those at it.
    outranked = (
        unsafe_total * safe_total
        - np.einsum("bt,bt->b", unsafe_at, safe_flagged)
        + np.einsum("bt,bt->b", unsafe_at, safe_at) / 2
    )
    roc_auc = _ratio(outranked, unsafe_total * safe_total)

    # AP = sum over thresholds of the recall gained there times the precision there.
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


def distribution_metrics(
    predicted: ArrayLike, observed: ArrayLike, weights: ArrayLike | Resamples, used: Used = None
) -> Metrics:
    """cross_entropy, jsd and tvd of predicted against observed answer distributions, (n, k).

    Each is a mean over items of a per-item value:
    - cross_entropy: -sum_k observed * ln(clip(predicted, 1e-15, 1));
    - jsd: the Jensen-Shannon divergence in bits, scipy.spatial.distance.jensenshannon(p, q,
      base=2) ** 2 (which, like scipy, first scales each row to sum to 1);
    - tvd: the total-variation distance, half the L1 distance.
    A score s is the distribution [1 - s, s]. NaN for an empty resample. Rows not `used`
    may hold anything (NaN).
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    used = _everything(used, len(predicted))
    predicted, observed = predicted[used], observed[used]
    cross_entropy = -(observed * np.log(np.clip(predicted, PROBABILITY_FLOOR, 1))).sum(axis=1)
    p = predicted / predicted.sum(axis=1, keepdims=True)
    q = observed / observed.sum(axis=1, keepdims=True)
    middle = (p + q) / 2
    jsd = (_relative_entropy(p, middle) + _relative_entropy(q, middle)) / (2 * np.log(2))
    tvd = np.abs(predicted - observed).sum(axis=1) / 2
    columns = np.zeros((len(used), 4))
    columns[used] = np.column_stack([np.ones(len(p)), cross_entropy, jsd, tvd])
    sums = resamples_of(weights).sums(columns, None)
    means = _ratio(sums[:, 1:], sums[:, :1])
    return dict(zip(["cross_entropy", "jsd", "tvd"], means.T, strict=True))


def _mid_ranks(
    ranking: Ranking, used: NDArray[np.bool_], resamples: Resamples
) -> tuple[Array, Array, Array]:
    """In each resample, among the `used` items: each distinct value's mid-rank, (B,
    values); the weighted sum of squared mid-ranks and the count of distinct values, (B,).

    In the data repeated by a row of weights, the copies of a value take the ranks after all
    lower values: their mid-rank is the count up to the value minus (its count - 1) / 2.
    """
    up_to, at = _cumulative_counts(ranking, used, resamples)
    mid_ranks = up_to - (at - 1) / 2
    return (
        mid_ranks,
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


def correlation_metrics(
    x: ArrayLike,
    y: ArrayLike,
    weights: ArrayLike | Resamples,
    used: Used = None,
    lowest_first: Ranking | None = None,
) -> Metrics:
    """pearson and spearman correlation of x and y (scipy's pearsonr and spearmanr).

    lowest_first: rank(x) in the same resamples, when the caller shares it among several
    calls. Spearman's is Pearson's of the mid-ranks of the repeated data. NaN where x or y
    takes a single value in the resample (scipy warns and returns NaN), or the resample is
    empty.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    used = _everything(used, len(x))
    resamples = resamples_of(weights)
    x_ranking = lowest_first if lowest_first is not None else rank(x, resamples)
    y_ranking = rank(np.where(used, y, np.nan), resamples)
    x_ranks, x_squares, x_values = _mid_ranks(x_ranking, used, resamples)
    y_ranks, y_squares, y_values = _mid_ranks(y_ranking, used, resamples)
    single_value = (x_values < 2) | (y_values < 2)

    # The used items in y's order, whose resample counts y's ranking holds already.
    items = y_ranking.order
    float_weights = y_ranking.counts.astype(np.float64)
    n = float_weights.sum(axis=1)
    # Mid-ranks are multiples of 1/2 and their mean is (n + 1) / 2: every sum below is exact,
    # so a single value has a spread of exactly 0.
    n_times_mean_squared = n * (n + 1) ** 2 / 4
    x_item_ranks = _columns(x_ranks, x_ranking.value_of[items])
    y_item_ranks = _columns(y_ranks, y_ranking.value_of[items])
    spearman = _ratio(
        np.einsum("bi,bi,bi->b", float_weights, x_item_ranks, y_item_ranks) - n_times_mean_squared,
        np.sqrt((x_squares - n_times_mean_squared) * (y_squares - n_times_mean_squared)),
    )
    pearson = _pearson(float_weights, x[items], y[items])
    return {
        # A mean of copies of one value may differ from it in the last bit: no spread then.
        "pearson": np.where(single_value, np.nan, pearson),
        "spearman": np.clip(spearman, -1, 1),
    }
