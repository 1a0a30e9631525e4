"""A judge as one more rater (dices_cli.metrics.judge_rater), against independent references:
Wong, Paritosh and Aroyo's kappa_x by enumerating the rating pairs in plain Python, the
`krippendorff` package's alpha, numpy's corrcoef, and a loop over the relabellings; and
calibrated under a null (group labels that mean nothing) and a known truth (a judge that
answers with one group's plurality)."""

from __future__ import annotations

import itertools
import math

import krippendorff
import numpy as np
import pytest

from dices_cli.metrics.judge_rater import (
    beside,
    error_correlation,
    judge_counts,
    judge_test,
)
from dices_cli.metrics.permutation import shuffled_labellings

CATEGORIES = 3


def xrr_by_pairs(judge: list[int], raters: list[list[int]]) -> float:
    """kappa_x = 1 - d_o / d_e of one judge with raters (answers per rater per conversation,
    -1 missing), by listing every (judge, rater) pair: d_o per conversation weighted by its
    ratings on both sides, d_e over all pairs of the two sides' pooled ratings."""
    observed_sum = weight_sum = 0.0
    x_all, y_all = [], []
    for c, label in enumerate(judge):
        ys = [r[c] for r in raters if r[c] >= 0]
        if label < 0 or not ys:
            continue
        x_all.append(label)
        y_all += ys
        disagree = sum(label != y for y in ys) / len(ys)
        weight = 1 + len(ys)
        observed_sum += weight * disagree
        weight_sum += weight
    pairs = list(itertools.product(x_all, y_all))
    expected = sum(a != b for a, b in pairs) / len(pairs)
    return 1 - (observed_sum / weight_sum) / expected


