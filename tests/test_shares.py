"""Intervals of group shares (`dices_cli.metrics.shares`): the vectorised two-way bootstrap
against a loop written out from its definition, its width against an independent variance
formula on the replica, and the `interval`, `bootstrap` and `seed` parameters of the queries
that draw them. Their coverage is tests/test_calibration_shares.py's."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.bootstrap import percentile_interval
from dices_cli.metrics.defaults import BOOTSTRAP, INTERVAL, INTERVALS, SEED
from dices_cli.metrics.shares import (
    Ratings,
    resample_weights,
    resampled_shares,
    share_intervals,
    two_way_seeds,
)
from dices_cli.queries.catalog import catalog

Z = 1.959963984540054
SHARE_QUERIES = ("qoverall-by-demographic", "degree-of-harm", "harm-types")


def small_ratings() -> Ratings:
    """Three rows over three rater strata of 2, 3 and 1 raters and 5 conversations; row 1
    has a rater who rated a conversation twice (as in two phases), and row 2 misses some
    conversations."""
    rows = [
        # (rater, conversation, yes)
        [(0, 0, 1), (0, 1, 0), (0, 2, 1), (1, 0, 0), (1, 3, 1), (1, 4, 0)],
        [(2, 0, 1), (2, 0, 0), (2, 1, 1), (3, 2, 0), (3, 3, 1), (4, 4, 1), (4, 0, 0)],
        [(5, 1, 1), (5, 2, 0)],
    ]
    cells = [cell for row in rows for cell in row]
    starts = np.cumsum([0, *(len(row) for row in rows)])
    return Ratings(
        starts=starts.astype(np.intp),
        rater=np.array([c[0] for c in cells], dtype=np.intp),
        conversation=np.array([c[1] for c in cells], dtype=np.intp),
        yes=np.array([c[2] for c in cells], dtype=np.float64),
        stratum_of_rater=np.array([0, 0, 1, 1, 1, 2], dtype=np.intp),
        conversations=5,
    )


def looped_shares(ratings: Ratings, raters: np.ndarray, conversations: np.ndarray) -> np.ndarray:
    """Each row's share of Yes in each resample, one rating at a time in whole numbers."""
    shares = np.full((len(raters), ratings.rows), math.nan)
    for b in range(len(raters)):
        for row in range(ratings.rows):
            yes = total = 0
            for k in range(ratings.starts[row], ratings.starts[row + 1]):
                weight = int(raters[b, ratings.rater[k]]) * int(
                    conversations[b, ratings.conversation[k]]
                )
                yes += weight * int(ratings.yes[k])
                total += weight
            if total:
                shares[b, row] = yes / total
    return shares


@pytest.mark.parametrize("method", ["clustered", "conversations"])
def test_the_vectorised_bootstrap_is_the_loop_exactly(method: str) -> None:
    ratings = small_ratings()
    raters, conversations = resample_weights(ratings, method, 300, 7)
    vectorised = resampled_shares(ratings, raters, conversations)
    looped = looped_shares(ratings, raters, conversations)
    assert np.array_equal(vectorised, looped, equal_nan=True)
    assert np.isnan(looped).any()  # row 2's two conversations are sometimes not drawn
    low, high = share_intervals(ratings, method, 300, 7)
    expected = [percentile_interval(looped[:, row]) for row in range(ratings.rows)]
    assert [(float(a), float(b)) for a, b in zip(low, high, strict=True)] == expected


def test_row_0_is_every_rating_once() -> None:
    ratings = small_ratings()
    shares = resampled_shares(ratings, *resample_weights(ratings, "clustered", 5, 0))
    assert shares[0].tolist() == [3 / 6, 4 / 7, 1 / 2]


