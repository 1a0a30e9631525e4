"""`dices evaluate` of a persona file (`dices judge --persona COL`): each simulated group
against its own real group and the rest, the spread across groups and the real-vs-simulated
group-difference correlation (dices_cli/evaluate/personas.py, docs/evaluate.md "Persona
files").

The per-group figures are evaluate's `--by` rows for the same predictions (same resamples,
same relabellings); the spread and the correlations match pandas and scipy computed from
the raw ratings; under shuffled demographics the correlation's test holds its level and its
interval covers 0.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from drivers.shuffled import shuffled_groups, shuffled_store
from scipy.stats import binom, pearsonr, spearmanr
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.evaluate.evaluation import Settings
from dices_cli.evaluate.personas import COLUMNS, evaluate_personas
from dices_cli.queries.engine import RaterSelection
from dices_cli.runs.evaluation import dices_votes
from dices_cli.store.datasets import Store
from tests.report.test_report import charts_drawn_here

runner = CliRunner()


def ratings(data: Path, dataset: str, column: str) -> pd.DataFrame:
    """item_id, rater_id, the rater's group and Q_overall of every rating."""
    rated = pl.read_parquet(data / dataset / "ratings.parquet")
    raters = pl.read_parquet(data / dataset / "raters.parquet").select(
        "rater_id", pl.col(column).cast(pl.String)
    )
    joined = rated.select("item_id", "rater_id", pl.col("Q_overall").cast(pl.String))
    return joined.join(raters, on="rater_id").to_pandas()


def persona_file(
    path: Path, frame: pd.DataFrame, column: str, seed: int, model: str = "sim"
) -> pd.DataFrame:
    """Random simulated scores per conversation and group, written as a persona file."""
    rng = np.random.default_rng(seed)
    cells = frame[["item_id", column]].drop_duplicates().sort_values(["item_id", column])
    cells = cells.assign(score=rng.uniform(0, 1, len(cells)))
    pl.DataFrame(
        {
            "model": model,
            "item_id": cells["item_id"].to_numpy(),
            "score": cells["score"].to_numpy(),
            "persona": [f"{column}={g}" for g in cells[column]],
        }
    ).write_csv(path)
    return cells


def rows_of(output: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(output)))


def test_a_persona_file_gets_its_figures_per_group_and_for_the_model(
    sample: Path, tmp_path: Path
) -> None:
    out = tmp_path / "personas.csv"
    judged = runner.invoke(
        app,
        [
            "judge",
            "--model",
            "baseline:random",
            "--persona",
            "rater_gender",
            "--seed",
            "3",
            "--data",
            str(sample),
            "-o",
            str(out),
            "-q",
        ],
    )
    assert judged.exit_code == 0, judged.output
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(out),
            "--data",
            str(sample),
            "--bootstrap",
            "50",
            "--permutations",
            "19",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(result.stdout)
    assert list(rows[0]) == COLUMNS
    groups = sorted({r["group"] for r in rows if r["group"]})
    assert len(groups) >= 2
    per_group = [f"{m}_{side}" for m in ("accuracy", "kappa") for side in ("own", "rest")] + [
        "kappa_difference",
        "jsd_own",
        "jsd_rest",
        "jsd_difference",
    ]
    for group in groups:
        assert sorted(r["figure"] for r in rows if r["group"] == group) == sorted(per_group)
    summary = [r["figure"] for r in rows if not r["group"]]
    assert summary == [
        "persona_signal",  # first: does the persona carry any group signal at all?
        "spread_real",
        "spread_simulated",
        "spread_ratio",
        "difference_pearson",
        "difference_spearman",
    ]
    for row in rows:
        assert row["persona"] == "rater_gender" and row["model"] == "baseline:random"
        if row["figure"].startswith("difference_") or row["figure"].endswith("_difference"):
            p = float(row["p_value"])
            assert 0.1 - 1e-12 <= p <= 1  # 19 relabellings: never below 2 / 20
            assert math.isclose(p * 10, round(p * 10))


