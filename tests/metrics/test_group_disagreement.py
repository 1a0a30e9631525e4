"""`dices query group-disagreement` and `dices query item-distribution --by` on the replicas,
checked against pandas and scipy computed straight from the CSV files; the compute step's
corner cases on small tables; the independence tests against scipy on random tables, the
Monte Carlo test against the exact conditional law of Pearson's statistic."""

from __future__ import annotations

import itertools
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

from dices_cli.cli.main import app
from dices_cli.families.schema import AGE, ANSWER, EDUCATION, GENDER, RACE
from dices_cli.metrics.defaults import PERMUTATIONS, SEED
from dices_cli.metrics.disagreement import group_disagreement
from dices_cli.metrics.independence import (
    chi_square_survival,
    exact_p_values,
    independence_tests,
    monte_carlo_p_values,
)
from dices_cli.queries.catalog import GROUP_COLUMNS, compute_step, get_query

ORDER: dict[str, Sequence[str]] = {
    "rater_gender": GENDER,
    "rater_race": RACE,
    "rater_age": AGE,
    "rater_education": EDUCATION,
}
# The tests the documented rule picks on the replicas, per --by (groups of 5 raters or more):
# gender gives 2 x 3 tables; race 3 to 5 groups, which almost never meet Cochran's rule,
# and on DICES-990 2 or 3 groups x 2 answers; education 3 x 3 on DICES-350 and 2 x 3 on
# DICES-990, where one of its groups is too small; gender x age 4 to 6 groups.
TESTS = {
    "rater_gender": {"exact"},
    "rater_race": {"exact", "chi-square", "monte-carlo"},
    "rater_education": {"exact", "monte-carlo"},
    "rater_gender+rater_age": {"chi-square", "monte-carlo"},
}
COLUMNS = [
    "dataset",
    "item_id",
    "groups",
    "ratings",
    "groups_left_out",
    "ratings_left_out",
    "highest_group",
    "highest_raters",
    "highest_share_yes",
    "lowest_group",
    "lowest_raters",
    "lowest_share_yes",
    "gap",
    "test",
    "p_value",
    "p_adjusted",
]
MIN_RATERS = 5  # the query's default
TOLERANCE = 1e-9
# Random tables behind the reference Monte Carlo p-values (scipy's sampler, not ours).
REFERENCE_DRAWS = 2000
# Two Monte Carlo estimates of one p-value differ by more than this many standard errors
# (plus one step of each) about once in 3.5 million: never, in practice, over the ~5,000
# conversations compared here. Both are seeded, so the test's verdict is fixed.
STANDARD_ERRORS = 5
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


