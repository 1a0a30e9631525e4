"""V_answers, the rater x conversation part of a jsd's variance that both jackknives count
(dices_cli.evaluate.groups.answer_variance), and how a centred interval takes it off once
(dices_cli.metrics.intervals.total_variance)."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import jensenshannon

from dices_cli.evaluate.groups import answer_variance
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import NO, UNSURE, YES
from dices_cli.metrics.intervals import centred_interval, difference_interval, total_variance


def _jackknife(values: list[float]) -> float:
    array = np.array(values)
    return (len(array) - 1) / len(array) * float(((array - array.mean()) ** 2).sum())


def _by_hand(answers: list[list[int]], predicted: list[list[float]]) -> float:
    """Per conversation, scipy's Jensen-Shannon divergence (bits) of the prediction from the
    shares with each answer left out in turn; their jackknife, summed, over the rated
    conversations squared."""
    total, rated = 0.0, 0
    for given, p in zip(answers, predicted, strict=True):
        if not given:
            continue
        rated += 1
        categories = len(p)

        def divergence(kept: list[int], p: list[float] = p, k: int = categories) -> float:
            share = np.bincount(np.array(kept, dtype=np.intp), minlength=k) / len(kept)
            return float(jensenshannon(p, share, base=2) ** 2)

        if len(given) > 1:
            total += _jackknife([divergence(given[:j] + given[j + 1 :]) for j in range(len(given))])
    return total / rated**2


def _counts(answers: list[list[int]]) -> np.ndarray:
    counts = np.zeros((3, len(answers)))
    for i, given in enumerate(answers):
        for answer in given:
            counts[answer, i] += 1
    return counts


ANSWERS = [[YES, NO, NO, YES, UNSURE], [NO, NO, NO], [YES], [], [YES, YES, NO, NO, NO, NO]]


def test_answer_variance_of_a_score_is_the_answers_jackknife_by_hand() -> None:
    """A score p is [1 - p, p] against [not Yes, Yes]; a conversation with one answer adds
    nothing, one with none is not in the mean."""
    score = np.array([0.3, 0.1, 0.8, 0.5, 0.45])
    prediction = Prediction("m", np.ones(5, dtype=bool), None, score, None)
    binary = [[int(a == YES) for a in given] for given in ANSWERS]
    expected = _by_hand(binary, [[1 - p, p] for p in score])
    assert math.isclose(answer_variance(prediction, _counts(ANSWERS)), expected, rel_tol=1e-12)


def test_answer_variance_of_a_distribution_of_three_answers_by_hand() -> None:
    distribution = np.array(
        [[0.5, 0.3, 0.2], [0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.4, 0.4, 0.2], [0.6, 0.3, 0.1]]
    )
    prediction = Prediction("m", np.ones(5, dtype=bool), None, None, distribution)
    expected = _by_hand(ANSWERS, distribution.tolist())
    assert math.isclose(answer_variance(prediction, _counts(ANSWERS)), expected, rel_tol=1e-12)


def test_a_model_without_a_probability_has_no_answer_variance() -> None:
    labels = np.full(5, YES)
    prediction = Prediction("m", np.ones(5, dtype=bool), labels, None, None)
    assert math.isnan(answer_variance(prediction, _counts(ANSWERS)))


def test_the_answers_part_is_taken_off_once_and_never_below_either_jackknife() -> None:
    values = np.array([0.05, 0.049, 0.052, 0.050, 0.047, 0.053])
    conversations = _jackknife(list(values[1:]))
    raters, df = 2e-5, 7.0
    total, got_df = total_variance(values, (raters, df), overlap=1e-6)
    assert math.isclose(total, conversations + raters - 1e-6, rel_tol=1e-12)
    assert math.isclose(got_df, total**2 / (conversations**2 / 4 + raters**2 / df), rel_tol=1e-12)
    assert total_variance(values, (raters, df), overlap=1.0)[0] == max(conversations, raters)
    assert total_variance(values, (raters, df))[0] == conversations + raters


def test_the_reciprocal_scale_reaches_the_bound_when_the_spread_reaches_the_estimate() -> None:
    """e^2 / (e +- q sd): the upper end is the bound once q sd >= e; the estimate is inside."""
    values = np.array([0.01, 0.0, 0.02, 0.0, 0.02])
    low, high = centred_interval(values, bounds=(0.0, 1.0), reciprocal=True)
    assert 0.0 < low < 0.01 and high == 1.0
    narrow = np.array([0.05, 0.0499, 0.0501, 0.05, 0.05])
    low, high = centred_interval(narrow, bounds=(0.0, 1.0), reciprocal=True)
    assert 0.05 - low < high - 0.05  # the side a divergence grows on is the wider


def test_a_difference_takes_off_both_sides_answers() -> None:
    """MOVER with V_answers: each side's, and their sum for the difference, as if their
    jackknives had been that much smaller."""
    rng = np.random.default_rng(3)
    own = np.concatenate([[0.06], 0.06 + rng.normal(0, 0.001, 30)])
    rest = np.concatenate([[0.03], 0.03 + rng.normal(0, 0.0005, 30)])
    raters = (4e-6, 9.0)
    with_answers = difference_interval(
        (own, raters), (rest, raters), (own - rest, raters), (0.0, 1.0), overlaps=(1e-6, 1e-6)
    )
    without = difference_interval((own, raters), (rest, raters), (own - rest, raters), (0.0, 1.0))
    assert without[0] < with_answers[0] < 0.03 < with_answers[1] < without[1]
