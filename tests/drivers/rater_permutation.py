"""The independent reference of the share test of `qoverall-by-demographic` and
`degree-of-harm` (dices_cli.metrics.shares.family_test): the plain rater-level permutation
test, and its oracle ceiling.

The reference: each rater's share of Yes over the conversations they rated; a group's
statistic is the mean of its raters' shares minus the mean of the other raters'; the raters'
group labels are permuted (every group's size kept) with the reference's own draws. Its
p-values: two-sided P(|T| >= |t|) (the null of T is centred on 0: a group's mean over
relabellings is the pool's), greater P(T >= t), less P(T <= t), each (count + 1) / (N + 1)
with the observed labelling counted. Plain numpy, no dices import: written apart from the
code it checks. With every rater rating every conversation its statistic is the share
test's (a group's ratings-weighted share is then its raters' mean share), so the two differ
only by their draws and by how the two-sided p-value is made.

The oracle: the same test on the raters' true logits, MU + s_g + a_u of
tests/drivers/crossed.py. The ratings depend on a group's shift only through those logits,
so no test on the ratings can beat a test on the logits; `ceiling` is the power of the best
such test, the z test of a group's mean logit against the rest's with the rater sd known.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

ALTERNATIVES = ("two-sided", "greater", "less")


def group_minus_rest(
    values: NDArray[np.float64], labellings: NDArray[np.intp], groups: int
) -> NDArray[np.float64]:
    """[labelling, group]: the mean of `values` (one per rater) over the group's raters minus
    over the rest's, each row of `labellings` giving every rater's group."""
    member = labellings[..., None] == np.arange(groups)  # [labelling, rater, group]
    sums = np.einsum("lrg,r->lg", member, values)
    counts = member.sum(axis=1)
    return np.asarray(sums / counts - (values.sum() - sums) / (len(values) - counts))


def rater_permutation_test(
    values: NDArray[np.float64],
    labels: NDArray[np.intp],
    groups: int,
    permutations: int,
    rng: np.random.Generator,
) -> dict[str, NDArray[np.float64]]:
    """Per alternative, each group's p-value against the rest: `values` one per rater,
    `labels` each rater's group."""
    observed = group_minus_rest(values, labels[None, :], groups)[0]
    order = np.argsort(rng.random((permutations, len(labels))), axis=1)
    null = group_minus_rest(values, labels[order], groups)
    counts = {
        "two-sided": (np.abs(null) >= np.abs(observed)).sum(axis=0),
        "greater": (null >= observed).sum(axis=0),
        "less": (null <= observed).sum(axis=0),
    }
    return {alternative: (counts[alternative] + 1) / (permutations + 1) for alternative in counts}


def rater_shares(yes: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each rater's share of Yes over the conversations they rated (`yes`: [rater,
    conversation], NaN not rated)."""
    return np.asarray(np.nanmean(yes, axis=1))


def ceiling(shift: float, size: int, rest: int, alternative: str, sd: float = 1.0) -> float:
    """The power at the 5% level of the z test of a group of `size` raters against `rest`
    raters whose mean logit differs by `shift` > 0, rater sd `sd` known: the most any test
    of the group's shift can have on the crossed model (two-sided: the best unbiased one)."""
    standardised = shift / (sd * math.sqrt(1 / size + 1 / rest))
    if alternative == "two-sided":
        z = float(norm.ppf(0.975))
        return float(norm.cdf(standardised - z) + norm.cdf(-standardised - z))
    toward = standardised if alternative == "greater" else -standardised
    return float(norm.cdf(toward - float(norm.ppf(0.95))))
