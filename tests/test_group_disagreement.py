"""`dices query group-disagreement` and `dices query item-distribution --by` on the replicas,
checked against pandas and scipy computed straight from the CSV files; the compute step's
corner cases on small tables; the independence tests against scipy on random tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from typer.testing import CliRunner, Result

from dices_cli.main import app
from dices_cli.metrics.disagreement import group_disagreement
from dices_cli.metrics.independence import (
    chi_square_survival,
    exact_p_values,
    independence_tests,
)
from dices_cli.queries.catalog import GROUP_COLUMNS, compute_step, get_query
from dices_cli.schema import AGE, ANSWER, EDUCATION, GENDER, RACE

ORDER: dict[str, Sequence[str]] = {
    "rater_gender": GENDER,
    "rater_race": RACE,
    "rater_age": AGE,
    "rater_education": EDUCATION,
}
# The tests the documented rule picks on the replicas, per --by: gender gives 2 x 3 tables;
# education 3 x 2 where an answer is missing, else 3 x 3; race and gender x age larger ones.
TESTS = {
    "rater_gender": {"exact"},
    "rater_race": {"chi-square"},
    "rater_education": {"exact", "chi-square"},
    "rater_gender+rater_age": {"chi-square"},
}
COLUMNS = [
    "dataset",
    "item_id",
    "groups",
    "ratings",
    "highest_group",
    "highest_share_yes",
    "lowest_group",
    "lowest_share_yes",
    "gap",
    "test",
    "p_value",
    "p_adjusted",
]
TOLERANCE = 1e-9
USAGE_HINT = "Try 'dices query -h' for help.\n"


def invoke(runner: CliRunner, data: Path, *args: str) -> Result:
    return runner.invoke(app, ["query", *args, "--data", str(data)])


def records(runner: CliRunner, data: Path, *args: str) -> list[dict[str, Any]]:
    result = invoke(runner, data, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    parsed: list[dict[str, Any]] = json.loads(result.stdout)
    return parsed


def approx(value: Any) -> Any:
    return pytest.approx(value, abs=TOLERANCE, rel=TOLERANCE) if isinstance(value, float) else value


@pytest.fixture(scope="module")
def csv_ratings(replica_350: Path, replica_990: Path) -> dict[str, pd.DataFrame]:
    """The replicas' ratings read straight from the CSV files, not through dices."""
    columns = ["rater_id", "item_id", "Q_overall", *ORDER]
    annotations = ["degree_of_harm", "harm_type"]
    return {
        "350": pd.read_csv(replica_350, usecols=[*columns, *annotations, "safety_gold"]),
        "990": pd.read_csv(replica_990, usecols=[*columns, *annotations]),
    }


# ----------------------------------------------------------------------------- scipy


def enumerated_exact(table: np.ndarray) -> float:
    """Freeman-Halton by brute force: every table with `table`'s margins, weighed by scipy's
    random_table law; the p-value sums those no more probable than `table` (R's tolerance)."""
    if table.shape[0] != 2:
        table = table.T
    rows, columns = table.sum(axis=1), table.sum(axis=0)
    law = stats.random_table(rows, columns)
    grid = np.indices([c + 1 for c in columns]).reshape(len(columns), -1).T
    first_rows = grid[grid.sum(axis=1) == rows[0]]
    probabilities = law.pmf(np.stack([first_rows, columns - first_rows], axis=1))
    return float(min(1.0, probabilities[probabilities <= law.pmf(table) * (1 + 1e-7)].sum()))


def scipy_test(table: np.ndarray) -> tuple[str | None, float | None]:
    """The query's documented rule, with scipy doing each test."""
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[0] == 1:
        return None, None
    if table.shape[1] == 1:
        return "exact", float(stats.fisher_exact(table).pvalue)  # scipy: 1 for one column
    if table.shape == (2, 2):
        return "exact", float(stats.fisher_exact(table).pvalue)
    if sorted(table.shape) == [2, 3]:
        return "exact", enumerated_exact(table)
    return "chi-square", float(stats.chi2_contingency(table, correction=False).pvalue)


