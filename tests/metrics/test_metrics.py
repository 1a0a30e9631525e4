"""The agreement metrics (dices_cli.metrics) against independent implementations and theory."""

from __future__ import annotations

import itertools
import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import entropy, false_discovery_control

from dices_cli.metrics import groups
from dices_cli.metrics.agreement import (
    cross_replication_reliability,
    group_association_index,
    krippendorff_alpha_nominal,
    negentropy,
    normalised_xrr,
    plurality_size,
)
from dices_cli.metrics.groups import METRICS, group_metrics, pool_metrics
from dices_cli.metrics.permutation import (
    benjamini_hochberg,
    p_values,
    permutation_test,
    shuffled_labellings,
    two_sided_p_values,
)

MISSING = -1


def counts_of(codes: np.ndarray, categories: int) -> np.ndarray:
    """[category, conversation] counts of a [rater, conversation] code matrix (-1 = missing)."""
    return np.stack([(codes == c).sum(axis=0) for c in range(categories)]).astype(float)


def one_hot(codes: np.ndarray, categories: int) -> np.ndarray:
    """[rater, category, conversation] with 1 where the rater gave that answer."""
    return (codes[:, None, :] == np.arange(categories)[None, :, None]).astype(float)


def reference_xrr(x: np.ndarray, y: np.ndarray) -> float:
    """kappa_x by its definition, pair by pair (Wong, Paritosh and Aroyo 2021, the authors'
    Java implementation's WITH_MISSING_DATA): x, y are [rater, conversation] codes."""
    shared = [
        i for i in range(x.shape[1]) if (x[:, i] != MISSING).any() and (y[:, i] != MISSING).any()
    ]
    if not shared:
        return math.nan
    xs = {i: [a for a in x[:, i] if a != MISSING] for i in shared}
    ys = {i: [b for b in y[:, i] if b != MISSING] for i in shared}
    total_x = sum(len(v) for v in xs.values())
    total_y = sum(len(v) for v in ys.values())
    observed = 0.0
    for i in shared:
        disagreeing = sum(a != b for a, b in itertools.product(xs[i], ys[i]))
        observed += disagreeing * (len(xs[i]) + len(ys[i])) / (len(xs[i]) * len(ys[i]))
    observed /= total_x + total_y
    pooled_x = [a for i in shared for a in xs[i]]
    pooled_y = [b for i in shared for b in ys[i]]
    expected = sum(a != b for a, b in itertools.product(pooled_x, pooled_y)) / (total_x * total_y)
    return 1 - observed / expected if expected else math.nan


# [rater, conversation] answer codes 0..2 with missing answers, at least two raters.
code_matrices = arrays(
    np.int64,
    st.tuples(st.integers(2, 7), st.integers(1, 9)),
    elements=st.integers(MISSING, 2),
)


def test_krippendorffs_textbook_example_nominal_with_missing_data() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
    # observers, twelve units, values 1-5, nominal; published alpha = 0.743.
    nan = math.nan
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    codes = np.where(np.isnan(data), MISSING, data - 1).astype(int)
    alpha = krippendorff_alpha_nominal(counts_of(codes, 5))
    assert round(float(alpha), 3) == 0.743
    assert alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12
    )


