"""Calibration of the share intervals and the share test of qoverall-by-demographic (and
degree-of-harm, the report's figure), per group size, against the known truth of
tests/drivers/crossed.py: rater sd 1, conversation sd 1.5 on the logit, 350 conversations x
groups of 5, 13, 20, 35 and 50 raters. Coverage is checked per group size, never pooled.

CI runs few datasets, so its bounds are the binomial 99.9% range of a calibrated interval
over that many; bench/calibration_shares.py runs 1000 datasets and writes the table of
docs/metrics.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from drivers.crossed import GROUP_SIZES, calibration, simulate, true_share
from scipy.stats import binom

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
def test_intervals_cover_per_group_size_and_the_test_holds_its_level() -> None:
    datasets = 120
    result = calibration(datasets, seed=11, permutations=200)
    low, high = bounds(datasets, NOMINAL)
    for size, share, difference in zip(
        result["sizes"], result["share_coverage"], result["difference_coverage"], strict=True
    ):
        assert low <= share <= high, (size, result)
        assert low <= difference <= high, (size, result)
    _, most = bounds(datasets, 0.05)
    assert max(result["rejections"]) <= most, result
    assert result["omnibus_rejections"] <= most, result


@pytest.mark.slow
def test_the_share_test_finds_a_shifted_group_of_twenty() -> None:
    """A 0.6 logit shift of the 20-rater group: an oracle that knew every rater's effect
    would find it in 69% of datasets at the 5% level (|0.6| / (1 * sqrt(1/20 + 1/103)) = 2.46
    standard errors); the permutation test on shares must come close."""
    datasets = 100
    result = calibration(datasets, seed=12, shift=0.6, permutations=200)
    assert result["rejections"][2] >= 0.55, result
    assert result["omnibus_rejections"] >= 0.3, result
