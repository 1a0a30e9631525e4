"""The evaluation metrics (dices_cli.metrics.scoring) and bootstrap helpers
(dices_cli.metrics.bootstrap) against scikit-learn, scipy and direct computations.

A metric's value for a row of resample weights must equal the reference on the data with
each item repeated as often as its weight says (np.repeat), NaN where it is undefined.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import jensenshannon
from scipy.stats import false_discovery_control, pearsonr, spearmanr
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    brier_score_loss,
    cohen_kappa_score,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)

from dices_cli.metrics.bootstrap import (
    bootstrap_weights,
    percentile_interval,
)
from dices_cli.metrics.permutation import benjamini_hochberg
from dices_cli.metrics.scoring import (
    Resamples,
    correlation_metrics,
    distribution_metrics,
    label_metrics,
    rank,
    score_metrics,
)

RESAMPLES = 4
TOLERANCE = 1e-9
NAN = math.nan


@st.composite
def resample_weights(draw: st.DrawFn, n: int) -> np.ndarray:
    """(RESAMPLES, n) counts 0..3: items left out, repeated, whole rows empty."""
    return draw(arrays(np.int32, (RESAMPLES, n), elements=st.integers(0, 3)))


def sizes() -> st.SearchStrategy[int]:
    return st.integers(0, 9)


def booleans(n: int) -> st.SearchStrategy[np.ndarray]:
    return arrays(bool, n)


def probabilities(n: int) -> st.SearchStrategy[np.ndarray]:
    """Scores in [0, 1], often tied and often on a bin edge."""
    on_grid = st.integers(0, 10).map(lambda k: k / 10)
    return arrays(np.float64, n, elements=st.one_of(on_grid, st.floats(0, 1)))


def six_digits() -> st.SearchStrategy[float]:
    """A probability to 6 decimals. (Values closer than ~1e-150 have deviations whose squares
    underflow; scipy rescales for them, which no score or share ever needs.)"""
    return st.integers(0, 10**6).map(lambda k: k / 10**6)


def assert_matches(ours: dict[str, np.ndarray], weights: np.ndarray, reference: Callable) -> None:
    """Row b of every metric equals reference(repeat of the data by weights[b])."""
    for b, row in enumerate(weights):
        expected = reference(row)
        assert set(ours) == set(expected)
        for name, value in expected.items():
            got = ours[name][b]
            assert (math.isnan(got) and math.isnan(value)) or math.isclose(
                got, value, rel_tol=TOLERANCE, abs_tol=TOLERANCE
            ), (name, b, got, value)


def quietly(compute: Callable[[], float]) -> float:
    """The reference's value, without its warnings about undefined metrics."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(compute())


@given(st.data())
def test_label_metrics_equal_scikit_learn_on_the_repeated_data(data: st.DataObject) -> None:
    n = data.draw(sizes())
    predicted, actual = data.draw(booleans(n)), data.draw(booleans(n))
    weights = data.draw(resample_weights(n))

    def reference(row: np.ndarray) -> dict[str, float]:
        p, a = np.repeat(predicted, row), np.repeat(actual, row)
        if len(a) == 0:
            return dict.fromkeys(["accuracy", "precision", "recall", "f1", "kappa", "mcc"], NAN) | {
                "n": 0.0
            }
        one_class = len(set(p)) < 2 or len(set(a)) < 2  # sklearn's mcc returns 0 there
        return {
            "n": float(len(a)),
            "accuracy": accuracy_score(a, p),
            "precision": quietly(lambda: precision_score(a, p, zero_division=np.nan)),
            "recall": quietly(lambda: recall_score(a, p, zero_division=np.nan)),
            "f1": quietly(lambda: f1_score(a, p, zero_division=np.nan)),
            "kappa": quietly(lambda: cohen_kappa_score(a, p, replace_undefined_by=np.nan)),
            "mcc": NAN if one_class else matthews_corrcoef(a, p),
        }

    assert_matches(label_metrics(predicted, actual, weights), weights, reference)


def calibration_error_by_loop(score: np.ndarray, actual: np.ndarray, bins: int) -> float:
    """ECE written out: bins [i/bins, (i+1)/bins), the last one closed."""
    total = 0.0
    for i in range(bins):
        low, high = i / bins, (i + 1) / bins
        inside = [
            k for k, s in enumerate(score) if low <= s < high or (i == bins - 1 and s == high)
        ]
        if inside:
            gap = np.mean(actual[inside]) - np.mean(score[inside])
            total += len(inside) / len(score) * abs(gap)
    return total