def test_each_group_is_scored_as_evaluate_by_scores_that_group(
    sample: Path, tmp_path: Path
) -> None:
    """The same predictions for every persona: each persona's own/rest/difference figures
    are evaluate --by's row of its group, intervals and p-values included."""
    frame = ratings(sample, "350", "rater_race")
    cells = persona_file(tmp_path / "unused.csv", frame, "rater_race", seed=1)
    scores = cells.groupby("item_id")["score"].first()
    cells["score"] = cells["item_id"].map(scores)
    persona_path, plain_path = tmp_path / "personas.csv", tmp_path / "plain.csv"
    pl.DataFrame(
        {
            "item_id": cells["item_id"].to_numpy(),
            "score": cells["score"].to_numpy(),
            "persona": [f"rater_race={g}" for g in cells["rater_race"]],
        }
    ).write_csv(persona_path)
    pl.DataFrame({"item_id": scores.index.to_numpy(), "score": scores.to_numpy()}).write_csv(
        plain_path
    )
    common = ["--data", str(sample), "--bootstrap", "30", "--permutations", "19"]
    persona = runner.invoke(app, ["evaluate", str(persona_path), *common, "--format", "csv"])
    plain = runner.invoke(
        app, ["evaluate", str(plain_path), *common, "--by", "rater_race", "--format", "csv"]
    )
    assert persona.exit_code == plain.exit_code == 0, persona.output + plain.output
    by_rows = {
        (r["reference"], r["rater_race"]): r for r in rows_of(plain.stdout) if r["rater_race"]
    }
    compared = 0
    for row in rows_of(persona.stdout):
        if not row["group"]:
            continue
        by = by_rows[row["reference"], row["group"]]
        metric, _, side = row["figure"].rpartition("_")
        if side == "own":
            expected = [by[metric], by[f"{metric}_low"], by[f"{metric}_high"]]
        elif side == "rest":
            if metric == "accuracy":
                continue  # evaluate's rows give the rest's headline metric only
            expected = [by["rest"], row["low"], row["high"]]
        else:
            expected = [by["difference"], by["difference_low"], by["difference_high"]]
            assert row["p_value"] == by["p_value"]
            assert float(row["null"]) == pytest.approx(float(by["difference_null"]), rel=1e-12)
            assert row["p_adjusted"] == by["p_adjusted"]
        got = [float(row["value"]), float(row["low"]), float(row["high"])]
        assert got == pytest.approx([float(e) for e in expected], rel=1e-12, abs=1e-14), row
        compared += 1
    assert compared >= 5 * 7


def test_spread_and_correlation_match_pandas_and_scipy(sample: Path, tmp_path: Path) -> None:
    column = "rater_race"
    frame = ratings(sample, "990", column)
    cells = persona_file(tmp_path / "p.csv", frame, column, seed=2)
    votes, read = dices_votes(
        Store(sample), ["990"], RaterSelection(), (column,), str(tmp_path / "p.csv"), None
    )
    settings = Settings(by=(column,), bootstrap=0, permutations=0)
    table = evaluate_personas(votes[0], read, settings, column).table
    figures = {r["figure"]: r for r in table.records() if r["group"] is None}

    # Independently: shares per conversation and group with pandas.
    frame["yes"] = frame["Q_overall"] == "Yes"
    counts = frame.groupby(["item_id", column])["yes"].agg(["sum", "count"]).reset_index()
    totals = frame.groupby("item_id")["yes"].agg(["sum", "count"])
    counts["share"] = counts["sum"] / counts["count"]
    rest_sum = counts["item_id"].map(totals["sum"]) - counts["sum"]
    rest_count = counts["item_id"].map(totals["count"]) - counts["count"]
    counts["real"] = counts["share"] - rest_sum / rest_count
    raters = frame.groupby(column)["rater_id"].nunique()
    merged = counts.merge(cells, on=["item_id", column])
    merged["raters"] = merged[column].map(raters)
    merged["weighted"] = merged["score"] * merged["raters"]
    by_item = merged.groupby("item_id")[["weighted", "raters"]].transform("sum")
    merged["simulated"] = merged["score"] - (by_item["weighted"] - merged["weighted"]) / (
        by_item["raters"] - merged["raters"]
    )
    assert figures["difference_pearson"]["n"] == len(merged)
    assert math.isclose(
        figures["difference_pearson"]["value"],
        pearsonr(merged["simulated"], merged["real"]).statistic,
        rel_tol=1e-9,
    )
    assert math.isclose(
        figures["difference_spearman"]["value"],
        spearmanr(merged["simulated"], merged["real"]).statistic,
        rel_tol=1e-9,
    )
    # The spread is taken over the conversations every group rated.
    complete = merged[merged.groupby("item_id")[column].transform("count") == len(raters)]
    assert figures["spread_real"]["n"] == complete["item_id"].nunique() < len(cells["item_id"])
    real = complete.groupby("item_id")["share"].std(ddof=0).mean()
    simulated = complete.groupby("item_id")["score"].std(ddof=0).mean()
    assert math.isclose(figures["spread_real"]["value"], real, rel_tol=1e-9)
    assert math.isclose(figures["spread_simulated"]["value"], simulated, rel_tol=1e-9)
    assert math.isclose(figures["spread_ratio"]["value"], simulated / real, rel_tol=1e-9)