def pearson(tables: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Pearson's statistic of tables [..., row, column] with these margins, as textbooks
    write it: sum (observed - expected)^2 / expected."""
    expected = np.outer(rows, columns) / rows.sum()
    return np.asarray((((tables - expected) ** 2) / expected).sum(axis=(-2, -1)))


def at_least_as_large(statistics: np.ndarray, observed: float) -> np.ndarray:
    """Statistics at least the observed one, equal ones computed in another order included."""
    return np.asarray(statistics >= observed - 1e-9 * max(1.0, observed))


def all_tables(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Every table with these margins [table, row, column], by brute force."""
    found: list[np.ndarray] = []

    def fill(row: int, left: np.ndarray, above: list[np.ndarray]) -> None:
        if row == len(rows) - 1:
            found.append(np.array([*above, left]))
            return
        for cells in itertools.product(*(range(min(c, rows[row]) + 1) for c in left)):
            if sum(cells) == rows[row]:
                fill(row + 1, left - np.array(cells), [*above, np.array(cells)])

    fill(0, columns, [])
    return np.array(found)


def exact_pearson_p(table: np.ndarray) -> float:
    """The exact conditional p-value of Pearson's statistic, P(X^2 >= observed) with both
    margins fixed: what the Monte Carlo test estimates. Every table is enumerated, each
    weighed by scipy's random_table law."""
    table = table[:, table.sum(axis=0) > 0]
    rows, columns = table.sum(axis=1), table.sum(axis=0)
    tables = all_tables(rows, columns)
    more = at_least_as_large(pearson(tables, rows, columns), float(pearson(table, rows, columns)))
    return min(1.0, float(stats.random_table(rows, columns).pmf(tables)[more].sum()))


def reference_monte_carlo(table: np.ndarray, seed: int) -> float:
    """A Monte Carlo p-value of Pearson's statistic from scipy's own sampler of tables with
    fixed margins (Patefield's algorithm), (k + 1) / (REFERENCE_DRAWS + 1)."""
    rows, columns = table.sum(axis=1), table.sum(axis=0)
    tables = stats.random_table(rows, columns).rvs(REFERENCE_DRAWS, random_state=seed)
    observed = float(pearson(table, rows, columns))
    k = int(at_least_as_large(pearson(tables, rows, columns), observed).sum())
    return (k + 1) / (REFERENCE_DRAWS + 1)


def estimates_agree(ours: float, draws: int, reference: float) -> bool:
    """Whether two Monte Carlo p-values, of `draws` and of REFERENCE_DRAWS tables, agree
    within STANDARD_ERRORS standard errors of their difference (plus a step of each)."""
    spread = math.sqrt(reference * (1 - reference) * (1 / draws + 1 / REFERENCE_DRAWS))
    steps = 1 / (draws + 1) + 1 / (REFERENCE_DRAWS + 1)
    return abs(ours - reference) <= STANDARD_ERRORS * spread + steps


def cochran(table: np.ndarray) -> bool:
    """Cochran's rule, with scipy's expected counts: all >= 1 and at least 80% >= 5."""
    expected = stats.contingency.expected_freq(table)
    return bool((expected >= 1).all() and (expected >= 5).mean() >= 0.8)


def scipy_test(table: np.ndarray) -> tuple[str | None, float | None]:
    """The query's documented rule, with scipy doing each test; None for the Monte Carlo
    test's p-value (a random number: compared within bounds instead)."""
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[0] < 2:
        return None, None
    if table.shape[1] == 1:
        return "exact", 1.0  # the only table with its margins
    if table.shape == (2, 2):
        return "exact", float(stats.fisher_exact(table).pvalue)
    if sorted(table.shape) == [2, 3]:
        return "exact", enumerated_exact(table)
    if cochran(table):
        return "chi-square", float(stats.chi2_contingency(table, correction=False).pvalue)
    return "monte-carlo", None


def expected_disagreement(
    ratings: dict[str, pd.DataFrame], by: list[str]
) -> tuple[list[dict[str, Any]], dict[tuple[str, int], np.ndarray]]:
    """The rows the query should give, unranked and with no p_adjusted, and the compared
    table of each conversation whose p-value is a Monte Carlo one (left None)."""
    expected: list[dict[str, Any]] = []
    monte_carlo: dict[tuple[str, int], np.ndarray] = {}
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
        for item_id in np.unique(items):
            rows = np.flatnonzero(items == item_id)
            sizes = tables[rows].sum(axis=1)
            kept = rows[sizes >= MIN_RATERS]
            left_out = rows[sizes < MIN_RATERS]
            table, names = tables[kept], [labels[row] for row in kept]
            share = table[:, 1] / table.sum(axis=1)
            test, p_value = scipy_test(table)
            if test == "monte-carlo":
                monte_carlo[(dataset, int(item_id))] = table[:, table.sum(axis=0) > 0]
            high, low = (int(np.argmax(share)), int(np.argmin(share))) if len(kept) else (0, 0)
            expected.append(
                {
                    "dataset": dataset,
                    "item_id": int(item_id),
                    "groups": len(kept),
                    "ratings": int(table.sum()),
                    "groups_left_out": len(left_out),
                    "ratings_left_out": int(tables[left_out].sum()),
                    # the first on a tie
                    "highest_group": names[high] if len(kept) else None,
                    "highest_raters": int(table[high].sum()) if len(kept) else None,
                    "highest_share_yes": share.max() if len(kept) else None,
                    "lowest_group": names[low] if len(kept) else None,
                    "lowest_raters": int(table[low].sum()) if len(kept) else None,
                    "lowest_share_yes": share.min() if len(kept) else None,
                    "gap": share.max() - share.min() if len(kept) else None,
                    "test": test,
                    "p_value": p_value,
                }
            )
    return expected, monte_carlo


def adjusted_and_ranked(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`found` with p_adjusted (scipy's Benjamini-Hochberg over each dataset's tested
    conversations), ranked as documented: p_adjusted, gap (largest first), dataset, item_id."""
    for dataset in {r["dataset"] for r in found}:
        tested = [r for r in found if r["dataset"] == dataset and r["p_value"] is not None]
        adjusted = stats.false_discovery_control([r["p_value"] for r in tested], method="bh")
        for record, p_adjusted in zip(tested, adjusted, strict=True):
            record["p_adjusted"] = float(p_adjusted)
    for record in found:
        record.setdefault("p_adjusted", None)

    def rank(r: dict[str, Any]) -> tuple[Any, ...]:
        p, gap = r["p_adjusted"], r["gap"]
        return (
            p is None,
            0.0 if p is None else round(p, 12),
            gap is None,
            0.0 if gap is None else -round(gap, 12),
            r["dataset"],
            r["item_id"],
        )

    return sorted(found, key=rank)


# ----------------------------------------------------------------------------- the replicas


@pytest.mark.parametrize("by", [name.split("+") for name in TESTS], ids="+".join)
def test_group_disagreement_matches_pandas_and_scipy(
    by: list[str], runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    options = [option for column in by for option in ("--by", column)]
    result = records(runner, ingested, "group-disagreement", *options)
    expected, monte_carlo = expected_disagreement(csv_ratings, by)
    assert len(result) == 350 + 990
    assert [list(r) for r in result[:1]] == [COLUMNS]
    ours = {(r["dataset"], r["item_id"]): r for r in result}
    # A Monte Carlo p-value agrees with scipy's sampler's, and then stands in for it (the
    # adjustment and the ranking are checked on it).
    for number, (key, table) in enumerate(monte_carlo.items()):
        p_value = ours[key]["p_value"]
        assert estimates_agree(p_value, PERMUTATIONS, reference_monte_carlo(table, number)), key
    for record in expected:
        if record["test"] == "monte-carlo":
            record["p_value"] = ours[(record["dataset"], record["item_id"])]["p_value"]
    expected = adjusted_and_ranked(expected)
    assert [(r["dataset"], r["item_id"]) for r in result] == [
        (r["dataset"], r["item_id"]) for r in expected
    ]
    assert result == [{key: approx(value) for key, value in r.items()} for r in expected]
    assert {r["test"] for r in result} == TESTS["+".join(by)]


def test_p_adjusted_is_per_dataset_and_the_draws_too(runner: CliRunner, ingested: Path) -> None:
    """A dataset's rows, Monte Carlo p-values included, do not depend on the other datasets
    asked for: each dataset's draws come from the seed and its own name."""
    both = records(runner, ingested, "group-disagreement", "--by", "rater_race")
    alone = records(runner, ingested, "group-disagreement", "--by", "rater_race", "-d", "350")
    assert [r for r in both if r["dataset"] == "350"] == alone
    assert {r["test"] for r in alone} >= {"monte-carlo"}


def test_the_same_seed_gives_the_same_p_values(runner: CliRunner, ingested: Path) -> None:
    def p_values(*options: str) -> dict[int, float]:
        found = records(runner, ingested, "group-disagreement", "--by", "rater_race", "-d", "990",
                        "--permutations", "99", *options)  # fmt: skip
        return {r["item_id"]: r["p_value"] for r in found if r["test"] == "monte-carlo"}

    first, again, other = p_values(), p_values("--seed", str(SEED)), p_values("--seed", "7")
    assert first == again
    assert first.keys() == other.keys()
    assert sum(first[item] != other[item] for item in first) > len(first) / 2
    # (k + 1) / 100: never 0, a whole number of hundredths
    assert {round(p * 100, 9) for p in first.values()} <= set(map(float, range(1, 101)))


def test_min_raters_leaves_small_groups_out(
    runner: CliRunner, ingested: Path, csv_ratings: dict[str, pd.DataFrame]
) -> None:
    """--min-raters 1 compares every group; a larger one leaves more out, and what is left
    out is counted: compared + left out = the conversation's groups and ratings."""
    frame = csv_ratings["990"]
    groups = frame.groupby("item_id")["rater_race"].nunique()
    ratings = frame.groupby("item_id").size()
    compared = {}
    for min_raters in (1, 12, 60):
        found = records(runner, ingested, "group-disagreement", "--by", "rater_race", "-d", "990",
                        "--min-raters", str(min_raters), "--permutations", "0")  # fmt: skip
        for r in found:
            assert r["groups"] + r["groups_left_out"] == groups[r["item_id"]]
            assert r["ratings"] + r["ratings_left_out"] == ratings[r["item_id"]]
            if r["groups"]:
                assert min(r["highest_raters"], r["lowest_raters"]) >= min_raters
        compared[min_raters] = {r["groups"] for r in found}
        if min_raters == 60:  # no group has 60 raters on a conversation: nothing compared
            assert {
                (r["highest_group"], r["highest_raters"], r["gap"], r["test"], r["p_value"])
                for r in found
            } == {(None, None, None, None, None)}
    assert compared == {1: {4, 5}, 12: {1, 2, 3}, 60: {0}}


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
            ["group-disagreement", "--by", "rater_age", "--rule", "plurality"],
            "group-disagreement does not take --rule; it takes: --by, --min-raters, "
            "--permutations, --seed",
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
        (
            ["group-disagreement", "--by", "rater_age", "--min-raters", "0"],
            "Invalid value for '--min-raters': 0 is not in the range 1<=x<=100000.",
        ),
        (
            ["group-disagreement", "--by", "rater_age", "--permutations", "100001"],
            "Invalid value for '--permutations': 100001 is not in the range 0<=x<=100000.",
        ),
        (
            ["group-disagreement", "--by", "rater_age", "--seed", "-1"],
            "Invalid value for '--seed': -1 is not in the range 0<=x<=4294967295.",
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
    for phrase in (
        "Freeman-Halton",
        "Pearson's chi-square",
        "Benjamini-Hochberg",
        "Cochran's rule",
        "'monte-carlo'",
        "p = (k + 1) / (--permutations + 1)",
        "--min-raters",
    ):
        assert phrase in result.stdout
    assert "  --by (columns, required): " in result.stdout
    assert "  --min-raters (integer in [1, 100000], default 5): " in result.stdout
    assert result.stdout.endswith(
        "Then computed in Python by: dices_cli.metrics.disagreement:group_disagreement\n"
    )
    assert compute_step(get_query("group-disagreement")) is group_disagreement


def test_the_defaults_are_the_shared_ones() -> None:
    query = get_query("group-disagreement")
    defaults = {p.name: p.convert(None) for p in query.parameters if p.name != "by"}
    assert defaults == {"min_raters": MIN_RATERS, "permutations": PERMUTATIONS, "seed": SEED}


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


def parameters(min_raters: int = 1, permutations: int = PERMUTATIONS) -> dict[str, Any]:
    return {
        "by": ["rater_gender", "rater_race"],
        "min_raters": min_raters,
        "permutations": permutations,
        "seed": SEED,
    }


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
    result = group_disagreement(table, parameters())
    assert result.columns == COLUMNS
    text = {"dataset", "highest_group", "lowest_group", "test"}
    assert result.numeric == [name not in text for name in COLUMNS]
    by_item = {row[1]: dict(zip(COLUMNS, row, strict=True)) for row in result.rows}
    assert list(by_item[1].values())[2:] == [
        1, 4, 0, 0, "Man & White", 4, 0.25, "Man & White", 4, 0.25, 0.0, None, None, None
    ]  # fmt: skip
    three_by_two = np.array([[5, 1], [1, 4], [3, 3]])
    assert [by_item[2][c] for c in ("groups", "ratings", "highest_group", "highest_raters")] == [
        3, 17, "Man & (missing)", 5
    ]  # fmt: skip
    assert by_item[2]["highest_share_yes"] == 0.8
    assert by_item[2]["test"] == "exact"
    assert by_item[2]["p_value"] == pytest.approx(enumerated_exact(three_by_two), abs=1e-12)
    assert (by_item[3]["test"], by_item[3]["p_value"]) == ("exact", 1.0)
    assert [by_item[4][c] for c in ("highest_group", "highest_share_yes", "lowest_group")] == [
        "Woman & Asian", 2 / 3, "Man & White"
    ]  # fmt: skip
    tested = [by_item[i]["p_value"] for i in (2, 3, 4)]
    adjusted = stats.false_discovery_control(tested, method="bh")
    assert [by_item[i]["p_adjusted"] for i in (2, 3, 4)] == pytest.approx(list(adjusted))
    # by p_adjusted, then gap: item 2 (p 0.11), then 4 and 3 (both adjusted to 1: by gap,
    # 1/6 before 0), then 1 (no test)
    assert adjusted[0] < adjusted[1] == adjusted[2] == 1
    assert [row[1] for row in result.rows] == [2, 4, 3, 1]


def test_small_groups_are_left_out_and_counted() -> None:
    table = per_group(
        [
            # item 1: the 2-rater group would be the highest; left out, the gap is 0.1
            ("990", 1, "Man", "Asian", 9, 1, 0),
            ("990", 1, "Man", "Black", 0, 2, 0),
            ("990", 1, "Woman", "Asian", 8, 2, 0),
            # item 2: one group left: no test
            ("990", 2, "Man", "Asian", 3, 3, 0),
            ("990", 2, "Woman", "Black", 1, 0, 0),
            # item 3: no group left: nothing compared
            ("990", 3, "Man", "Asian", 1, 1, 1),
        ]
    )
    by_item = {row[1]: row for row in group_disagreement(table, parameters(min_raters=5)).rows}
    assert by_item[1][2:13] == (
        2, 20, 1, 2, "Woman & Asian", 10, 0.2, "Man & Asian", 10, 0.1, pytest.approx(0.1)
    )  # fmt: skip
    assert by_item[1][13] == "exact"
    assert by_item[1][14] == pytest.approx(stats.fisher_exact([[9, 1], [8, 2]]).pvalue)
    assert by_item[2][2:] == (1, 6, 1, 1, "Man & Asian", 6, 0.5, "Man & Asian", 6, 0.5, 0.0,
                              None, None, None)  # fmt: skip
    assert by_item[3][2:] == (0, 0, 1, 3, *[None] * 10)
    assert [row[1] for row in group_disagreement(table, parameters(min_raters=5)).rows] == [1, 2, 3]
    # with every group compared, the 2-rater group is the highest
    everyone = {row[1]: row for row in group_disagreement(table, parameters()).rows}
    assert everyone[1][2:8] == (3, 22, 0, 0, "Man & Black", 2)


def monte_carlo_tables() -> pa.Table:
    """Two conversations of 4 groups whose 3 x 4 tables fail Cochran's rule."""
    return per_group(
        [
            ("990", 1, "Man", "Asian", 5, 1, 0),
            ("990", 1, "Man", "Black", 1, 4, 1),
            ("990", 1, "Woman", "Asian", 3, 3, 0),
            ("990", 1, "Woman", "Black", 4, 1, 1),
            ("990", 2, "Man", "Asian", 6, 0, 0),
            ("990", 2, "Man", "Black", 2, 3, 1),
            ("990", 2, "Woman", "Asian", 4, 2, 0),
            ("990", 2, "Woman", "Black", 5, 1, 0),
        ]
    )


def test_monte_carlo_rows_and_no_draws() -> None:
    drawn = group_disagreement(monte_carlo_tables(), parameters(permutations=499)).rows
    assert [row[13] for row in drawn] == ["monte-carlo"] * 2
    for row in drawn:
        table = np.array(
            [[5, 1, 0], [1, 4, 1], [3, 3, 0], [4, 1, 1]]
            if row[1] == 1
            else [[6, 0, 0], [2, 3, 1], [4, 2, 0], [5, 1, 0]]
        )
        assert not cochran(table[:, table.sum(axis=0) > 0])
        assert estimates_agree(row[14], 499, exact_pearson_p(table))
        assert row[14] * 500 == pytest.approx(round(row[14] * 500))  # (k + 1) / 500
    # no draws: no Monte Carlo test, and no p-value in its stead
    undrawn = group_disagreement(monte_carlo_tables(), parameters(permutations=0)).rows
    assert [row[13:] for row in undrawn] == [(None, None, None)] * 2


def test_gaps_equal_but_for_the_last_bit_are_ties() -> None:
    # 3/10 - 1/10 is 0.19999999999999998 in floating point, 2/10 - 0/10 is 0.2; neither
    # conversation is tested (its table needs draws, and none are asked for), so the gap ranks.
    table = per_group(
        [
            ("350", 1, "Man", "White", 7, 3, 0),
            ("350", 1, "Woman", "White", 9, 1, 0),
            ("350", 1, "Woman", "Asian", 8, 2, 1),
            ("350", 2, "Man", "White", 8, 2, 0),
            ("350", 2, "Woman", "White", 10, 0, 0),
            ("350", 2, "Woman", "Asian", 9, 1, 1),
        ]
    )
    rows = group_disagreement(table, parameters(permutations=0)).rows
    assert [(row[1], row[12], row[13]) for row in rows] == [
        (1, 0.19999999999999998, None),
        (2, 0.2, None),
    ]


def test_an_empty_result_has_the_columns() -> None:
    table = per_group([("350", 1, "Man", "White", 1, 1, 1)]).slice(0, 0)
    result = group_disagreement(table, parameters())
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
    draws = 99
    p_values, tests = independence_tests(*stacked(tables), draws, np.random.default_rng(SEED))
    for table, p_value, test in zip(tables, p_values, tests, strict=True):
        expected_test, expected_p = scipy_test(table)
        assert test == expected_test
        if expected_test is None:
            assert math.isnan(p_value)
        elif expected_test == "monte-carlo":  # (k + 1) / (draws + 1), k in 0..draws
            assert round(p_value * (draws + 1), 9) in set(map(float, range(1, draws + 2)))
        else:
            assert p_value == pytest.approx(expected_p, abs=1e-12, rel=1e-10)


def test_chi_square_exactly_where_cochrans_rule_holds() -> None:
    """Two 5 x 2 tables with the same answer totals (85 No, 17 Yes): in the first, 8 of the
    10 expected counts are >= 5 (80%, the rule's edge) and the others exactly 1; in the
    second only 7 are: a Monte Carlo test."""
    at_the_edge = np.array([[27, 3], [24, 6], [24, 6], [5, 1], [5, 1]])
    just_below = np.array([[27, 3], [24, 6], [20, 4], [5, 1], [9, 3]])
    expected = stats.contingency.expected_freq(at_the_edge)
    assert ((expected >= 5).sum(), expected.min()) == (8, 1.0)
    assert (stats.contingency.expected_freq(just_below) >= 5).sum() == 7
    tables = [np.pad(t, ((0, 0), (0, 1))) for t in (at_the_edge, just_below)]
    p_values, tests = independence_tests(*stacked(tables), 99, np.random.default_rng(SEED))
    assert tests.tolist() == ["chi-square", "monte-carlo"]
    assert [cochran(at_the_edge), cochran(just_below)] == [True, False]
    chi_square = stats.chi2_contingency(at_the_edge, correction=False).pvalue
    assert p_values[0] == pytest.approx(chi_square, rel=1e-10)


@pytest.mark.parametrize(
    "table",
    [
        [[3, 1, 0], [1, 4, 2], [2, 2, 2], [0, 1, 3]],
        [[5, 0, 1], [1, 3, 2], [2, 2, 0]],
        [[2, 0, 3], [0, 4, 0], [1, 0, 0], [3, 3, 3]],
        [[4, 0], [0, 3], [2, 2], [1, 5]],  # 4 groups x 2 answers
        [[6, 1, 0], [0, 0, 5]],  # a p-value near 0: never 0
        [[2, 2, 1], [2, 2, 1], [4, 4, 2]],  # proportional rows: p = 1
    ],
    ids=["4x3", "3x3", "4x3-sparse", "4x2", "near-0", "p=1"],
)
def test_monte_carlo_p_values_agree_with_the_exact_conditional_ones(table: list[list[int]]) -> None:
    """The Monte Carlo p-value estimates P(X^2 >= observed | both margins), computed here
    by enumerating every table with scipy's law: k, the draws at least as extreme, is within
    the 99.9% binomial bounds around draws x that probability."""
    counts = np.array(table, dtype=np.int64)
    counts = np.pad(counts, ((0, 0), (0, 3 - counts.shape[1])))
    draws = 4000
    [p_value] = monte_carlo_p_values(counts, np.array([0]), draws, np.random.default_rng(SEED))
    exact = exact_pearson_p(counts)
    k = round(p_value * (draws + 1)) - 1
    low, high = stats.binom(draws, exact).ppf([0.0005, 0.9995])
    assert low <= k <= high, (p_value, exact)
    assert p_value >= 1 / (draws + 1)


def test_monte_carlo_p_values_do_not_depend_on_the_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many conversations with several groups each, dealt in batches of draws: each
    conversation's p-value still estimates its own exact one."""
    tables = [
        np.array([[3, 1, 0], [1, 4, 2], [2, 2, 2], [0, 1, 3]]),
        np.array([[5, 0, 1], [1, 3, 2], [2, 2, 0]]),
        np.array([[2, 0, 3], [0, 4, 0], [1, 0, 0], [3, 3, 3]]),
        np.array([[4, 0, 0], [0, 3, 0]]),
    ]
    counts, starts = stacked(tables)
    whole = monte_carlo_p_values(counts, starts, 2000, np.random.default_rng(SEED))
    monkeypatch.setattr("dices_cli.metrics.independence.DRAW_CELLS", 7)  # batches of 1 draw
    batched = monte_carlo_p_values(counts, starts, 2000, np.random.default_rng(SEED))
    for table, one, other in zip(tables, whole, batched, strict=True):
        exact = exact_pearson_p(table)
        for p_value in (one, other):
            k = round(p_value * 2001) - 1
            low, high = stats.binom(2000, exact).ppf([0.0005, 0.9995])
            assert low <= k <= high


@given(
    arrays(np.float64, 12, elements=st.floats(0, 3000)),
    arrays(np.int64, 12, elements=st.integers(1, 120)),
)
def test_chi_square_survival_equals_scipy(statistics: np.ndarray, dof: np.ndarray) -> None:
    expected = stats.chi2.sf(statistics, dof)
    assert chi_square_survival(statistics, dof) == pytest.approx(expected, abs=1e-300, rel=1e-9)
