"""Calibration of the share intervals and the share test of qoverall-by-demographic (and
degree-of-harm, the report's figure), per group size, against the known truth of
tests/drivers/crossed.py: rater sd 1, conversation sd 1.5 on the logit, 350 conversations x
groups of 5, 13, 20, 35 and 50 raters. Coverage is checked per group size, never pooled.

The share test is checked against an independent reference on the same datasets, the
plain rater-level permutation test of tests/drivers/rater_permutation.py, in each of its
alternatives (two-sided, greater, less): the same level per group size, the same power.

CI runs few datasets, so its bounds are the binomial 99.9% range of a calibrated interval
over that many; bench/calibration_shares.py runs 1000 datasets and writes the table of
docs/metrics.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from tests.drivers.crossed import GROUP_SIZES, calibration, simulate, true_share
from tests.drivers.rater_permutation import ALTERNATIVES, ceiling

NOMINAL = 0.95


def bounds(datasets: int, rate: float) -> tuple[float, float]:
    """Where 99.9% of the observed rates of a procedure of true rate `rate` fall."""
    low, high = binom.interval(0.999, datasets, rate)
    return low / datasets, high / datasets


def test_the_generator_gives_its_true_shares() -> None:
    """Shares averaged over datasets match the generator's truth (within 4 standard errors),
    and a 0.6 logit shift moves a group from 0.33 to 0.42."""
    rng = np.random.default_rng(3)
    shares = np.array([simulate(rng, shift=(2, 0.6)).observed_shares() for _ in range(200)])
    error = shares.std(axis=0) / np.sqrt(len(shares))
    truth = np.array([true_share(0.6 if g == 2 else 0.0) for g in range(len(GROUP_SIZES))])
    assert (abs(shares.mean(axis=0) - truth) < 4 * error).all()
    assert round(true_share(), 2) == 0.33 and round(true_share(0.6), 2) == 0.42


@pytest.mark.slow
def test_intervals_cover_per_group_size_and_the_tests_hold_their_level() -> None:
    """With all groups alike: coverage per group size, and every alternative's level, ours
    and the reference's, per group size; ours rejects as the reference does, paired by
    dataset, within 3.29 standard errors (99.9%)."""
    datasets = 120
    result = calibration(datasets, seed=11, permutations=200)
    low, high = bounds(datasets, NOMINAL)
    for size, share, difference in zip(
        result["sizes"], result["share_coverage"], result["difference_coverage"], strict=True
    ):
        assert low <= share <= high, (size, result)
        assert low <= difference <= high, (size, result)
    _, most = bounds(datasets, 0.05)
    for alternative in ALTERNATIVES:
        for source in ("ours", "reference"):
            assert max(result["rejections"][source][alternative]) <= most, (source, result)
        paired = result["paired"][alternative]
        for difference, error in zip(paired["difference"], paired["se"], strict=True):
            assert abs(difference) <= 3.29 * error, (alternative, paired)
    assert result["omnibus_rejections"] <= most, result


@pytest.mark.slow
def test_the_share_test_finds_a_shifted_group_of_twenty_as_the_reference_does() -> None:
    """A 0.6 logit shift of the 20-rater group. Ours finds it as often as the rater-level
    permutation test on the same datasets (paired, within 3.29 standard errors) in every
    alternative; one-sided (greater), neither falls below 0.70 beyond Monte-Carlo error
    (the observed rate within or above the binomial 99.9% range of a test of power 0.70),
    which no two-sided test could reach: the best one's ceiling is 0.69
    (tests/drivers/rater_permutation.py)."""
    datasets = 100
    result = calibration(datasets, seed=12, shift=0.6, permutations=200)
    shifted = 2
    for alternative in ALTERNATIVES:
        paired = result["paired"][alternative]
        difference, error = paired["difference"][shifted], paired["se"][shifted]
        assert abs(difference) <= 3.29 * error, (alternative, paired)
    least, _ = bounds(datasets, 0.70)
    for source in ("ours", "reference"):
        assert result["rejections"][source]["greater"][shifted] >= least, result
        assert result["rejections"][source]["less"][shifted] <= bounds(datasets, 0.05)[1]
    assert ceiling(0.6, 20, 103, "two-sided") < 0.70 < ceiling(0.6, 20, 103, "greater")
    assert result["omnibus_rejections"] >= 0.3, result
