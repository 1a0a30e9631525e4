"""Intervals centred on their estimate: conversations and raters jackknifed.

An interval of `dices evaluate` (a row's metric, a group's difference from the rest, a
persona figure) is

    estimate +- q * sqrt(V_conversations + V_raters), kept within the figure's range,

- V_conversations: the delete-a-block jackknife of the conversations. Row g + 1 of
  `conversation_weights` leaves block g out (every conversation its own block when there
  are no more conversations than blocks: the delete-one jackknife); with v_g the figure
  without block g and G blocks, V_conversations = (G - 1) / G * sum_g (v_g - mean)^2. A
  conversation leaves with all its answers, so this carries the conversations' share and
  the answers' own noise. There are no draws: the interval is the same for every seed.
- V_raters: the raters' share, by the delete-one-rater jackknife stratified by group (with
  rater i of group s left out the figure is v_i; V_raters = sum over groups s of
  (n_s - 1) / n_s * sum_{i in s} (v_i - mean_s)^2), for figures smooth in the raters'
  answers: those against their shares (jsd, cross_entropy, tvd, pearson, spearman), XRR,
  the persona spreads and correlations.
- q: Student's t quantile with the Satterthwaite degrees of freedom of the two terms
  (V_conversations with G - 1, V_raters with its own: (sum_s V_s)^2 / sum_s V_s^2 / (n_s - 1)).
- Figures against a group's plurality (accuracy, kappa, ... and their differences) are not
  smooth in the raters: leaving one rater out makes or breaks ties on many conversations,
  and the jackknife then overstates their variance several times (measured: 3.6 times the
  variance of a 5-rater group's kappa difference over simulated datasets). For a group
  row's, V_raters = 0 and q is the t quantile with n - 1 degrees of freedom, n the group's
  raters. For the kappa difference of a group from the rest, V_raters is that jackknife
  less the delete-one-answer jackknife, which sees the same pivotal swings, at least 0
  (dices_cli.evaluate.plurality), with Satterthwaite degrees of freedom.
- V_answers: a figure that is a mean over conversations of a function of a set's shares
  (jsd, tvd) has its raters' answers' own noise (rater x conversation) counted by both
  jackknives: the conversations' carries it in each conversation's value, the raters' in
  each rater's. It is taken off once, as the two-way cluster-robust variance takes off
  its intersection (Cameron, Gelbach & Miller 2011): V_answers is the sum over
  conversations of the delete-one-answer jackknife of its value, over the conversations
  squared (dices_cli.evaluate.groups.answer_variance), and the total is never below
  either jackknife alone. Without it the jsd difference of groups whose shares match
  covered 0.99-1.00 of a known truth.
- A figure's scale: a group's Jensen-Shannon divergence has a raters' variance that grows
  with the divergence itself, about as its square (the log-log slope of the standard error
  on the estimate over simulated datasets is 1.8-2.2 for groups of 13-20 raters), so a
  symmetric interval is too narrow exactly where the divergence came out small; its
  interval is taken on the reciprocal scale, where that spread is about constant:
  1 / estimate +- q * sd / estimate^2, mapped back (estimate^2 / (estimate +- q * sd); the
  upper end is the figure's bound when q * sd reaches the estimate). The log scale (slope
  1) left the shifted 20-rater group's jsd and its difference at 0.90 coverage. A group's
  jsd against [not Yes, Yes] is nearly quadratic in its raters' mean effect, so its
  interval is `curved_interval`'s: the jackknife's Efron-Stein bias taken off the lower
  end, a noncentral chi^2_1 inverted for the upper end.

Why not the percentile interval of a two-way (raters x conversations) bootstrap, as before:
drawing a group's n raters with replacement leaves about 0.63 n distinct ones, so a
resampled group's plurality and shares are noisier than its own, and the resampled figures
are biased (kappa down, jsd up): the estimate fell outside its own interval, and the
random draws moved the endpoints from seed to seed. The jackknives have no draws and no
duplicated rater. The interval holds the estimate by construction (symmetric about it, or
about its reciprocal); a bound of the figure (jsd >= 0, kappa <= 1) clips it. Calibration
against a known truth, per group size: docs/metrics.md ("Intervals of evaluate").
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import Array
from dices_cli.metrics.student_t import t_quantile

__all__ = [
    "Jackknife",
    "centred_interval",
    "conversation_weights",
    "curved_interval",
    "difference_bounds",
    "difference_interval",
    "total_variance",
]

# The fewest raters a group may have for its intervals: the calibration's smallest group
# (docs/metrics.md, "Intervals of evaluate"); below it the row says so and gives none.
MIN_RATERS = 5


def conversation_weights(n: int, blocks: int) -> NDArray[np.int32]:
    """(G + 1, n) conversation counts: row 0 all ones (the estimate), row g + 1 all but
    block g, G = min(n, blocks) blocks, conversation i in block i mod G. The rows are read
    like bootstrap resamples (dices_cli.metrics.scoring); `blocks` 0: the estimate alone."""
    groups = min(n, blocks)
    weights = np.ones((groups + 1, n), dtype=np.int32)
    if groups:
        items = np.arange(n)
        weights[1 + items % groups, items] = 0
    return weights


def _jackknife(left_out: Array) -> tuple[float, float]:
    """The delete-a-block jackknife's variance of the defined (non-NaN) values with each
    block left out, and its degrees of freedom (blocks - 1); NaN with fewer than two."""
    defined = left_out[~np.isnan(left_out)]
    blocks = defined.size
    if blocks < 2:
        return math.nan, math.nan
    return (blocks - 1) / blocks * float(((defined - defined.mean()) ** 2).sum()), blocks - 1.0


class Jackknife:
    """The delete-one-rater jackknife of figures about rater groups: `stratum` gives, per
    left-out member, its group (the jackknife's strata)."""

    def __init__(self, stratum: NDArray[np.intp]) -> None:
        self.stratum = np.asarray(stratum, dtype=np.intp)
        self.strata = [np.flatnonzero(self.stratum == s) for s in np.unique(self.stratum)]

    def variance(self, left_out: Array) -> tuple[float, float]:
        """The raters' variance of a figure whose value with each member left out is
        `left_out` [member], and its Satterthwaite degrees of freedom (inf when 0). NaN
        when a stratum of two members or more has an undefined value."""
        total, denominator = 0.0, 0.0
        for members in self.strata:
            n = len(members)
            if n < 2:
                continue  # (n - 1) / n = 0: a lone rater's group adds nothing
            values = left_out[members]
            if np.isnan(values).any():
                return math.nan, math.nan
            part = (n - 1) / n * float(((values - values.mean()) ** 2).sum())
            total += part
            denominator += part * part / (n - 1)
        return total, (math.inf if denominator == 0 else total * total / denominator)


def total_variance(
    values: Array, rater_variance: tuple[float, float] = (0.0, math.inf), overlap: float = 0.0
) -> tuple[float, float]:
    """V_conversations + V_raters - V_answers of a figure (never below either jackknife
    alone) and its Satterthwaite degrees of freedom.

    values: the estimate, then its values with each conversation block left out (rows of
    `conversation_weights`; NaN where undefined: left out). rater_variance: V_raters and
    its degrees of freedom (Jackknife.variance), or (0, df) to cap the degrees of freedom
    at df with no raters' term (a figure against a plurality). overlap: V_answers, the
    part both jackknives count (0: none). (nan, nan) when the estimate, V_raters or
    V_conversations (fewer than two blocks defined) is undefined."""
    values = np.asarray(values, dtype=np.float64)
    conversations, conversations_df = _jackknife(values[1:])
    raters, df = rater_variance
    if math.isnan(values[0]) or math.isnan(raters) or math.isnan(conversations):
        return math.nan, math.nan
    total = max(conversations + raters - overlap, conversations, raters)
    if raters > 0:  # Satterthwaite, each term with its own degrees of freedom
        denominator = conversations**2 / conversations_df + raters**2 / df
        return total, (total * total / denominator if denominator > 0 else conversations_df)
    return total, min(df, conversations_df)


def centred_interval(
    values: Array,
    rater_variance: tuple[float, float] = (0.0, math.inf),
    bounds: tuple[float, float] = (-math.inf, math.inf),
    reciprocal: bool = False,
    level: float = 0.95,
    overlap: float = 0.0,
) -> tuple[float, float]:
    """The estimate values[0] +- q * sqrt(V), clipped to `bounds` (values, rater_variance
    and overlap: `total_variance`'s). `reciprocal`: the interval of the reciprocal of a
    positive estimate e, with standard error sd / e^2, mapped back: e^2 / (e + q sd) to
    e^2 / (e - q sd), the upper end the bound once q sd reaches e. (nan, nan) when the
    variance is undefined."""
    estimate = float(values[0])
    total, df = total_variance(values, rater_variance, overlap)
    if math.isnan(total):
        return math.nan, math.nan
    half = t_quantile(level, df) * math.sqrt(total)
    low, high = bounds
    if reciprocal and estimate > 0:
        upper = estimate * estimate / (estimate - half) if half < estimate else high
        return max(estimate * estimate / (estimate + half), low), min(upper, high)
    return max(estimate - half, low), min(estimate + half, high)


Figure = tuple[Array, tuple[float, float]]  # values and rater_variance, as total_variance's


def _normal_tail_inside(root: float, shift: float) -> float:
    """P(chi^2_1 noncentral with noncentrality shift^2 <= root^2)."""
    half = math.sqrt(0.5)
    return 0.5 * (math.erf((root - shift) * half) - math.erf((-root - shift) * half))


def _noncentrality_upper(root: float, tail: float) -> float:
    """sqrt of the upper end of the confidence interval of the noncentrality lambda of a
    noncentral chi^2_1 draw root^2: the lambda under which P(chi^2 <= root^2) = `tail` (0
    when even lambda = 0 gives less); by bisection in sqrt(lambda)."""
    if _normal_tail_inside(root, 0.0) <= tail:
        return 0.0
    low, high = 0.0, root + 40.0
    for _ in range(100):
        middle = (low + high) / 2
        if _normal_tail_inside(root, middle) > tail:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def curved_interval(
    values: Array,
    rater_variance: tuple[float, float],
    bounds: tuple[float, float],
    level: float,
    overlap: float,
    scale: float,
) -> tuple[float, float]:
    """The interval of a group's divergence whose raters' part is nearly quadratic in the
    group's mean (docs/metrics.md, "Intervals of evaluate"): estimate = F + scale * W, W a
    noncentral chi^2_1 draw, scale = s^2 = C2 sigma^2 / n (`dices_cli.evaluate.groups.
    quadratic_scale`). The delete-one-rater jackknife then counts 4 s^4 W, whose mean
    exceeds the raters' variance s^4 (2 + 4 lambda) by 2 s^4 (Efron & Stein 1981): the
    lower end is `centred_interval`'s on the reciprocal scale with V_raters less 2 s^4 (at
    least 0); the upper end inverts the noncentral chi^2_1: W = (V_raters - V_answers) /
    (4 s^4), F = estimate - s^2 W, lambda_U the upper end of lambda's interval, and
    high = estimate + sqrt((F + s^2 (1 + lambda_U) - estimate)^+^2 + z^2 V_conversations),
    z the normal quantile. (nan, nan) when the variance is undefined."""
    raters, df = rater_variance
    low, _ = centred_interval(
        values, (max(raters - 2 * scale * scale, 0.0), df), bounds, True, level, overlap
    )
    conversations, _ = _jackknife(np.asarray(values, dtype=np.float64)[1:])
    if math.isnan(low) or math.isnan(conversations):
        return math.nan, math.nan
    estimate = float(values[0])
    root = math.sqrt(max(raters - overlap, 0.0)) / (2 * scale)  # sqrt(W)
    shift = _noncentrality_upper(root, (1 - level) / 2)  # sqrt(lambda_U)
    rise = max(scale * (1 + (shift - root) * (shift + root)), 0.0)  # F + s^2 (1 + lambda_U) - e
    z = t_quantile(level, math.inf)
    return low, min(estimate + math.sqrt(rise * rise + z * z * conversations), bounds[1])


def _side(
    figure: Figure, bounds: tuple[float, float], level: float, overlap: float, scale: float
) -> tuple[float, float]:
    """A side's interval for `difference_interval`: curved with a scale, else reciprocal."""
    values, raters = figure
    if scale > 0:
        return curved_interval(values, raters, bounds, level, overlap, scale)
    return centred_interval(values, raters, bounds, True, level, overlap)


def _less(raters: tuple[float, float], cut: float) -> tuple[float, float]:
    return max(raters[0] - cut, 0.0), raters[1]


def difference_interval(
    own: Figure,
    rest: Figure,
    difference: Figure,
    bounds: tuple[float, float],
    level: float = 0.95,
    overlaps: tuple[float, float] = (0.0, 0.0),
    scale: float = math.nan,
) -> tuple[float, float]:
    """The interval of own - rest, both on the reciprocal scale (centred_interval with
    `reciprocal`; `overlaps` their V_answers, the difference's their sum),
    by the method of variance estimates recovery (Zou & Donner, 2008): with (l1, u1) and
    (l2, u2) their intervals and r their correlation,

        low  = d - sqrt((e1 - l1)^2 + (u2 - e2)^2 - 2 r (e1 - l1)(u2 - e2))
        high = d + sqrt((u1 - e1)^2 + (e2 - l2)^2 - 2 r (u1 - e1)(e2 - l2)),

    r = (V1 + V2 - V_d) / (2 sqrt(V1 V2)) from the jackknives' variances of own, rest and
    the difference (whose values pair the same conversations and raters left out). With
    symmetric intervals it is the difference's own centred interval; with the reciprocal
    scale's it carries their asymmetry: the side a divergence can grow on is the wider.
    `scale`: the own side's s^2 (`curved_interval`, which then gives (l1, u1)), its 2 s^4
    taken off the own side's and the difference's V_raters; NaN or 0: none.
    `bounds`: each side's range (the difference's: `difference_bounds` of it)."""
    (own_values, own_raters), (rest_values, rest_raters) = own, rest
    o1, o2 = overlaps
    scale = scale if scale > 0 else 0.0  # NaN: none
    cut = 2 * scale * scale
    difference = (difference[0], _less(difference[1], cut))
    v1, _ = total_variance(own_values, _less(own_raters, cut), o1)
    v2, _ = total_variance(rest_values, rest_raters, o2)
    vd, _ = total_variance(*difference, o1 + o2)
    if math.isnan(v1 + v2 + vd) or v1 * v2 <= 0:
        return centred_interval(
            difference[0], difference[1], difference_bounds(bounds), level=level, overlap=o1 + o2
        )
    r = max(-1.0, min(1.0, (v1 + v2 - vd) / (2 * math.sqrt(v1 * v2))))
    e1, e2 = float(own_values[0]), float(rest_values[0])
    l1, u1 = _side(own, bounds, level, o1, scale)
    l2, u2 = _side(rest, bounds, level, o2, 0.0)
    below = (e1 - l1) ** 2 + (u2 - e2) ** 2 - 2 * r * (e1 - l1) * (u2 - e2)
    above = (u1 - e1) ** 2 + (e2 - l2) ** 2 - 2 * r * (u1 - e1) * (e2 - l2)
    low, high = difference_bounds(bounds)
    return max(e1 - e2 - math.sqrt(max(below, 0.0)), low), min(
        e1 - e2 + math.sqrt(max(above, 0.0)), high
    )


def difference_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """The range of a difference of two figures in `bounds`."""
    width = bounds[1] - bounds[0]
    return -width, width