def expected_disagreement(ratings: dict[str, pd.DataFrame], by: list[str]) -> list[dict]:
    expected: list[dict] = []
    for dataset, frame in ratings.items():
        counts = pd.crosstab([frame["item_id"], *(frame[c] for c in by)], frame["Q_overall"])
        counts = counts.reindex(columns=list(ANSWER), fill_value=0).reset_index()
        # groups in the columns' order, as the query promises
        for column in by:
            counts[column] = pd.Categorical(counts[column], categories=ORDER[column])
        counts = counts.sort_values(["item_id", *by])
        items = counts["item_id"].to_numpy()
        tables = counts[list(ANSWER)].to_numpy()
        labels = [" & ".join(key) for key in counts[by].astype(str).itertuples(index=False)]
        found = []
        for item_id in np.unique(items):
            rows = np.flatnonzero(items == item_id)
            table, names = tables[rows], [labels[row] for row in rows]
            share = table[:, 1] / table.sum(axis=1)
            test, p_value = scipy_test(table)
            found.append(
                {
                    "dataset": dataset,
                    "item_id": int(item_id),
                    "groups": len(table),
                    "ratings": int(table.sum()),
                    "highest_group": names[int(np.argmax(share))],  # the first on a tie
                    "highest_share_yes": share.max(),
                    "lowest_group": names[int(np.argmin(share))],
                    "lowest_share_yes": share.min(),
                    "gap": share.max() - share.min(),
                    "test": test,
                    "p_value": p_value,
                }
            )
        adjusted = stats.false_discovery_control([r["p_value"] for r in found], method="bh")
        for record, p_adjusted in zip(found, adjusted, strict=True):
            record["p_adjusted"] = float(p_adjusted)
        expected += found
    expected.sort(key=lambda r: (-round(r["gap"], 12), r["dataset"], r["item_id"]))
    return expected


# ----------------------------------------------------------------------------- the replicas


@pytest.mark.parametrize("by", [name.split("+") for name in TESTS], ids="+".join)
def test_group_disagreement_matches_pandas_and_scipy(
    by: list[str], runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    options = [option for column in by for option in ("--by", column)]
    result = records(runner, ingested, "group-disagreement", *options)
    expected = expected_disagreement(csv_ratings, by)
    assert len(result) == 350 + 990
    assert [list(r) for r in result[:1]] == [COLUMNS]
    assert [(r["dataset"], r["item_id"]) for r in result] == [
        (r["dataset"], r["item_id"]) for r in expected
    ]
    assert result == [{key: approx(value) for key, value in r.items()} for r in expected]
    assert {r["test"] for r in result} == TESTS["+".join(by)]


def test_p_adjusted_is_per_dataset(runner: CliRunner, ingested: Path) -> None:
    both = records(runner, ingested, "group-disagreement", "--by", "rater_gender")
    alone = records(runner, ingested, "group-disagreement", "--by", "rater_gender", "-d", "350")
    assert [r for r in both if r["dataset"] == "350"] == alone


def test_one_group_per_conversation_has_no_test(
    runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame], tmp_path: Path
) -> None:
    women = csv_ratings["350"].query("rater_gender == 'Woman'")["rater_id"].unique()
    raters = tmp_path / "women.txt"
    raters.write_text("".join(f"{rater}\n" for rater in sorted(women)))
    options = ["--by", "rater_gender", "-d", "350", "--raters", str(raters)]
    output = tmp_path / "women.parquet"
    result = invoke(runner, ingested, "group-disagreement", *options, "-o", str(output))
    assert result.exit_code == 0, result.output
    rows = pq.read_table(output).to_pylist()
    assert len(rows) == 350
    assert {(r["groups"], r["highest_group"], r["lowest_group"], r["gap"]) for r in rows} == {
        (1, "Woman", "Woman", 0.0)
    }
    assert {(r["test"], r["p_value"], r["p_adjusted"]) for r in rows} == {(None, None, None)}
    assert [r["item_id"] for r in rows] == list(range(1, 351))  # all tied: by item_id


