"""Intervals and tests of group shares (`dices_cli.metrics.shares`): the clustered interval
against an independent two-way variance (pandas sums, scipy's t), the group test against a
loop written out from its definition, the t quantile against scipy, and the `interval`,
`permutations` and `seed` parameters of the queries. Their coverage and level are
tests/calibration/test_calibration_shares.py's."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import false_discovery_control, t
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.defaults import INTERVAL, INTERVALS, PERMUTATIONS, SEED
from dices_cli.metrics.permutation import ALTERNATIVES
from dices_cli.metrics.shares import (
    MIN_CLUSTERS,
    TEST_COLUMNS,
    Ratings,
    compute,
    family_test,
    share_intervals,
)
from dices_cli.metrics.student_t import t_quantile
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


def test_wilson_is_the_textbook_interval() -> None:
    ratings = small_ratings()
    low, high, _ = share_intervals(ratings, "wilson")
    for row, (successes, trials) in enumerate([(3, 6), (4, 7), (1, 2)]):
        p = successes / trials
        centre = (p + Z**2 / (2 * trials)) / (1 + Z**2 / trials)
        half = Z / (1 + Z**2 / trials) * math.sqrt(p * (1 - p) / trials + Z**2 / (4 * trials**2))
        assert low[row] == pytest.approx(centre - half, abs=1e-15)
        assert high[row] == pytest.approx(centre + half, abs=1e-15)


def test_too_few_raters_or_conversations_give_a_note_and_no_interval() -> None:
    ratings = small_ratings()  # 2, 3 and 1 raters, 5 conversations at most
    low, high, notes = share_intervals(ratings, "clustered")
    assert np.isnan(low).all() and np.isnan(high).all()
    assert notes == ["fewer than 5 raters"] * 3
    low, high, notes = share_intervals(ratings, "conversations")
    assert notes == ["", "", "fewer than 5 conversations"]
    assert (low[:2] < [3 / 6, 4 / 7]).all() and (high[:2] > [3 / 6, 4 / 7]).all()


def share_table(order: np.random.Generator | None) -> pa.Table:
    """Two groups' rows of a share query's SQL (20 and 30 raters, 40 conversations), each
    row's rating lists in rater order, or shuffled by `order`."""
    draw = np.random.default_rng(7)
    rows: dict[str, list] = {name: [] for name in ("dataset", "rater_age", "ratings")}
    rows |= {"share_yes": [], "rating_rater": [], "rating_item": [], "rating_yes": []}
    for group, (first, raters) in {"gen z": (0, 20), "gen x+": (20, 30)}.items():
        rater = np.repeat(np.arange(first, first + raters), 40)
        item = np.tile(np.arange(40), raters)
        yes = (draw.random(len(rater)) < 0.3).astype(np.uint8)
        shuffle = np.arange(len(rater)) if order is None else order.permutation(len(rater))
        rows["dataset"].append("350")
        rows["rater_age"].append(group)
        rows["ratings"].append(len(rater))
        rows["share_yes"].append(float(yes.mean()))
        rows["rating_rater"].append(rater[shuffle].tolist())
        rows["rating_item"].append(item[shuffle].tolist())
        rows["rating_yes"].append(yes[shuffle].tolist())
    types = {"rating_rater": pa.list_(pa.int64()), "rating_item": pa.list_(pa.int64())}
    types["rating_yes"] = pa.list_(pa.uint8())
    return pa.table({name: pa.array(values, types.get(name)) for name, values in rows.items()})


def test_the_order_of_the_ratings_does_not_change_a_digit() -> None:
    """DuckDB lists a row's ratings in the order its threads happen to take: the result,
    to the last digit, must not depend on it."""
    parameters = {"interval": "clustered", "by": ["rater_age"], "permutations": 50, "seed": 0}
    listed = compute(share_table(None), parameters)
    assert listed.columns[-6:] == list(TEST_COLUMNS)
    assert all(value is not None for row in listed.rows for value in row[-6:])
    for seed in range(5):
        shuffled = compute(share_table(np.random.default_rng(seed)), parameters)
        assert shuffled.rows == listed.rows


# ----------------------------------------------------------------------------- the queries


