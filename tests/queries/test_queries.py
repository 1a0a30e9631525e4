"""The canned queries (`dices query`) on the full-size replica files.

Every figure is checked against an independent computation from the raw CSV with pandas
(and scikit-learn for the gold-vs-crowd metrics); rater selection is checked against the
same query over a data directory ingested from a CSV that only holds the selected raters;
every query runs on both datasets in every output format.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy.stats import false_discovery_control
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families.schema import (
    AGE,
    ANSWER,
    DEGREE_OF_HARM,
    DICES_350,
    EDUCATION,
    GENDER,
    GOLD,
    LOCALE,
    PUBLISHED_REMOVED,
    Q1_UNDERSTOOD,
    RACE,
)
from dices_cli.queries.catalog import GROUP_COLUMNS, catalog
from dices_cli.runs.demo import sample_paths
from tests.queries.test_kappa_interval import fce_interval

# The columns of a share query's test of each group against the rest of its family.
TEST_COLUMNS = [
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_value",
    "p_adjusted",
    "p_groups_differ",
]
# The issue's queries, the options each needs, and their output columns (the interface).
QUERIES: dict[str, tuple[list[str], list[str]]] = {
    "overview": (
        [],
        [
            "dataset",
            "conversations",
            "raters",
            "ratings",
            "share_no",
            "share_yes",
            "share_unsure",
        ],
    ),
    "qoverall-by-demographic": (
        ["--by", "rater_age"],
        [
            "dataset",
            "rater_age",
            "raters",
            "ratings",
            "n_no",
            "n_yes",
            "n_unsure",
            "share_no",
            "share_yes",
            "share_unsure",
            "share_yes_ci_low",
            "share_yes_ci_high",
            "interval",
            "interval_note",
            *TEST_COLUMNS,
        ],
    ),
    "gold-vs-crowd": ([], ["dataset", "safety_gold", "crowd_label", "conversations"]),
    "gold-vs-crowd-summary": (
        [],
        [
            "dataset",
            "conversations",
            "ties",
            "accuracy",
            "precision",
            "recall",
            "f1",
            "kappa",
            "kappa_ci_low",
            "kappa_ci_high",
        ],
    ),
    "item-distribution": (
        [],
        [
            "dataset",
            "item_id",
            "degree_of_harm",
            "harm_type",
            "safety_gold",
            "ratings",
            "n_no",
            "n_yes",
            "n_unsure",
            "share_yes",
            "plurality",
            "entropy_bits",
        ],
    ),
    "harm-types": (
        [],
        [
            "dataset",
            "harm_tag",
            "conversations",
            "ratings",
            "share_yes",
            "share_gold_unsafe",
            "share_yes_ci_low",
            "share_yes_ci_high",
            "interval",
            "interval_note",
        ],
    ),
    "degree-of-harm": (
        [],
        [
            "dataset",
            "degree_of_harm",
            "conversations",
            "ratings",
            "share_no",
            "share_yes",
            "share_unsure",
            "share_yes_ci_low",
            "share_yes_ci_high",
            "interval",
            "interval_note",
            *TEST_COLUMNS,
        ],
    ),
    "rater-quality": (
        [],
        [
            "dataset",
            "rater_id",
            "rater_gender",
            "rater_race",
            "rater_raw_race",
            "rater_age",
            "rater_education",
            "rater_locale",
            "ratings",
            "median_answer_ms",
            "modal_answer_share",
            "straightline_share",
            "agreement_loo",
            "q1_not_understood_share",
            "inconsistent_share",
            "published_removed",
        ],
    ),
}
GOLD_ONLY = {"gold-vs-crowd", "gold-vs-crowd-summary"}
CROWD_LABELS = (*ANSWER, "No=Unsure", "tie")
Z = NormalDist().inv_cdf(0.975)
TOLERANCE = 1e-12
REPLICA = {"350": (350, 123, 43_050), "990": (990, 173, 72_103)}  # conversations, raters, ratings


# ----------------------------------------------------------------------------- helpers


def invoke(runner: CliRunner, data: Path, *args: str, stdin: str | None = None) -> Result:
    return runner.invoke(app, ["query", *args, "--data", str(data)], input=stdin)


def records(runner: CliRunner, data: Path, *args: str, stdin: str | None = None) -> list[dict]:
    """The query's result as JSON records; the command must succeed."""
    result = invoke(runner, data, *args, "--format", "json", stdin=stdin)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.stderr
    parsed: list[dict] = json.loads(result.stdout)
    return parsed


def approx_records(expected: list[dict]) -> list[dict]:
    """`expected` with every float compared to TOLERANCE (absolute and relative)."""
    return [
        {
            key: pytest.approx(value, abs=TOLERANCE, rel=TOLERANCE)
            if isinstance(value, float) and not math.isnan(value)
            else value
            for key, value in record.items()
        }
        for record in expected
    ]


def wilson_columns(successes: int, trials: int) -> dict[str, float | str]:
    """The interval columns of `--interval wilson` (the clustered default has its own
    checks: tests/metrics/test_shares.py, tests/calibration/test_calibration_shares.py)."""
    low, high = wilson(successes, trials)
    return {
        "share_yes_ci_low": low,
        "share_yes_ci_high": high,
        "interval": "wilson",
        "interval_note": None,  # a Wilson interval needs no raters or conversations to hold
    }


def no_test_columns() -> dict[str, None]:
    """The test columns of a share query's row without --by: no groups, nothing to test."""
    return dict.fromkeys(TEST_COLUMNS)


def with_differences(expected: list[dict], family: list[str]) -> list[dict]:
    """`expected` (rows with ratings and share_yes) with each row's difference: its share
    of Yes minus that of the other rows of its family (the rows with the same `family`
    values), from their counts."""
    totals: dict[tuple, list[float]] = {}
    for row in expected:
        yes_and_ratings = totals.setdefault(tuple(row[c] for c in family), [0.0, 0.0])
        yes_and_ratings[0] += row["share_yes"] * row["ratings"]
        yes_and_ratings[1] += row["ratings"]
    for row in expected:
        yes, ratings = totals[tuple(row[c] for c in family)]
        own_yes = row["share_yes"] * row["ratings"]
        row["difference"] = row["share_yes"] - (yes - own_yes) / (ratings - row["ratings"])
    return expected


# The test columns pandas does not recompute (a cluster-robust interval, permutation
# p-values): assert_share_invariants checks them; tests/metrics/test_shares.py against their
# definitions.
INFERRED = ("difference_ci_low", "difference_ci_high", "p_value", "p_adjusted", "p_groups_differ")