@given(st.data(), st.sampled_from([10, 3]))
def test_score_metrics_equal_scikit_learn_on_the_repeated_data(
    data: st.DataObject, bins: int
) -> None:
    n = data.draw(sizes())
    score, actual = data.draw(probabilities(n)), data.draw(booleans(n))
    weights = data.draw(resample_weights(n))

    def reference(row: np.ndarray) -> dict[str, float]:
        s, a = np.repeat(score, row), np.repeat(actual, row)
        if len(a) == 0:
            return dict.fromkeys(["roc_auc", "average_precision", "brier", "ece"], NAN)
        return {
            "roc_auc": NAN if len(set(a)) < 2 else roc_auc_score(a, s),
            "average_precision": NAN if not a.any() else average_precision_score(a, s),
            "brier": brier_score_loss(a, s, labels=[False, True]),
            "ece": calibration_error_by_loop(s, a, bins),
        }

    assert_matches(score_metrics(score, actual, weights, bins=bins), weights, reference)


@st.composite
def distributions(draw: st.DrawFn, n: int, k: int) -> np.ndarray:
    """(n, k) rows of shares, zeros included (a crowd where nobody said Unsure)."""
    counts = draw(arrays(np.int64, (n, k), elements=st.integers(0, 6)))
    counts[:, 0] += counts.sum(axis=1) == 0
    return counts / counts.sum(axis=1, keepdims=True)


@given(st.data(), st.sampled_from([2, 3]))
def test_distribution_metrics_equal_scipy_on_the_repeated_data(data: st.DataObject, k: int) -> None:
    n = data.draw(sizes())
    predicted, observed = data.draw(distributions(n, k)), data.draw(distributions(n, k))
    weights = data.draw(resample_weights(n))

    def reference(row: np.ndarray) -> dict[str, float]:
        p, q = np.repeat(predicted, row, axis=0), np.repeat(observed, row, axis=0)
        if len(p) == 0:
            return dict.fromkeys(["cross_entropy", "jsd", "tvd"], NAN)
        return {
            "cross_entropy": np.mean(
                [
                    -sum(o * math.log(max(x, 1e-15)) for x, o in zip(pi, qi, strict=True))
                    for pi, qi in zip(p, q, strict=True)
                ]
            ),
            "jsd": np.mean(
                [jensenshannon(pi, qi, base=2) ** 2 for pi, qi in zip(p, q, strict=True)]
            ),
            "tvd": np.mean([sum(abs(pi - qi)) / 2 for pi, qi in zip(p, q, strict=True)]),
        }

    assert_matches(distribution_metrics(predicted, observed, weights), weights, reference)


def test_a_certain_wrong_prediction_costs_ln_1e15_not_infinity() -> None:
    metrics = distribution_metrics(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), np.ones((1, 1)))
    assert metrics["cross_entropy"] == pytest.approx([15 * math.log(10)])
    assert metrics["jsd"] == pytest.approx([1.0])
    assert metrics["tvd"] == pytest.approx([1.0])


def test_jsd_like_scipy_scales_each_distribution_to_sum_1() -> None:
    predicted, observed = np.array([[0.2, 0.3], [0.7, 0.2]]), np.full((2, 2), 0.5)
    expected = np.mean(
        [jensenshannon(p, q, base=2) ** 2 for p, q in zip(predicted, observed, strict=True)]
    )
    jsd = distribution_metrics(predicted, observed, np.ones((1, 2)))["jsd"]
    assert jsd == pytest.approx([expected], abs=1e-12)


def test_pearson_of_a_single_value_is_nan_though_its_mean_is_off_in_the_last_bit() -> None:
    x = np.array([0.1, 0.1, 0.1, 0.7])
    weights = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    assert (weights @ x)[0] / 3 != 0.1  # the premise: the mean of three 0.1 is not 0.1
    metrics = correlation_metrics(x, np.array([0.2, 0.5, 0.9, 0.4]), weights)
    assert math.isnan(metrics["pearson"][0])
    assert math.isnan(metrics["spearman"][0])
    assert metrics["pearson"][1] == pytest.approx(
        pearsonr(x, [0.2, 0.5, 0.9, 0.4]).statistic, abs=1e-12
    )


