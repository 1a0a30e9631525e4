"""Krippendorff's distance metrics, for agreement on a label of any scale.

A nominal label's values differ or not; an ordinal one's by how many ratings lie between
them (Krippendorff's ordinal metric, from the pairable values' marginals); an interval
one's by the squared difference of the values. `alpha` and `cross_replication` take the
same counts arrays as `dices_cli.metrics.agreement` ([..., category, conversation], the
categories in the scale's order) and, for the nominal metric, are its functions
themselves: one formula per metric, never a copy. Formulas: docs/metrics.md ("Any family").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dices_cli.metrics.agreement import (
    CATEGORY,
    CONVERSATION,
    Array,
    cross_replication_reliability,
    krippendorff_alpha_nominal,
    ratio,
)

KINDS = ("nominal", "ordinal", "interval")


@dataclass(frozen=True)
class Distance:
    """A distance metric over a scale's categories (in the scale's order). `positions`: the
    number each category stands for, which the interval metric reads."""

    kind: str
    positions: tuple[float, ...] = ()

    def squared(self, marginals: Array) -> Array:
        """delta^2 between every two categories, [..., category, category], for the
        pairable values' counts per category `marginals` [..., category]."""
        categories = marginals.shape[-1]
        if self.kind == "nominal":
            return 1.0 - np.eye(categories)
        if self.kind == "interval":
            value = np.asarray(self.positions, dtype=np.float64)
            return (value[:, None] - value[None, :]) ** 2
        # Ordinal: (sum of n_g for g from c to k) - (n_c + n_k) / 2, squared.
        order = np.arange(categories)
        low, high = np.minimum.outer(order, order), np.maximum.outer(order, order)
        cumulative = np.cumsum(marginals, axis=-1)
        between = cumulative[..., high] - cumulative[..., low] + marginals[..., low]
        ends = (marginals[..., :, None] + marginals[..., None, :]) / 2
        return (between - ends) ** 2


def _pairs(x: Array, delta: Array, y: Array) -> Array:
    """sum_ck x_c delta_ck y_k over [..., category, conversation] arrays: per conversation."""
    return ((delta @ y) * x).sum(axis=CATEGORY)


def alpha(counts: Array, distance: Distance) -> Array:
    """Krippendorff's alpha with `distance`: 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck,
    o the coincidences of the conversations with two or more ratings."""
    if distance.kind == "nominal":
        return krippendorff_alpha_nominal(counts)
    ratings = counts.sum(axis=CATEGORY)
    pairable = ratings >= 2
    paired = counts * pairable[..., None, :]
    marginals = paired.sum(axis=CONVERSATION)
    delta = distance.squared(marginals)
    within = _pairs(paired, delta, paired) / np.maximum(ratings - 1, 1)
    values = marginals.sum(axis=-1)
    expected = (marginals[..., :, None] * delta * marginals[..., None, :]).sum(axis=(-2, -1))
    return 1 - ratio((values - 1) * within.sum(axis=CONVERSATION), expected)


def cross_replication(x: Array, y: Array, distance: Distance) -> Array:
    """Wong, Paritosh and Aroyo's kappa_x between rater sets x and y with `distance`: the
    nominal form's pairs weighted by delta^2 (the ordinal metric's marginals: both sides'
    values on the conversations both rated)."""
    if distance.kind == "nominal":
        return cross_replication_reliability(x, y)
    x_ratings = x.sum(axis=CATEGORY)
    y_ratings = y.sum(axis=CATEGORY)
    both = (x_ratings > 0) & (y_ratings > 0)
    weight = np.where(both, x_ratings + y_ratings, 0.0)
    pairs = np.where(both, x_ratings * y_ratings, 1.0)
    x_pooled = (x * both[..., None, :]).sum(axis=CONVERSATION)
    y_pooled = (y * both[..., None, :]).sum(axis=CONVERSATION)
    delta = distance.squared(x_pooled + y_pooled)
    disagreement = _pairs(x, delta, y) / pairs
    observed = ratio((weight * disagreement).sum(axis=CONVERSATION), weight.sum(axis=-1))
    all_pairs = x_pooled.sum(axis=-1) * y_pooled.sum(axis=-1)
    cross = (x_pooled[..., :, None] * delta * y_pooled[..., None, :]).sum(axis=(-2, -1))
    expected = ratio(cross, all_pairs)
    return 1 - ratio(observed, expected)
