"""Ratings drawn from a known two-way random-effects model: the truth that the calibration
of group shares' intervals is checked against (tests/calibration/test_calibration_shares.py,
bench/calibration_shares.py).

Rater u answers Yes on conversation i with probability expit(mu + a_u + b_i), a_u ~ N(0,
rater_sd^2) and b_i ~ N(0, conversation_sd^2) independent: raters differ in how strict they
are and conversations in how harmful, as in DICES (Homan et al. 2023 fit such models). Every
rater rates every conversation once, so a group's share of Yes is the mean of its cells and
its expected value is the population share below.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from numpy.typing import NDArray
from scipy.special import expit

from dices_cli.metrics.shares import Ratings

# On the logit scale: an overall share of Yes near DICES's 0.3, raters and conversations
# each spreading it widely.
MU, RATER_SD, CONVERSATION_SD = -0.8, 0.8, 1.0


def expected_share(mu: float, sd: float) -> float:
    """E[expit(mu + z)] for z ~ N(0, sd^2), by 80-point Gauss-Hermite quadrature."""
    nodes, weights = hermegauss(80)
    return float((weights * expit(mu + sd * nodes)).sum() / weights.sum())


def population_share() -> float:
    """A group's share for raters and conversations like these: a + b ~ N(0, sum of sd^2)."""
    return expected_share(MU, float(np.hypot(RATER_SD, CONVERSATION_SD)))


def pool_share(rater_effects: NDArray[np.float64]) -> float:
    """A group's share for these raters, on conversations like these."""
    return float(np.mean([expected_share(MU + a, CONVERSATION_SD) for a in rater_effects]))


def simulated_ratings(
    rng: np.random.Generator,
    groups: int,
    raters_per_group: int,
    conversations: int,
    rater_effects: NDArray[np.float64] | None = None,
) -> Ratings:
    """One simulated dataset: a row per group of raters_per_group raters (group g holds
    raters g * raters_per_group onwards), each rating every conversation. Rater effects are
    drawn afresh unless given (a fixed pool)."""
    raters = groups * raters_per_group
    a = rng.normal(0, RATER_SD, raters) if rater_effects is None else rater_effects
    b = rng.normal(0, CONVERSATION_SD, conversations)
    yes = rng.random((raters, conversations)) < expit(MU + a[:, None] + b[None, :])
    return Ratings(
        starts=np.arange(groups + 1, dtype=np.intp) * raters_per_group * conversations,
        rater=np.repeat(np.arange(raters, dtype=np.intp), conversations),
        conversation=np.tile(np.arange(conversations, dtype=np.intp), raters),
        yes=yes.ravel().astype(np.float64),
        stratum_of_rater=np.arange(raters, dtype=np.intp) // raters_per_group,
        conversations=conversations,
    )
