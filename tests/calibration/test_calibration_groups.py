"""Calibration of the group tests of `dices query agreement` and the filter audit: with the
raters' demographics shuffled across raters (group sizes kept), p < 0.05 in at most 5% of
tests, within binomial bounds. (`dices evaluate`'s: tests/evaluate/test_evaluate_groups.py; the
per-conversation tests and the share intervals have their own files.) Full-size figures:
`python bench/calibration_groups.py`, in docs/metrics.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

from dices_cli.families.schema import PUBLISHED_REMOVED
from dices_cli.metrics.permutation import permutation_test
from dices_cli.raters.audit import exact_independence_p

pytestmark = pytest.mark.slow  # calibration: many simulated data sets per check


def within_level(p_values: list[float], level: float = 0.05) -> tuple[int, int, float]:
    """Rejections, tests, and the 99.9% upper binomial bound of rejections at `level`."""
    tests = len(p_values)
    return sum(p < level for p in p_values), tests, float(binom.ppf(0.999, tests, level))


def answers_and_groups(data: Path, dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """[rater, category, conversation] one-hot answers and each rater's race group."""
    ratings = pl.read_parquet(data / dataset / "ratings.parquet")
    raters = pl.read_parquet(data / dataset / "raters.parquet").sort("rater_id")
    rater = np.searchsorted(raters["rater_id"].to_numpy(), ratings["rater_id"].to_numpy())
    items = np.unique(ratings["item_id"].to_numpy())
    item = np.searchsorted(items, ratings["item_id"].to_numpy())
    answer = ratings["Q_overall"].to_physical().to_numpy()
    answers = np.zeros((raters.height, 3, len(items)))
    answers[rater, answer, item] = 1
    _, group = np.unique(raters["rater_race"].cast(pl.String).to_numpy(), return_inverse=True)
    return answers, group.astype(np.intp)


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_agreement_permutation_tests_hold_their_level(sample: Path, dataset: str) -> None:
    answers, groups = answers_and_groups(sample, dataset)
    rng = np.random.default_rng(11)
    p_values: list[float] = []
    for shuffle in range(40):
        labels = rng.permutation(groups)
        test = permutation_test(answers, labels, int(groups.max()) + 1, 199, seed=shuffle)
        p_values += [p for p in test.p.ravel().tolist() if not np.isnan(p)]
    rejected, tests, bound = within_level(p_values)
    assert tests >= 600 and min(p_values) > 0
    assert rejected <= bound, (rejected, tests, bound)


def test_the_filter_audits_removal_test_holds_its_level(sample: Path) -> None:
    """The exact test of removal against group, with a fixed set of removed raters (the
    DICES authors' list) and the groups shuffled across raters."""
    raters = pl.read_parquet(sample / "350" / "raters.parquet")
    removed = raters["rater_id"].is_in(list(PUBLISHED_REMOVED["350"])).to_numpy()
    assert removed.sum() >= 10
    _, groups = np.unique(raters["rater_race"].cast(pl.String).to_numpy(), return_inverse=True)
    rng = np.random.default_rng(5)
    p_values = []
    for _ in range(400):
        labels = rng.permutation(groups)
        sizes = np.bincount(labels).tolist()
        p_values.append(exact_independence_p(sizes, np.bincount(labels, weights=removed).tolist()))
    rejected, tests, bound = within_level(p_values)
    assert rejected <= bound, (rejected, tests, bound)
    # Exact and conditional: it may be conservative, never anti-conservative; and it can
    # reject (a test that never could would pass the bound above vacuously).
    assert exact_independence_p([30, 30], [15, 0]) < 1e-4


@pytest.mark.slow
def test_evaluate_group_intervals_hold_a_known_truth_per_group_size(tmp_path: Path) -> None:
    """`evaluate --by`'s kappa, jsd and their differences from the rest, for groups of 5,
    13, 20, 35 and 50 raters of a crossed random-effects model (tests/drivers/crossed.py):
    each interval holds the figure's expectation for a group of its size (the small-group
    effect included) in as many datasets as a 95% interval should, per group size, within
    the 99.9% binomial range. Full run: `python bench/calibration_evaluate.py`."""
    from drivers.evaluate_truth import coverage, true_figures

    simulations = 30
    truth = true_figures(800, seed=1000)
    covered = coverage(simulations, 200, seed=0, folder=tmp_path, truth=truth)
    low = binom.ppf(0.0005, simulations, 0.95) / simulations
    assert not np.isnan(covered).any()
    assert (covered >= low).all(), covered