def plurality(n_no: int, n_yes: int, n_unsure: int) -> str | None:
    counts = dict(zip(ANSWER, (n_no, n_yes, n_unsure), strict=True))
    winners = [answer for answer, n in counts.items() if n == max(counts.values())]
    return winners[0] if len(winners) == 1 else "tie"


def entropy_bits(*counts: int) -> float:
    return sum(-(n / sum(counts)) * math.log2(n / sum(counts)) for n in counts if n > 0)


def missing_as_none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_item_distribution_by_gender_matches_pandas(
    dataset: str, runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    frame = csv_ratings[dataset]
    counts = (
        pd.crosstab([frame["item_id"], frame["rater_gender"]], frame["Q_overall"])
        .reindex(columns=list(ANSWER), fill_value=0)
        .reset_index()
    )
    items = frame.groupby("item_id")[["degree_of_harm", "harm_type"]].first()
    gold = frame.groupby("item_id")["safety_gold"].first() if dataset == "350" else None
    expected = []
    for row in counts.to_dict("records"):
        n_no, n_yes, n_unsure = row["No"], row["Yes"], row["Unsure"]
        ratings = n_no + n_yes + n_unsure
        expected.append(
            {
                "dataset": dataset,
                "item_id": row["item_id"],
                "rater_gender": row["rater_gender"],
                "degree_of_harm": missing_as_none(items.loc[row["item_id"], "degree_of_harm"]),
                "harm_type": missing_as_none(items.loc[row["item_id"], "harm_type"]),
                "safety_gold": None if gold is None else gold.loc[row["item_id"]],
                "ratings": ratings,
                "n_no": n_no,
                "n_yes": n_yes,
                "n_unsure": n_unsure,
                "share_yes": approx(n_yes / ratings),
                "plurality": plurality(n_no, n_yes, n_unsure),
                "entropy_bits": approx(entropy_bits(n_no, n_yes, n_unsure)),
            }
        )
    expected.sort(key=lambda r: (r["item_id"], GENDER.index(r["rater_gender"])))
    result = records(runner, ingested, "item-distribution", "--by", "rater_gender", "-d", dataset)
    assert result == expected
    assert len(result) == {"350": 700, "990": 1980}[dataset]


def test_item_distribution_by_an_intersection_adds_up_to_the_whole(
    runner: CliRunner, ingested: Path
) -> None:
    whole = records(runner, ingested, "item-distribution")
    split = records(
        runner, ingested, "item-distribution", "--by", "rater_race", "--by", "rater_gender"
    )
    assert list(split[0])[:4] == ["dataset", "item_id", "rater_gender", "rater_race"]
    summed: dict[tuple[str, int], list[int]] = {}
    for r in split:
        totals = summed.setdefault((r["dataset"], r["item_id"]), [0, 0, 0, 0])
        for index, column in enumerate(("ratings", "n_no", "n_yes", "n_unsure")):
            totals[index] += r[column]
    assert summed == {
        (r["dataset"], r["item_id"]): [r["ratings"], r["n_no"], r["n_yes"], r["n_unsure"]]
        for r in whole
    }


# ----------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["group-disagreement", "--by", "rater_age", "--permutations", "10"],
            "group-disagreement does not take --permutations; it takes: --by",
        ),
        (
            ["item-distribution", "--by", "rater_age", "--rule", "plurality"],
            "item-distribution does not take --rule; it takes: --by",
        ),
    ],
)
def test_usage_errors(
    arguments: list[str], message: str, runner: CliRunner, ingested: Path
) -> None:
    result = invoke(runner, ingested, *arguments)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"Error: {message}\n{USAGE_HINT}"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["group-disagreement"], "Missing option '--by'. Choose from: " + ", ".join(GROUP_COLUMNS)),
        (["group-disagreement", "-d", "990"], "Missing option '--by'."),
        (
            ["group-disagreement", "--by", "rater_height"],
            "Invalid value for '--by': 'rater_height' is not one of "
            + ", ".join(f"'{c}'" for c in GROUP_COLUMNS),
        ),
    ],
)
def test_usage_errors_click_words(
    arguments: list[str], words: str, runner: CliRunner, ingested: Path
) -> None:
    result = invoke(runner, ingested, *arguments)
    assert (result.exit_code, result.stdout) == (2, "")
    assert words in " ".join(result.stderr.replace("│", " ").split())


