"""The raters' share of the variance of a group's kappa difference from the rest (the
headline figure against a plurality), for its interval (dices_cli.metrics.intervals).

A plurality is a step function of the answers: leaving one rater out flips, makes or breaks
ties on the conversations where that rater was pivotal, and the delete-one-rater jackknife
of a plurality figure is then dominated by those swings, the answers' own noise, several
times the figure's whole variance. The delete-one-answer jackknife (each answer of each
conversation left out in turn) sees the same swings, so their difference leaves what the
raters add beyond their answers' noise, as the two-way cluster-robust variance takes off
its intersection (Cameron, Gelbach & Miller 2011):

    V_raters - V_answers, at least 0,

both taken with a tie of Yes and the larger other answer counted half unsafe and half safe,
so that a left-out answer moves a conversation's label by a half step, whatever the ties
rule of the estimate (which leaves a tie out by default, and would change the conversations
a left-out value is measured on). The conversations' jackknife already holds the answers'
noise: this term is added to it (docs/metrics.md, "Intervals of evaluate").
"""

from __future__ import annotations

import numpy as np

from dices_cli.evaluate.groups import Members, left_out_batches
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import NO, UNRATED, UNSURE, YES
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.intervals import Jackknife
from dices_cli.metrics.scoring import confusion_metrics


def _halves(counts: Array) -> tuple[Array, Array]:
    """[..., conversation] the weights of unsafe and of safe of sets' answer counts
    [..., category, conversation]: a plurality of Yes 1 unsafe, of another answer 1 safe, a
    tie of Yes with the larger other answer a half of each, no answer 0."""
    yes = counts[..., YES, :]
    other = np.maximum(counts[..., NO, :], counts[..., UNSURE, :])
    tie = 0.5 * ((yes == other) & (yes > 0))
    return (yes > other) + tie, (other > yes) + tie


def _kappa(unsafe: Array, safe: Array, said: tuple[Array, Array]) -> Array:
    """Cohen's kappa of the model's labels (`said`: per conversation 1 where it says Yes,
    1 where it says No) against the weighted plurality, over the last axis."""
    yes, no = said
    return confusion_metrics(unsafe @ yes, safe @ yes, unsafe @ no, safe @ no)["kappa"]


def _answer_variance(counts: Array, said: tuple[Array, Array]) -> float:
    """V_answers of the kappa against a set's plurality (answer counts [category,
    conversation]): per conversation with m answers, k_c of category c, its kappa v_c with
    one answer c left out, (m - 1) / m * sum_c k_c (v_c - mean)^2; summed."""
    yes, no = said
    unsafe, safe = _halves(counts)
    totals = [unsafe @ yes, safe @ yes, unsafe @ no, safe @ no]
    values = []
    for category in range(counts.shape[0]):
        fewer = counts.copy()
        fewer[category] = np.maximum(fewer[category] - 1, 0)
        u, s = _halves(fewer)  # conversation i's weights with one answer left out
        cells = [(u - unsafe) * yes, (s - safe) * yes, (u - unsafe) * no, (s - safe) * no]
        changed = (t + c for t, c in zip(totals, cells, strict=True))
        values.append(confusion_metrics(*changed)["kappa"])
    left = np.stack(values)  # [category, conversation]
    m = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (counts * left).sum(axis=0) / np.maximum(m, 1)
        spread = (m - 1) / np.maximum(m, 1) * (counts * (left - mean) ** 2).sum(axis=0)
    return float(np.nansum(np.where(m > 1, spread, 0.0)))


def difference_rater_variance(
    prediction: Prediction, members: Members, threshold: float
) -> list[tuple[float, float]]:
    """Per group: the raters' variance of the kappa difference group - rest beyond the
    answers' noise, (V_raters - V_answers) at least 0, and the Satterthwaite degrees of
    freedom of V_raters (Jackknife.variance); NaN where a left-out kappa is undefined."""
    answer = prediction.answer(threshold)
    said = ((answer == YES).astype(np.float64), ((answer != YES) & (answer != UNRATED)) * 1.0)
    groups = members.groups
    left = np.empty((len(members.group), groups))  # [member, group] difference without it
    for rows, batch in left_out_batches(members):
        own = _kappa(*_halves(batch), said)  # [member, group]
        rest = _kappa(*_halves(batch.sum(axis=1, keepdims=True) - batch), said)
        left[rows] = own - rest
    pool = members.answers.sum(axis=0)
    jackknife = Jackknife(members.group)
    result = []
    for group in range(groups):
        counts = members.answers[members.group == group].sum(axis=0)
        raters, df = jackknife.variance(left[:, group])
        answers = _answer_variance(counts, said) + _answer_variance(pool - counts, said)
        result.append((max(raters - answers, 0.0), df))
    return result