def test_raters_are_drawn_within_their_stratum_and_conversations_across() -> None:
    ratings = small_ratings()
    raters, conversations = resample_weights(ratings, "clustered", 200, 3)
    for stratum, size in enumerate([2, 3, 1]):
        members = ratings.stratum_of_rater == stratum
        assert (raters[:, members].sum(axis=1) == size).all()
    assert (raters[1:] != 1).any()  # raters are resampled...
    assert (conversations.sum(axis=1) == 5).all()
    assert (conversations[1:] != 1).any()  # ...and so are conversations
    only_conversations = resample_weights(ratings, "conversations", 200, 3)
    assert (only_conversations[0] == 1).all()  # every rater once in every resample
    assert np.array_equal(only_conversations[1], conversations)  # the same conversations


def test_the_rater_and_conversation_draws_come_from_different_seeds() -> None:
    assert len(set(two_way_seeds(0))) == 2
    assert two_way_seeds(0) == two_way_seeds(0) != two_way_seeds(1)


def test_wilson_is_the_textbook_interval() -> None:
    ratings = small_ratings()
    low, high = share_intervals(ratings, "wilson", 0, 0)
    for row, (successes, trials) in enumerate([(3, 6), (4, 7), (1, 2)]):
        p = successes / trials
        centre = (p + Z**2 / (2 * trials)) / (1 + Z**2 / trials)
        half = Z / (1 + Z**2 / trials) * math.sqrt(p * (1 - p) / trials + Z**2 / (4 * trials**2))
        assert low[row] == pytest.approx(centre - half, abs=1e-15)
        assert high[row] == pytest.approx(centre + half, abs=1e-15)


# ----------------------------------------------------------------------------- the queries