def rows(runner: CliRunner, data: Path, *arguments: str) -> list[dict[str, str]]:
    result = runner.invoke(app, ["query", *arguments, "--data", str(data), "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize("name", SHARE_QUERIES)
def test_the_share_queries_declare_the_default_interval(name: str) -> None:
    query = catalog()[name]
    interval = query.parameter("interval")
    assert interval is not None and query.parameter("bootstrap") is None
    assert (interval.default, interval.choices) == (INTERVAL, INTERVALS)
    columns = [c.name for c in query.columns]
    ends = ["share_yes_ci_low", "share_yes_ci_high", "interval", "interval_note"]
    if name == "harm-types":  # no groups, so no group test
        assert columns[-4:] == ends and query.parameter("permutations") is None
        return
    permutations, seed = query.parameter("permutations"), query.parameter("seed")
    assert permutations is not None and seed is not None
    assert (permutations.default, seed.default) == (str(PERMUTATIONS), str(SEED))
    alternative = query.parameter("alternative")
    assert alternative is not None
    assert (alternative.default, alternative.choices) == ("two-sided", ALTERNATIVES)
    assert columns[-10:] == [
        *ends,
        "difference",
        "difference_ci_low",
        "difference_ci_high",
        "p_value",
        "p_adjusted",
        "p_groups_differ",
    ]


def independent_intervals(raw: pd.DataFrame, by: str) -> dict[str, tuple[float, float]]:
    """Per group, the clustered 95% interval of its share of Yes written out from its
    definition: the two-way cluster-robust variance (Cameron, Gelbach & Miller 2011: rater
    + conversation - rater x conversation sums of the residuals, the one-way ones times
    G / (G - 1)), scipy's t with Satterthwaite degrees of freedom, on the logit."""
    intervals = {}
    for group, frame in raw.groupby(by):
        yes = frame["Q_overall"] == "Yes"
        share = yes.mean()
        frame = frame.assign(residual=(yes - share) / len(frame))

        def squares(keys: list[str], frame: pd.DataFrame = frame) -> tuple[float, int]:
            sums = frame.groupby(keys)["residual"].sum()
            return float((sums**2).sum()), len(sums)

        (raters, r), (conversations, c) = squares(["rater_id"]), squares(["item_id"])
        raters, conversations = raters * r / (r - 1), conversations * c / (c - 1)
        variance = raters + conversations - squares(["rater_id", "item_id"])[0]
        df = variance**2 / (raters**2 / (r - 1) + conversations**2 / (c - 1))
        half = t.ppf(0.975, df) * math.sqrt(variance) / (share * (1 - share))
        logit = math.log(share / (1 - share))
        intervals[group] = (1 / (1 + math.exp(half - logit)), 1 / (1 + math.exp(-half - logit)))
    return intervals


def test_clustered_intervals_are_the_two_way_t_interval_on_dices_350(
    runner: CliRunner, ingested: Path, replica_350: Path
) -> None:
    raw = pd.read_csv(replica_350, usecols=["rater_id", "item_id", "rater_race", "Q_overall"])
    reference = independent_intervals(raw, "rater_race")
    query = ["qoverall-by-demographic", "--by", "rater_race", "-d", "350"]
    clustered = rows(runner, ingested, *query)
    assert {r["interval"] for r in clustered} == {"clustered"}
    assert {r["interval_note"] for r in clustered} == {""}
    wilson = rows(runner, ingested, *query, "--interval", "wilson")
    for record, other in zip(clustered, wilson, strict=True):
        low, high = float(record["share_yes_ci_low"]), float(record["share_yes_ci_high"])
        assert (low, high) == pytest.approx(reference[record["rater_race"]], rel=1e-9)
        assert low < float(record["share_yes"]) < high
        wilson_width = float(other["share_yes_ci_high"]) - float(other["share_yes_ci_low"])
        assert (high - low) / wilson_width > 5  # the issue: 6-10x wider than Wilson's


def test_t_quantiles_are_scipys() -> None:
    for df in (0.5, 1, 1.7, 4, 4.3, 30, 349, 999, 1001, 1e5, math.inf):
        assert t_quantile(0.95, df) == pytest.approx(t.ppf(0.975, df), rel=1e-9)
    assert t_quantile(0.9, 5) == pytest.approx(t.ppf(0.95, 5), rel=1e-9)


def looped_family_test(
    yes: np.ndarray, label: np.ndarray, permutations: int, seed: int, alternative: str
) -> tuple[np.ndarray, np.ndarray, float]:
    """Each group's difference from the rest and its permutation p-value for
    `alternative`, and the omnibus p-value, one relabelling at a time (yes: [rater,
    conversation], full)."""
    from dices_cli.metrics.permutation import shuffled_labellings

    def statistics(labels: np.ndarray) -> tuple[np.ndarray, float]:
        groups = int(label.max()) + 1
        shares = np.array([yes[labels == g].mean() for g in range(groups)])
        rest = np.array([yes[labels != g].mean() for g in range(groups)])
        counted = np.array([yes[labels == g].size for g in range(groups)])
        return shares - rest, float((counted * (shares - yes.mean()) ** 2).sum())

    observed, spread = statistics(label)
    null = [statistics(labels) for labels in shuffled_labellings(label, permutations, seed)]
    differences = np.array([n[0] for n in null])
    above = (differences >= observed - 1e-12).sum(axis=0)
    below = (differences <= observed + 1e-12).sum(axis=0)
    p = {
        "two-sided": np.minimum(1, 2 * (np.minimum(above, below) + 1) / (permutations + 1)),
        "greater": (above + 1) / (permutations + 1),
        "less": (below + 1) / (permutations + 1),
    }[alternative]
    omnibus = (sum(n[1] >= spread - 1e-12 for n in null) + 1) / (permutations + 1)
    return observed, p, omnibus


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_the_group_test_is_its_definition(alternative: str) -> None:
    rng = np.random.default_rng(4)
    label = np.repeat([0, 1, 2], [6, 9, 5])
    yes = (rng.random((20, 30)) < 0.2 + 0.1 * label[:, None]).astype(np.float64)
    ratings = Ratings(
        starts=np.array([0, 180, 450, 600], dtype=np.intp),
        rater=np.repeat(np.arange(20, dtype=np.intp), 30),
        conversation=np.tile(np.arange(30, dtype=np.intp), 20),
        yes=yes.ravel(),
        stratum_of_rater=label.astype(np.intp),
        conversations=30,
    )
    test = family_test(ratings, [0, 1, 2], "clustered", 300, 8, alternative)
    difference, p, omnibus = looped_family_test(yes, label, 300, 8, alternative)
    assert test.difference == pytest.approx(difference, abs=1e-14)
    assert test.p_value.tolist() == pytest.approx(p.tolist(), abs=1e-14)
    assert test.p_adjusted == pytest.approx(false_discovery_control(p), abs=1e-14)
    assert test.p_groups_differ == pytest.approx(omnibus, abs=1e-14)
    assert (test.low < test.difference).all() and (test.difference < test.high).all()
    assert not np.isnan(test.low).any()  # the smallest group has five raters: an interval


def test_the_same_seed_gives_the_same_p_values_and_a_dataset_its_own_rows(
    runner: CliRunner, ingested: Path
) -> None:
    query = ["qoverall-by-demographic", "--by", "rater_gender", "--permutations", "200"]
    both = rows(runner, ingested, *query, "--seed", "5")
    assert rows(runner, ingested, *query, "--seed", "5") == both
    assert rows(runner, ingested, *query, "--seed", "5", "-d", "350") == [
        r for r in both if r["dataset"] == "350"
    ]
    other = rows(runner, ingested, *query, "--seed", "6")
    assert [r["p_value"] for r in other] != [r["p_value"] for r in both]
    for column in ("share_yes", "share_yes_ci_low", "difference_ci_high"):  # no seed in them
        assert [r[column] for r in other] == [r[column] for r in both]


@pytest.mark.parametrize("name", ["qoverall-by-demographic", "degree-of-harm"])
def test_one_sided_p_values_halve_the_two_sided_one_and_bh_adjusts_them(
    name: str, runner: CliRunner, ingested: Path
) -> None:
    """With the same relabellings, two-sided p = min(1, 2 x the smaller one-sided p);
    p_adjusted is Benjamini-Hochberg of the chosen alternative's p-values in each family;
    nothing else moves."""
    query = [name, "--by", "rater_age", "--permutations", "300", "--seed", "3"]
    results = {
        alternative: rows(runner, ingested, *query, "--alternative", alternative)
        for alternative in ALTERNATIVES
    }
    assert rows(runner, ingested, *query) == results["two-sided"]
    tested = ("p_value", "p_adjusted")
    for alternative, result in results.items():
        assert [{k: v for k, v in r.items() if k not in tested} for r in result] == [
            {k: v for k, v in r.items() if k not in tested} for r in results["two-sided"]
        ], alternative
        families: dict[tuple[str, str], list[dict[str, str]]] = {}
        for r in result:
            families.setdefault((r["dataset"], r.get("degree_of_harm", "")), []).append(r)
        for family in families.values():
            p = np.array([float(r["p_value"]) for r in family])
            adjusted = [float(r["p_adjusted"]) for r in family]
            assert adjusted == pytest.approx(false_discovery_control(p), abs=1e-12)
    greater, less = ([float(r["p_value"]) for r in results[a]] for a in ("greater", "less"))
    two_sided = [float(r["p_value"]) for r in results["two-sided"]]
    assert two_sided == pytest.approx(np.minimum(1, 2 * np.minimum(greater, less)), abs=1e-12)
    above = [float(r["difference"]) > 0 for r in results["two-sided"]]
    assert any(above) and not all(above)
    for g, low, up in zip(greater, less, above, strict=True):
        assert (g < low) == up or g == low  # the small p is on the side of the difference


def test_no_permutations_is_no_test_and_no_by_no_difference(
    runner: CliRunner, ingested: Path
) -> None:
    result = rows(runner, ingested, "degree-of-harm", "-d", "350")
    assert [r["difference"] + r["p_value"] + r["p_groups_differ"] for r in result] == [""] * 4
    assert all(r["share_yes_ci_low"] for r in result)
    query = ["qoverall-by-demographic", "--by", "rater_age", "-d", "350", "--permutations", "0"]
    result = rows(runner, ingested, *query)
    assert {r["p_value"] + r["p_adjusted"] + r["p_groups_differ"] for r in result} == {""}
    assert all(r["difference_ci_low"] for r in result)


def test_groups_of_fewer_than_five_raters_say_so_instead_of_an_interval(
    runner: CliRunner, ingested: Path
) -> None:
    """DICES-990 by race and gender has intersections of 1-4 raters: no interval holds
    there, and the row says so; the permutation p-value holds at any size."""
    query = ["qoverall-by-demographic", "--by", "rater_race", "--by", "rater_gender"]
    result = rows(runner, ingested, *query, "-d", "990")
    small = [r for r in result if int(r["raters"]) < MIN_CLUSTERS]
    assert small, "the replica has small intersections"
    for r in small:
        assert r["interval_note"] == "fewer than 5 raters"
        assert r["share_yes_ci_low"] == r["share_yes_ci_high"] == r["difference_ci_low"] == ""
        assert 0 < float(r["p_value"]) <= 1
    for r in result:
        if int(r["raters"]) >= MIN_CLUSTERS:
            assert r["interval_note"] == ""
            low, high = float(r["share_yes_ci_low"]), float(r["share_yes_ci_high"])
            assert low <= float(r["share_yes"]) <= high


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
    """Tags have at least 246 ratings but from 2 to 93 conversations: below 5 the row says
    so instead of an interval."""
    result = rows(runner, ingested, "harm-types", "-d", "350")
    for r in result:
        if int(r["conversations"]) < MIN_CLUSTERS:
            assert r["interval_note"] == "fewer than 5 conversations"
            assert r["share_yes_ci_low"] == r["share_yes_ci_high"] == ""
            continue
        low, high = float(r["share_yes_ci_low"]), float(r["share_yes_ci_high"])
        assert low <= float(r["share_yes"]) <= high
        assert high - low > 0.05
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
            ["--permutations", "-1"],
            "Invalid value for '--permutations': -1 is not in the range 0<=x<=100000.",
        ),
        (
            ["--permutations", "100001"],
            "Invalid value for '--permutations': 100001 is not in the range 0<=x<=100000.",
        ),
        (
            ["--seed", "-1"],
            "Invalid value for '--seed': -1 is not in the range 0<=x<=4294967295.",
        ),
        (
            ["--alternative", "higher"],
            "Invalid value for '--alternative': 'higher' is not one of 'two-sided', "
            "'greater', 'less'.",
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