@pytest.mark.slow  # 40 shuffles, each a full evaluation: a calibration
def test_the_correlation_holds_its_level_under_shuffled_demographics(
    sample: Path, tmp_path: Path
) -> None:
    """Groups that carry no information: the correlation's p < 0.05 in at most about 5% of
    shuffles (99.9% binomial bound), and its clustered interval covers 0 in about 95%."""
    column = "rater_race"
    frame = ratings(sample, "990", column)
    persona_file(tmp_path / "p.csv", frame, column, seed=4)
    votes, read = dices_votes(
        Store(sample), ["990"], RaterSelection(), (column,), str(tmp_path / "p.csv"), None
    )
    rng = np.random.default_rng(9)
    p_values, covered, shuffles = [], [], 40
    for shuffle in range(shuffles):
        null_votes = shuffled_groups(votes[0], rng)
        settings = Settings(
            against=("crowd",), by=(column,), bootstrap=49, permutations=99, seed=shuffle
        )
        records = evaluate_personas(null_votes, read, settings, column).table.records()
        for record in records:
            if record["figure"] in ("difference_pearson", "difference_spearman"):
                p_values.append(record["p_value"])
            if record["figure"] == "difference_pearson":
                covered.append(record["low"] <= 0 <= record["high"])
    tests = len(p_values)
    rejected = sum(p < 0.05 for p in p_values)
    assert min(p_values) > 0
    assert rejected <= binom.ppf(0.999, tests, 0.05), (rejected, tests)
    misses = shuffles - sum(covered)
    assert misses <= binom.ppf(0.999, shuffles, 0.05), (misses, shuffles)


def test_a_correlation_that_is_there_is_found(sample: Path, tmp_path: Path) -> None:
    """A simulation that gives each group its real share (plus a little noise) tracks the
    real differences: a high correlation, p at its floor (a test that could never reject
    would pass the calibration above vacuously)."""
    column = "rater_race"
    frame = ratings(sample, "990", column)
    frame["yes"] = frame["Q_overall"] == "Yes"
    shares = frame.groupby(["item_id", column])["yes"].mean().reset_index()
    rng = np.random.default_rng(0)
    score = np.clip(shares["yes"] + rng.normal(0, 0.02, len(shares)), 0, 1)
    path = tmp_path / "p.csv"
    pl.DataFrame(
        {
            "item_id": shares["item_id"].to_numpy(),
            "score": score.to_numpy(),
            "persona": [f"{column}={g}" for g in shares[column]],
        }
    ).write_csv(path)
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(path),
            "-d",
            "990",
            "--data",
            str(sample),
            "--bootstrap",
            "20",
            "--permutations",
            "19",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    (pearson,) = [r for r in rows_of(result.stdout) if r["figure"] == "difference_pearson"]
    assert float(pearson["value"]) > 0.9 and float(pearson["low"]) > 0.5
    assert float(pearson["p_value"]) == pytest.approx(0.1)


def test_one_shuffled_store_end_to_end(sample: Path, tmp_path: Path) -> None:
    """The CLI on a data directory whose demographics are shuffled: it runs, and the real
    spread is within what relabelling gives (its p-value is not tiny)."""
    shuffled = shuffled_store(sample, tmp_path / "data", seed=3)
    out = tmp_path / "p.csv"
    judged = runner.invoke(
        app,
        [
            "judge",
            "--model",
            "baseline:random",
            "--persona",
            "rater_age",
            "--data",
            str(shuffled),
            "-o",
            str(out),
            "-q",
        ],
    )
    assert judged.exit_code == 0, judged.output
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(out),
            "--data",
            str(shuffled),
            "--bootstrap",
            "20",
            "--permutations",
            "99",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {r["figure"]: r for r in rows_of(result.stdout) if not r["group"]}
    assert float(rows["spread_real"]["p_value"]) > 0.01
    assert float(rows["spread_real"]["null"]) > 0  # noise alone spreads groups apart


