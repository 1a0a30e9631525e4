"""DICES-shaped ratings from a crossed random-effects model with a known truth: the data of
the calibration checks of group figures (tests/calibration/test_calibration_shares.py,
bench/calibration_shares.py; usable by any test or bench script).

Rater u answers Yes on conversation i with probability expit(MU + s_g + a_u + b_i):
a_u ~ N(0, RATER_SD^2) how strict the rater is, b_i ~ N(0, CONVERSATION_SD^2) how harmful the
conversation is, both independent, and s_g a chosen logit shift of the rater's group g (0 for
all but at most one group: the alternative of a group test). By default 350 conversations x
123 raters as in DICES-350, in groups of 5, 13, 20, 35 and 50 raters (DICES-990's smallest
race group has 5), every rater rating every conversation (`rated` < 1: each rating kept with
that probability, as in DICES-990 where a conversation has a subset of the raters).

The truth: a group's share of Yes for raters and conversations like these is
E[expit(MU + s_g + z)], z ~ N(0, RATER_SD^2 + CONVERSATION_SD^2), which does not depend on
the group's size (`true_share`); for these raters on conversations like these (a fixed rater
pool) it is the mean over the group's raters of E[expit(MU + s_g + a_u + b)] (`pool_share`).

Plain numpy, no dices import, so a test or bench script can shape the ratings as it needs;
`ratings_by_group` gives dices_cli.metrics.shares.Ratings with one row per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from numpy.typing import NDArray

# On the logit scale. MU puts a group's share at 0.33, near DICES-350's, so that a 0.6 shift of
# one group moves its share to about 0.42.
RATER_SD, CONVERSATION_SD = 1.0, 1.5
MU = -1.09
CONVERSATIONS = 350
GROUP_SIZES = (5, 13, 20, 35, 50)  # 123 raters, as DICES-350


def expit(x: NDArray[np.float64] | float) -> Any:
    """The logistic function 1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


NODES, WEIGHTS = hermegauss(80)  # Gauss-Hermite quadrature of a standard normal's mean


def expected_share(mu: float, sd: float) -> float:
    """E[expit(mu + z)] for z ~ N(0, sd^2), by 80-point Gauss-Hermite quadrature."""
    return float((WEIGHTS * expit(mu + sd * NODES)).sum() / WEIGHTS.sum())


def true_share(shift: float = 0.0) -> float:
    """A group's share of Yes for raters and conversations like these, its logit shifted by
    `shift`: the same for every group size."""
    return expected_share(MU + shift, float(np.hypot(RATER_SD, CONVERSATION_SD)))


@dataclass(frozen=True)
class Crossed:
    """One simulated dataset.

    yes: [rater, conversation] 1.0 Yes, 0.0 No, NaN not rated. group_of_rater: each
    rater's group number (groups numbered as `sizes`, raters of group 0 first).
    shifts: each group's logit shift. rater_effect, conversation_effect: a_u and b_i.
    """

    yes: NDArray[np.float64]
    group_of_rater: NDArray[np.intp]
    sizes: tuple[int, ...]
    shifts: NDArray[np.float64]
    rater_effect: NDArray[np.float64]
    conversation_effect: NDArray[np.float64]

    @property
    def groups(self) -> int:
        return len(self.sizes)

    def true_shares(self) -> NDArray[np.float64]:
        """Each group's share for raters and conversations like these."""
        return np.array([true_share(float(shift)) for shift in self.shifts])

    def pool_shares(self) -> NDArray[np.float64]:
        """Each group's share for these raters on conversations like these."""
        per_rater = np.array(
            [
                expected_share(MU + self.shifts[g] + a, CONVERSATION_SD)
                for g, a in zip(self.group_of_rater, self.rater_effect, strict=True)
            ]
        )
        return np.bincount(self.group_of_rater, weights=per_rater) / np.bincount(
            self.group_of_rater
        )

    def observed_shares(self) -> NDArray[np.float64]:
        """Each group's share of Yes over its ratings (what a share query reports)."""
        rated = ~np.isnan(self.yes)
        yes = np.where(rated, self.yes, 0.0).sum(axis=1)
        return np.bincount(self.group_of_rater, weights=yes) / np.bincount(
            self.group_of_rater, weights=rated.sum(axis=1)
        )

    def long(self) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
        """Every rating's rater, conversation and Yes (1.0) or No (0.0), rater by rater."""
        rater, conversation = np.nonzero(~np.isnan(self.yes))
        return rater.astype(np.intp), conversation.astype(np.intp), self.yes[rater, conversation]