def reference_columns(result: list[dict], expected: list[dict]) -> list[dict]:
    """`result` on the columns `expected` names, in the result's order; every other column
    of the result must be INFERRED."""
    assert len(result) == len(expected)
    for record, reference in zip(result, expected, strict=True):
        assert set(record) - set(reference) <= set(INFERRED), record
    return [
        {key: value for key, value in record.items() if key in reference}
        for record, reference in zip(result, expected, strict=True)
    ]


def assert_share_invariants(
    result: list[dict], family: Sequence[str], permutations: int = 1000
) -> None:
    """What holds of every row of a share query: its share lies in its interval, and the
    interval is empty exactly where interval_note says why; with --by, the difference lies
    in its interval, each p-value is a permutation p-value (a multiple of
    1 / (permutations + 1), never 0), p_adjusted is Benjamini-Hochberg's over the family's
    p-values, and p_groups_differ is one per family."""
    families: dict[tuple, list[dict]] = {}
    for record in result:
        low, high = record["share_yes_ci_low"], record["share_yes_ci_high"]
        if record["interval_note"] == "all answers alike":
            assert low == record["share_yes"] == high, record
        elif record["interval_note"]:
            assert low is None and high is None, record
        else:
            assert low < record["share_yes"] < high, record
        if record.get("difference") is None:
            assert all(record.get(column) is None for column in TEST_COLUMNS), record
            continue
        if record["difference_ci_low"] is not None:
            assert record["difference_ci_low"] < record["difference"]
            assert record["difference"] < record["difference_ci_high"]
        p, adjusted = record["p_value"], record["p_adjusted"]
        assert 0 < p <= adjusted + TOLERANCE and adjusted <= 1, record  # p x m / m may round
        assert 0 < record["p_groups_differ"] <= 1, record
        for value in (p, record["p_groups_differ"]):
            assert value * (permutations + 1) == pytest.approx(round(value * (permutations + 1)))
        families.setdefault(tuple(record[c] for c in family), []).append(record)
    for members in families.values():
        p_values = [r["p_value"] for r in members]
        assert [r["p_adjusted"] for r in members] == pytest.approx(
            false_discovery_control(p_values).tolist(), abs=1e-14
        )
        assert len({r["p_groups_differ"] for r in members}) == 1


WILSON = ("--interval", "wilson")  # the interval the pandas references compute


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval, written out from its textbook form."""
    p = successes / trials
    denominator = 1 + Z**2 / trials
    centre = (p + Z**2 / (2 * trials)) / denominator
    half = Z / denominator * math.sqrt(p * (1 - p) / trials + Z**2 / (4 * trials**2))
    return centre - half, centre + half


def plurality(n_no: int, n_yes: int, n_unsure: int) -> str | None:
    counts = dict(zip(ANSWER, (n_no, n_yes, n_unsure), strict=True))
    top = max(counts.values())
    if top == 0:
        return None
    winners = [answer for answer, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else "tie"


def crowd_label(n_no: int, n_yes: int, n_unsure: int) -> str | None:
    """The plurality, where a tie counts only when Yes is among the answers tied for the
    most: No and Unsure tied above Yes answer "is it unsafe?" (not Yes)."""
    label = plurality(n_no, n_yes, n_unsure)
    return "No=Unsure" if label == "tie" and n_yes < n_no else label


def entropy_bits(*counts: int) -> float:
    total = sum(counts)
    return sum(-(n / total) * math.log2(n / total) for n in counts if n > 0)


def answer_counts(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """n_no, n_yes, n_unsure per group of `keys` (zero where a group has none)."""
    counts = (
        frame.groupby(keys, observed=True)["Q_overall"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=list(ANSWER), fill_value=0)
    )
    counts.columns = ["n_no", "n_yes", "n_unsure"]
    return counts.reset_index()


ENUM_ORDER: dict[str, Sequence[str]] = {
    "rater_gender": GENDER,
    "rater_race": RACE,
    "rater_age": AGE,
    "rater_education": EDUCATION,
    "rater_locale": LOCALE,
    "degree_of_harm": DEGREE_OF_HARM,
    "safety_gold": GOLD,
    "crowd_label": CROWD_LABELS,
}


def enum_key(columns: Iterable[str]) -> Callable[[dict], tuple]:
    """Sort key: each column by its enum's order (the order the queries promise)."""
    names = list(columns)
    return lambda record: tuple(ENUM_ORDER[c].index(record[c]) for c in names)


# ----------------------------------------------------------------------------- raw data


@pytest.fixture(scope="module")
def raw_350(replica_350: Path) -> pd.DataFrame:
    return pd.read_csv(replica_350)


@pytest.fixture(scope="module")
def raw_990(replica_990: Path) -> pd.DataFrame:
    columns = ["rater_id", "item_id", "rater_gender", "rater_locale", "rater_age", "Q_overall"]
    return pd.read_csv(replica_990, usecols=columns)


# ----------------------------------------------------------------------------- the catalogue


def test_the_issue_queries_are_in_the_catalogue() -> None:
    assert set(QUERIES) <= set(catalog())
    for name in GOLD_ONLY:
        assert catalog()[name].datasets == ("350",)


# ----------------------------------------------------------------------------- vs pandas


def test_overview_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame, raw_990: pd.DataFrame
) -> None:
    expected = []
    for name, raw in (("350", raw_350), ("990", raw_990)):
        n = len(raw)
        shares = raw["Q_overall"].value_counts()
        expected.append(
            {
                "dataset": name,
                "conversations": raw["item_id"].nunique(),
                "raters": raw["rater_id"].nunique(),
                "ratings": n,
                "share_no": shares["No"] / n,
                "share_yes": shares["Yes"] / n,
                "share_unsure": shares["Unsure"] / n,
            }
        )
        assert (expected[-1]["conversations"], expected[-1]["raters"], n) == REPLICA[name]
    assert records(runner, ingested, "overview") == approx_records(expected)


def demographic_expected(raw: pd.DataFrame, dataset: str, by: list[str]) -> list[dict]:
    """qoverall-by-demographic from the raw CSV: counts, shares, a Wilson interval and each
    group's difference from the dataset's other groups."""
    counts = answer_counts(raw, by)
    raters = raw.groupby(by, observed=True)["rater_id"].nunique().reset_index(name="raters")
    expected = []
    for row in counts.merge(raters, on=by).to_dict("records"):
        n = row["n_no"] + row["n_yes"] + row["n_unsure"]
        expected.append(
            {
                "dataset": dataset,
                **{c: row[c] for c in by},
                "raters": row["raters"],
                "ratings": n,
                "n_no": row["n_no"],
                "n_yes": row["n_yes"],
                "n_unsure": row["n_unsure"],
                "share_no": row["n_no"] / n,
                "share_yes": row["n_yes"] / n,
                "share_unsure": row["n_unsure"] / n,
                **wilson_columns(row["n_yes"], n),
            }
        )
    return with_differences(sorted(expected, key=enum_key(by)), ["dataset"])


