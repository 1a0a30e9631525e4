"""V_answers of the total-variation distance (dices_cli.evaluate.groups.answer_variances):
per conversation, half the L1 distance of the prediction from the shares with each answer
left out in turn, by hand; their jackknife, summed, over the rated conversations squared."""

from __future__ import annotations

import math

import numpy as np

from dices_cli.evaluate.groups import answer_variance, answer_variances
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import YES
from tests.evaluate.test_answer_variance import ANSWERS, _counts


def _by_hand(answers: list[list[int]], predicted: list[list[float]]) -> float:
    total, rated = 0.0, 0
    for given, p in zip(answers, predicted, strict=True):
        if not given:
            continue
        rated += 1
        if len(given) < 2:
            continue
        values = []
        for j in range(len(given)):
            kept = given[:j] + given[j + 1 :]
            share = np.bincount(np.array(kept), minlength=len(p)) / len(kept)
            values.append(0.5 * sum(abs(a - b) for a, b in zip(p, share, strict=True)))
        array = np.array(values)
        total += (len(array) - 1) / len(array) * float(((array - array.mean()) ** 2).sum())
    return total / rated**2


def test_tvd_answer_variance_of_a_score_by_hand() -> None:
    score = np.array([0.3, 0.1, 0.8, 0.5, 0.45])
    prediction = Prediction("m", np.ones(5, dtype=bool), None, score, None)
    binary = [[int(a == YES) for a in given] for given in ANSWERS]
    expected = _by_hand(binary, [[1 - p, p] for p in score])
    variances = answer_variances(prediction, _counts(ANSWERS))
    assert expected > 0
    assert math.isclose(variances["tvd"], expected, rel_tol=1e-12)
    assert variances["jsd"] == answer_variance(prediction, _counts(ANSWERS))


def test_tvd_answer_variance_of_a_distribution_of_three_answers_by_hand() -> None:
    distribution = np.array(
        [[0.5, 0.3, 0.2], [0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.4, 0.4, 0.2], [0.6, 0.3, 0.1]]
    )
    prediction = Prediction("m", np.ones(5, dtype=bool), None, None, distribution)
    expected = _by_hand(ANSWERS, distribution.tolist())
    variances = answer_variances(prediction, _counts(ANSWERS))
    assert math.isclose(variances["tvd"], expected, rel_tol=1e-12)
