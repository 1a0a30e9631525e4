"""Student's t distribution for any positive degrees of freedom, in plain Python (scipy is not
a dependency of dices): its two-sided quantile, for intervals of t * standard error with
Satterthwaite degrees of freedom (dices_cli.metrics.shares).

The distribution function comes from the regularised incomplete beta function,
I_x(a, b) by its continued fraction (Lentz's method, as in Press et al., Numerical Recipes,
section 6.4), and the quantile by Newton's method on it, checked against
scipy in the tests (within 1e-9 relative).
"""

from __future__ import annotations

import functools
import math

EPSILON = 1e-15
TINY = 1e-300
NORMAL_975 = 1.959963984540054
# From here on, Cornish-Fisher's expansion to 1 / df^3 (Abramowitz & Stegun 26.7.5)
# gives the quantile within 1e-10.
LARGE_DF = 1000.0


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), converged to EPSILON."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > TINY else TINY)
    value = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > TINY else TINY)
            c = 1 + numerator / c
            c = c if abs(c) > TINY else TINY
            value *= c * d
        if abs(c * d - 1) < EPSILON:
            break
    return value


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def two_sided_tail(t: float, df: float) -> float:
    """P(|T| > t) for T ~ Student's t with `df` degrees of freedom, t >= 0."""
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def density(t: float, df: float) -> float:
    """Student's t density at t."""
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_scale - (df + 1) / 2 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=4096)
def t_quantile(level: float, df: float) -> float:
    """The q with P(|T| <= q) = level: the multiplier of a `level` two-sided interval.
    Kept for each (level, df) asked (a few thousand at most): an evaluation asks for the
    same few degrees of freedom for every row, and each answer costs a continued fraction
    per Newton step in plain Python.

    Newton's method on the two-sided tail from the normal quantile, which lies below q for
    every df: the tail is convex for t > 0, so the steps rise to q without passing it."""
    q = NORMAL_975 if level == 0.95 else _normal_quantile(level)
    if df > LARGE_DF:  # the continued fraction slows as df grows; the expansion is as good
        return (
            q
            + (q**3 + q) / (4 * df)
            + (5 * q**5 + 16 * q**3 + 3 * q) / (96 * df**2)
            + (3 * q**7 + 19 * q**5 + 17 * q**3 - 15 * q) / (384 * df**3)
        )
    for _ in range(500):
        step = (two_sided_tail(q, df) - (1 - level)) / (2 * density(q, df))
        q += step
        if abs(step) < 1e-13 * q:
            break
    return q


def _normal_quantile(level: float) -> float:
    """The two-sided normal quantile of `level`, by bisection on erfc."""
    low, high = 0.0, 40.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (
            (middle, high) if math.erfc(middle / math.sqrt(2)) > 1 - level else (low, middle)
        )
    return (low + high) / 2