def test_explain_names_the_tests_and_the_compute_step(runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "group-disagreement", "--explain"])
    assert result.exit_code == 0, result.output
    for phrase in ("Freeman-Halton", "Pearson's chi-square", "Benjamini-Hochberg", "Cochran"):
        assert phrase in result.stdout
    assert "  --by (columns, required): " in result.stdout
    assert result.stdout.endswith(
        "Then computed in Python by: dices_cli.metrics.disagreement:group_disagreement\n"
    )
    assert compute_step(get_query("group-disagreement")) is group_disagreement


# ----------------------------------------------------------------------------- compute step


def per_group(
    rows: list[tuple[str, int, str | None, str | None, int, int, int]],
) -> pa.Table:
    """The SQL's result as the compute step gets it: ENUM group columns as Arrow dictionaries."""
    columns = list(zip(*rows, strict=True))
    return pa.table(
        {
            "dataset": pa.array(columns[0]),
            "item_id": pa.array(columns[1], pa.int64()),
            "rater_gender": pa.array(columns[2]).dictionary_encode(),
            "rater_race": pa.array(columns[3]).dictionary_encode(),
            "n_no": pa.array(columns[4], pa.int64()),
            "n_yes": pa.array(columns[5], pa.int64()),
            "n_unsure": pa.array(columns[6], pa.int64()),
        }
    )


BY = {"by": ["rater_gender", "rater_race"]}


def test_corner_cases_of_the_compute_step() -> None:
    table = per_group(
        [
            # item 1: one group only: no test, and not in the adjustment's family
            ("350", 1, "Man", "White", 3, 1, 0),
            # item 2: 3 groups x 2 answers (Unsure empty): exact, transposed to 2 x 3
            ("350", 2, "Man", "White", 5, 1, 0),
            ("350", 2, "Man", None, 1, 4, 0),
            ("350", 2, "Woman", "White", 3, 3, 0),
            # item 3: one answer: the only table with its margins
            ("350", 3, "Man", "White", 0, 4, 0),
            ("350", 3, "Woman", "White", 0, 2, 0),
            # item 4: two groups tied for the highest share: the first one is named
            ("350", 4, "Man", "White", 1, 1, 0),
            ("350", 4, "Woman", "Asian", 0, 2, 1),
            ("350", 4, "Woman", "White", 1, 2, 0),
        ]
    )
    result = group_disagreement(table, BY)
    assert result.columns == COLUMNS
    assert result.numeric == [
        False,
        True,
        True,
        True,
        False,
        True,
        False,
        True,
        True,
        False,
        True,
        True,
    ]
    by_item = {row[1]: row for row in result.rows}
    assert by_item[1][2:] == (1, 4, "Man & White", 0.25, "Man & White", 0.25, 0.0, None, None, None)
    three_by_two = np.array([[5, 1], [1, 4], [3, 3]])
    assert by_item[2][2:4] == (3, 17)
    assert by_item[2][4:6] == ("Man & (missing)", 0.8)
    assert by_item[2][9] == "exact"
    assert by_item[2][10] == pytest.approx(enumerated_exact(three_by_two), abs=1e-12)
    assert by_item[3][9:11] == ("exact", 1.0)
    assert by_item[4][4:8] == ("Woman & Asian", 2 / 3, "Man & White", 0.5)
    tested = [by_item[i][10] for i in (2, 3, 4)]
    adjusted = stats.false_discovery_control(tested, method="bh")
    assert [by_item[i][11] for i in (2, 3, 4)] == pytest.approx(list(adjusted), abs=1e-12)
    assert [row[1] for row in result.rows] == [2, 4, 1, 3]  # by gap: 0.8, 1/6, 0, 0


