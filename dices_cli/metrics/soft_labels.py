"""LeWiDi's measures of predictions against disagreeing raters.

Soft labels (a predicted distribution over a label's values, one per item) against the
crowd's distribution of the item's ratings (each a row of `truth`, summing to 1):

    cross_entropy   -sum_v truth_v log(predicted_v), the mean over items (LeWiDi 2021 and
                    2023: Uma et al. 2021; Leonardelli et al. 2023); a predicted share of 0
                    where the crowd has ratings would be infinite, so it is floored at FLOOR
    manhattan       sum_v |truth_v - predicted_v|, the mean over items (LeWiDi 2025:
                    Leonardelli et al. 2025, after Rizzi et al. 2024)
    wasserstein     the earth mover's distance between the two distributions on the scale's
                    positions x (ordinal labels; LeWiDi 2025): sum_k |T_k - P_k| (x_k+1 - x_k)
                    over the cumulative shares T and P, the mean over items

Per-annotator predictions (a value per item and rater) against each rater's own rating
(LeWiDi 2025's perspectivist evaluation):

    error_rate         the share of an item's ratings the prediction misses, the mean over
                       items (the average error rate)
    absolute_distance  |predicted - rated| / (largest - smallest position), the mean over an
                       item's ratings, then over items (the average normalised absolute
                       distance; ordinal labels)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Items = npt.NDArray[np.int64]

# The smallest predicted share cross-entropy takes: a share of 0 where the crowd has ratings
# costs -log(FLOOR) rather than infinity.
FLOOR = 1e-12


def cross_entropy(truth: Floats, predicted: Floats) -> float:
    """Mean over items (rows) of -sum truth * log(max(predicted, FLOOR))."""
    return float(np.mean(-(truth * np.log(np.maximum(predicted, FLOOR))).sum(axis=1)))


def manhattan(truth: Floats, predicted: Floats) -> float:
    """Mean over items (rows) of the L1 distance between the two distributions."""
    return float(np.mean(np.abs(truth - predicted).sum(axis=1)))


def wasserstein(truth: Floats, predicted: Floats, positions: Floats) -> float:
    """Mean over items (rows) of the 1-Wasserstein distance between the two distributions
    over the ordered `positions` (one per column)."""
    cumulative = np.cumsum(truth - predicted, axis=1)[:, :-1]
    return float(np.mean(np.abs(cumulative) @ np.diff(positions)))


def error_rate(items: Items, missed: npt.NDArray[np.bool_]) -> float:
    """Mean over items of the share of their ratings `missed` (one entry per rating;
    `items` numbers each rating's item from 0)."""
    return _item_mean(items, missed.astype(np.float64))


def absolute_distance(items: Items, predicted: Floats, rated: Floats, span: float) -> float:
    """Mean over items of the mean |predicted - rated| / span of their ratings."""
    return _item_mean(items, np.abs(predicted - rated) / span)


def _item_mean(items: Items, values: Floats) -> float:
    sums = np.bincount(items, weights=values)
    counts = np.bincount(items)
    seen = counts > 0
    return float(np.mean(sums[seen] / counts[seen]))
