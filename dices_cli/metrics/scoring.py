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

For an evaluation (many models, references and groups on the same resamples) the weights
may be a `Resamples`, which holds them in the forms the metrics read, converted once; a
`used` mask picks a metric's items (the others weigh 0) instead of a copy of their columns;
several references can be stacked along a last axis (one matrix product for all); and a
model's `rank` of its scores can be passed in, sorted once for all its references. The
speed tricks are each in one place: Resamples.__init__ (float64 once), Resamples.sums
(stacking), Resamples.scratch and Resamples.work (no fresh (B, n) arrays), rank (one sort
per model), _ranked_metrics (only the thresholds holding an unsafe item), correlation_side (a
model's side of its correlations, once per set of items, its counts and ranks as integers)
and correlation_metrics (sums over a group's few distinct shares, not over its items). Every
value stays the same as without them, up to the last bits of a float sum taken in another
order (tests/metrics/test_scoring.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dices_cli.metrics.agreement import Array, ratio

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
        # converts the counts on every call: 14% of an evaluation's time (profile, DICES-350).
        self.floats = self.counts.astype(np.float64)
        self._scratch = np.empty(self.counts.size, dtype=np.int32)
        # A count times twice a mid-rank, and such products summed, reach about 2 m^2 in a
        # resample of m items: int32 (half the bytes of float64 to move) while that fits.
        most = int(self.counts.sum(axis=1, dtype=np.int64).max(initial=0))
        fits = most * (2 * most + 1) <= np.iinfo(np.int32).max
        self.rank_dtype: type[np.signedinteger] = np.int32 if fits else np.int64
        self._work: dict[int, Array] = {}

    def sums(self, columns: Array, used: NDArray[np.bool_] | None) -> Array:
        """Each resample's weighted sum of each column over the `used` items: columns (n, k,
        ...), used (n, ...) (the same trailing axes, one per stacked reference) -> (B, k, ...).

        One product for all the stacked references: a product reads all of the (B, n)
        counts however few its columns are, so 21 products of 4 columns cost about 21 times
        one product of 84.
        """
        if used is not None:
            columns = np.where(np.expand_dims(used, 1), columns, 0.0)
        width = math.prod(columns.shape[1:])
        flat = np.ascontiguousarray(columns, dtype=np.float64).reshape(len(columns), width)
        product = self.floats @ flat
        # Row 0 (the data as they are: the point estimates) by a product of its own, so that
        # its sums' order, and so their last bits, never depend on how many resamples share
        # the product (a BLAS kernel orders a row's sum by the product's shape).
        if len(product):
            product[0] = self.floats[0] @ flat
        return product.reshape(len(self.floats), *columns.shape[1:])

    def scratch(self, width: int) -> Counts:
        """A (B, width) int32 work array, the same memory on every call: the cumulative
        counts of every reference reuse it instead of allocating their own each."""
        return self._scratch[: len(self.counts) * width].reshape(len(self.counts), width)

    def work(self, slot: int, width: int) -> Array:
        """A (B, width) float64 work array, slot `slot`: the same memory on every call.
        The rank metrics keep their (B, n) intermediates in these instead of allocating
        fresh ones: a fresh array of that size costs its page faults again, more than the
        arithmetic on it, and a call needs some twenty (bench/evaluate.py)."""
        if slot not in self._work:
            self._work[slot] = np.empty(self.counts.size, dtype=np.float64)
        # Contiguous, not the first `width` columns of a (B, n) array: a narrow array's rows
        # then share pages, which halves the time of arithmetic on it (DICES-990, B x 157).
        return self._work[slot][: len(self.counts) * width].reshape(len(self.counts), width)


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
    # correlation_side's x sides, by `used` mask: made once per set of items.
    sides: dict[bytes, CorrelationSide] = field(default_factory=dict, compare=False)


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


def _up_to(ranking: Ranking, counted: NDArray[np.bool_], resamples: Resamples) -> Counts:
    """Each resample's count of the `counted` items whose value is <= each distinct value of
    the ranking, (B, distinct values).

    A resample's count up to a value is its cumulative count, in the ranking's order, at
    the last item of that value.
    """
    cumulative = resamples.scratch(len(ranking.order))
    np.multiply(ranking.counts, counted[ranking.order], out=cumulative)
    np.cumsum(cumulative, axis=1, out=cumulative)
    return _columns(cumulative, ranking.ends - 1)


def _at(up_to: NDArray[Scalar], out: NDArray[Scalar]) -> NDArray[Scalar]:
    """The counts at each value from the counts up to it: the differences along rows.

    Both arrays are C-contiguous: the differences are taken over them flattened (several
    times faster than between a 2-D array's column slices), then each row's first is set.
    """
    if up_to.shape[1]:
        flat, flat_out = np.reshape(up_to, -1, copy=False), np.reshape(out, -1, copy=False)
        np.subtract(flat[1:], flat[:-1], out=flat_out[1:])
        out[:, 0] = up_to[:, 0]
    return out


Used = NDArray[np.bool_] | None  # the items a metric is computed on (None: all)


def _like(item_values: NDArray[Scalar], stacked: NDArray[np.generic]) -> NDArray[Scalar]:
    """Values per item, (n, ...), given one more axis for each trailing axis of `stacked`
    (stacked references: a metric takes a reference side (n, R) to score R at once)."""
    extra = stacked.ndim - item_values.ndim
    return item_values.reshape(item_values.shape + (1,) * extra) if extra > 0 else item_values


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
    actual = np.asarray(actual, dtype=bool)
    predicted = _like(np.asarray(predicted, dtype=bool), actual)
    cells = np.stack(
        [predicted & actual, predicted & ~actual, ~predicted & actual, ~predicted & ~actual],
        axis=1,
    )
    tp, fp, fn, tn = np.moveaxis(resamples_of(weights).sums(cells, used), 1, 0)
    return confusion_metrics(tp, fp, fn, tn)


def confusion_metrics(tp: Array, fp: Array, fn: Array, tn: Array) -> Metrics:
    """label_metrics' figures from the (weighted) counts of true and false positives and
    negatives, any shape: the one formula of each, for every caller that has the counts."""
    n = tp + fp + fn + tn
    predicted_yes, predicted_no = tp + fp, fn + tn
    actual_yes, actual_no = tp + fn, fp + tn
    # n times the number of disagreements expected by chance, from the two sides' margins.
    chance_disagreements = actual_yes * predicted_no + actual_no * predicted_yes
    return {
        "n": n,
        "accuracy": ratio(tp + tn, n),
        "precision": ratio(tp, predicted_yes),
        "recall": ratio(tp, actual_yes),
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        "kappa": 1 - ratio((fp + fn) * n, chance_disagreements),
        "mcc": ratio(
            tp * tn - fp * fn, np.sqrt(predicted_yes * predicted_no * actual_yes * actual_no)
        ),
    }


def _everything(used: Used, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    return np.ones(shape, dtype=bool) if used is None else np.asarray(used, dtype=bool)


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
    actual (n,) or, to score R references at once, (n, R) (then `used` too, and every
    metric is (B, R)). highest_first: rank(-score) in the same resamples, when the caller
    shares it among several calls. References: scikit-learn's roc_auc_score (NaN, where it
    raises, when the resample has one class only), average_precision_score (NaN, where it
    warns, when the resample has no unsafe item), brier_score_loss. ece: the `bins`
    equal-width bins of [0, 1], [i/bins, (i+1)/bins) and the last one closed; the sum over
    bins of the share of items in the bin times |mean(actual) - mean(score)| in the bin,
    i.e. |sum(actual - score)| in the bin / n.
    """
    score = np.asarray(score, dtype=np.float64)
    actual = np.asarray(actual, dtype=bool)
    used = _everything(used, actual.shape)
    resamples = resamples_of(weights)

    error = np.where(used, _like(score, actual) - actual, 0.0)
    edges = np.arange(bins + 1) / bins
    bin_of = np.minimum(np.searchsorted(edges, score, side="right") - 1, bins - 1)
    columns = np.zeros((len(score), bins + 3, *actual.shape[1:]))
    columns[:, 0] = 1
    columns[:, 1] = actual
    columns[:, 2] = error**2
    columns[np.arange(len(score)), 3 + bin_of] = error
    sums = resamples.sums(columns, used)
    n, unsafe_total, squared_error = sums[:, 0], sums[:, 1], sums[:, 2]

    # Thresholds: the distinct scores, highest first; an item is flagged at a threshold when
    # its score is at or above it. Ranking the negated scores makes that a count "<=".
    ranking = highest_first if highest_first is not None else rank(-score, resamples)
    ranked = [
        _ranked_metrics(ranking, unsafe, chosen, resamples)
        for unsafe, chosen in zip(_references(actual), _references(used), strict=True)
    ]
    outranked, hits = (np.stack([r[k] for r in ranked], axis=-1).reshape(n.shape) for k in range(2))
    safe_total = n - unsafe_total
    return {
        "roc_auc": ratio(outranked, unsafe_total * safe_total),
        "average_precision": ratio(hits, unsafe_total),
        "brier": ratio(squared_error, n),
        "ece": ratio(np.abs(sums[:, 3:]).sum(axis=1), n),
    }


def _references(stacked: NDArray[Scalar]) -> list[NDArray[Scalar]]:
    """Each stacked reference's (n,) column; the array itself if it has none."""
    return [stacked] if stacked.ndim == 1 else list(stacked.T)


def _ranked_metrics(
    ranking: Ranking, actual: NDArray[np.bool_], used: NDArray[np.bool_], resamples: Resamples
) -> tuple[Array, Array]:
    """The ROC AUC's numerator (pairs an unsafe item outranks) and the average precision
    times the count of unsafe items, (B,), from the cumulative counts over the thresholds
    (work arrays 0-4).

    Both are sums over the thresholds of the unsafe items' count there times a term, so only
    the thresholds holding a `used` unsafe item are summed: a few hundred of DICES-990's
    ~990 distinct scores, the rest adding exact zeros. Their counts come from two int32
    cumulative sums, of every used item and of the unsafe ones alone.
    """
    in_order = used[ranking.order]
    flagged = resamples.scratch(len(ranking.order))  # cumulative counts, in ranking order
    np.multiply(ranking.counts, in_order, out=flagged)
    np.cumsum(flagged, axis=1, out=flagged)
    unsafe_positions = np.flatnonzero(in_order & actual[ranking.order])
    unsafe_flagged = np.cumsum(_columns(ranking.counts, unsafe_positions), axis=1, dtype=np.int32)
    # The thresholds holding an unsafe item, and each one's last unsafe item.
    value = ranking.value_of[ranking.order[unsafe_positions]]
    last = np.flatnonzero(np.append(value[1:] != value[:-1], True)) if len(value) else value
    threshold = value[last]
    width = len(threshold)
    # The counts up to each threshold and up to the threshold before it (0 before the first).
    unsafe_up_to = resamples.work(0, width)
    np.copyto(unsafe_up_to, _columns(unsafe_flagged, last))
    unsafe_at = _at(unsafe_up_to, resamples.work(1, width))
    flagged_up_to = resamples.work(2, width)
    np.copyto(flagged_up_to, _columns(flagged, ranking.ends[threshold] - 1))
    start = np.where(threshold > 0, ranking.ends[threshold - 1], 0)
    flagged_before = resamples.work(3, width)
    np.multiply(_columns(flagged, np.maximum(start, 1) - 1), start > 0, out=flagged_before)
    safe_up_to = np.subtract(flagged_up_to, unsafe_up_to, out=resamples.work(4, width))
    flagged_before -= unsafe_up_to
    flagged_before += unsafe_at  # now the safe items up to the threshold before
    unsafe_total = unsafe_flagged[:, -1] if len(unsafe_positions) else np.zeros(len(flagged))
    safe_total = (flagged[:, -1] if flagged.shape[1] else 0) - unsafe_total
    # AUC = P(score of an unsafe item > that of a safe one), ties counting one half: an unsafe
    # item at a threshold outranks the safe ones not flagged yet, and half those at it, i.e.
    # all but the mean of the safe ones flagged up to it and up to the threshold before.
    halfway = np.add(safe_up_to, flagged_before, out=flagged_before)
    halfway *= 0.5
    outranked = unsafe_total.astype(np.float64) * safe_total - np.einsum(
        "bt,bt->b", unsafe_at, halfway
    )
    # AP = sum over thresholds of the recall gained there times the precision there.
    precision = np.divide(
        unsafe_up_to, np.maximum(flagged_up_to, 1, out=flagged_up_to), out=flagged_up_to
    )
    return outranked, np.einsum("bt,bt->b", unsafe_at, precision)


def _summed(by_category: Array) -> Array:
    """The sum over the categories of (k, ...) values, left to right as numpy sums a row."""
    total = by_category[0].copy()
    for values in by_category[1:]:
        total += values
    return total


def _relative_entropy(p: Array, q: Array) -> Array:
    """sum_k p log(p / q) per item of (k, ...) distributions (natural log), 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):  # fixed by the where
        return _summed(np.where(p > 0, p * np.log(p / q), 0.0))


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
    may hold anything (NaN). observed (n, k, R) and used (n, R) score R references at once
    (every metric (B, R)).
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    stacked = observed if observed.ndim == 3 else observed[..., None]
    used = _everything(used, stacked.shape[:1] + stacked.shape[2:])
    used = used if used.ndim == 2 else used[:, None]
    # Every (item, reference) pair at once, the pairs not used zeroed after: evaluate's
    # clustered group rows stack 2 x 32 references per group and model (320 calls per model
    # with --by rater_race, one per reference, cost more in their fixed costs than in their
    # arithmetic; picking the used pairs out and back cost as much again).
    categories = np.broadcast_to(predicted.T[..., None], np.moveaxis(stacked, 1, 0).shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # pairs not used: anything
        divergences = category_divergences(categories, np.moveaxis(stacked, 1, 0))
    columns = np.concatenate(
        [used[:, None], np.where(used[:, None], np.moveaxis(divergences, 0, 1), 0.0)], axis=1
    )
    sums = resamples_of(weights).sums(columns, None)
    means = ratio(sums[:, 1:], sums[:, :1])
    if observed.ndim == 2:
        means = means[..., 0]
    return dict(zip(["cross_entropy", "jsd", "tvd"], np.moveaxis(means, 1, 0), strict=True))


def category_divergences(predicted: Array, observed: Array) -> Array:
    """The cross-entropy, the JSD and the TVD, (3, ...), of distributions given category by
    category, (k, ...).

    Category by category, not item by item: numpy's sums over a short last axis cost a
    step per item, which dominates for the hundreds of thousands of items of a model's
    clustered rows with --by (bench/evaluate.py); the sums over the categories are taken
    left to right, as numpy sums a row."""
    cross_entropy = -_summed(observed * np.log(np.clip(predicted, PROBABILITY_FLOOR, 1)))
    p = predicted / _summed(predicted)
    q = observed / _summed(observed)
    middle = (p + q) / 2
    jsd = (_relative_entropy(p, middle) + _relative_entropy(q, middle)) / (2 * np.log(2))
    tvd = _summed(np.abs(predicted - observed)) / 2
    return np.stack([cross_entropy, jsd, tvd])


def _mid_ranks(
    ranking: Ranking, used: NDArray[np.bool_], resamples: Resamples
) -> tuple[Counts, Array, NDArray[np.intp]]:
    """In each resample, among the `used` items: twice each distinct value's mid-rank, (B,
    values), an integer; the weighted sum of squared mid-ranks and the count of distinct
    values, both (B,).

    In the data repeated by a row of weights, the copies of a value take the ranks after all
    lower values: their mid-rank is the count up to the value minus (its count - 1) / 2.
    """
    twice_mid_ranks = _up_to(ranking, used, resamples)
    at = _at(twice_mid_ranks, np.empty_like(twice_mid_ranks))
    values = np.count_nonzero(at, axis=1)
    twice_mid_ranks *= 2  # in place: 2 * up to - at + 1
    twice_mid_ranks -= at
    twice_mid_ranks += 1
    squares = np.einsum("bv,bv,bv->b", at, twice_mid_ranks, twice_mid_ranks, dtype=np.int64)
    # Quartering is exact: the sum of the counts times the squared mid-ranks.
    return twice_mid_ranks, squares / 4, values


@dataclass(frozen=True)
class CorrelationSide:
    """The x side of the correlations of x with any y over the same `used` items, in every
    resample: what correlation_metrics needs of x, made once per model and set of items (most
    groups rate every conversation, so their `used` masks repeat)."""

    # 0 where not used: (2 B, n) each item's count, then twice its count times its mid-rank
    # (integers: Resamples.rank_dtype); (B, n) its count times its deviation from the
    # resample's mean. The integers move through a gather in half the time of float64.
    counted: NDArray[np.signedinteger]
    weighted_deviations: Array
    rank_squares: Array  # (B,): the weighted sum of squared mid-ranks
    values: NDArray[np.intp]  # (B,): the count of distinct values
    n: Array  # (B,): the count of used items
    spread: Array  # (B,): the weighted sum of squared deviations


def correlation_side(
    x: Array, used: NDArray[np.bool_], resamples: Resamples, lowest_first: Ranking
) -> CorrelationSide:
    """The CorrelationSide of x (ranked in `lowest_first`) over the `used` items, remembered
    in the ranking for the next y over the same items."""
    key = used.tobytes()
    if key not in lowest_first.sides:
        twice_mid_ranks, squares, values = _mid_ranks(lowest_first, used, resamples)
        counted = np.empty((2, *resamples.counts.shape), dtype=resamples.rank_dtype)
        counts, twice_weighted_ranks = counted
        np.multiply(resamples.counts, used, out=counts)
        twice_ranks = resamples.scratch(len(x))
        if twice_mid_ranks.shape[1]:
            np.take(twice_mid_ranks, lowest_first.value_of, axis=1, out=twice_ranks, mode="clip")
        else:  # x has no value: no item is used, and a rank weighs nothing
            twice_ranks.fill(0)
        np.multiply(twice_ranks, counts, out=twice_weighted_ranks)
        weights = np.multiply(resamples.floats, used, out=resamples.work(0, len(x)))
        x_used = np.where(used, x, 0.0)
        n, sum_x = (weights @ np.column_stack([np.ones(len(x)), x_used])).T
        # Deviations from each resample's own mean (Pearson's in two passes), so a resample
        # whose values sit far from the others' loses no digits to the offset.
        weighted_deviations = np.subtract(x_used, ratio(sum_x, n)[:, None])
        spread = np.einsum("bi,bi,bi->b", weights, weighted_deviations, weighted_deviations)
        weighted_deviations *= weights
        lowest_first.sides[key] = CorrelationSide(
            counted.reshape(2 * len(n), len(x)), weighted_deviations, squares, values, n, spread
        )
    return lowest_first.sides[key]


def correlation_metrics(
    x: ArrayLike,
    y: ArrayLike,
    weights: ArrayLike | Resamples,
    used: Used = None,
    lowest_first: Ranking | None = None,
) -> Metrics:
    """pearson and spearman correlation of x and y (scipy's pearsonr and spearmanr).

    lowest_first: rank(x) in the same resamples, when the caller shares it among several
    calls (it then keeps x's side for each set of `used` items: CorrelationSide). Spearman's
    is Pearson's of the mid-ranks of the repeated data. NaN where x or y takes a single
    value in the resample (scipy warns and returns NaN), or the resample is empty.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    used = _everything(used, x.shape) & ~np.isnan(x)
    resamples = resamples_of(weights)
    x_side = correlation_side(
        x, used, resamples, lowest_first if lowest_first is not None else rank(x, resamples)
    )
    # Every sum over items is one over y's distinct values (shares k/m take few) of sums
    # over the items of each value: the used items sorted by y, each value's run summed.
    items = np.flatnonzero(used)
    order = items[np.argsort(y[items], kind="stable")]
    ordered = y[order]
    starts = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1]))[: len(order)]
    y_values = ordered[starts]
    y_at, twice_x_ranks_at = _value_sums(x_side.counted, order, starts).reshape(
        2, len(x_side.n), len(starts)
    )

    # The copies of a value take the ranks after all lower values: their mid-rank is the
    # count up to the value minus (its count - 1) / 2.
    y_ranks = np.cumsum(y_at, axis=1) - (y_at - 1) / 2
    y_squares = np.einsum("bv,bv,bv->b", y_at, y_ranks, y_ranks)
    single_value = (x_side.values < 2) | (np.count_nonzero(y_at, axis=1) < 2)
    n = x_side.n
    # Mid-ranks are multiples of 1/2 and their mean is (n + 1) / 2: every sum below is exact,
    # so a single value has a spread of exactly 0.
    n_times_mean_squared = n * (n + 1) ** 2 / 4
    spearman = ratio(
        np.einsum("bv,bv->b", twice_x_ranks_at, y_ranks) / 2 - n_times_mean_squared,
        np.sqrt((x_side.rank_squares - n_times_mean_squared) * (y_squares - n_times_mean_squared)),
    )
    y_mean = ratio(y_at @ y_values, n)
    y_deviations = y_values - y_mean[:, None]
    # The covariance, sum(count * x's deviation * (y - y's mean)), is sum(count * x's
    # deviation * y) - y's mean * sum(count * x's deviation): one product over the items for
    # both terms (a gather of the deviations by y's values took several times longer).
    with_y, alone = (x_side.weighted_deviations @ np.column_stack([np.where(used, y, 0.0), used])).T
    covariance = with_y - y_mean * alone
    y_spread = np.einsum("bv,bv,bv->b", y_at, y_deviations, y_deviations)
    pearson = np.clip(ratio(covariance, np.sqrt(x_side.spread * y_spread)), -1, 1)
    return {
        # A mean of copies of one value may differ from it in the last bit: no spread then.
        "pearson": np.where(single_value, np.nan, pearson),
        "spearman": np.clip(spearman, -1, 1),
    }


def _value_sums(
    counted: NDArray[np.signedinteger], order: NDArray[np.intp], starts: NDArray[np.intp]
) -> Array:
    """Per row of integers, the sums of the items in `order` over each run from one of
    `starts` to the next, as float64: the differences of cumulative sums at the runs' ends
    (exact, and unlike np.add.reduceat no call per row and run)."""
    if not len(order):
        return np.zeros((len(counted), 0))
    cumulative = np.take(counted, order, axis=1)
    np.cumsum(cumulative, axis=1, out=cumulative)
    up_to = _columns(cumulative, np.append(starts[1:], len(order)) - 1)
    return _at(up_to, np.empty_like(up_to)).astype(np.float64)