def rows(runner: CliRunner, data: Path, *arguments: str) -> list[dict[str, str]]:
    result = runner.invoke(app, ["query", *arguments, "--data", str(data), "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize("name", SHARE_QUERIES)
def test_the_share_queries_declare_the_default_interval(name: str) -> None:
    query = catalog()[name]
    interval, bootstrap, seed = (query.parameter(p) for p in ("interval", "bootstrap", "seed"))
    assert interval is not None and bootstrap is not None and seed is not None
    assert (interval.default, interval.choices) == (INTERVAL, INTERVALS)
    assert (bootstrap.default, seed.default) == (str(BOOTSTRAP), str(SEED))
    assert bootstrap.range == ("0", "10000")
    assert [c.name for c in query.columns][-3:] == [
        "share_yes_ci_low",
        "share_yes_ci_high",
        "interval",
    ]


def independent_widths(raw: pd.DataFrame, by: str) -> dict[str, tuple[float, float]]:
    """Per group, 95% interval widths of its share of Yes from two variance formulas: the
    two-way cluster-robust variance (Cameron, Gelbach & Miller 2011: rater + conversation
    - rater x conversation sums of the residuals) and the one-way one over conversations."""
    widths = {}
    for group, frame in raw.groupby(by):
        residual = (frame["Q_overall"] == "Yes") - (frame["Q_overall"] == "Yes").mean()
        frame = frame.assign(residual=residual)

        def squares(keys: list[str], frame: pd.DataFrame = frame) -> float:
            return float((frame.groupby(keys)["residual"].sum() ** 2).sum())

        both = squares(["rater_id"]) + squares(["item_id"]) - squares(["rater_id", "item_id"])
        one = squares(["item_id"])
        widths[group] = (2 * Z * math.sqrt(both) / len(frame), 2 * Z * math.sqrt(one) / len(frame))
    return widths


def widths(result: list[dict[str, str]], by: str) -> dict[str, float]:
    return {r[by]: float(r["share_yes_ci_high"]) - float(r["share_yes_ci_low"]) for r in result}


def test_clustered_intervals_agree_with_a_two_way_variance_on_dices_350(
    runner: CliRunner, ingested: Path, replica_350: Path
) -> None:
    raw = pd.read_csv(replica_350, usecols=["rater_id", "item_id", "rater_race", "Q_overall"])
    reference = independent_widths(raw, "rater_race")
    query = ["qoverall-by-demographic", "--by", "rater_race", "-d", "350"]
    clustered = rows(runner, ingested, *query)
    assert {r["interval"] for r in clustered} == {"clustered"}
    conversations = widths(
        rows(runner, ingested, *query, "--interval", "conversations"), "rater_race"
    )
    wilson = widths(rows(runner, ingested, *query, "--interval", "wilson"), "rater_race")
    for group, width in widths(clustered, "rater_race").items():
        two_way, one_way = reference[group]
        assert 0.75 <= width / two_way <= 1.25, group
        assert 0.75 <= conversations[group] / one_way <= 1.25, group
        assert width / wilson[group] > 5, group  # the issue: 6-10x wider than Wilson's


def test_the_same_seed_gives_the_same_intervals_and_a_dataset_its_own_rows(
    runner: CliRunner, ingested: Path
) -> None:
    query = ["qoverall-by-demographic", "--by", "rater_gender", "--bootstrap", "200"]
    both = rows(runner, ingested, *query, "--seed", "5")
    assert rows(runner, ingested, *query, "--seed", "5") == both
    assert rows(runner, ingested, *query, "--seed", "5", "-d", "350") == [
        r for r in both if r["dataset"] == "350"
    ]
    other = rows(runner, ingested, *query, "--seed", "6")
    assert [r["share_yes_ci_low"] for r in other] != [r["share_yes_ci_low"] for r in both]
    assert [r["share_yes"] for r in other] == [r["share_yes"] for r in both]


def test_no_resamples_is_no_interval(runner: CliRunner, ingested: Path) -> None:
    result = rows(runner, ingested, "degree-of-harm", "-d", "350", "--bootstrap", "0")
    assert [(r["share_yes_ci_low"], r["share_yes_ci_high"], r["interval"]) for r in result] == [
        ("", "", "clustered")
    ] * 4


@pytest.mark.parametrize("name", SHARE_QUERIES)
def test_raters_that_match_nobody_give_an_empty_result(
    name: str, runner: CliRunner, ingested: Path
) -> None:
    by = ["--by", "rater_age"] if name == "qoverall-by-demographic" else []
    result = runner.invoke(
        app,
        ["query", name, *by, "--raters", "-", "--data", str(ingested), "-f", "csv"],
        input="1\n2\n",
    )
    assert result.exit_code == 0, result.output
    columns = catalog()[name].output_columns({"by": ["rater_age"] if by else []})
    assert result.stdout == ",".join(columns) + "\n"


def test_harm_types_intervals_hold_their_shares(runner: CliRunner, ingested: Path) -> None:
    result = rows(runner, ingested, "harm-types", "-d", "350", "--bootstrap", "200")
    for r in result:
        low, high = float(r["share_yes_ci_low"]), float(r["share_yes_ci_high"])
        assert low <= float(r["share_yes"]) <= high
        assert high - low > 0.05  # at least 246 ratings per tag, but from 2 to 93 conversations
    assert {r["interval"] for r in result} == {"clustered"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--interval", "bootstrap"],
            "Invalid value for '--interval': 'bootstrap' is not one of 'clustered', "
            "'conversations', 'wilson'.",
        ),
        (
            ["--bootstrap", "-1"],
            "Invalid value for '--bootstrap': -1 is not in the range 0<=x<=10000.",
        ),
        (
            ["--bootstrap", "10001"],
            "Invalid value for '--bootstrap': 10001 is not in the range 0<=x<=10000.",
        ),
        (
            ["--seed", "-1"],
            "Invalid value for '--seed': -1 is not in the range 0<=x<=4294967295.",
        ),
    ],
)
def test_bad_interval_settings_are_usage_errors(
    arguments: list[str], message: str, runner: CliRunner, ingested: Path
) -> None:
    result = runner.invoke(
        app,
        [
            "query",
            "qoverall-by-demographic",
            "--by",
            "rater_age",
            *arguments,
            "--data",
            str(ingested),
        ],
    )
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.replace("│", " ").split())