def test_gaps_equal_but_for_the_last_bit_are_ties() -> None:
    # 3/10 - 1/10 is 0.19999999999999998 in floating point, 2/10 - 0/10 is 0.2
    table = per_group(
        [
            ("350", 1, "Man", "White", 7, 3, 0),
            ("350", 1, "Woman", "White", 9, 1, 0),
            ("350", 2, "Man", "White", 8, 2, 0),
            ("350", 2, "Woman", "White", 10, 0, 0),
        ]
    )
    assert [row[1] for row in group_disagreement(table, BY).rows] == [1, 2]


def test_an_empty_result_has_the_columns() -> None:
    table = per_group([("350", 1, "Man", "White", 1, 1, 1)]).slice(0, 0)
    result = group_disagreement(table, BY)
    assert (result.columns, result.rows) == (COLUMNS, [])


# ----------------------------------------------------------------------------- the tests


def stacked(tables: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.concatenate(tables).astype(np.int64)
    starts = np.cumsum([0, *(len(t) for t in tables[:-1])])
    return counts, starts


small_tables = (
    st.sampled_from([(2, 2), (2, 3)])
    .flatmap(lambda shape: arrays(np.int64, shape, elements=st.integers(0, 25)))
    .filter(lambda t: bool((t.sum(axis=1) > 0).all()))
)


@given(st.lists(small_tables, min_size=1, max_size=6))
def test_exact_p_values_equal_scipy(tables: list[np.ndarray]) -> None:
    padded = [np.pad(t, ((0, 0), (0, 3 - t.shape[1]))) for t in tables]
    expected = [
        stats.fisher_exact(t).pvalue if t.shape == (2, 2) else enumerated_exact(t) for t in tables
    ]
    together = exact_p_values(np.array(padded))
    assert together == pytest.approx(expected, abs=1e-12, rel=1e-10)
    # to the last bit, whatever tables share the batch (its grid is padded to the largest)
    assert together.tolist() == [exact_p_values(table[None])[0] for table in padded]


answer_tables = (
    st.tuples(st.integers(1, 6), st.integers(1, 3))
    .flatmap(lambda shape: arrays(np.int64, (shape[0], 3), elements=st.integers(0, 30)))
    .filter(lambda t: bool((t.sum(axis=1) > 0).all()))
)


@given(st.lists(answer_tables, min_size=1, max_size=8))
def test_each_conversation_gets_the_documented_test(tables: list[np.ndarray]) -> None:
    p_values, tests = independence_tests(*stacked(tables))
    for table, p_value, test in zip(tables, p_values, tests, strict=True):
        expected_test, expected_p = scipy_test(table)
        assert test == expected_test
        if expected_p is None:
            assert math.isnan(p_value)
        else:
            assert p_value == pytest.approx(expected_p, abs=1e-12, rel=1e-10)


@given(
    arrays(np.float64, 12, elements=st.floats(0, 3000)),
    arrays(np.int64, 12, elements=st.integers(1, 120)),
)
def test_chi_square_survival_equals_scipy(statistics: np.ndarray, dof: np.ndarray) -> None:
    expected = stats.chi2.sf(statistics, dof)
    assert chi_square_survival(statistics, dof) == pytest.approx(expected, abs=1e-300, rel=1e-9)
