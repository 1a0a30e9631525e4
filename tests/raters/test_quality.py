"""The quality score and the exact test, checked against independent computations.

The components are recomputed here from the replica CSV with pandas (leave-one-out
plurality, Gwet's AC1, speed against the pool), and the exact test against scipy's
Fisher test and a brute-force enumeration of tables.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact

from dices_cli.errors import UsageError
from dices_cli.families.schema import DATASETS
from dices_cli.queries.engine import open_session
from dices_cli.raters.audit import exact_independence_p
from dices_cli.raters.quality import (
    COMPONENTS,
    RaterFilter,
    RaterQuality,
    Signals,
    agreement,
    comprehension,
    consistency,
    score_raters,
    speed,
    straightlining,
)
from dices_cli.store.datasets import Store

ANSWERS = ["No", "Yes", "Unsure"]
NOT_UNDERSTOOD_PREFIX = "None of the above"  # the Q1 answer that means "understood"


def signals(**changes: object) -> Signals:
    """A rater with nothing suspicious, changed where a test says."""
    base: dict[str, object] = {
        "ratings": 350,
        "median_answer_ms": 100_000.0,
        "pool_median_ms": 100_000.0,
        "modal_answer": "No",
        "modal_answer_share": 0.6,
        "straightline_share": 0.6,
        "inconsistent_share": 0.0,
        "agreement_loo": 0.8,
        "chance_agreement": 0.2,
        "q1_not_understood_share": 0.0,
    }
    return Signals(**(base | changes))  # type: ignore[arg-type]


def rater(s: Signals) -> RaterQuality:
    return RaterQuality(
        "350", 1, False, {}, s, {name: measure(s) for name, measure in COMPONENTS.items()}
    )


# --- components -------------------------------------------------------------------------


def test_speed_is_the_fraction_of_the_pool_median_capped_at_one() -> None:
    assert speed(signals(median_answer_ms=25_000.0)) == 0.25
    assert speed(signals(median_answer_ms=250_000.0)) == 1.0
    assert speed(signals(median_answer_ms=None, pool_median_ms=None)) is None


def test_straightlining_reaches_one_when_one_percent_of_answers_differ() -> None:
    assert straightlining(signals(modal_answer_share=1.0)) == 0.0
    assert straightlining(signals(modal_answer_share=0.995)) == pytest.approx(0.5)
    assert straightlining(signals(modal_answer_share=0.99)) == pytest.approx(1.0)
    # identical granular answers count as straight-lining too
    assert straightlining(signals(modal_answer_share=0.5, straightline_share=1.0)) == 0.0


def test_consistency_and_comprehension_fail_at_half() -> None:
    assert consistency(signals(inconsistent_share=0.25)) == 0.5
    assert consistency(signals(inconsistent_share=0.75)) == 0.0
    assert comprehension(signals(q1_not_understood_share=0.1)) == pytest.approx(0.8)
    assert comprehension(signals(q1_not_understood_share=0.5)) == 0.0


def test_agreement_is_gwet_ac1_zero_at_chance_one_from_a_tenth() -> None:
    # AC1 = (0.6 - 0.5) / (1 - 0.5) = 0.2 -> capped at 1
    assert agreement(signals(agreement_loo=0.6, chance_agreement=0.5)) == 1.0
    # AC1 = (0.525 - 0.5) / 0.5 = 0.05 -> half way to 0.1
    assert agreement(signals(agreement_loo=0.525, chance_agreement=0.5)) == pytest.approx(0.5)
    assert agreement(signals(agreement_loo=0.4, chance_agreement=0.5)) == 0.0
    assert agreement(signals(agreement_loo=None)) is None


def test_score_is_the_lowest_available_component_and_explains_it() -> None:
    fast = rater(signals(median_answer_ms=20_000.0, q1_not_understood_share=0.3))
    assert fast.components["speed"] == 0.2
    assert fast.score == 0.2
    assert fast.explanation(0.45) == (
        "speed 0.20: answers 5.0x faster than the pool (median 20 s vs 100 s per conversation); "
        "comprehension 0.40: said 30% of conversations were not understood"
    )
    no_timing = rater(signals(median_answer_ms=None, pool_median_ms=None))
    assert no_timing.components["speed"] is None
    assert no_timing.score == 1.0
    assert no_timing.explanation() == "no signal is below its best"
    constant = rater(signals(modal_answer="Yes", modal_answer_share=1.0))
    assert constant.explanation() == (
        "straightlining 0.00: gave the same Q_overall (Yes) to 350 of 350 conversations"
    )


@given(
    st.floats(1, 1e6),
    st.floats(1, 1e6),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1 / 3),
    st.floats(0, 1),
)
def test_every_component_and_the_score_lie_in_zero_one(
    time: float,
    pool: float,
    modal: float,
    straight: float,
    inconsistent: float,
    agree: float,
    chance: float,
    q1: float,
) -> None:
    scored = rater(
        signals(
            median_answer_ms=time,
            pool_median_ms=pool,
            modal_answer_share=modal,
            straightline_share=straight,
            inconsistent_share=inconsistent,
            agreement_loo=agree,
            chance_agreement=chance,
            q1_not_understood_share=q1,
        )
    )
    values = [v for v in scored.components.values() if v is not None]
    assert all(0 <= v <= 1 for v in values)
    assert scored.score == min(values)


@given(st.floats(1, 1e6), st.floats(1, 1e6), st.floats(1, 1e6))
def test_a_slower_rater_never_scores_lower_on_speed(pool: float, a: float, b: float) -> None:
    slower = speed(signals(median_answer_ms=max(a, b), pool_median_ms=pool))
    faster = speed(signals(median_answer_ms=min(a, b), pool_median_ms=pool))
    assert slower is not None and faster is not None
    assert slower >= faster


def test_filter_rule_refuses_both_ways_and_out_of_range() -> None:
    with pytest.raises(UsageError) as both:
        RaterFilter(min_quality=0.5, preset="authors")
    assert str(both.value) == "give min_quality or preset, not both"  # the core names no flag
    with pytest.raises(UsageError, match="between 0 and 1"):
        RaterFilter(min_quality=1.5)
    assert RaterFilter().threshold == 0.45


# --- the exact test -----------------------------------------------------------------------


def brute_force_p(sizes: list[int], removed: list[int]) -> float:
    """Every table with the same margins, by itertools: the independent reference."""
    total_removed = sum(removed)

    def probability(table: tuple[int, ...]) -> float:
        numerator = math.prod(math.comb(n, x) for n, x in zip(sizes, table, strict=True))
        return numerator / math.comb(sum(sizes), total_removed)

    observed = probability(tuple(removed))
    tables = [
        t for t in itertools.product(*(range(n + 1) for n in sizes)) if sum(t) == total_removed
    ]
    return min(1.0, sum(p for t in tables if (p := probability(t)) <= observed * (1 + 1e-7)))


def test_two_groups_is_fishers_exact_test() -> None:
    # the authors' removals by gender on the DICES-350 replica: 14 of 61 men, 5 of 62 women
    expected = fisher_exact([[14, 47], [5, 57]]).pvalue
    assert exact_independence_p([61, 62], [14, 5]) == pytest.approx(expected, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=2, max_size=4).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes), st.tuples(*(st.integers(0, n) for n in sizes)).map(list)
        )
    )
)
def test_freeman_halton_matches_brute_force(table: tuple[list[int], list[int]]) -> None:
    sizes, removed = table
    assert exact_independence_p(sizes, removed) == pytest.approx(
        brute_force_p(sizes, removed), rel=1e-9, abs=1e-12
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.data())
def test_fisher_matches_scipy(men: int, women: int, data: st.DataObject) -> None:
    a = data.draw(st.integers(0, men))
    b = data.draw(st.integers(0, women))
    expected = fisher_exact([[a, men - a], [b, women - b]]).pvalue
    assert exact_independence_p([men, women], [a, b]) == pytest.approx(expected, rel=1e-6)


# --- scores on the replica, recomputed with pandas ---------------------------------------


def pandas_components(csv: Path, name: str) -> pd.DataFrame:
    """Every component of every rater, from the CSV, without the code under test."""
    dataset = DATASETS[name]
    header = pd.read_csv(csv, nrows=0).columns
    granular = [c for c in header if c in dataset.granular]
    overall = [c for c in header if c.endswith("_overall") and c != "Q_overall"]
    columns = ["rater_id", "item_id", "Q_overall", "Q1_whole_conversation_evaluation"]
    timing = ["answer_time_ms"] if dataset.has_timing else []
    frame = pd.read_csv(csv, usecols=[*columns, *granular, *overall, *timing])
    subs = frame[granular + overall]
    implied = subs.eq("Yes").any(axis=1).map({True: "Yes", False: None})
    implied = implied.fillna(subs.eq("Unsure").any(axis=1).map({True: "Unsure", False: "No"}))
    frame["inconsistent"] = implied != frame.Q_overall
    frame["identical"] = frame[granular].eq(frame[granular[0]], axis=0).all(axis=1)
    counts = pd.crosstab(frame.item_id, frame.Q_overall).reindex(columns=ANSWERS, fill_value=0)
    # leave-one-out plurality agreement, a tie of k answers counting 1/k
    others = counts.loc[frame.item_id].to_numpy() - pd.get_dummies(frame.Q_overall).reindex(
        columns=ANSWERS, fill_value=0
    ).to_numpy(dtype=int)
    top = others.max(axis=1)
    at_top = (others == top[:, None]).sum(axis=1)
    own = frame.Q_overall.map({a: i for i, a in enumerate(ANSWERS)}).to_numpy()
    agrees = (others[range(len(frame)), own] == top) / at_top
    frame["agreement"] = pd.Series(agrees, index=frame.index).where(top > 0)
    # the plurality shares of each conversation, a tie split evenly
    full_top = counts.max(axis=1)
    plural = counts.eq(full_top, axis=0).astype(float)
    plural = plural.div(plural.sum(axis=1), axis=0)
    per = frame.groupby("rater_id")
    shares = pd.crosstab(frame.rater_id, frame.Q_overall, normalize="index").reindex(
        columns=ANSWERS, fill_value=0
    )
    reference = plural.loc[frame.item_id].set_index(frame.rater_id).groupby(level=0).mean()
    mean_share = (shares + reference) / 2
    chance = (mean_share * (1 - mean_share)).sum(axis=1) / 2
    ac1 = (per.agreement.mean() - chance) / (1 - chance)
    understood = frame.Q1_whole_conversation_evaluation.str.startswith(NOT_UNDERSTOOD_PREFIX)
    usual = pd.concat([shares.max(axis=1), per.identical.mean()], axis=1).max(axis=1)
    out = pd.DataFrame(
        {
            "straightlining": ((1 - usual) / 0.01).clip(0, 1),
            "consistency": (1 - per.inconsistent.mean() / 0.5).clip(0, 1),
            "agreement": (ac1 / 0.1).clip(0, 1),
            "comprehension": (1 - (~understood).groupby(frame.rater_id).mean() / 0.5).clip(0, 1),
        }
    )
    if timing:
        medians = per.answer_time_ms.median()
        out["speed"] = (medians / medians.median()).clip(upper=1)
    return out


@pytest.mark.parametrize("name", ["350", "990"])
def test_scores_match_an_independent_pandas_computation(
    name: str, ingested: Path, replica_350: Path, replica_990: Path
) -> None:
    csv = replica_350 if name == "350" else replica_990
    expected = pandas_components(csv, name)
    scored = score_raters(open_session(Store(ingested), name))
    assert len(scored) == len(expected)
    for r in scored:
        want = expected.loc[r.rater_id]
        for component, value in r.components.items():
            if component == "speed" and name == "990":
                assert value is None
            else:
                assert value == pytest.approx(want[component], abs=1e-9), (r.rater_id, component)
        assert r.score == pytest.approx(want.min(), abs=1e-9)
