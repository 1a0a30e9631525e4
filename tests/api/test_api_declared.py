"""The API on a declared dataset gives what the command line gives: `Data.query(NAME,
dataset=DECLARED, ...)` runs the dataset's own version of the query (sql/declared/) with its
own parameters, and `Data.evaluate(frame, DECLARED)` scores a polars or pandas frame (which
the API hands on as Parquet) as `dices evaluate FILE.csv -d DECLARED` scores the same rows.
A DICES query of a declared dataset, a parameter the declared query does not take, and a
declared-only query without a dataset are the command line's usage errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import dices_cli as dices
from dices_cli.errors import UsageError
from dices_cli.evaluate.predictions import InvalidPredictionsError
from tests.api.test_api import assert_same_rows, options
from tests.api.test_commands_and_api_agree import quietly, run
from tests.drivers.ordinal import ingest_dataset, ordinal_ratings

NAME = "api_toy"
pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ratings = ordinal_ratings((5, 13, 20), items=30, per_rater=12, seed=21)
    return ingest_dataset(ratings, tmp_path_factory.mktemp("api_declared"), NAME)


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("overview", {}),
    ("label-by-group", {"by": ["grp"], "permutations": 99, "seed": 4}),
    ("label-by-group", {"by": ["grp", "half"], "interval": "wilson", "permutations": 49}),
    ("label-by-group", {}),
    ("label-distribution", {"by": ["grp"], "label": "colour"}),
    ("item-distribution", {}),
    ("agreement", {"by": ["grp"], "permutations": 49}),
    ("group-disagreement", {"by": ["grp"], "permutations": 49, "min_raters": 2}),
]


@pytest.mark.parametrize(("name", "given"), QUERIES, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(QUERIES)])  # fmt: skip
def test_a_declared_query_gives_the_command_lines_rows(
    data: Path, name: str, given: dict[str, Any]
) -> None:
    written = run("query", name, "-d", NAME, *options(given), "--data", data, "-f", "csv")
    made = quietly(lambda: dices.open(data).query(name, dataset=NAME, **given))
    assert_same_rows(written, made)


def test_an_ordinal_label_by_group_has_the_mean_columns(data: Path) -> None:
    made = dices.open(data).query("label-by-group", dataset=NAME, by="grp", permutations=49)
    assert made.columns[-8:] == [
        "mean_ci_low", "mean_ci_high", "mean_difference", "mean_difference_ci_low",
        "mean_difference_ci_high", "mean_p_value", "mean_p_adjusted", "mean_p_groups_differ",
    ]  # fmt: skip
    assert made["mean_p_value"].null_count() == 0


@pytest.mark.parametrize(
    ("name", "given", "message"),
    [
        ("qoverall-by-demographic", {},
         "qoverall-by-demographic asks DICES's or ProsocialDialog's own questions; Ordinal "
         "toy's queries are: agreement, group-disagreement, item-distribution, label-by-group, "
         "label-distribution, overview"),
        ("label-by-group", {"threshold": 0.3},
         "label-by-group does not take threshold; it takes: by, label, interval, "
         "permutations, seed, alternative"),
        ("label-by-group", {"label": "colour"},
         "label-by-group takes a label of a binary or ordinal scale; Ordinal toy's colour is "
         "nominal; its score fit"),
    ],
)  # fmt: skip
def test_a_declared_querys_mistakes_are_the_command_lines(
    data: Path, name: str, given: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        dices.open(data).query(name, dataset=NAME, **given)
    assert str(raised.value) == message


def test_a_declared_only_query_needs_its_dataset(data: Path) -> None:
    with pytest.raises(UsageError) as raised:
        dices.open(data).query("label-by-group")
    assert str(raised.value) == (
        "label-by-group applies to declared datasets only: give dataset NAME "
        "(dices info lists the ingested ones)"
    )


def test_a_dataset_nobody_declared_is_refused(data: Path) -> None:
    with pytest.raises(UsageError) as raised:
        dices.open(data).query("overview", dataset="nowhere")
    assert str(raised.value).startswith("dataset must be one of: all, ")
    assert str(raised.value).endswith(f", {NAME} (got 'nowhere')")


def predictions() -> pl.DataFrame:
    """Two models of the toy's items: one hard label each, and a distribution over 1-5."""
    rng = np.random.default_rng(5)
    items = [f"i{i:03d}" for i in range(30)]
    shares = rng.dirichlet(np.ones(5), len(items))
    hard = pl.DataFrame({"model": "hard", "item_id": items,
                         "label": rng.integers(1, 6, len(items))})  # fmt: skip
    soft = pl.DataFrame(
        {"model": "soft", "item_id": items, **{f"p_{v}": shares[:, v - 1] for v in range(1, 6)}}
    )
    return pl.concat([hard, soft], how="diagonal")


@pytest.mark.parametrize("by", [[], ["grp"]])
def test_evaluate_of_a_frame_is_the_command_lines_of_its_file(
    data: Path, tmp_path: Path, by: list[str]
) -> None:
    frame = predictions()
    path = tmp_path / "predictions.csv"
    frame.write_csv(path)
    grouped = [word for name in by for word in ("--by", name)]
    written = run("evaluate", path, "-d", NAME, *grouped, "--data", data, "-f", "csv")
    d = dices.open(data)
    assert_same_rows(written, quietly(lambda: d.evaluate(frame, NAME, by=by or None)))
    assert_same_rows(written, quietly(lambda: d.evaluate(frame.to_pandas(), NAME, by=by or None)))
    # the API hands a frame on as Parquet: a Parquet file reads as the CSV does
    parquet = tmp_path / "predictions.parquet"
    frame.write_parquet(parquet)
    assert run("evaluate", parquet, "-d", NAME, *grouped, "--data", data, "-f", "csv") == written


def test_a_bad_prediction_in_a_frame_is_refused_with_its_line(data: Path) -> None:
    frame = predictions().with_columns(
        label=pl.when(pl.int_range(pl.len()) == 3).then(9).otherwise(pl.col("label"))
    )
    with pytest.raises(InvalidPredictionsError) as raised:
        dices.open(data).evaluate(frame, NAME)
    (problem,) = raised.value.report.problems
    assert (problem.line, problem.column, problem.value) == (5, "label", "9")
    assert problem.message == "not a value of the label's scale (1, 2, 3, 4, 5)"
