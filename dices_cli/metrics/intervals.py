"""Intervals centred on their estimate: conversations bootstrapped, raters jackknifed.

An interval of `dices evaluate` (a row's metric, a group's difference from the rest, a
persona figure) is

    estimate +- q * sqrt(V_conversations + V_raters), kept within the figure's range,

- V_conversations: the variance of the figure over the bootstrap resamples of the
  conversations (values[1:]; dices_cli.metrics.bootstrap). It carries the conversations'
  share and, as each conversation is resampled with its answers, the answers' own noise.
- V_raters: the raters' share, by the delete-one-rater jackknife stratified by group (with
  rater i of group s left out the figure is v_i; V_raters = sum over groups s of
  (n_s - 1) / n_s * sum_{i in s} (v_i - mean_s)^2), for figures smooth in the raters'
  answers: those against their shares (jsd, cross_entropy, tvd, pearson, spearman), XRR,
  the persona spreads and correlations. q is then Student's t quantile with the
  Satterthwaite degrees of freedom (sum_s V_s)^2 / sum_s (V_s^2 / (n_s - 1)) (the
  resamples' variance counted as known).
- Figures against a group's plurality (accuracy, kappa, ... and their differences) are not
  smooth in the raters: leaving one rater out makes or breaks ties on many conversations,
  and the jackknife then overstates their variance several times (measured: 3.6 times the
  variance of a 5-rater group's kappa difference over simulated datasets). For them
  V_raters = 0 and q is the t quantile with n - 1 degrees of freedom, n the group's raters:
  the small-cluster correction for what the conversations' resamples do not see.

Why not the percentile interval of a two-way (raters x conversations) bootstrap, as before:
drawing a group's n raters with replacement leaves about 0.63 n distinct ones, so a
resampled group's plurality and shares are noisier than its own, and the resampled figures
are biased (kappa down, jsd up): the estimate fell outside its own interval, and the few,
costly rater draws moved the endpoints from seed to seed. The jackknife has no draws and
no duplicated rater. The interval is symmetric about the estimate, so it holds it whatever
the resamples; a bound of the figure (jsd >= 0, kappa <= 1) clips it. Calibration against a
known truth, per group size: docs/metrics.md ("Intervals of evaluate").
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import Array

__all__ = ["Jackknife", "centred_interval", "difference_bounds", "normal_quantile", "t_quantile"]

# The fewest raters a group may have for its intervals: the calibration's smallest group
# (docs/metrics.md, "Intervals of evaluate"); below it the row says so and gives none.
MIN_RATERS = 5


def normal_quantile(probability: float) -> float:
    """The standard normal distribution's quantile (Acklam's rational approximation, refined
    by one Newton step on math.erf: about 1e-15)."""
    if not 0 < probability < 1:
        raise ValueError("a quantile of a probability strictly between 0 and 1")
    a = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269,
         -30.66479806614716, 2.506628277459239)  # fmt: skip
    b = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
         -13.28068155288572)  # fmt: skip
    c = (-0.007784894002430293, -0.3223964580411365, -2.400758277161838,
         -2.549732539343734, 4.374664141464968, 2.938163982698783)  # fmt: skip
    d = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
    low = 0.02425
    if probability < low or probability > 1 - low:
        tail = min(probability, 1 - probability)
        r = math.sqrt(-2 * math.log(tail))
        x = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) / (
            (((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1
        )
        x = x if probability < low else -x
    else:
        r = (probability - 0.5) ** 2
        x = (
            (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            * (probability - 0.5)
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        )
    error = 0.5 * math.erfc(-x / math.sqrt(2)) - probability
    return x - error * math.sqrt(2 * math.pi) * math.exp(x * x / 2)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (Numerical Recipes' continued
    fraction, by Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * fraction / a


def _t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0: I_{df / (df + t^2)}(df / 2, 1 / 2) / 2."""
    return 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(probability: float, df: float) -> float:
    """Student's t quantile with `df` (> 0, possibly fractional; inf: the normal's) degrees
    of freedom, for probability > 1/2 (bisection on the incomplete beta function: about
    1e-12)."""
    if not 0.5 < probability < 1:
        raise ValueError("an upper quantile: a probability between 1/2 and 1")
    z = normal_quantile(probability)
    if math.isinf(df) or df > 1e7:
        return z
    tail = 1 - probability
    low, high = z, z
    while _t_upper_tail(high, df) > tail:
        high *= 2
    for _ in range(80):
        middle = (low + high) / 2
        if _t_upper_tail(middle, df) > tail:
            low = middle
        else:
            high = middle
    return (low + high) / 2


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


def centred_interval(
    values: Array,
    rater_variance: tuple[float, float] = (0.0, math.inf),
    bounds: tuple[float, float] = (-math.inf, math.inf),
    level: float = 0.95,
) -> tuple[float, float]:
    """values[0] +- q * sqrt(V_conversations + V_raters), clipped to `bounds`.

    values: the estimate, then its values on the conversation resamples (NaN where
    undefined: left out). rater_variance: V_raters and its degrees of freedom
    (Jackknife.variance), or (0, df) for a t quantile with df degrees of freedom alone;
    (0, inf), the default, for the normal quantile. (nan, nan) when the estimate, V_raters
    or the resamples' variance (fewer than two defined) is undefined.
    """
    values = np.asarray(values, dtype=np.float64)
    estimate = float(values[0])
    resampled = values[1:][~np.isnan(values[1:])]
    raters, df = rater_variance
    if math.isnan(estimate) or math.isnan(raters) or resampled.size < 2:
        return math.nan, math.nan
    conversations = float(resampled.var(ddof=1))
    total = conversations + raters
    if raters > 0 and total > 0:
        # Satterthwaite: the resamples' variance counted as known, the raters' with df
        # degrees of freedom.
        ratio = total / raters
        df = math.inf if ratio > 1e6 else df * ratio * ratio
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(total)
    low, high = bounds
    return max(estimate - half, low), min(estimate + half, high)


def difference_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """The range of a difference of two figures in `bounds`."""
    width = bounds[1] - bounds[0]
    return -width, width
