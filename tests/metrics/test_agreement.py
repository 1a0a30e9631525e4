"""`dices query agreement` end to end: the SQL, the compute step and the CLI on the replicas,
checked against the krippendorff package and counts made independently from the CSV files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import entropy
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.agreement import cross_replication_reliability
from dices_cli.metrics.compute import compute
from dices_cli.metrics.groups import METRICS
from dices_cli.metrics.permutation import shuffled_labellings
from dices_cli.queries.catalog import catalog, compute_step, get_query

ANSWERS = ["No", "Yes", "Unsure"]
COLUMNS = [
    "raters",
    *METRICS,
    *(f"{m}_p" for m in METRICS),
    *(f"{m}_p_bh" for m in METRICS),
    *(f"{m}_null_{end}" for m in METRICS for end in ("low", "high")),
]
USAGE_HINT = "Try 'dices query -h' for help.\n"


def agreement(runner: CliRunner, data: Path, *options: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["query", "agreement", "--data", str(data), "-f", "json", *options])
    assert result.exit_code == 0, result.output
    records: list[dict[str, Any]] = json.loads(result.stdout)
    return records


def fails(runner: CliRunner, data: Path, *arguments: str) -> tuple[int, str]:
    result = runner.invoke(app, ["query", *arguments, "--data", str(data)])
    assert result.stdout == ""
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def csv_ratings(replica_350: Path, replica_990: Path) -> dict[str, pd.DataFrame]:
    """The replicas' ratings read straight from the CSV files, not through dices."""
    columns = ["rater_id", "item_id", "rater_gender", "rater_age", "Q_overall"]
    return {
        "350": pd.read_csv(replica_350, usecols=[*columns, "Q2_harmful_content_overall"]),
        "990": pd.read_csv(replica_990, usecols=columns),
    }


def codes(ratings: pd.DataFrame, question: str, answers: list[str]) -> np.ndarray:
    """[rater, conversation] answer numbers; NaN where missing (or not among `answers`)."""
    numbered = ratings[question].map({a: float(i) for i, a in enumerate(answers)})
    matrix = ratings.assign(code=numbered).pivot(index="rater_id", columns="item_id", values="code")
    return matrix.to_numpy(dtype=float)


def package_alpha(
    ratings: pd.DataFrame, question: str = "Q_overall", answers: list[str] = ANSWERS
) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=codes(ratings, question, answers),
            level_of_measurement="nominal",
            value_domain=list(range(len(answers))),
        )
    )


def counts(ratings: pd.DataFrame, items: pd.Index) -> np.ndarray:
    """[category, conversation] counts of Q_overall, for the conversations `items`."""
    table = pd.crosstab(ratings["Q_overall"], ratings["item_id"])
    return table.reindex(index=ANSWERS, columns=items, fill_value=0).to_numpy(dtype=float)