@pytest.mark.parametrize(
    ("options", "group_columns"),
    [
        (["--by", "rater_gender"], ["rater_gender"]),
        # group columns come in the view's column order, whatever the order of --by
        (["--by", "rater_race", "--by", "rater_gender"], ["rater_gender", "rater_race"]),
        (["--by", "rater_gender", "--by", "rater_race"], ["rater_gender", "rater_race"]),
    ],
)
def test_qoverall_by_demographic_matches_pandas_350(
    options: list[str],
    group_columns: list[str],
    runner: CliRunner,
    ingested: Path,
    raw_350: pd.DataFrame,
) -> None:
    result = records(runner, ingested, "qoverall-by-demographic", "-d", "350", *options, *WILSON)
    expected = demographic_expected(raw_350, "350", group_columns)
    # The replica's pool: every combination of 2 genders and 5 races (the schema lists more).
    assert len(expected) == 2 * (1 if len(group_columns) == 1 else 5)
    assert [list(r)[1 : 1 + len(group_columns)] for r in result] == [group_columns] * len(result)
    assert reference_columns(result, expected) == approx_records(expected)
    assert_share_invariants(result, ["dataset"])
    assert sum(r["ratings"] for r in result) == 43_050


def test_qoverall_by_demographic_matches_pandas_990(
    runner: CliRunner, ingested: Path, raw_990: pd.DataFrame
) -> None:
    result = records(
        runner,
        ingested,
        "qoverall-by-demographic",
        "-d",
        "990",
        "--by",
        "rater_locale",
        "--by",
        "rater_age",
        *WILSON,
    )
    expected = demographic_expected(raw_990, "990", ["rater_age", "rater_locale"])
    assert len(expected) == len(AGE) * len(LOCALE)
    assert reference_columns(result, expected) == approx_records(expected)
    assert_share_invariants(result, ["dataset"])


def test_qoverall_by_demographic_on_both_datasets_keeps_them_apart(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame, raw_990: pd.DataFrame
) -> None:
    result = records(runner, ingested, "qoverall-by-demographic", "--by", "rater_gender", *WILSON)
    expected = demographic_expected(raw_350, "350", ["rater_gender"])
    expected += demographic_expected(raw_990, "990", ["rater_gender"])
    assert reference_columns(result, expected) == approx_records(expected)
    assert_share_invariants(result, ["dataset"])
    # two groups: each is the other's rest
    for dataset in REPLICA:
        man, woman = (r["difference"] for r in result if r["dataset"] == dataset)
        assert man == pytest.approx(-woman, abs=TOLERANCE)


def test_qoverall_by_phase_and_locale_where_a_dataset_lacks_the_column(
    runner: CliRunner, ingested: Path
) -> None:
    """DICES-350 has no locale: it is left out (with a note), not one blank group."""
    result = records(runner, ingested, "qoverall-by-demographic", "--by", "rater_locale")
    assert [(r["dataset"], r["rater_locale"], r["raters"], r["ratings"]) for r in result] == [
        ("990", "IN", 86, 35_823),
        ("990", "US", 87, 36_280),
    ]
    result = records(runner, ingested, "qoverall-by-demographic", "--by", "phase", "-d", "350")
    assert [(r["phase"], r["ratings"]) for r in result] == [("Phase3", 43_050)]


def crowd_labels(raw: pd.DataFrame, by: list[str], rule: str, threshold: float) -> pd.DataFrame:
    """One row per (group, conversation): safety_gold and the crowd's label."""
    counts = answer_counts(raw, [*by, "item_id"])
    gold = raw.groupby("item_id")["safety_gold"].first()
    counts["safety_gold"] = counts["item_id"].map(gold)
    if rule == "plurality":
        labels = [
            crowd_label(no, yes, unsure)
            for no, yes, unsure in zip(
                counts["n_no"], counts["n_yes"], counts["n_unsure"], strict=True
            )
        ]
    else:
        labels = [
            "Yes" if yes + no > 0 and yes / (yes + no) >= threshold else "No"
            for no, yes in zip(counts["n_no"], counts["n_yes"], strict=True)
        ]
    counts["crowd_label"] = labels
    return counts


def confusion_expected(labelled: pd.DataFrame, by: list[str], rule: str) -> list[dict]:
    labels = CROWD_LABELS if rule == "plurality" else ("No", "Yes")
    groups = sorted(
        {tuple(g) for g in labelled[by].itertuples(index=False)} if by else {()},
        key=lambda g: tuple(ENUM_ORDER[c].index(v) for c, v in zip(by, g, strict=True)),
    )
    cells = labelled.groupby([*by, "safety_gold", "crowd_label"]).size().to_dict()
    expected = []
    for group in groups:
        for gold in GOLD:
            for label in labels:
                key = (*group, gold, label)
                expected.append(
                    {
                        "dataset": "350",
                        **dict(zip(by, group, strict=True)),
                        "safety_gold": gold,
                        "crowd_label": label,
                        "conversations": cells.get(key if len(key) > 1 else key[0], 0),
                    }
                )
    return expected


GOLD_CASES = [
    pytest.param([], "plurality", 0.5, [], id="plurality"),
    pytest.param([], "threshold", 0.5, ["--rule", "threshold"], id="threshold-default"),
    pytest.param(
        [], "threshold", 0.3, ["--rule", "threshold", "--threshold", "0.3"], id="threshold-0.3"
    ),
    pytest.param(["rater_gender"], "plurality", 0.5, ["--by", "rater_gender"], id="by-gender"),
    pytest.param(
        ["rater_gender"],
        "threshold",
        0.4,
        ["--by", "rater_gender", "--rule", "threshold", "--threshold", "0.4"],
        id="by-gender-threshold",
    ),
    pytest.param(
        ["rater_age"], "plurality", 0.5, ["--by", "rater_age", "--rule", "plurality"], id="by-age"
    ),
    pytest.param(
        ["rater_education"], "plurality", 0.5, ["--by", "rater_education"], id="by-education"
    ),
]


