"""The calibration of `dices evaluate`'s group intervals against a known truth
(tests/calibration/test_calibration_groups.py, bench/calibration_evaluate.py).

Ratings come from the crossed random-effects model of tests/drivers/crossed.py (raters in
groups of 5, 13, 20, 35 and 50, every one rating every conversation). A judge scores each
conversation expit(MU + b_i + e_i), e_i ~ N(0, JUDGE_SD^2), b_i the conversation's harm:
it knows the conversations, not the raters, and its label is Yes from 0.5 up.

What a group row estimates is the figure of a group of its size drawn from the raters and
conversations like these: a 5-rater group's plurality is noisier, so any judge agrees less
with it (the small-group effect evaluate's difference_null shows). The truth is that
figure's expectation, per group: `true_figures` averages it over many datasets drawn
afresh, computed here with numpy alone (an independent implementation of the kappa of a
label against a plurality and of the Jensen-Shannon divergence of [1 - p, p] from the
shares). An interval covers when it holds the truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from drivers.crossed import CONVERSATION_SD, MU, Crossed, expit, simulate
from numpy.typing import NDArray

from dices_cli.evaluate.evaluation import Settings, evaluate
from dices_cli.evaluate.predictions import Predictions, read_predictions
from dices_cli.evaluate.references import NO, YES, Votes

JUDGE_SD = 1.0
FIGURES = ("kappa", "kappa_difference", "jsd", "jsd_difference")
COLUMN = "group"


def judge(data: Crossed, rng: np.random.Generator) -> NDArray[np.float64]:
    """The judge's score of each conversation."""
    noise = rng.normal(0, JUDGE_SD, len(data.conversation_effect))
    return np.asarray(expit(MU + data.conversation_effect + noise), dtype=np.float64)


def _kappa(label: NDArray[np.bool_], unsafe: NDArray[np.bool_], used: NDArray[np.bool_]) -> float:
    """Cohen's kappa of two binary labels over the `used` conversations."""
    a, b = label[used].astype(np.float64), unsafe[used].astype(np.float64)
    observed = (a == b).mean()
    chance = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    return float((observed - chance) / (1 - chance))


def _jsd(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    """Mean Jensen-Shannon divergence (bits) of [1 - p, p] from [1 - q, q]."""

    def entropy(x: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(x > 0, -x * np.log2(x), 0.0) + np.where(
                x < 1, -(1 - x) * np.log2(1 - x), 0.0
            )
        return np.asarray(terms)

    return float((entropy((p + q) / 2) - (entropy(p) + entropy(q)) / 2).mean())


def figures_by_hand(data: Crossed, score: NDArray[np.float64]) -> NDArray[np.float64]:
    """[group, figure] FIGURES of the judge against each group and its rest (ties of the
    plurality left out, as evaluate's default)."""
    label = score >= 0.5
    result = np.empty((data.groups, len(FIGURES)))
    yes = data.yes
    for g in range(data.groups):
        mine = data.group_of_rater == g
        sides = []
        for side in (mine, ~mine):
            count = yes[side].sum(axis=0)
            total = side.sum()
            unsafe, tie = count > total - count, count == total - count
            sides.append((_kappa(label, unsafe, ~tie), _jsd(score, count / total)))
        (kappa, jsd), (rest_kappa, rest_jsd) = sides
        result[g] = [kappa, kappa - rest_kappa, jsd, jsd - rest_jsd]
    return result


def true_figures(
    replicates: int, seed: int, shift: tuple[int, float] | None = None, **shape: object
) -> NDArray[np.float64]:
    """[group, figure] each figure's expectation: its mean over `replicates` datasets."""
    rng = np.random.default_rng(seed)
    total = None
    for _ in range(replicates):
        data = simulate(rng, shift=shift, **shape)  # type: ignore[arg-type]
        values = figures_by_hand(data, judge(data, rng))
        total = values if total is None else total + values
    assert total is not None
    return total / replicates


def votes_of(data: Crossed) -> Votes:
    """The dataset as evaluate's votes: groups "g0", "g1", ... of COLUMN."""
    rater, conversation = np.nonzero(~np.isnan(data.yes))
    answer = np.where(data.yes[rater, conversation] == 1.0, YES, NO).astype(np.intp)
    return Votes(
        dataset="990",  # a dataset without gold labels: crowd references only
        item_ids=np.arange(data.yes.shape[1], dtype=np.int64),
        fixed=None,
        item=conversation.astype(np.intp),
        rater=rater.astype(np.intp),
        answer=answer,
        group=data.group_of_rater[rater].astype(np.intp),
        group_keys=[(f"g{g}",) for g in range(data.groups)],
    )


def predictions_of(score: NDArray[np.float64], folder: object) -> Predictions:
    """The judge's label and score as a read predictions file."""
    from pathlib import Path

    path = Path(str(folder)) / "judge.csv"
    pl.DataFrame(
        {
            "model": "judge",
            "item_id": np.arange(len(score)),
            "label": np.where(score >= 0.5, "Yes", "No"),
            "score": score,
        }
    ).write_csv(path)
    return read_predictions(str(path), list(range(len(score))))


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float | None
    high: float | None


def evaluated(
    data: Crossed, score: NDArray[np.float64], folder: object, bootstrap: int, seed: int
) -> dict[tuple[int, str], Interval]:
    """Per (group, figure): evaluate's estimate and interval."""
    settings = Settings(by=(COLUMN,), bootstrap=bootstrap, permutations=0, seed=seed)
    table = evaluate(votes_of(data), predictions_of(score, folder), settings).table
    result = {}
    for row in table.records():
        if row[COLUMN] is None:
            continue
        group = int(row[COLUMN][1:])
        metric = "kappa" if row["reference"] == "crowd" else "jsd"
        result[group, metric] = Interval(row[metric], row[f"{metric}_low"], row[f"{metric}_high"])
        result[group, f"{metric}_difference"] = Interval(
            row["difference"], row["difference_low"], row["difference_high"]
        )
    return result


def coverage(
    simulations: int,
    bootstrap: int,
    seed: int,
    folder: object,
    truth: NDArray[np.float64],
    shift: tuple[int, float] | None = None,
) -> NDArray[np.float64]:
    """[group, figure] the share of `simulations` datasets whose interval holds the truth
    (`true_figures` of the same shape), NaN where no interval is given."""
    rng = np.random.default_rng(seed)
    held = np.zeros(truth.shape)
    given = np.zeros(truth.shape)
    for number in range(simulations):
        data = simulate(rng, shift=shift)
        rows = evaluated(data, judge(data, rng), folder, bootstrap, seed + number)
        for (group, name), interval in rows.items():
            f = FIGURES.index(name)
            if interval.low is None or interval.high is None:
                continue
            given[group, f] += 1
            held[group, f] += interval.low <= truth[group, f] <= interval.high
    with np.errstate(invalid="ignore"):
        return np.where(given > 0, held / np.maximum(given, 1), np.nan)


__all__ = ["CONVERSATION_SD", "coverage", "evaluated", "true_figures"]