def simulate(
    rng: np.random.Generator,
    sizes: tuple[int, ...] = GROUP_SIZES,
    conversations: int = CONVERSATIONS,
    shift: tuple[int, float] | None = None,
    rated: float = 1.0,
    rater_effect: NDArray[np.float64] | None = None,
) -> Crossed:
    """One dataset: groups of `sizes` raters rating `conversations` conversations.

    shift: (group, logit shift) of the one shifted group, if any. rated: each rating's
    chance of being kept (1.0: every rater rates every conversation). rater_effect: fixed
    rater effects (a fixed pool), else drawn afresh.
    """
    raters = sum(sizes)
    group_of_rater = np.repeat(np.arange(len(sizes), dtype=np.intp), sizes)
    shifts = np.zeros(len(sizes))
    if shift is not None:
        shifts[shift[0]] = shift[1]
    a = rng.normal(0, RATER_SD, raters) if rater_effect is None else rater_effect
    b = rng.normal(0, CONVERSATION_SD, conversations)
    logit = MU + shifts[group_of_rater][:, None] + a[:, None] + b[None, :]
    yes = (rng.random((raters, conversations)) < expit(logit)).astype(np.float64)
    if rated < 1.0:
        yes[rng.random((raters, conversations)) >= rated] = np.nan
    return Crossed(yes, group_of_rater, tuple(sizes), shifts, a, b)


def ratings_by_group(data: Crossed) -> Any:
    """dices_cli.metrics.shares.Ratings with one row per group (in group order), raters
    numbered within their group's stratum as `qoverall-by-demographic --by` does."""
    from dices_cli.metrics.shares import Ratings

    rater, conversation, yes = data.long()  # rater by rater, so group by group
    starts = np.searchsorted(data.group_of_rater[rater], np.arange(data.groups + 1))
    return Ratings(
        starts=starts.astype(np.intp),
        rater=rater,
        conversation=conversation,
        yes=yes,
        stratum_of_rater=data.group_of_rater.copy(),
        conversations=data.yes.shape[1],
    )


def calibration(
    datasets: int,
    seed: int,
    shift: float = 0.0,
    shifted: int = 2,
    permutations: int = 200,
    rated: float = 1.0,
) -> dict[str, Any]:
    """Over `datasets` simulated datasets (GROUP_SIZES, `shift` on group `shifted`, each
    rating kept with probability `rated`), per
    group: how often the clustered interval of its share holds its true share
    ("share_coverage") and that of its difference from the rest the true difference
    ("difference_coverage"); per test and alternative, how often its p-value is below 0.05
    ("rejections": "ours" the share test, "reference" the rater-level permutation test of
    tests/drivers/rater_permutation.py on the same datasets, "oracle" that test on the true
    logits); ours minus the reference, paired by dataset ("paired": the mean difference of
    rejections and its standard error); how often p_groups_differ is below 0.05
    ("omnibus_rejections")."""
    from dices_cli.metrics.shares import family_test, share_intervals
    from tests.drivers.rater_permutation import (
        ALTERNATIVES,
        rater_permutation_test,
        rater_shares,
    )

    rng = np.random.default_rng(seed)
    reference_rng = np.random.default_rng([seed, 1])  # the reference's own relabellings
    groups = len(GROUP_SIZES)
    held = np.zeros((2, groups))
    sources = ("ours", "reference", "oracle")
    rejected = np.zeros((len(sources), len(ALTERNATIVES), datasets, groups), dtype=bool)
    omnibus = 0
    sizes = np.array(GROUP_SIZES, dtype=np.float64)
    for dataset in range(datasets):
        data = simulate(rng, shift=(shifted, shift) if shift else None, rated=rated)
        truth = data.true_shares()
        others = (truth @ sizes - truth * sizes) / (sizes.sum() - sizes)
        ratings = ratings_by_group(data)
        low, high, _ = share_intervals(ratings, "clustered")
        tests = [
            family_test(ratings, list(range(groups)), "clustered", permutations, dataset, alt)
            for alt in ALTERNATIVES
        ]
        reference, oracle = (
            rater_permutation_test(values, data.group_of_rater, groups, permutations, reference_rng)
            for values in (
                rater_shares(data.yes),
                data.shifts[data.group_of_rater] + data.rater_effect,
            )
        )
        p = [[test.p_value for test in tests], [reference[alt] for alt in ALTERNATIVES]]
        p.append([oracle[alt] for alt in ALTERNATIVES])
        rejected[:, :, dataset] = np.array(p) < 0.05
        test = tests[0]
        held[0] += (low <= truth) & (truth <= high)
        held[1] += (test.low <= truth - others) & (truth - others <= test.high)
        omnibus += test.p_groups_differ < 0.05
    paired = rejected[0].astype(np.float64) - rejected[1]
    return {
        "sizes": list(GROUP_SIZES),
        "share_coverage": (held[0] / datasets).tolist(),
        "difference_coverage": (held[1] / datasets).tolist(),
        "rejections": {
            source: dict(zip(ALTERNATIVES, rejected[s].mean(axis=1).tolist(), strict=True))
            for s, source in enumerate(sources)
        },
        "paired": {
            alt: {
                "difference": paired[a].mean(axis=0).tolist(),
                "se": (paired[a].std(axis=0, ddof=1) / np.sqrt(datasets)).tolist(),
            }
            for a, alt in enumerate(ALTERNATIVES)
        },
        "omnibus_rejections": omnibus / datasets,
    }