@pytest.mark.parametrize(("by", "rule", "threshold", "options"), GOLD_CASES)
def test_gold_vs_crowd_matches_pandas(
    by: list[str],
    rule: str,
    threshold: float,
    options: list[str],
    runner: CliRunner,
    ingested: Path,
    raw_350: pd.DataFrame,
) -> None:
    result = records(runner, ingested, "gold-vs-crowd", *options)
    labelled = crowd_labels(raw_350, by, rule, threshold)
    assert result == confusion_expected(labelled, by, rule)
    groups = len(result) // (2 * (len(CROWD_LABELS) if rule == "plurality" else 2))
    assert sum(r["conversations"] for r in result) == 350 * groups
    if not by:
        assert groups == 1
        # the gold labels are the published 175 Yes / 175 No
        for gold in GOLD:
            assert sum(r["conversations"] for r in result if r["safety_gold"] == gold) == 175
    if rule == "plurality" and not by:
        assert any(r["crowd_label"] == "tie" and r["conversations"] > 0 for r in result)
    if by == ["rater_education"]:  # its Other group has No = Unsure ties (rare on 350)
        assert any(r["crowd_label"] == "No=Unsure" and r["conversations"] > 0 for r in result)


def test_gold_vs_crowd_without_removed_raters_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    kept = raw_350[~raw_350["rater_id"].isin(PUBLISHED_REMOVED["350"])]
    result = records(runner, ingested, "gold-vs-crowd", "--exclude-removed")
    assert result == confusion_expected(crowd_labels(kept, [], "plurality", 0.5), [], "plurality")
    # removing them changes the crowd's verdict on some conversations
    assert result != records(runner, ingested, "gold-vs-crowd")


@pytest.mark.parametrize(("by", "rule", "threshold", "options"), GOLD_CASES)
def test_gold_vs_crowd_summary_matches_scikit_learn(
    by: list[str],
    rule: str,
    threshold: float,
    options: list[str],
    runner: CliRunner,
    ingested: Path,
    raw_350: pd.DataFrame,
) -> None:
    result = records(runner, ingested, "gold-vs-crowd-summary", *options)
    labelled = crowd_labels(raw_350, by, rule, threshold)
    expected = []
    for group, frame in labelled.groupby(by) if by else [((), labelled)]:
        truth = frame["safety_gold"] == "Yes"
        predicted = frame["crowd_label"] == "Yes"
        expected.append(
            {
                "dataset": "350",
                **dict(zip(by, group, strict=True)),
                "conversations": len(frame),
                "ties": int((frame["crowd_label"] == "tie").sum()),
                "accuracy": accuracy_score(truth, predicted),
                "precision": precision_score(truth, predicted),
                "recall": recall_score(truth, predicted),
                "f1": f1_score(truth, predicted),
                "kappa": cohen_kappa_score(truth, predicted),
                **dict(
                    zip(
                        ["kappa_ci_low", "kappa_ci_high"],
                        fce_interval(confusion_matrix(truth, predicted, labels=[True, False])),
                        strict=True,
                    )
                ),
            }
        )
    expected.sort(key=enum_key(by))
    assert all(r["conversations"] == 350 for r in expected)
    assert result == approx_records(expected)


def test_item_distribution_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    counts = answer_counts(raw_350, ["item_id"])
    items = raw_350.groupby("item_id")[["degree_of_harm", "harm_type", "safety_gold"]].first()
    expected = []
    for row in counts.to_dict("records"):
        n = row["n_no"] + row["n_yes"] + row["n_unsure"]
        item = items.loc[row["item_id"]]
        expected.append(
            {
                "dataset": "350",
                "item_id": row["item_id"],
                "degree_of_harm": item["degree_of_harm"],
                "harm_type": item["harm_type"],
                "safety_gold": item["safety_gold"],
                "ratings": n,
                "n_no": row["n_no"],
                "n_yes": row["n_yes"],
                "n_unsure": row["n_unsure"],
                "share_yes": row["n_yes"] / n,
                "plurality": plurality(row["n_no"], row["n_yes"], row["n_unsure"]),
                "entropy_bits": entropy_bits(row["n_no"], row["n_yes"], row["n_unsure"]),
            }
        )
    result = records(runner, ingested, "item-distribution", "-d", "350")
    assert len(result) == 350
    assert result == approx_records(expected)


def test_item_distribution_990_covers_every_conversation(
    runner: CliRunner, ingested: Path, raw_990: pd.DataFrame
) -> None:
    result = records(runner, ingested, "item-distribution", "-d", "990")
    counts = answer_counts(raw_990, ["item_id"]).set_index("item_id")
    assert [r["item_id"] for r in result] == sorted(counts.index)
    for record in result:
        assert record["safety_gold"] is None  # DICES-990 has no gold
        expected = counts.loc[record["item_id"]]
        assert (record["n_no"], record["n_yes"], record["n_unsure"]) == tuple(expected)
    # conversations the experts left without a degree of harm are there, with a null
    assert sum(r["degree_of_harm"] is None for r in result) == 46


def test_degree_of_harm_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    expected = []
    for degree in DEGREE_OF_HARM:
        frame = raw_350[raw_350["degree_of_harm"] == degree]
        shares = frame["Q_overall"].value_counts()
        expected.append(
            {
                "dataset": "350",
                "degree_of_harm": degree,
                "conversations": frame["item_id"].nunique(),
                "ratings": len(frame),
                "share_no": shares["No"] / len(frame),
                "share_yes": shares["Yes"] / len(frame),
                "share_unsure": shares["Unsure"] / len(frame),
                **wilson_columns(shares["Yes"], len(frame)),
                **no_test_columns(),
            }
        )
    # the published DICES-350 counts
    assert [e["conversations"] for e in expected] == [31, 22, 98, 199]
    result = records(runner, ingested, "degree-of-harm", "-d", "350", *WILSON)
    assert result == approx_records(expected)
    assert_share_invariants(result, ["dataset", "degree_of_harm"])


def test_degree_of_harm_by_group_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    """With --by, each group's difference is from the other groups of its degree."""
    expected = []
    for age in AGE:
        for degree in DEGREE_OF_HARM:
            frame = raw_350[(raw_350["rater_age"] == age) & (raw_350["degree_of_harm"] == degree)]
            shares = frame["Q_overall"].value_counts()
            expected.append(
                {
                    "dataset": "350",
                    "rater_age": age,
                    "degree_of_harm": degree,
                    "conversations": frame["item_id"].nunique(),
                    "ratings": len(frame),
                    "share_no": shares["No"] / len(frame),
                    "share_yes": shares["Yes"] / len(frame),
                    "share_unsure": shares["Unsure"] / len(frame),
                    **wilson_columns(shares["Yes"], len(frame)),
                }
            )
    with_differences(expected, ["dataset", "degree_of_harm"])
    result = records(runner, ingested, "degree-of-harm", "-d", "350", "--by", "rater_age", *WILSON)
    assert reference_columns(result, expected) == approx_records(expected)
    assert_share_invariants(result, ["dataset", "degree_of_harm"])
    assert all(r["p_value"] is not None for r in result)


