"""Agreement and diversity metrics computed from answer counts.

Every function takes `counts`, an array [..., category, conversation]: how many ratings of
each conversation fell in each answer category, for one set of raters. Leading axes (groups,
permutations) are computed at once, so nothing loops over raters or pairs of raters: the
pairs that agree on a conversation are sums of products of its counts. (Categories come
before conversations because numpy sums along a long contiguous axis, or across a few
contiguous rows, far faster than along a short last axis.) A value that is undefined
(alpha when every answer is the same, an empty group) is NaN.
Formulas, sources and how to read them: docs/metrics.md.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
CATEGORY = -2  # axes of a counts array
CONVERSATION = -1


def ratio(numerator: Array, denominator: Array) -> Array:
    """numerator / denominator, NaN where the denominator is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator != 0, numerator / denominator, np.nan)


def krippendorff_alpha_nominal(counts: Array) -> Array:
    """Krippendorff's alpha for nominal data, in its coincidence-matrix form.

    Only conversations with at least two ratings are pairable. With m_i their ratings and
    n_c the pairable ratings in category c (n in all), the off-diagonal coincidences sum to
    sum_i (m_i^2 - sum_c n_ic^2) / (m_i - 1), and alpha = 1 - (n - 1) * that / (n^2 - sum_c n_c^2).
    """
    ratings = counts.sum(axis=CATEGORY)
    pairable = ratings >= 2
    disagreeing_pairs = ratings**2 - (counts**2).sum(axis=CATEGORY)
    coincidences = np.where(pairable, disagreeing_pairs / np.maximum(ratings - 1, 1), 0.0)
    per_category = (counts * pairable[..., None, :]).sum(axis=CONVERSATION)
    values = per_category.sum(axis=-1)
    expected = values**2 - (per_category**2).sum(axis=-1)
    return 1 - ratio((values - 1) * coincidences.sum(axis=CONVERSATION), expected)


def cross_replication_reliability(x: Array, y: Array) -> Array:
    """Wong, Paritosh and Aroyo's kappa_x = 1 - d_o / d_e between rater sets x and y.

    Over the conversations both sets rated: d_o is the share of disagreeing (x, y) pairs on
    a conversation, averaged with each conversation weighted by its ratings in x and y;
    d_e is the share of disagreeing (x, y) pairs when all of x's ratings are paired with
    all of y's, whatever the conversation.
    """
    x_ratings = x.sum(axis=CATEGORY)
    y_ratings = y.sum(axis=CATEGORY)
    both = (x_ratings > 0) & (y_ratings > 0)
    weight = np.where(both, x_ratings + y_ratings, 0.0)
    pairs = np.where(both, x_ratings * y_ratings, 1.0)
    disagreement = 1 - (x * y).sum(axis=CATEGORY) / pairs
    observed = ratio((weight * disagreement).sum(axis=CONVERSATION), weight.sum(axis=-1))
    x_pooled = (x * both[..., None, :]).sum(axis=CONVERSATION)
    y_pooled = (y * both[..., None, :]).sum(axis=CONVERSATION)
    all_pairs = x_pooled.sum(axis=-1) * y_pooled.sum(axis=-1)
    expected = 1 - ratio((x_pooled * y_pooled).sum(axis=-1), all_pairs)
    return 1 - ratio(observed, expected)


def normalised_xrr(xrr: Array, irr_x: Array, irr_y: Array) -> Array:
    """kappa_x / sqrt(IRR_x * IRR_y): XRR on the scale of the two sets' own reliability.

    Defined only when both reliabilities are positive (the square root of a negative
    product, or a zero one, has no meaning here).
    """
    positive = (irr_x > 0) & (irr_y > 0)
    return np.where(positive, xrr / np.sqrt(np.where(positive, irr_x * irr_y, 1.0)), np.nan)


def group_association_index(irr: Array, xrr: Array) -> Array:
    """IRR of a group / XRR of the group with the rest; defined when the XRR is positive."""
    return np.where(xrr > 0, irr / np.where(xrr > 0, xrr, 1.0), np.nan)


def negentropy(counts: Array) -> Array:
    """ln(k) - H(p), natural log, of each conversation's answers, averaged over conversations.

    k is the number of answer categories, so 0 means the answers are spread evenly over
    the categories and ln(k) means everyone gave the same answer. Computed as
    sum_c p_c ln p_c = (sum_c n_c ln n_c) / m - ln m, which takes a logarithm per count
    rather than per share.
    """
    ratings = counts.sum(axis=CATEGORY)
    rated = ratings > 0
    divisor = np.where(rated, ratings, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ln 0 = 0, fixed by the where
        n_log_n = np.where(counts > 0, counts * np.log(counts), 0.0).sum(axis=CATEGORY)
    per_conversation = np.log(counts.shape[CATEGORY]) + n_log_n / divisor - np.log(divisor)
    total = np.where(rated, per_conversation, 0.0).sum(axis=CONVERSATION)
    return ratio(total, rated.sum(axis=CONVERSATION))


def plurality_size(counts: Array) -> Array:
    """The share of ratings that gave the most frequent answer, averaged over conversations."""
    ratings = counts.sum(axis=CATEGORY)
    rated = ratings > 0
    share = counts.max(axis=CATEGORY) / np.where(rated, ratings, 1.0)
    total = np.where(rated, share, 0.0).sum(axis=CONVERSATION)
    return ratio(total, rated.sum(axis=CONVERSATION))