def alpha_by_package(raters: list[list[int]]) -> float:
    data = np.array([[np.nan if a < 0 else a for a in r] for r in raters], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def one_hot(raters: list[list[int]], conversations: int) -> np.ndarray:
    answers = np.zeros((len(raters), CATEGORIES, conversations))
    for r, row in enumerate(raters):
        for c, a in enumerate(row):
            if a >= 0:
                answers[r, a, c] = 1
    return answers


def random_raters(rng: np.random.Generator, raters: int, conversations: int) -> list[list[int]]:
    """Raters who give a conversation's own answer 70% of the time (alpha above 0), some
    answers missing."""
    truth = rng.choice([0, 1, 2], size=conversations, p=[0.6, 0.3, 0.1])
    noise = rng.choice([0, 1, 2], size=(raters, conversations), p=[0.6, 0.3, 0.1])
    rows = np.where(rng.random((raters, conversations)) < 0.7, truth, noise)
    missing = rng.random((raters, conversations)) < 0.2
    return np.where(missing, -1, rows).tolist()


def test_a_judge_beside_raters_is_kappa_x_and_alpha_by_hand() -> None:
    rng = np.random.default_rng(1)
    raters = random_raters(rng, 7, 30)
    judges = rng.choice([-1, 0, 1, 2], size=(2, 30), p=[0.1, 0.5, 0.3, 0.1])
    figures = beside(judge_counts(judges, CATEGORIES), one_hot(raters, 30).sum(axis=0))
    alpha = alpha_by_package(raters)
    for j in range(2):
        xrr = xrr_by_pairs(judges[j].tolist(), raters)
        assert figures[j, 0] == pytest.approx(xrr, abs=1e-12)
        assert figures[j, 1] == pytest.approx(alpha, abs=1e-12)
        assert figures[j, 2] == pytest.approx(xrr / alpha, abs=1e-12)


def test_xrr_over_irr_is_undefined_where_the_raters_agree_no_more_than_chance() -> None:
    raters = [[0, 1], [1, 0]]  # every pair on a conversation disagrees: alpha below 0
    figures = beside(judge_counts(np.array([[0, 1]]), CATEGORIES), one_hot(raters, 2).sum(axis=0))
    assert figures[0, 1] < 0
    assert math.isnan(figures[0, 2])


def test_each_group_and_relabelling_is_the_figures_by_hand() -> None:
    rng = np.random.default_rng(2)
    raters = random_raters(rng, 9, 20)
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    judges = rng.choice([0, 1, 2], size=(2, 20))
    test = judge_test(judge_counts(judges, CATEGORIES), one_hot(raters, 20), labels, 3, 30, 5)
    relabellings = shuffled_labellings(labels, 30, 5)
    for j in range(2):
        for g in range(3):
            members = [raters[r] for r in range(9) if labels[r] == g]
            assert test.observed[j, g, 0] == pytest.approx(
                xrr_by_pairs(judges[j].tolist(), members)
            )
            assert test.observed[j, g, 1] == pytest.approx(alpha_by_package(members))
            null = []
            for labelling in relabellings:
                drawn = [raters[r] for r in range(9) if labelling[r] == g]
                null.append(xrr_by_pairs(judges[j].tolist(), drawn))
            t = test.observed[j, g, 0]
            tie = 1e-12 * max(1.0, abs(t))
            greater = (sum(v >= t - tie for v in null) + 1) / 31
            less = (sum(v <= t + tie for v in null) + 1) / 31
            assert test.p[j, g, 0] == pytest.approx(min(1.0, 2 * min(greater, less)))
            low, high = np.quantile(null, [0.025, 0.975])
            assert (test.null_low[j, g, 0], test.null_high[j, g, 0]) == pytest.approx((low, high))


def test_the_error_correlation_is_numpys_corrcoef_and_kish() -> None:
    rng = np.random.default_rng(3)
    wrong = rng.random((4, 50)) < 0.3
    judged = rng.random((4, 50)) < 0.9
    errors = error_correlation(wrong, judged)
    pairs = []
    for i, j in itertools.combinations(range(4), 2):
        both = judged[i] & judged[j]
        r = np.corrcoef(wrong[i, both].astype(float), wrong[j, both].astype(float))[0, 1]
        assert errors.correlation[i, j] == pytest.approx(r, abs=1e-12)
        assert errors.pairs[i, j] == both.sum()
        pairs.append(r)
    assert errors.mean == pytest.approx(np.mean(pairs))
    assert errors.effective == pytest.approx(4 / (1 + 3 * np.mean(pairs)))
    for i in range(4):
        assert errors.error_rate[i] == pytest.approx(wrong[i, judged[i]].mean())


def test_identical_judges_are_one_and_perfectly_opposed_ones_have_no_finite_count() -> None:
    wrong = np.array([[True, False, True, False]] * 3)
    judged = np.ones((3, 4), dtype=bool)
    assert error_correlation(wrong, judged).effective == pytest.approx(1.0)
    opposed = np.array([[True, False, True, False], [False, True, False, True]])
    assert math.isnan(error_correlation(opposed, np.ones((2, 4), dtype=bool)).effective)
    assert math.isnan(error_correlation(wrong[:1], judged[:1]).effective)


def _planted(rng: np.random.Generator, conversations: int = 60, raters: int = 24):
    """Raters in 3 groups of 8 whose answers differ by group; labels by group."""
    labels = np.repeat(np.arange(3), raters // 3)
    leaning = rng.random((3, conversations))  # each group's P(Yes) per conversation
    p_yes = leaning[labels]
    answers = (rng.random((raters, conversations)) < p_yes).astype(int)
    return labels, answers


@pytest.mark.slow
def test_the_group_test_holds_its_level_when_groups_mean_nothing() -> None:
    """Shuffled group labels: each judge's xrr p-value is at most 0.05 in about 5% of the
    (run, group) tests, within the 99.9% binomial bound."""
    rng = np.random.default_rng(11)
    rejected = tests = 0
    for run in range(150):
        labels, answers = _planted(rng)
        shuffled = rng.permutation(labels)
        judge = (rng.random((1, answers.shape[1])) < 0.5).astype(np.intp)
        test = judge_test(
            judge_counts(judge, CATEGORIES), one_hot(answers.tolist(), answers.shape[1]),
            shuffled, 3, 99, run,
        )  # fmt: skip
        rejected += int((test.p[0, :, 0] <= 0.05).sum())
        tests += 3
    from scipy.stats import binom

    bound = binom.ppf(0.9995, tests, 0.05) / tests
    low = binom.ppf(0.0005, tests, 0.05) / tests
    assert low <= rejected / tests <= bound, rejected / tests


def test_a_judge_that_follows_one_group_is_found_with_that_group() -> None:
    """The judge answers group 0's plurality: its xrr with group 0 is above its null range
    (p small), and xrr_over_irr there is the largest of the three groups."""
    rng = np.random.default_rng(12)
    labels, answers = _planted(rng)
    own = answers[labels == 0].mean(axis=0) >= 0.5
    judge = own.astype(np.intp)[None]
    test = judge_test(
        judge_counts(judge, CATEGORIES), one_hot(answers.tolist(), answers.shape[1]), labels, 3,
        199, 0,
    )  # fmt: skip
    assert test.p[0, 0, 0] <= 2 / 200
    assert test.observed[0, 0, 0] > test.null_high[0, 0, 0]
    assert np.argmax(test.observed[0, :, 2]) == 0