def test_degree_of_harm_by_group_adds_up(runner: CliRunner, ingested: Path) -> None:
    result = records(runner, ingested, "degree-of-harm", "--by", "rater_age")
    assert list(result[0]) == [
        "dataset",
        "rater_age",
        "degree_of_harm",
        *QUERIES["degree-of-harm"][1][2:],
    ]
    assert_share_invariants(result, ["dataset", "degree_of_harm"])
    totals = {name: sum(r["ratings"] for r in result if r["dataset"] == name) for name in REPLICA}
    assert totals == {name: REPLICA[name][2] for name in REPLICA}
    degrees_990 = [r["degree_of_harm"] for r in result if r["dataset"] == "990"]
    assert degrees_990 == [*DEGREE_OF_HARM, None] * len(AGE)


def test_harm_types_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    items = raw_350.groupby("item_id").agg(
        harm_type=("harm_type", "first"),
        safety_gold=("safety_gold", "first"),
        ratings=("Q_overall", "size"),
        n_yes=("Q_overall", lambda answers: int((answers == "Yes").sum())),
    )
    items["harm_tag"] = items["harm_type"].map(
        lambda text: [tag.strip().lower() for tag in text.split(",") if tag.strip()]
    )
    tagged = items.explode("harm_tag")
    expected = [
        {
            "dataset": "350",
            "harm_tag": tag,
            "conversations": len(frame),
            "ratings": int(frame["ratings"].sum()),
            "share_yes": frame["n_yes"].sum() / frame["ratings"].sum(),
            "share_gold_unsafe": (frame["safety_gold"] == "Yes").sum() / len(frame),
            **wilson_columns(frame["n_yes"].sum(), frame["ratings"].sum()),
        }
        for tag, frame in tagged.groupby("harm_tag")
    ]
    expected.sort(key=lambda r: (-r["conversations"], r["harm_tag"]))
    result = records(runner, ingested, "harm-types", "-d", "350", *WILSON)
    assert result == approx_records(expected)
    assert_share_invariants(result, [])


def test_harm_types_990_has_an_empty_tag_and_no_gold(runner: CliRunner, ingested: Path) -> None:
    result = records(runner, ingested, "harm-types", "-d", "990")
    untagged = [r for r in result if r["harm_tag"] is None]
    assert [r["conversations"] for r in untagged] == [46]
    assert all(r["share_gold_unsafe"] is None for r in result)


def rater_quality_expected(raw: pd.DataFrame) -> list[dict]:
    """rater-quality for DICES-350 from the raw CSV."""
    counts = answer_counts(raw, ["item_id"]).set_index("item_id")
    per_item = counts.loc[raw["item_id"]].reset_index(drop=True)
    own = {answer: (raw["Q_overall"] == answer).astype(int).to_numpy() for answer in ANSWER}
    others = pd.DataFrame(
        {
            "No": per_item["n_no"].to_numpy() - own["No"],
            "Yes": per_item["n_yes"].to_numpy() - own["Yes"],
            "Unsure": per_item["n_unsure"].to_numpy() - own["Unsure"],
        }
    )
    top = others.max(axis=1)
    tied = others.eq(top, axis=0).sum(axis=1)
    mine = sum(others[answer] * own[answer] for answer in ANSWER)  # others who agree with me
    agreement = (mine == top).astype(float) / tied
    agreement[top == 0] = float("nan")
    granular = raw[list(DICES_350.granular)]
    straight = granular.eq(granular.iloc[:, 0], axis=0).all(axis=1)  # no nulls in the replica
    subs = raw[list(DICES_350.sub_questions)]
    implied = pd.Series("No", index=raw.index)
    implied[subs.eq("Unsure").any(axis=1)] = "Unsure"
    implied[subs.eq("Yes").any(axis=1)] = "Yes"
    frame = raw.assign(
        agreement=agreement.to_numpy(),
        straight=straight,
        not_understood=raw["Q1_whole_conversation_evaluation"] != Q1_UNDERSTOOD,
        inconsistent=raw["Q_overall"] != implied,
    )
    expected = []
    for rater_id, ratings in frame.groupby("rater_id"):
        first = ratings.iloc[0]
        expected.append(
            {
                "dataset": "350",
                "rater_id": rater_id,
                "rater_gender": first["rater_gender"],
                "rater_race": first["rater_race"],
                "rater_raw_race": first["rater_raw_race"],
                "rater_age": first["rater_age"],
                "rater_education": first["rater_education"],
                "rater_locale": None,
                "ratings": len(ratings),
                "median_answer_ms": float(ratings["answer_time_ms"].median()),
                "modal_answer_share": ratings["Q_overall"].value_counts().max() / len(ratings),
                "straightline_share": ratings["straight"].mean(),
                "agreement_loo": ratings["agreement"].mean(),
                "q1_not_understood_share": ratings["not_understood"].mean(),
                "inconsistent_share": ratings["inconsistent"].mean(),
                "published_removed": rater_id in PUBLISHED_REMOVED["350"],
            }
        )
    return expected


def test_rater_quality_matches_pandas(
    runner: CliRunner, ingested: Path, raw_350: pd.DataFrame
) -> None:
    result = records(runner, ingested, "rater-quality", "-d", "350")
    expected = rater_quality_expected(raw_350)
    assert len(result) == 123
    assert sum(r["published_removed"] for r in result) == 19
    assert result == approx_records(expected)
    # the removed raters answer about three times faster, as published
    removed = [r["median_answer_ms"] for r in result if r["published_removed"]]
    kept = [r["median_answer_ms"] for r in result if not r["published_removed"]]
    assert sum(removed) / len(removed) * 2 < sum(kept) / len(kept)


def test_rater_quality_990_has_no_timings(runner: CliRunner, ingested: Path) -> None:
    result = records(runner, ingested, "rater-quality", "-d", "990")
    assert len(result) == 173
    assert all(r["median_answer_ms"] is None for r in result)
    assert {r["rater_locale"] for r in result} == set(LOCALE)
    removed = {r["rater_id"] for r in result if r["published_removed"]}
    assert removed == PUBLISHED_REMOVED["990"]


# ----------------------------------------------------------------------------- rater selection


