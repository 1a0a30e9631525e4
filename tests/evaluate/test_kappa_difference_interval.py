"""A group's kappa difference from the rest, end to end: `evaluate --by`'s difference_low /
difference_high equal d +- t * sqrt(V_conversations + max(V_raters - V_answers, 0)), with
V_conversations the jackknife of scikit-learn's kappa difference with each conversation
left out, the raters' term by hand (tests/evaluate/test_plurality.py) and t with
Satterthwaite's degrees of freedom."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from drivers.crossed import simulate
from drivers.evaluate_truth import judge, predictions_of, votes_of
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from dices_cli.evaluate.evaluation import Settings, evaluate
from dices_cli.evaluate.groups import Members
from dices_cli.evaluate.references import NO, YES
from tests.evaluate.test_plurality import _by_hand, _jackknife


def test_the_kappa_difference_interval_is_the_conversations_and_the_raters_term(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(8)
    data = simulate(rng, sizes=(5, 9), conversations=60)
    score = judge(data, rng)
    records = evaluate(
        votes_of(data), predictions_of(score, tmp_path), Settings(by=("group",), permutations=0)
    ).table.records()
    (row,) = [r for r in records if r["group"] == "g0" and r["reference"] == "crowd"]
    own = data.group_of_rater == 0
    everything = np.arange(data.yes.shape[1])

    def kappa(side: np.ndarray, kept: np.ndarray) -> float:
        yes = data.yes[side][:, kept].sum(axis=0)
        decided = yes * 2 != side.sum()  # ties left out, as evaluate's default
        crowd = (yes * 2 > side.sum())[decided]
        return float(cohen_kappa_score(score[kept][decided] >= 0.5, crowd))

    def difference(kept: np.ndarray) -> float:
        return kappa(own, kept) - kappa(~own, kept)

    estimate = difference(everything)
    conversations = _jackknife([difference(np.delete(everything, i)) for i in everything])
    answers = np.zeros((len(own), 3, len(everything)))
    answers[:, YES] = data.yes
    answers[:, NO] = 1 - data.yes
    label = np.where(score >= 0.5, YES, NO).astype(np.intp)
    raters, df = _by_hand(Members(data.group_of_rater, answers, 2), label, 0)
    assert raters > 0.1 * conversations  # the raters' term counts in the interval
    total = conversations + raters
    df = total**2 / (conversations**2 / (len(everything) - 1) + raters**2 / df)
    half = stats.t.ppf(0.975, df) * math.sqrt(total)
    assert math.isclose(row["difference"], estimate, rel_tol=1e-9)
    assert math.isclose(row["difference_low"], estimate - half, rel_tol=1e-6)
    assert math.isclose(row["difference_high"], estimate + half, rel_tol=1e-6)