@settings(max_examples=300, deadline=None)
@given(code_matrices)
def test_alpha_equals_the_krippendorff_package_on_random_data_with_missing_values(
    codes: np.ndarray,
) -> None:
    data = np.where(codes == MISSING, np.nan, codes.astype(float))
    ours = float(krippendorff_alpha_nominal(counts_of(codes, 3)))
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            theirs = krippendorff.alpha(
                reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1, 2]
            )
    except ValueError:  # no conversation with two answers: alpha is undefined
        assert math.isnan(ours)
        return
    if math.isnan(theirs):  # every pairable answer the same: undefined (0 / 0)
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_alpha_is_computed_for_every_leading_axis_at_once() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(MISSING, 3, size=(4, 8, 30))  # 4 pools of 8 raters
    batched = krippendorff_alpha_nominal(np.stack([counts_of(c, 3) for c in codes]))
    one_by_one = [krippendorff_alpha_nominal(counts_of(c, 3)) for c in codes]
    assert batched == pytest.approx(one_by_one, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(code_matrices, code_matrices)
def test_xrr_equals_its_pairwise_definition(x: np.ndarray, y: np.ndarray) -> None:
    conversations = min(x.shape[1], y.shape[1])
    x, y = x[:, :conversations], y[:, :conversations]
    ours = float(cross_replication_reliability(counts_of(x, 3), counts_of(y, 3)))
    theirs = reference_xrr(x, y)
    assert ours == pytest.approx(theirs, abs=1e-9, nan_ok=True)


def test_xrr_is_symmetric_and_one_for_identical_replications() -> None:
    rng = np.random.default_rng(5)
    x = counts_of(rng.integers(MISSING, 3, size=(6, 40)), 3)
    y = counts_of(rng.integers(MISSING, 3, size=(9, 40)), 3)
    assert cross_replication_reliability(x, y) == pytest.approx(
        cross_replication_reliability(y, x), abs=1e-15
    )
    unanimous = counts_of(np.repeat(rng.integers(0, 3, size=(1, 40)), 5, axis=0), 3)
    assert cross_replication_reliability(unanimous, unanimous) == 1.0


def simulated_pool(
    rng: np.random.Generator, raters: int, conversations: int, missing: float
) -> np.ndarray:
    """[rater, conversation] codes: each conversation has its own answer distribution, and
    each answer is missing with a conversation-specific probability up to `missing`."""
    shares = rng.dirichlet([0.6, 0.6, 0.3], size=conversations)
    codes = np.array([rng.choice(3, size=raters, p=p) for p in shares]).T
    dropped = rng.random((raters, conversations)) < rng.uniform(0, missing, conversations)
    return np.where(dropped, MISSING, codes)


def test_xrr_of_a_random_split_equals_irr_in_expectation_and_gai_is_one() -> None:
    rng = np.random.default_rng(20240611)
    codes = simulated_pool(rng, raters=40, conversations=150, missing=0.6)
    answers = one_hot(codes, 3)
    irr = float(krippendorff_alpha_nominal(counts_of(codes, 3)))
    halves = np.repeat([0, 1], 20)
    splits = group_metrics(answers, shuffled_labellings(halves, 2000, seed=1), groups=2)
    xrr = splits[:, 0, METRICS.index("xrr")]
    standard_error = xrr.std(ddof=1) / math.sqrt(len(xrr))
    assert abs(xrr.mean() - irr) < 4 * standard_error
    gai = splits[:, :, METRICS.index("gai")].ravel()
    assert abs(gai.mean() - 1) < 4 * gai.std(ddof=1) / math.sqrt(len(gai))
    assert abs(gai.mean() - 1) < 0.01


def test_gai_is_near_one_for_every_group_of_a_large_randomly_labelled_pool() -> None:
    rng = np.random.default_rng(7)
    codes = simulated_pool(rng, raters=400, conversations=300, missing=0.3)
    labels = rng.integers(0, 4, size=400)
    observed = group_metrics(one_hot(codes, 3), labels[None, :], groups=4)[0]
    assert observed[:, METRICS.index("gai")] == pytest.approx(np.ones(4), abs=0.05)
    assert observed[:, METRICS.index("xrr_normalised")] == pytest.approx(np.ones(4), abs=0.05)


def test_a_cohesive_group_has_gai_above_one_and_a_small_p_value() -> None:
    rng = np.random.default_rng(11)
    codes = simulated_pool(rng, raters=60, conversations=120, missing=0.0)
    labels = np.repeat([0, 1, 2], 20)
    # Group 0 answers every conversation like its first rater, with a few exceptions.
    leader = codes[0]
    codes[:20] = np.where(rng.random((20, 120)) < 0.8, leader, codes[:20])
    observed, p, _, _ = permutation_test(one_hot(codes, 3), labels, 3, permutations=200, seed=0)
    gai = METRICS.index("gai")
    assert observed[0, gai] > 1.5
    assert p[0, gai] == pytest.approx(2 / 201)  # more extreme than every permutation
    assert p[0, METRICS.index("irr")] == pytest.approx(2 / 201)


def test_normalised_xrr_and_gai_are_undefined_where_their_formulas_are() -> None:
    xrr = np.array([0.2, 0.2, 0.2, 0.0, -0.1])
    irr_x = np.array([0.4, -0.1, 0.4, 0.3, 0.3])
    irr_y = np.array([0.1, 0.4, 0.0, 0.3, 0.3])
    assert normalised_xrr(xrr, irr_x, irr_y) == pytest.approx(
        [0.2 / math.sqrt(0.04), math.nan, math.nan, 0.0, -0.1 / 0.3], nan_ok=True
    )
    assert group_association_index(irr_x, xrr) == pytest.approx(
        [2.0, -0.5, 2.0, math.nan, math.nan], nan_ok=True
    )


@settings(max_examples=200, deadline=None)
@given(code_matrices, st.sampled_from([2, 3]))
def test_negentropy_and_plurality_size_equal_their_per_conversation_definitions(
    codes: np.ndarray, categories: int
) -> None:
    codes = np.where(codes >= categories, MISSING, codes)
    counts = counts_of(codes, categories)
    rated = [c for c in counts.T if c.sum() > 0]
    if not rated:
        assert math.isnan(negentropy(counts)) and math.isnan(plurality_size(counts))
        return
    expected_negentropy = np.mean([math.log(categories) - entropy(c) for c in rated])
    expected_plurality = np.mean([c.max() / c.sum() for c in rated])
    assert negentropy(counts) == pytest.approx(expected_negentropy, abs=1e-12)
    assert plurality_size(counts) == pytest.approx(expected_plurality, abs=1e-12)


def test_negentropy_spans_zero_to_ln_k() -> None:
    # [category, conversation]: the columns are conversations
    assert negentropy(np.array([[4.0, 0], [0, 2], [0, 0]])) == pytest.approx(math.log(3))
    assert negentropy(np.array([[2.0], [2], [2]])) == pytest.approx(0.0)
    assert plurality_size(np.array([[2.0, 1], [2, 0], [2, 0]])) == pytest.approx((1 / 3 + 1) / 2)


@pytest.mark.parametrize("groups", [2, 3])  # two groups take a shortcut: each is the other's rest
def test_group_metrics_equal_the_metrics_of_each_group_counted_directly(groups: int) -> None:
    rng = np.random.default_rng(2)
    codes = simulated_pool(rng, raters=30, conversations=50, missing=0.4)
    labels = rng.integers(0, groups, size=30)
    computed = group_metrics(one_hot(codes, 3), labels[None, :], groups=groups)[0]
    for group in range(groups):
        inside = counts_of(codes[labels == group], 3)
        outside = counts_of(codes[labels != group], 3)
        irr = krippendorff_alpha_nominal(inside)
        xrr = cross_replication_reliability(inside, outside)
        rest = krippendorff_alpha_nominal(outside)
        expected = [
            irr,
            xrr,
            xrr / np.sqrt(irr * rest),
            irr / xrr,
            negentropy(inside),
            plurality_size(inside),
        ]
        assert computed[group] == pytest.approx(np.array(expected), abs=1e-12)


def test_group_metrics_do_not_depend_on_the_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    answers = one_hot(simulated_pool(rng, raters=20, conversations=30, missing=0.3), 3)
    labellings = shuffled_labellings(rng.integers(0, 2, size=20), 25, seed=0)
    whole = group_metrics(answers, labellings, groups=2)
    monkeypatch.setattr(groups, "BATCH_CELLS", 7 * 2 * 3 * 30)  # batches of 7 labellings
    assert np.array_equal(group_metrics(answers, labellings, groups=2), whole, equal_nan=True)


def test_pool_metrics_are_those_of_all_raters_together() -> None:
    rng = np.random.default_rng(8)
    codes = simulated_pool(rng, raters=12, conversations=20, missing=0.2)
    counts = counts_of(codes, 3)
    expected = [krippendorff_alpha_nominal(counts), negentropy(counts), plurality_size(counts)]
    assert pool_metrics(one_hot(codes, 3)) == pytest.approx(np.array(expected))


def test_shuffled_labellings_keep_the_group_sizes_and_repeat_with_the_seed() -> None:
    labels = np.array([0, 0, 0, 1, 1, 2])
    drawn = shuffled_labellings(labels, 50, seed=9)
    assert drawn.shape == (50, 6)
    assert all(np.array_equal(np.sort(row), labels) for row in drawn)
    assert np.array_equal(drawn, shuffled_labellings(labels, 50, seed=9))
    assert not np.array_equal(drawn, shuffled_labellings(labels, 50, seed=10))


def test_two_sided_p_values_count_the_observed_value_and_both_tails() -> None:
    null = np.arange(1.0, 20.0)[:, None]  # 19 permutations: 1 .. 19
    observed = np.array([19.0])
    # 1 permutation >= 19, plus the observed labelling: 2 / 20, doubled.
    assert two_sided_p_values(observed, null) == pytest.approx([4 / 20])
    assert two_sided_p_values(np.array([1.0]), null) == pytest.approx([4 / 20])
    assert two_sided_p_values(np.array([10.0]), null) == pytest.approx([1.0])
    assert two_sided_p_values(np.array([25.0]), null) == pytest.approx([2 / 20])


def test_one_sided_p_values_count_one_tail_and_the_observed_value() -> None:
    null = np.arange(1.0, 20.0)[:, None]  # 19 permutations: 1 .. 19
    observed = np.array([19.0, 1.0, 10.0, 25.0, -3.0])
    null = np.tile(null, (1, len(observed)))
    # greater: permutations >= t, plus the observed labelling, over 20; less: <= t.
    assert p_values(observed, null, "greater") == pytest.approx([2, 20, 11, 1, 20] / np.array(20))
    assert p_values(observed, null, "less") == pytest.approx([20, 2, 11, 20, 1] / np.array(20))
    assert p_values(observed, null) == pytest.approx(two_sided_p_values(observed, null))
    assert p_values(np.array([math.nan]), null[:, :1], "greater") == pytest.approx(
        [math.nan], nan_ok=True
    )


def test_two_sided_p_values_leave_out_undefined_permutations() -> None:
    null = np.array([[1.0, 1.0], [2.0, 2.0], [math.nan, 3.0], [math.nan, math.nan]])
    assert two_sided_p_values(np.array([3.0, math.nan]), null) == pytest.approx(
        [2 * 1 / 3, math.nan], nan_ok=True
    )
    assert two_sided_p_values(np.array([1.0]), np.empty((0, 1))) == pytest.approx(
        [math.nan], nan_ok=True
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=30))
def test_benjamini_hochberg_equals_scipy_and_leaves_nan_alone(p_values: list[float]) -> None:
    p = np.array(p_values)
    adjusted = benjamini_hochberg(p)
    tested = ~np.isnan(p)
    assert np.array_equal(np.isnan(adjusted), ~tested)
    if tested.any():
        assert adjusted[tested] == pytest.approx(
            false_discovery_control(p[tested], method="bh"), abs=1e-12
        )


@pytest.mark.parametrize("high", [1, 3, 300, 70_000, 2**40])
def test_shuffled_labellings_are_numpys_shuffles_of_the_labels_as_given(high: int) -> None:
    labels = np.random.default_rng(5).integers(-1, high, size=500).astype(np.intp)
    expected = np.random.default_rng(9).permuted(np.tile(labels, (40, 1)), axis=1)
    shuffled = shuffled_labellings(labels, 40, seed=9)
    assert shuffled.dtype == labels.dtype
    assert np.array_equal(shuffled, expected)


def test_no_labels_shuffle_to_empty_rows() -> None:
    shuffled = shuffled_labellings(np.array([], dtype=np.intp), 3, seed=0)
    assert shuffled.shape == (3, 0)
    assert shuffled.dtype == np.intp
