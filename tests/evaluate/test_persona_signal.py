"""Does a persona carry any group signal (dices_cli.evaluate.persona_signal), against
independent references (scipy's pearsonr and ttest_1samp, a loop over the shuffles in plain
Python) and calibrated: a judge that ignores the persona is rejected at about 5%, one that
answers with its persona group's plurality at the p-value's floor."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from dices_cli.evaluate.persona_signal import fit_gain, persona_shuffles, signal_test

YES = 1


def planted(rng: np.random.Generator, conversations: int = 80, sizes: tuple[int, ...] = (8, 6, 10)):
    """Answer counts [group, category, conversation] of groups whose P(Yes) differ per
    conversation, and each group's true P(Yes)."""
    leaning = rng.random((len(sizes), conversations))
    counts = np.zeros((len(sizes), 3, conversations))
    for g, size in enumerate(sizes):
        yes = rng.binomial(size, leaning[g])
        counts[g, 1], counts[g, 0] = yes, size - yes
    return counts, leaning, np.array(sizes, dtype=float)


def differences_by_hand(simulated: np.ndarray, counts: np.ndarray, raters: np.ndarray):
    """The cells' real and simulated group-minus-rest differences, in plain Python."""
    groups, conversations = simulated.shape
    real, fake = [], []
    for c in range(conversations):
        for g in range(groups):
            yes = counts[g, 1, c]
            total = counts[g, :, c].sum()
            rest_yes = sum(counts[h, 1, c] for h in range(groups) if h != g)
            rest_total = sum(counts[h, :, c].sum() for h in range(groups) if h != g)
            real.append(yes / total - rest_yes / rest_total)
            others = sum(simulated[h, c] * raters[h] for h in range(groups) if h != g)
            weight = sum(raters[h] for h in range(groups) if h != g)
            fake.append(simulated[g, c] - others / weight)
    return real, fake


def test_the_signal_is_pearsons_r_of_the_differences_by_hand() -> None:
    rng = np.random.default_rng(1)
    counts, leaning, raters = planted(rng)
    simulated = np.clip(leaning + rng.normal(0, 0.3, leaning.shape), 0, 1)
    value, used, _, _ = signal_test(simulated, counts, raters, 0, 0)
    real, fake = differences_by_hand(simulated, counts, raters)
    assert value == pytest.approx(stats.pearsonr(real, fake).statistic, abs=1e-12)
    assert used == len(real)


def test_the_p_value_counts_the_shuffles_by_hand() -> None:
    rng = np.random.default_rng(2)
    counts, leaning, raters = planted(rng, conversations=30)
    simulated = np.clip(leaning + rng.normal(0, 0.5, leaning.shape), 0, 1)
    value, _, null_mean, p = signal_test(simulated, counts, raters, 50, 7)
    real, _ = differences_by_hand(simulated, counts, raters)
    null = []
    for shuffled in persona_shuffles(simulated, 50, 7):
        null.append(stats.pearsonr(real, differences_by_hand(shuffled, counts, raters)[1])[0])
    tie = 1e-12 * max(1.0, abs(value))
    greater = (sum(v >= value - tie for v in null) + 1) / 51
    less = (sum(v <= value + tie for v in null) + 1) / 51
    assert p == pytest.approx(min(1.0, 2 * min(greater, less)))
    assert null_mean == pytest.approx(np.mean(null))


def test_a_shuffle_permutes_each_conversations_groups_uniformly() -> None:
    simulated = np.arange(3.0)[:, None] * np.ones((1, 2000))
    shuffled = persona_shuffles(simulated, 3, 0)
    assert (np.sort(shuffled, axis=1) == simulated).all()
    seen = Counter(tuple(column) for shuffle in shuffled for column in shuffle.T)
    assert set(seen) == set(itertools.permutations((0.0, 1.0, 2.0)))
    assert stats.chisquare(list(seen.values())).pvalue > 0.001


def test_the_fit_gain_is_a_paired_t_test_by_scipy() -> None:
    rng = np.random.default_rng(3)
    counts, leaning, _ = planted(rng)
    simulated = np.clip(leaning + rng.normal(0, 0.2, leaning.shape), 0, 1)
    simulated[1, 5] = np.nan  # a conversation a persona did not predict: left out
    plain = rng.random(leaning.shape[1])
    fits = fit_gain(simulated, plain, counts)
    own = counts[:, 1] / counts.sum(axis=1)
    keep = ~np.isnan(simulated).any(axis=0)
    persona = ((simulated - own) ** 2).mean(axis=0)[keep]
    alone = ((plain - own) ** 2).mean(axis=0)[keep]
    gain = alone - persona
    t = stats.ttest_1samp(gain, 0.0)
    low, high = t.confidence_interval(0.95)
    n, mean, got_low, got_high, p = fits["fit_gain"]
    assert n == keep.sum() == 79
    assert (mean, got_low, got_high, p) == pytest.approx((gain.mean(), low, high, t.pvalue))
    assert fits["fit_persona"][1] == pytest.approx(persona.mean())
    assert fits["fit_no_persona"][1] == pytest.approx(alone.mean())


def _judge(rng: np.random.Generator, counts: np.ndarray, follows: bool) -> np.ndarray:
    """Label-only shares: a group's plurality (follows), else Yes or No at random."""
    if follows:
        return (counts[:, 1] > counts[:, 0]).astype(float)
    return (rng.random(counts[:, 1].shape) < 0.5).astype(float)


@pytest.mark.slow
def test_a_judge_that_ignores_the_persona_is_rejected_at_its_level() -> None:
    """400 runs of a random judge: p <= 0.05 within the 99.9% binomial bounds of 5%."""
    rng = np.random.default_rng(20)
    runs = 400
    rejected = 0
    for run in range(runs):
        counts, _, raters = planted(rng, conversations=60)
        _, _, _, p = signal_test(_judge(rng, counts, False), counts, raters, 99, run)
        rejected += p <= 0.05
    low, high = stats.binom.ppf([0.0005, 0.9995], runs, 0.05) / runs
    assert low <= rejected / runs <= high, rejected / runs


def test_a_judge_that_follows_its_persona_group_is_found() -> None:
    rng = np.random.default_rng(21)
    counts, _, raters = planted(rng, conversations=60)
    value, _, null_mean, p = signal_test(_judge(rng, counts, True), counts, raters, 199, 0)
    assert value > 0.5 > abs(null_mean)
    assert p == pytest.approx(2 / 200)
    plain = (counts.sum(axis=0)[1] > counts.sum(axis=0)[0]).astype(float)  # the pool's
    fits = fit_gain(_judge(rng, counts, True), plain, counts)
    assert fits["fit_gain"][1] > 0 and fits["fit_gain"][4] < 0.01
    assert not math.isnan(fits["fit_gain"][2])
