"""The raters' term of a group's kappa difference from the rest (V_raters - V_answers, ties
counted half: dices_cli.evaluate.plurality), against scikit-learn's weighted Cohen's kappa
with every rater and every answer left out by hand."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import cohen_kappa_score

from dices_cli.evaluate.groups import Members
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.plurality import difference_rater_variance
from dices_cli.evaluate.references import NO, UNRATED, UNSURE, YES

Counts = NDArray[np.float64]


def _kappa(counts: Counts, label: NDArray[np.intp]) -> float:
    """scikit-learn's Cohen's kappa of the model's Yes against the plurality of answer
    counts [category, conversation]: a tie of Yes with the larger other answer twice, with
    weight a half as unsafe and as safe; conversations without answers or label left out."""
    said, crowd, weight = [], [], []
    for i in range(counts.shape[1]):
        yes, other = counts[YES, i], max(counts[NO, i], counts[UNSURE, i])
        if label[i] == UNRATED or yes + other == 0:
            continue
        sides = [(1, 1.0)] if yes > other else [(0, 1.0)] if other > yes else [(1, 0.5), (0, 0.5)]
        for unsafe, w in sides:
            said.append(int(label[i] == YES))
            crowd.append(unsafe)
            weight.append(w)
    return float(cohen_kappa_score(said, crowd, sample_weight=weight))


def _jackknife(values: list[float]) -> float:
    array = np.array(values)
    return (len(array) - 1) / len(array) * float(((array - array.mean()) ** 2).sum())


def _answers_term(counts: Counts, label: NDArray[np.intp]) -> float:
    """Per conversation, the jackknife of the kappa with each of its answers left out in
    turn; summed."""
    total = 0.0
    for i in range(counts.shape[1]):
        given = [c for c in range(counts.shape[0]) for _ in range(int(counts[c, i]))]
        if len(given) < 2:
            continue
        values = []
        for c in given:
            fewer = counts.copy()
            fewer[c, i] -= 1
            values.append(_kappa(fewer, label))
        total += _jackknife(values)
    return total


def _by_hand(members: Members, label: NDArray[np.intp], group: int) -> tuple[float, float]:
    own = members.group == group
    counts = members.answers[own].sum(axis=0)
    rest = members.answers[~own].sum(axis=0)
    raters, parts = 0.0, []
    for stratum in range(members.groups):
        values = []
        for u in np.flatnonzero(members.group == stratum):
            if stratum == group:
                values.append(_kappa(counts - members.answers[u], label) - _kappa(rest, label))
            else:
                values.append(_kappa(counts, label) - _kappa(rest - members.answers[u], label))
        part = _jackknife(values)
        raters += part
        parts.append(part * part / (len(values) - 1))
    answers = _answers_term(counts, label) + _answers_term(rest, label)
    return max(raters - answers, 0.0), raters * raters / sum(parts)


def test_raters_term_of_the_kappa_difference_matches_a_left_out_kappa_by_hand() -> None:
    rng = np.random.default_rng(4)
    group = np.repeat(np.arange(3), [3, 5, 6])
    conversations = 14
    chosen = rng.choice(3, size=(len(group), conversations), p=[0.45, 0.4, 0.15])
    answers = np.zeros((len(group), 3, conversations))
    member, conversation = np.indices(chosen.shape)
    answers[member, chosen, conversation] = 1.0
    skipped = rng.random(chosen.shape) < 0.15  # not every rater rates everything
    answers *= ~skipped[:, None, :]
    members = Members(group, answers, 3)
    label = rng.choice([NO, YES, UNSURE], size=conversations, p=[0.5, 0.4, 0.1]).astype(np.intp)
    label[2] = UNRATED
    prediction = Prediction("m", label != UNRATED, label, None, None)
    got = difference_rater_variance(prediction, members, 0.5)
    expected = [_by_hand(members, label, g) for g in range(3)]
    for (value, df), (value_by_hand, df_by_hand) in zip(got, expected, strict=True):
        assert np.isclose(value, value_by_hand, rtol=1e-9, atol=1e-15)
        assert np.isclose(df, df_by_hand, rtol=1e-9)
    # The answers' jackknife does not always take off all of the raters': a term is left.
    assert any(value > 0 for value, _ in got)