@given(st.data())
def test_correlation_metrics_equal_scipy_on_the_repeated_data(data: st.DataObject) -> None:
    n = data.draw(sizes())
    shares = st.integers(0, 5).map(lambda k: k / 5)  # few values: ties and constant resamples
    x = data.draw(arrays(np.float64, n, elements=shares))
    y = data.draw(arrays(np.float64, n, elements=st.one_of(shares, six_digits())))
    weights = data.draw(resample_weights(n))

    def reference(row: np.ndarray) -> dict[str, float]:
        xs, ys = np.repeat(x, row), np.repeat(y, row)
        if len(xs) < 2:
            return {"pearson": NAN, "spearman": NAN}
        return {
            "pearson": quietly(lambda: pearsonr(xs, ys).statistic),
            "spearman": quietly(lambda: spearmanr(xs, ys).statistic),
        }

    assert_matches(correlation_metrics(x, y, weights), weights, reference)


def test_every_metric_runs_on_a_thousand_resamples_of_990_conversations() -> None:
    """The size of a DICES-990 evaluation; row 0 is the plain metric of the data."""
    n = 990
    rng = np.random.default_rng(12)
    weights = bootstrap_weights(n, 1000, seed=12)
    actual = rng.random(n) < 0.4
    score = np.round(np.clip(actual * 0.3 + rng.random(n) * 0.7, 0, 1), 2)
    share = np.round(rng.random(n), 2)
    results = [
        label_metrics(score >= 0.5, actual, weights),
        score_metrics(score, actual, weights),
        distribution_metrics(
            np.column_stack([1 - score, score]), np.column_stack([1 - share, share]), weights
        ),
        correlation_metrics(score, share, weights),
    ]
    for metrics in results:
        for values in metrics.values():
            assert values.shape == (1001,)
            assert np.isfinite(values).all()
    assert results[0]["kappa"][0] == pytest.approx(cohen_kappa_score(actual, score >= 0.5))
    assert results[1]["roc_auc"][0] == pytest.approx(roc_auc_score(actual, score))
    assert results[3]["spearman"][0] == pytest.approx(spearmanr(score, share).statistic)


def test_bootstrap_weights_are_one_plain_row_then_reproducible_resamples_of_n() -> None:
    weights = bootstrap_weights(7, 50, seed=3)
    assert weights.shape == (51, 7)
    assert weights.dtype == np.int32
    assert (weights[0] == 1).all()
    assert (weights.sum(axis=1) == 7).all()
    assert (weights[1:] != 1).any()
    assert np.array_equal(weights, bootstrap_weights(7, 50, seed=3))
    assert not np.array_equal(weights, bootstrap_weights(7, 50, seed=4))
    assert bootstrap_weights(0, 5, seed=3).shape == (6, 0)


@given(st.lists(st.one_of(st.floats(-5, 5), st.just(NAN)), min_size=1, max_size=40))
def test_percentile_interval_is_the_middle_95_percent_of_the_defined_resamples(
    values: list[float],
) -> None:
    defined = sorted(v for v in values[1:] if not math.isnan(v))
    low, high = percentile_interval(np.array(values))
    if not defined:
        assert math.isnan(low)
        assert math.isnan(high)
        return

    # numpy's linear interpolation, written out: the value at fractional position q (m - 1).
    def at(quantile: float) -> float:
        position = quantile * (len(defined) - 1)
        below = math.floor(position)
        above = min(below + 1, len(defined) - 1)
        return defined[below] + (position - below) * (defined[above] - defined[below])

    assert low == pytest.approx(at(0.025), abs=1e-12)
    assert high == pytest.approx(at(0.975), abs=1e-12)


def test_percentile_interval_at_another_level() -> None:
    values = np.array([100.0, *range(101)])  # row 0 is the point estimate, left out
    assert percentile_interval(values, level=0.5) == (25.0, 75.0)


@given(st.lists(st.one_of(st.floats(0, 1), st.just(NAN)), min_size=1, max_size=20))
def test_benjamini_hochberg_equals_scipy_on_the_defined_p_values(p_values: list[float]) -> None:
    p = np.array(p_values)
    adjusted = benjamini_hochberg(p)
    tested = ~np.isnan(p)
    assert np.array_equal(np.isnan(adjusted), ~tested)
    if tested.any():
        assert adjusted[tested] == pytest.approx(
            false_discovery_control(p[tested], method="bh"), abs=1e-12
        )