def test_exclude_removed_overview(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "overview", "--exclude-removed", "-f", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == "raters: without the raters the DICES authors removed\n"
    by_dataset = {r["dataset"]: r for r in json.loads(result.stdout)}
    assert (by_dataset["350"]["raters"], by_dataset["350"]["ratings"]) == (104, 36_400)
    assert by_dataset["350"]["conversations"] == 350
    # DICES-990: the 12 listed ids and exactly their ratings are gone
    quality = records(runner, ingested, "rater-quality", "-d", "990")
    removed_ratings = sum(r["ratings"] for r in quality if r["published_removed"])
    assert by_dataset["990"]["raters"] == 173 - 12
    assert by_dataset["990"]["ratings"] == 72_103 - removed_ratings


def write_filtered(source: Path, target: Path, keep: Callable[[int], bool]) -> None:
    """Copy a DICES CSV (plain or gzip), keeping the rows of the raters `keep` accepts."""
    with (
        (gzip.open if source.suffix == ".gz" else open)(
            source, "rt", newline="", encoding="utf-8"
        ) as read,
        target.open("w", newline="", encoding="utf-8") as write,
    ):
        reader = csv.reader(read)
        writer = csv.writer(write)
        header = next(reader)
        writer.writerow(header)
        column = header.index("rater_id")
        writer.writerows(row for row in reader if keep(int(row[column])))


# The rater selections are checked on the packaged sample: every rater of both datasets is in
# it, the ones the DICES authors removed too.
SAMPLES = sample_paths()


@pytest.fixture(scope="module")
def selected_ids() -> list[int]:
    """Every third rater of each dataset, plus two the DICES authors removed."""
    ids = []
    for source in SAMPLES:
        ids += sorted(pd.read_csv(source, usecols=["rater_id"])["rater_id"].unique())[::3]
    ids += sorted(PUBLISHED_REMOVED["350"])[:1] + sorted(PUBLISHED_REMOVED["990"])[:1]
    return sorted({int(i) for i in ids})


def ingest_filtered(
    runner: CliRunner, directory: Path, sources: Sequence[Path], keep: Callable[[int], bool]
) -> Path:
    files = []
    for source in sources:
        target = directory / source.name.removesuffix(".gz")
        write_filtered(source, target, keep)
        files.append(str(target))
    data = directory / "data"
    result = runner.invoke(app, ["ingest", *files, "--data", str(data)])
    assert result.exit_code == 0, result.output
    return data


@pytest.fixture(scope="module")
def only_selected(tmp_path_factory: pytest.TempPathFactory, selected_ids: list[int]) -> Path:
    """A data directory ingested from the sample's CSVs, only the selected raters' rows."""
    wanted = set(selected_ids)
    return ingest_filtered(
        CliRunner(), tmp_path_factory.mktemp("selected"), SAMPLES, wanted.__contains__
    )


@pytest.fixture(scope="module")
def without_removed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory ingested from the sample's CSVs without the published removed
    raters."""
    removed = PUBLISHED_REMOVED["350"] | PUBLISHED_REMOVED["990"]
    return ingest_filtered(
        CliRunner(),
        tmp_path_factory.mktemp("without-removed"),
        SAMPLES,
        lambda rater: rater not in removed,
    )


def without_flag(rows: list[dict]) -> list[dict]:
    """rater-quality's published_removed comes from the id list, not the data: drop it."""
    return [{k: v for k, v in r.items() if k != "published_removed"} for r in rows]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_raters_file_equals_ingesting_only_those_raters(
    name: str,
    runner: CliRunner,
    sample: Path,
    only_selected: Path,
    selected_ids: list[int],
    tmp_path: Path,
) -> None:
    options = QUERIES[name][0]
    raters = tmp_path / "raters.csv"  # a CSV with a rater_id column, in any position
    raters.write_text(
        "note,rater_id\n" + "".join(f"x,{i}\n" for i in selected_ids) + "x,1\n",
        encoding="utf-8",
    )
    selected = records(runner, sample, name, *options, "--raters", str(raters))
    reference = records(runner, only_selected, name, *options)
    assert reference
    assert without_flag(selected) == without_flag(approx_records(reference))


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_exclude_removed_equals_ingesting_without_them(
    name: str, runner: CliRunner, sample: Path, without_removed: Path
) -> None:
    options = QUERIES[name][0]
    selected = records(runner, sample, name, *options, "--exclude-removed")
    reference = records(runner, without_removed, name, *options)
    assert reference
    assert without_flag(selected) == without_flag(approx_records(reference))
    if name == "rater-quality":
        assert not any(r["published_removed"] for r in selected)


def test_raters_from_stdin(runner: CliRunner, ingested: Path, raw_350: pd.DataFrame) -> None:
    ids = sorted(raw_350["rater_id"].unique())[5:9]
    stdin = "\n" + "\n".join(f"  {i} " for i in ids) + "\n\n"  # blank lines and spaces
    result = invoke(runner, ingested, "overview", "--raters", "-", "-f", "json", stdin=stdin)
    assert result.exit_code == 0, result.output
    assert result.stderr == "raters: 4 raters from stdin\n"
    subset = raw_350[raw_350["rater_id"].isin(ids)]
    assert json.loads(result.stdout) == approx_records(
        [
            {
                "dataset": "350",  # none of them rated DICES-990: no row for it
                "conversations": 350,
                "raters": 4,
                "ratings": 1400,
                "share_no": (subset["Q_overall"] == "No").sum() / 1400,
                "share_yes": (subset["Q_overall"] == "Yes").sum() / 1400,
                "share_unsure": (subset["Q_overall"] == "Unsure").sum() / 1400,
            }
        ]
    )


def test_raters_and_exclude_removed_combine(runner: CliRunner, ingested: Path) -> None:
    removed = sorted(PUBLISHED_REMOVED["350"])[:3]
    quality = records(runner, ingested, "rater-quality", "-d", "350")
    kept = [r["rater_id"] for r in quality if not r["published_removed"]][:2]
    stdin = "\n".join(str(i) for i in [*removed, *kept])
    result = invoke(
        runner, ingested, "rater-quality", "--raters", "-", "--exclude-removed", "-f", "json",
        stdin=stdin,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "raters: without the raters the DICES authors removed; 5 raters from stdin\n"
    )
    assert [r["rater_id"] for r in json.loads(result.stdout)] == sorted(kept)


def test_raters_that_match_nobody_give_an_empty_result(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "overview", "--raters", "-", "-f", "csv", stdin="1\n2\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == ",".join(QUERIES["overview"][1]) + "\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("296708581782793\nabc\n", "line 2: 'abc' is not a rater id"),
        ("296708581782793\n\n12.5\n", "line 3: '12.5' is not a rater id"),
        ("rater_id,x\n296708581782793,a\nnope,b\n", "line 3: 'nope' is not a rater id"),
        ("id,x\n296708581782793,a\n", "line 1 has columns but none is named rater_id"),
        ("", "no rater ids found"),
        ("\n\n", "no rater ids found"),
    ],
)
def test_bad_raters_file(
    content: str, message: str, runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    path = tmp_path / "raters.txt"
    path.write_text(content, encoding="utf-8")
    result = invoke(runner, ingested, "overview", "--raters", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: {path}: {message}\n"


def test_bad_raters_on_stdin(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "overview", "--raters", "-", stdin="1\n2\nthree\n")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: stdin: line 3: 'three' is not a rater id\n"


def test_missing_raters_file(runner: CliRunner, ingested: Path, tmp_path: Path) -> None:
    path = tmp_path / "absent.txt"
    result = invoke(runner, ingested, "overview", "--raters", str(path))
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot read --raters {path}: No such file or directory\n"


# ----------------------------------------------------------------------------- usage errors


def assert_usage_error(result: Result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\nTry 'dices query -h' for help.\n"


def assert_click_usage_error(result: Result, words: str) -> None:
    """A usage error that Click words (in a box on stderr): exit 2, nothing on stdout."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert words in " ".join(result.stderr.replace("│", " ").split())


def test_unknown_query(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "overveiw")
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        "Error: no query 'overveiw': did you mean 'overview'? The queries are: "
    )
    for name in QUERIES:
        assert name in first
    assert "`dices query --list` describes them" in first


def test_unknown_by_column(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "qoverall-by-demographic", "--by", "rater_height")
    assert_click_usage_error(
        result,
        "Invalid value for '--by': 'rater_height' is not one of "
        + ", ".join(f"'{c}'" for c in GROUP_COLUMNS),
    )
    assert GROUP_COLUMNS == (
        "rater_gender",
        "rater_race",
        "rater_raw_race",
        "rater_age",
        "rater_education",
        "rater_locale",
        "phase",
    )


def test_by_is_required(runner: CliRunner, ingested: Path) -> None:
    assert_click_usage_error(
        invoke(runner, ingested, "qoverall-by-demographic"),
        "Missing option '--by'. Choose from: " + ", ".join(GROUP_COLUMNS),
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["overview", "--by", "rater_gender"],
            "overview does not take --by; it takes: no options",
        ),
        (
            ["item-distribution", "--rule", "threshold"],
            "item-distribution does not take --rule; it takes: --by",
        ),
        (
            ["degree-of-harm", "--threshold", "0.3"],
            "degree-of-harm does not take --threshold; it takes: --by, --interval, --permutations, "
            "--seed, --alternative",
        ),
        (
            ["qoverall-by-demographic", "--by", "rater_age", "--rule", "plurality"],
            "qoverall-by-demographic does not take --rule; it takes: --by, --interval, "
            "--permutations, --seed, --alternative",
        ),
        (
            ["gold-vs-crowd", "--threshold", "0.3"],
            "--threshold applies only with --rule threshold",
        ),
    ],
)
def test_options_a_query_does_not_take(
    args: list[str], message: str, runner: CliRunner, ingested: Path
) -> None:
    assert_usage_error(invoke(runner, ingested, *args), message)


def test_a_value_a_query_does_not_allow(runner: CliRunner, ingested: Path) -> None:
    assert_click_usage_error(
        invoke(runner, ingested, "gold-vs-crowd", "--rule", "majority"),
        "Invalid value for '--rule': 'majority' is not one of 'plurality', 'threshold'.",
    )


@pytest.mark.parametrize("name", sorted(GOLD_ONLY))
def test_gold_queries_refuse_dices_990(name: str, runner: CliRunner, ingested: Path) -> None:
    assert_usage_error(
        invoke(runner, ingested, name, "-d", "990"),
        "this query applies to DICES-350 only, not DICES-990",
    )


@pytest.mark.parametrize("name", sorted(GOLD_ONLY))
def test_gold_queries_say_they_skip_dices_990(name: str, runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, name)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"note: {name} does not apply to DICES-990; showing the datasets it applies to\n"
    )


@pytest.mark.parametrize("name", sorted(GOLD_ONLY))
def test_gold_queries_with_only_dices_990_ingested(
    name: str, runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "990").symlink_to((ingested / "990").resolve())
    assert_usage_error(
        invoke(runner, data, name), "this query applies to DICES-350 only, not DICES-990"
    )
    assert invoke(runner, data, "overview").exit_code == 0


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_nothing_ingested(name: str, runner: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "empty"
    result = invoke(runner, data, name, *QUERIES[name][0])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: nothing is ingested in {data}; run `dices ingest FILE --data {data}` first\n"
    )


# ----------------------------------------------------------------------------- formats


def same_value(text_value: Any, json_value: Any) -> bool:
    """A value read back by DuckDB from CSV/TSV equals the JSON one (types may differ)."""
    if json_value is None or text_value is None:
        return json_value is None and text_value is None
    if isinstance(json_value, bool):
        return text_value is json_value
    if isinstance(text_value, bool):  # DuckDB's sniffer reads a column of Yes/No as BOOLEAN
        return json_value == ("Yes" if text_value else "No")
    if isinstance(json_value, int | float):
        return isinstance(text_value, int | float) and text_value == json_value
    return str(text_value) == str(json_value)


def read_delimited(path: Path, delimiter: str) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect()
    relation = con.sql(
        "SELECT * FROM read_csv($path, header = true, delim = $delim)",
        params={"path": str(path), "delim": delimiter},
    )
    return list(relation.columns), relation.fetchall()


FORMAT_CASES = [
    (name, dataset)
    for name in sorted(QUERIES)
    for dataset in ("350", "990")
    if not (name in GOLD_ONLY and dataset == "990")
]


@pytest.mark.parametrize(("name", "dataset"), FORMAT_CASES)
def test_csv_json_and_parquet_on_each_dataset(
    name: str, dataset: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    options, columns = QUERIES[name]
    args = [name, *options, "-d", dataset]
    # A dataset's rows are those it has in the result of both (the JSON records of
    # test_tsv_jsonl_and_json_by_extension), whichever datasets are asked for.
    reference = [r for r in both_datasets(sample, name) if r["dataset"] == dataset]
    assert reference
    assert all(list(r) == columns for r in reference)

    result = invoke(runner, sample, *args, "-f", "csv")
    assert result.exit_code == 0, result.output
    assert_reads_back(result, tmp_path / "out.csv", ",", columns, reference)

    path = tmp_path / "out.parquet"
    result = invoke(runner, sample, *args, "-o", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    table = pq.read_table(path)
    assert table.column_names == columns
    assert table.to_pylist() == reference


@cache
def both_datasets(data: Path, name: str) -> list[dict]:
    """The JSON records of query `name` on both datasets of `data` (where it applies)."""
    return records(CliRunner(), data, name, *QUERIES[name][0])


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_tsv_jsonl_and_json_by_extension(
    name: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    options, columns = QUERIES[name]
    args = [name, *options]  # both datasets (where the query applies)
    reference = both_datasets(sample, name)
    assert all(list(r) == columns for r in reference)
    expected_datasets = ["350"] if name in GOLD_ONLY else ["350", "990"]
    assert sorted({r["dataset"] for r in reference}) == expected_datasets

    result = invoke(runner, sample, *args, "-f", "tsv")
    assert result.exit_code == 0, result.output
    assert_reads_back(result, tmp_path / "out.tsv", "\t", columns, reference)

    result = invoke(runner, sample, *args, "-f", "jsonl")
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.stdout.splitlines()] == reference

    path = tmp_path / "out.json"  # json chosen by the extension
    result = invoke(runner, sample, *args, "-o", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert json.loads(path.read_text(encoding="utf-8")) == reference


def assert_reads_back(
    result: Result, path: Path, delimiter: str, columns: list[str], reference: list[dict]
) -> None:
    """The delimited output, read by DuckDB's read_csv, holds the JSON output's values."""
    path.write_bytes(result.stdout_bytes)
    assert result.stdout.splitlines()[0] == delimiter.join(columns)
    read_columns, rows = read_delimited(path, delimiter)
    assert read_columns == columns
    assert len(rows) == len(reference)
    for row, record in zip(rows, reference, strict=True):
        for value, column in zip(row, columns, strict=True):
            assert same_value(value, record[column]), (column, value, record[column])


def test_parquet_types(runner: CliRunner, ingested: Path, tmp_path: Path) -> None:
    path = tmp_path / "quality.parquet"
    result = invoke(runner, ingested, "rater-quality", "-o", str(path))
    assert result.exit_code == 0, result.output
    schema = pq.read_schema(path)
    assert str(schema.field("rater_id").type) == "int64"
    assert str(schema.field("ratings").type) == "int64"
    assert str(schema.field("agreement_loo").type) == "double"
    assert str(schema.field("published_removed").type) == "bool"
    # An ENUM stays one, as DuckDB gives it (issue 11 §2; it was written as plain strings).
    assert (
        str(schema.field("rater_gender").type)
        == "dictionary<values=string, indices=uint8, ordered=0>"
    )


def test_parquet_to_a_pipe(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "overview", "-f", "parquet")
    assert result.exit_code == 0, result.output
    table = pq.read_table(io.BytesIO(result.stdout_bytes))
    assert table.column("ratings").to_pylist() == [43_050, 72_103]


def test_csv_is_the_default_in_a_pipe(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, ingested, "gold-vs-crowd-summary", "--rule", "threshold")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = "dataset,conversations,ties,accuracy,precision,recall,f1,kappa"
    assert lines[0] == f"{header},kappa_ci_low,kappa_ci_high"
    assert lines[1].startswith("350,350,0,")  # no ties under the threshold rule: 0, not empty


def test_format_table_with_an_output_file(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    path = tmp_path / "out.csv"
    result = invoke(runner, ingested, "overview", "--format", "table", "-o", str(path))
    assert_usage_error(
        result,
        "--format table is for the terminal; with -o pick csv, tsv, json, jsonl or parquet",
    )
    assert not path.exists()


def test_list_and_explain(runner: CliRunner, ingested: Path) -> None:
    result = runner.invoke(app, ["query", "--list", "-f", "json"])
    assert result.exit_code == 0, result.output
    listed = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(QUERIES) <= set(listed)
    assert listed["gold-vs-crowd"]["datasets"] == "350"
    assert listed["gold-vs-crowd"]["parameters"] == "--by --rule --threshold"
    result = runner.invoke(app, ["query", "gold-vs-crowd", "--explain"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("gold-vs-crowd: Confusion of the experts' safety_gold")
    assert "Datasets: DICES-350\n" in result.stdout
    assert "  --rule (choice(plurality|threshold), default plurality):" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["overview", "--format", "xml"],
        ["overview", "-d", "123"],
        ["gold-vs-crowd", "--threshold", "x"],
    ],
)
def test_bad_option_values_are_usage_errors(
    args: list[str], runner: CliRunner, ingested: Path
) -> None:
    result = invoke(runner, ingested, *args)
    assert result.exit_code == 2
    # The datasets are the registry's, a data directory's declared ones among them: checked
    # once it is read.
    said = (
        "--dataset must be one of: all, 350, 990, prosocial, " if "-d" in args else "Invalid value"
    )
    assert said in result.stderr
    assert "bug in dices" not in result.stderr


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_the_derived_answer_columns_follow_the_stored_answers(dataset: str, sample: Path) -> None:
    """granular_answers is the Q2-Q6 answers in order; implied_overall is Yes if any
    sub-answer is Yes, else Unsure if any is, else No (pandas, from the stored file). A
    missing answer, which the data lacks, is put in every fifth row's first one."""
    from dices_cli.families.schema import DATASETS
    from dices_cli.queries.engine import INTERNAL, open_session
    from dices_cli.store.datasets import Store

    declared = DATASETS[dataset]
    first = declared.granular[0]
    stored = Store(sample).open(dataset).table_path("ratings")
    raw = pd.read_parquet(stored).sort_values("id", ignore_index=True)
    raw[first] = raw[first].where(raw["id"] % 5 != 0, None)
    session = open_session(Store(sample), dataset)
    # The view reads the stored file through its internal view: replaced by one with gaps.
    stored_view = f"{INTERNAL}.ratings_{dataset}"
    session.con.execute(f"CREATE TABLE {INTERNAL}.copied AS SELECT * FROM {stored_view}")
    session.con.execute(
        f"CREATE OR REPLACE VIEW {stored_view} AS SELECT * REPLACE (CASE WHEN id % 5 = 0 "
        f'THEN NULL ELSE "{first}" END AS "{first}") FROM {INTERNAL}.copied'
    )
    view = session.con.execute(
        "SELECT id, granular_answers, implied_overall FROM ratings ORDER BY id"
    ).fetchall()
    subs = raw[list(declared.sub_questions)]
    implied = pd.Series("No", index=raw.index)
    implied[subs.eq("Unsure").any(axis=1)] = "Unsure"
    implied[subs.eq("Yes").any(axis=1)] = "Yes"
    granular = raw[list(declared.granular)].astype(object)
    assert (raw["id"] % 5 == 0).any() and raw[first].isna().any()
    assert [row[0] for row in view] == raw["id"].tolist()
    assert [row[2] for row in view] == implied.tolist()
    assert [row[1] for row in view] == [
        [None if pd.isna(answer) else answer for answer in row] for row in granular.values
    ]