def test_pool_metrics_equal_the_krippendorff_package_and_the_csv_counts(
    runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    rows = agreement(runner, ingested)
    assert [(r["dataset"], r["raters"]) for r in rows] == [("350", 123), ("990", 173)]
    for row in rows:
        ratings = csv_ratings[row["dataset"]]
        assert row["irr"] == pytest.approx(package_alpha(ratings), abs=1e-9)
        per_item = pd.crosstab(ratings["item_id"], ratings["Q_overall"]).to_numpy()
        shares = per_item / per_item.sum(axis=1, keepdims=True)
        assert row["negentropy"] == pytest.approx(
            np.mean(math.log(3) - entropy(shares, axis=1)), abs=1e-12
        )
        assert row["plurality_size"] == pytest.approx(shares.max(axis=1).mean(), abs=1e-12)
        assert [row[c] for c in COLUMNS if c not in ("raters", *POOL)] == [None] * 27


POOL = ("irr", "negentropy", "plurality_size")


def test_each_group_against_the_rest_on_the_replica(
    runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    rows = agreement(runner, ingested, "--by", "rater_gender", "--permutations", "0")
    assert [(r["dataset"], r["rater_gender"]) for r in rows] == [
        ("350", "Man"),
        ("350", "Woman"),
        ("990", "Man"),
        ("990", "Woman"),
    ]
    for row in rows:
        ratings = csv_ratings[row["dataset"]]
        inside = ratings[ratings["rater_gender"] == row["rater_gender"]]
        outside = ratings[ratings["rater_gender"] != row["rater_gender"]]
        items = pd.Index(sorted(ratings["item_id"].unique()))
        irr, rest_irr = package_alpha(inside), package_alpha(outside)
        xrr = float(cross_replication_reliability(counts(inside, items), counts(outside, items)))
        assert row["raters"] == inside["rater_id"].nunique()
        assert row["irr"] == pytest.approx(irr, abs=1e-9)
        assert row["xrr"] == pytest.approx(xrr, abs=1e-9)
        assert row["xrr_normalised"] == pytest.approx(xrr / math.sqrt(irr * rest_irr), abs=1e-9)
        assert row["gai"] == pytest.approx(irr / xrr, abs=1e-9)
        untested = [row[f"{m}_{c}"] for m in METRICS for c in ("p", "null_low", "null_high")]
        assert untested == [None] * 18  # --permutations 0: no test, no null range


def test_unsure_as_missing_and_another_question(
    runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    ratings = csv_ratings["350"]
    missing = agreement(runner, ingested, "-d", "350", "--unsure", "missing")
    assert missing[0]["irr"] == pytest.approx(
        package_alpha(ratings, answers=["No", "Yes"]), abs=1e-9
    )
    raters_with_an_answer = ratings[ratings["Q_overall"] != "Unsure"]["rater_id"].nunique()
    assert missing[0]["raters"] == raters_with_an_answer
    question = "Q2_harmful_content_overall"
    other = agreement(runner, ingested, "-d", "350", "--question", question)
    assert other[0]["irr"] == pytest.approx(package_alpha(ratings, question), abs=1e-9)


def test_p_values_repeat_with_the_seed_and_are_adjusted_per_metric(
    runner: CliRunner, ingested: Path
) -> None:
    options = ("-d", "350", "--by", "rater_age", "--permutations", "200")
    first = agreement(runner, ingested, *options, "--seed", "5")
    assert [r["rater_age"] for r in first] == ["gen z", "millenial", "gen x+"]  # enum order
    assert agreement(runner, ingested, *options, "--seed", "5") == first
    other_seed = agreement(runner, ingested, *options, "--seed", "6")
    assert [r["irr_p"] for r in other_seed] != [r["irr_p"] for r in first]
    for metric in METRICS:
        p = [r[f"{metric}_p"] for r in first]
        assert all(2 / 201 <= value <= 1 for value in p)  # (count + 1) / (N + 1), doubled
        order = np.argsort(p)
        scaled = np.minimum.accumulate((np.array(p)[order] * 3 / [1, 2, 3])[::-1])[::-1]
        assert [first[i][f"{metric}_p_bh"] for i in order] == pytest.approx(
            np.minimum(scaled, 1), abs=1e-12
        )


def test_one_dataset_gives_the_same_rows_as_both(runner: CliRunner, ingested: Path) -> None:
    options = ("--by", "rater_age", "--permutations", "50")
    both = agreement(runner, ingested, *options)
    assert agreement(runner, ingested, "-d", "990", *options) == [
        r for r in both if r["dataset"] == "990"
    ]


def test_the_default_run_has_1000_permutations(runner: CliRunner, ingested: Path) -> None:
    rows = agreement(runner, ingested, "-d", "350", "--by", "rater_gender")
    p_values = [r[f"{m}_p"] for r in rows for m in METRICS]
    # p = 2 * (count + 1) / 1001 below 1: a multiple of 2 / 1001 (and of no 2 / (N + 1) with
    # another N < 1000, since 1001 = 7 * 11 * 13).
    assert min(p_values) < 1
    assert all(p == 1 or p * 1001 / 2 == pytest.approx(round(p * 1001 / 2)) for p in p_values)


def test_a_value_outside_its_null_range_is_one_with_a_small_p_value(
    runner: CliRunner, ingested: Path
) -> None:
    rows = agreement(runner, ingested, "-d", "350", "--by", "rater_race")  # 1000 permutations
    # Of 1000 permuted values, the 97.5th percentile lies between the 975th and 976th
    # smallest: a value above it has at most 25 permuted values at or above it, so p is at
    # most 2 * (25 + 1) / 1001; a value at or below it has at least 25 above it, so p is at
    # least that. The same holds at the low end.
    edge = 2 * 26 / 1001
    outside = []
    for row in rows:
        for metric in METRICS:
            value, p = row[metric], row[f"{metric}_p"]
            low, high = row[f"{metric}_null_low"], row[f"{metric}_null_high"]
            if value < low or value > high:
                outside.append((row["rater_race"], metric))
                assert p <= edge, (row["rater_race"], metric)
            else:
                assert p >= edge, (row["rater_race"], metric)
    assert ("Multiracial", "irr") in outside
    assert 0 < len(outside) < len(rows) * len(METRICS) / 2


def test_rater_selection_applies(runner: CliRunner, ingested: Path) -> None:
    assert agreement(runner, ingested, "-d", "350", "--exclude-removed")[0]["raters"] == 104
    overview = runner.invoke(
        app, ["query", "overview", "--data", str(ingested), "-d", "350", "--min-quality", "0.6"]
    )
    kept = int(overview.stdout.splitlines()[1].split(",")[2])
    assert 0 < kept < 123
    assert agreement(runner, ingested, "-d", "350", "--min-quality", "0.6")[0]["raters"] == kept


def test_csv_header_and_whole_pool_columns(runner: CliRunner, ingested: Path) -> None:
    result = runner.invoke(
        app, ["query", "agreement", "--data", str(ingested), "-d", "990", "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()
    assert header == ",".join(["dataset", *COLUMNS])
    cells = row.split(",")
    assert cells[:2] == ["990", "173"]
    assert cells[3:6] == ["", "", ""]  # xrr, xrr_normalised, gai: no rest to compare with
    assert cells[8:] == [""] * 24  # no groups, no permutation test, no null range
    assert all(0 < float(cell) < 1 for cell in cells[2:3] + cells[6:8])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["agreement", "-d", "990", "--question", "Q2_harmful_content_dangerous_content"],
            "DICES-990 has no answer column 'Q2_harmful_content_dangerous_content'; "
            "choose another --question or --dataset",
        ),
        (
            ["overview", "--permutations", "10"],
            "overview does not take --permutations; it takes: no options",
        ),
        (
            ["qoverall-by-demographic", "--by", "rater_age", "--question", "Q_overall"],
            "qoverall-by-demographic does not take --question; it takes: --by, --interval, "
            "--permutations, --seed, --alternative",
        ),
    ],
)
def test_usage_errors(
    runner: CliRunner, ingested: Path, arguments: list[str], message: str
) -> None:
    assert fails(runner, ingested, *arguments) == (2, f"Error: {message}\n{USAGE_HINT}")


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (
            ["agreement", "--question", "Q_nothing"],
            "Invalid value for '--question': 'Q_nothing' is not one of 'Q2_harmful",
        ),
        (
            ["agreement", "--unsure", "ignore"],
            "Invalid value for '--unsure': 'ignore' is not one of 'category', 'missing'.",
        ),
        (
            ["agreement", "--by", "rater_age", "--permutations", "-1"],
            "Invalid value for '--permutations': -1 is not in the range 0<=x<=100000.",
        ),
        (
            ["agreement", "--by", "rater_age", "--seed", "-2"],
            "Invalid value for '--seed': -2 is not in the range 0<=x<=4294967295.",
        ),
    ],
)
def test_usage_errors_click_words(
    runner: CliRunner, ingested: Path, arguments: list[str], words: str
) -> None:
    result = runner.invoke(app, ["query", *arguments, "--data", str(ingested)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert words in " ".join(result.stderr.replace("│", " ").split())


def test_explain_documents_every_option(runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "agreement", "--explain"])
    assert result.exit_code == 0, result.output
    for option in ("--by", "--question", "--unsure", "--permutations", "--seed"):
        assert f"\n  {option} (" in result.stdout
    assert "--permutations (integer in [0, 100000], default 1000)" in result.stdout
    assert result.stdout.endswith(
        "sql/agreement.sql\nThen computed in Python by: dices_cli.metrics.compute:compute\n"
    )


def test_only_the_resampling_queries_have_a_compute_step() -> None:
    steps = {name: query.compute for name, query in catalog().items()}
    assert steps.pop("agreement") == "dices_cli.metrics.compute:compute"
    assert steps.pop("group-disagreement") == "dices_cli.metrics.disagreement:group_disagreement"
    for name in ("qoverall-by-demographic", "degree-of-harm", "harm-types"):
        assert steps.pop(name) == "dices_cli.metrics.shares:compute"
    assert set(steps.values()) == {None}
    assert compute_step(get_query("agreement")) is compute
    assert compute_step(get_query("overview")) is None


PARAMETERS = {"by": ["phase"], "question": "Q_overall", "unsure": "category", "seed": 0}


def enum(cells: list[str | None], values: list[str]) -> pa.DictionaryArray:
    """An ENUM column as DuckDB hands it over: Arrow dictionary codes into `values`."""
    codes = pa.array([None if cell is None else values.index(cell) for cell in cells], pa.int8())
    return pa.DictionaryArray.from_arrays(codes, pa.array(values))


def test_a_rater_in_two_groups_counts_in_each() -> None:
    # With a rating-level column such as phase, rater 1 rated in two phases.
    table = pa.table(
        {
            "dataset": enum(["350"] * 7, ["350", "990"]),
            "phase": enum(["Phase1"] * 4 + ["Phase2"] * 3, ["Phase1", "Phase2", "Phase3"]),
            "rater_id": [1, 1, 2, 2, 1, 3, 3],
            "item_id": [10, 11, 10, 11, 12, 10, 12],
            "Q_overall": enum(["Yes", "No", "Yes", "No", "Yes", "No", "Yes"], ANSWERS),
        }
    )
    result = compute(table, PARAMETERS | {"permutations": 0})
    assert result.columns == ["dataset", "phase", *COLUMNS]
    assert result.numeric == [False, False] + [True] * 31
    assert [(r[0], r[1], r[2], r[3]) for r in result.rows] == [
        ("350", "Phase1", 2, 1.0),  # two raters who agree everywhere
        ("350", "Phase2", 2, None),  # one answer per conversation: nothing pairable
    ]


def test_groups_come_in_enum_order_then_text_order_with_null_last() -> None:
    # Rows in no particular order, as the SQL leaves them; one rater per group value.
    groups = ["Woman", None, "Man", "Woman", None, "Man"]
    raw_race = ["White", "Asian", None, "White", "Asian", None]
    table = pa.table(
        {
            "dataset": enum(["990", "350", "350", "990", "350", "350"], ["350", "990"]),
            "rater_gender": enum(groups, ["Man", "Woman"]),
            "rater_raw_race": raw_race,
            "rater_id": [3, 2, 1, 3, 2, 1],
            "item_id": [10, 10, 10, 11, 11, 11],
            "Q_overall": enum(["Yes", "No", "Unsure", "No", None, "Yes"], ANSWERS),
        }
    )
    parameters = PARAMETERS | {"by": ["rater_gender", "rater_raw_race"], "permutations": 0}
    result = compute(table, parameters)
    assert [r[:4] for r in result.rows] == [
        ("350", "Man", None, 1),
        ("350", None, "Asian", 1),
        ("990", "Woman", "White", 1),
    ]


def test_a_dataset_without_any_counted_answer_has_no_rows() -> None:
    table = pa.table(
        {
            "dataset": enum(["350", "350", "990"], ["350", "990"]),
            "rater_id": [1, 2, 1],
            "item_id": [10, 10, 10],
            "Q_overall": enum(["Unsure", "Unsure", None], ANSWERS),
        }
    )
    parameters = PARAMETERS | {"by": [], "unsure": "missing", "permutations": 0}
    assert compute(table, parameters).rows == []


AGES = ["gen z", "millenial", "gen x+"]


def category_counts(codes: np.ndarray) -> np.ndarray:
    """[category, conversation] counts of [rater, conversation] answer numbers (NaN: none)."""
    return np.stack([(codes == c).sum(axis=0) for c in range(len(ANSWERS))]).astype(float)


def test_the_null_range_is_the_middle_95_percent_of_the_seeded_relabellings() -> None:
    # 12 raters in three age groups, random answers to 15 conversations, a fifth missing.
    rng = np.random.default_rng(3)
    raters, permutations, seed = 12, 200, 7
    age = rng.permutation(np.repeat([0, 1, 2], 4))
    answers = rng.choice(3, size=(raters, 15), p=[0.5, 0.3, 0.2]).astype(float)
    codes = np.where(rng.random(answers.shape) < 0.2, np.nan, answers)
    rater, item = np.nonzero(~np.isnan(codes))
    table = pa.table(
        {
            "dataset": enum(["990"] * len(rater), ["350", "990"]),
            "rater_age": enum([AGES[age[r]] for r in rater], AGES),
            "rater_id": rater + 100,
            "item_id": item + 500,
            "Q_overall": enum([ANSWERS[int(code)] for code in codes[rater, item]], ANSWERS),
        }
    )
    parameters = PARAMETERS | {"by": ["rater_age"], "permutations": permutations, "seed": seed}
    result = compute(table, parameters)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    # The same draws: the compute step numbers raters by group, then id, and relabels them
    # with shuffled_labellings. Each relabelled group is measured here on its own.
    raters_in_order = np.array(sorted(range(raters), key=lambda r: (age[r], r)))
    drawn = shuffled_labellings(age[raters_in_order], permutations, seed)
    for group, row in enumerate(rows):
        assert (row["rater_age"], row["raters"]) == (AGES[group], 4)
        null: dict[str, list[float]] = {"irr": [], "xrr": [], "gai": []}
        for labels in drawn:
            inside = raters_in_order[labels == group]
            outside = raters_in_order[labels != group]
            irr = krippendorff.alpha(
                reliability_data=codes[inside],
                level_of_measurement="nominal",
                value_domain=[0, 1, 2],
            )
            xrr = float(
                cross_replication_reliability(
                    category_counts(codes[inside]), category_counts(codes[outside])
                )
            )
            null["irr"].append(irr)
            null["xrr"].append(xrr)
            null["gai"].append(irr / xrr if xrr > 0 else math.nan)
        for metric, values in null.items():
            low, high = np.nanpercentile(values, [2.5, 97.5])
            assert low < high
            assert row[f"{metric}_null_low"] == pytest.approx(low, abs=1e-9)
            assert row[f"{metric}_null_high"] == pytest.approx(high, abs=1e-9)