@given(st.data())
def test_stacked_references_with_shared_rankings_equal_each_subset_alone(
    data: st.DataObject,
) -> None:
    """What an evaluation does for speed (several references stacked, items left out by a
    `used` mask, the model's scores ranked once) gives each reference's metrics on its own
    items."""
    n, references = data.draw(sizes()), data.draw(st.integers(1, 3))
    score = data.draw(probabilities(n))
    share = data.draw(arrays(np.float64, n, elements=st.integers(0, 5).map(lambda k: k / 5)))
    actual = data.draw(arrays(bool, (n, references)))
    used = data.draw(arrays(bool, (n, references)))
    observed = data.draw(distributions(n, 2))
    weights = data.draw(resample_weights(n))
    resamples = Resamples(weights)
    predicted = np.column_stack([1 - score, score])
    stacked = {
        **label_metrics(score >= 0.5, actual, resamples, used),
        **score_metrics(score, actual, resamples, used=used, highest_first=rank(-score, resamples)),
        **distribution_metrics(
            predicted, np.stack([observed] * references, axis=-1), resamples, used
        ),
    }
    lowest_first = rank(score, resamples)
    for r in range(references):
        chosen = used[:, r]
        alone = {
            **label_metrics(score[chosen] >= 0.5, actual[chosen, r], weights[:, chosen]),
            **score_metrics(score[chosen], actual[chosen, r], weights[:, chosen]),
            **distribution_metrics(predicted[chosen], observed[chosen], weights[:, chosen]),
        }
        for name, values in alone.items():
            np.testing.assert_allclose(stacked[name][:, r], values, rtol=TOLERANCE, atol=TOLERANCE)
        shared = correlation_metrics(score, share, resamples, chosen, lowest_first)
        for name, values in correlation_metrics(
            score[chosen], share[chosen], weights[:, chosen]
        ).items():
            np.testing.assert_allclose(shared[name], values, rtol=TOLERANCE, atol=TOLERANCE)


def test_correlations_leave_out_the_items_without_a_score() -> None:
    """A model that scores some conversations only: its correlations are those of the
    scored ones (an unscored one must not count among the shares' ranks)."""
    score = np.array([0.1, np.nan, 0.4, 0.3, 0.9])
    share = np.array([0.2, 0.0, 0.5, 0.6, 0.8])
    weights = np.array([[1, 1, 1, 1, 1], [2, 1, 0, 1, 3]])
    scored = ~np.isnan(score)
    metrics = correlation_metrics(score, share, weights)
    for b, row in enumerate(weights[:, scored]):
        xs, ys = np.repeat(score[scored], row), np.repeat(share[scored], row)
        assert metrics["spearman"][b] == pytest.approx(spearmanr(xs, ys).statistic, abs=1e-12)
        assert metrics["pearson"][b] == pytest.approx(pearsonr(xs, ys).statistic, abs=1e-12)


def test_correlations_of_a_resample_of_many_copies_equal_scipy() -> None:
    """A resample that repeats a conversation 50,000 times: a count times twice its mid-rank
    (2.5e9) passes int32, so the integer sums behind Spearman's switch to int64."""
    score = np.array([0.1, 0.4, 0.3, 0.9])
    share = np.array([0.2, 0.5, 0.6, 0.8])
    weights = np.array([[1, 1, 1, 1], [1, 1, 1, 50_000]])
    metrics = correlation_metrics(score, share, weights)
    for b, row in enumerate(weights):
        xs, ys = np.repeat(score, row), np.repeat(share, row)
        assert metrics["spearman"][b] == pytest.approx(spearmanr(xs, ys).statistic, abs=1e-12)
        assert metrics["pearson"][b] == pytest.approx(pearsonr(xs, ys).statistic, abs=1e-12)


def test_metrics_of_a_score_given_for_no_item_are_undefined_not_a_crash() -> None:
    """A score with no value (every item NaN): every score and correlation metric is NaN in
    every resample, as scipy and scikit-learn have nothing to compute them on (it raised an
    IndexError in the correlations' ranks)."""
    score = np.full(4, np.nan)
    share = np.array([0.2, 0.5, 0.6, 0.8])
    weights = np.array([[1, 1, 1, 1], [2, 0, 1, 1]])
    correlations = correlation_metrics(score, share, weights)
    scores = score_metrics(score, share > 0.5, weights, used=~np.isnan(score))
    for name, values in {**correlations, **scores}.items():
        assert np.isnan(values).all(), name