@pytest.mark.parametrize(
    ("persona", "extra", "code", "message"),
    [
        (
            ["rater_gender=Man", None],
            [],
            2,
            "some rows have a persona and some do not; a persona file (dices judge's persona mode) "
            "gives one on every row",
        ),
        (
            ["gender:Man", "gender:Woman"],
            [],
            2,
            "a persona is COL=value with one rater column COL of",
        ),
        (
            ["rater_gender=Man", "rater_gender=Woman"],
            ["--by", "rater_race"],
            2,
            "simulates groups of rater_gender: its personas are compared with those groups; "
            "--by rater_race does not apply",
        ),
        (
            ["rater_gender=Man", "rater_gender=Man"],
            [],
            1,
            "(no persona for Woman)",
        ),
    ],
)
def test_persona_file_errors(
    sample: Path,
    tmp_path: Path,
    persona: list[str | None],
    extra: list[str],
    code: int,
    message: str,
) -> None:
    path = tmp_path / "p.csv"
    items = [13, 13] if persona[0] != persona[1] else [13, 20]
    pl.DataFrame({"item_id": items, "score": [0.5, 0.5], "persona": persona}).write_csv(path)
    result = runner.invoke(app, ["evaluate", str(path), "--data", str(sample), *extra])
    assert result.exit_code == code, result.output
    assert "Error:" in result.stderr and message in " ".join(result.stderr.split())


@pytest.mark.slow  # a report; the persona rows' own tests above stay fast
def test_the_report_shows_a_persona_file_as_its_persona_figures(
    sample: Path, tmp_path: Path
) -> None:
    """Not the last persona of each conversation scored as if it were the model: the
    persona figures, in a section of their own."""
    out = tmp_path / "p.csv"
    judged = runner.invoke(
        app,
        [
            "judge",
            "--model",
            "baseline:random",
            "--persona",
            "rater_gender",
            "--data",
            str(sample),
            "-o",
            str(out),
            "-q",
        ],
    )
    assert judged.exit_code == 0, judged.output
    page = tmp_path / "r.html"
    with charts_drawn_here():  # (the drawing process: tests/report/test_report.py)
        result = runner.invoke(
            app,
            [
                "report",
                "--predictions",
                str(out),
                "-d",
                "350",
                "--data",
                str(sample),
                "--bootstrap",
                "20",
                "-o",
                str(page),
            ],
        )
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "Simulated rater_gender groups against the real ones" in html
    assert "Simulated raters are not raters" in html
    assert html.count("kappa_difference") == 2  # a row per group (Man, Woman)
    assert "difference_pearson" in html and "Each model against the experts" not in html


def test_a_label_only_persona_file_has_no_jsd_rows_and_labels_as_shares(
    sample: Path, tmp_path: Path
) -> None:
    """Labels only: no crowd-share figures per group (no probability to compare with the
    shares), and a simulated group's unsafe share is its label, 1 for Yes and 0 for No or
    Unsure (pandas' spread of those)."""
    column = "rater_gender"
    frame = ratings(sample, "350", column)
    cells = persona_file(tmp_path / "unused.csv", frame, column, seed=6)
    labels = np.array(["Yes", "No", "Unsure"])[(cells["score"].to_numpy() * 3).astype(int)]
    path = tmp_path / "labels.csv"
    pl.DataFrame(
        {
            "item_id": cells["item_id"].to_numpy(),
            "label": labels,
            "persona": [f"{column}={g}" for g in cells[column]],
        }
    ).write_csv(path)
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(path),
            "--data",
            str(sample),
            "--bootstrap",
            "0",
            "--permutations",
            "0",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(result.stdout)
    assert not [r for r in rows if r["figure"].startswith("jsd")]
    cells["unsafe"] = (labels == "Yes").astype(float)
    expected = cells.groupby("item_id")["unsafe"].std(ddof=0).mean()
    (spread,) = [r for r in rows if r["figure"] == "spread_simulated"]
    assert math.isclose(float(spread["value"]), expected, rel_tol=1e-12)
    assert spread["p_value"] == spread["low"] == ""  # no relabelling, no resample


def test_the_relabellings_correlations_are_scipys_row_by_row() -> None:
    """The null's correlations, all rows at once: scipy's pearsonr and spearmanr on each
    row's cells that both sides define, ties (shares take few values) and NaN included."""
    from dices_cli.evaluate.personas import correlation_rows

    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, 40) / 5 - 0.5
    y = rng.integers(0, 4, (30, 40)) / 3 - rng.integers(0, 3, (30, 40)) / 2
    x[[3, 17]] = np.nan
    y[rng.random((30, 40)) < 0.1] = np.nan
    pearson, spearman = correlation_rows(x, y)
    for row in range(30):
        used = ~np.isnan(x) & ~np.isnan(y[row])
        assert pearson[row] == pytest.approx(pearsonr(x[used], y[row][used]).statistic, abs=1e-12)
        expected = spearmanr(x[used], y[row][used]).statistic
        assert spearman[row] == pytest.approx(expected, abs=1e-12)
