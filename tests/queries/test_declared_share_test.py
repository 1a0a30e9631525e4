"""`label-by-group`'s test of a group's share in the positive class (difference, p_value,
p_adjusted, p_groups_differ): DICES's share test on a declared label. The difference equals
the direct count, the p-value a plain rater-level permutation test within Monte Carlo
error, and under shuffled groups of ordinal ratings with crossed effects p <= 0.05 stays
within the 99.9% binomial bound of 5% per group size."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from dices_cli.metrics.any_family import share_intervals
from tests.drivers.ordinal import OrdinalRatings, ordinal_ratings
from tests.queries.test_declared_queries import group_share_table

SIZES = (5, 13, 20)


def parameters(permutations: int, seed: int = 0) -> dict[str, Any]:
    return {"by": ["grp"], "interval": "clustered", "permutations": permutations,
            "seed": seed, "alternative": "two-sided"}  # fmt: skip


def column(result: Any, name: str) -> list[Any]:
    at = result.columns.index(name)
    return [row[at] for row in result.rows]


def plain_permutation_p(ratings: OrdinalRatings, group: int, draws: int, seed: int) -> float:
    """Two-sided p (twice the smaller tail, each counting the observed labelling) of the
    group's share minus the rest's, raters' groups shuffled."""
    rng = np.random.default_rng(seed)
    positive = (ratings.value >= 3).astype(float)
    yes = np.bincount(ratings.rater, weights=positive)
    counted = np.bincount(ratings.rater).astype(float)

    def difference(labels: np.ndarray[Any, Any]) -> float:
        mine = labels == group
        return float(
            yes[mine].sum() / counted[mine].sum() - yes[~mine].sum() / counted[~mine].sum()
        )

    observed = difference(ratings.group)
    null = np.array([difference(rng.permutation(ratings.group)) for _ in range(draws)])
    upper = (1 + np.sum(null >= observed - 1e-12)) / (1 + draws)
    lower = (1 + np.sum(null <= observed + 1e-12)) / (1 + draws)
    return float(min(1.0, 2 * min(upper, lower)))


def test_the_difference_and_p_value_are_a_plain_permutation_tests() -> None:
    ratings = ordinal_ratings(SIZES, items=40, per_rater=20, seed=4, shifts=(0.0, 0.4, 0.0))
    result = share_intervals(group_share_table(ratings), parameters(4000))
    positive = ratings.value >= 3
    for group, (difference, p) in enumerate(
        zip(column(result, "difference"), column(result, "p_value"), strict=True)
    ):
        mine = ratings.group[ratings.rater] == group
        assert difference == pytest.approx(
            positive[mine].mean() - positive[~mine].mean(), abs=1e-12
        )
        assert p == pytest.approx(plain_permutation_p(ratings, group, 4000, 9), abs=0.03)
    assert len(set(column(result, "p_groups_differ"))) == 1


@pytest.mark.calibration
def test_the_share_test_holds_its_level_per_group_size() -> None:
    rejected = dict.fromkeys(SIZES, 0)
    datasets = 60
    for seed in range(datasets):
        ratings = ordinal_ratings(SIZES, items=40, per_rater=20, seed=500 + seed)
        result = share_intervals(group_share_table(ratings), parameters(199, seed))
        for size, p in zip(SIZES, column(result, "p_value"), strict=True):
            rejected[size] += p <= 0.05
    bound = binom.ppf(0.999, datasets, 0.05)
    assert all(count <= bound for count in rejected.values()), (rejected, bound)
