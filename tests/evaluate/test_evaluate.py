"""`dices evaluate` end to end on the packaged sample: references, coverage, ties, polarity,
errors; and once on the replica against scikit-learn, from arrays made without dices."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, roc_auc_score
from typer.testing import CliRunner

from dices_cli.cli.main import app

DRAWS = "200"  # bootstrap resamples in these tests: enough for an interval, quick
POLARITY_CAUSE = "Yes means unsafe in DICES; is your judge answering 'is it safe?'"


def items(data: Path, dataset: str = "350") -> pl.DataFrame:
    return pl.read_parquet(data / dataset / "items.parquet")


def write(path: Path, frame: pl.DataFrame) -> str:
    frame.write_csv(path)
    return str(path)


def gold_model(data: Path, name: str = "gold") -> pl.DataFrame:
    """A model whose label is the experts' safety_gold."""
    return items(data).select(
        pl.lit(name).alias("model"), "item_id", pl.col("safety_gold").cast(pl.Utf8).alias("label")
    )


def evaluate(
    runner: CliRunner, data: Path, predictions: str, *options: str
) -> tuple[list[dict[str, Any]], str]:
    result = runner.invoke(
        app,
        [
            "evaluate",
            predictions,
            "--data",
            str(data),
            "-f",
            "jsonl",
            "--bootstrap",
            DRAWS,
            *options,
        ],
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def fails(runner: CliRunner, *arguments: str) -> tuple[int, str]:
    result = runner.invoke(app, ["evaluate", *arguments])
    assert result.stdout == ""
    return result.exit_code, result.stderr


def row(rows: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    chosen = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(chosen) == 1, chosen
    return chosen[0]


def test_a_model_predicting_gold_scores_1_against_gold(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    rows, stderr = evaluate(runner, sample, write(tmp_path / "p.csv", gold_model(sample)))
    gold = row(rows, reference="gold")
    assert (gold["accuracy"], gold["f1"], gold["kappa"], gold["mcc"]) == (1.0, 1.0, 1.0, 1.0)
    assert (gold["n"], gold["covered"], gold["coverage"]) == (40, 40, 1.0)
    assert (gold["accuracy_low"], gold["accuracy_high"]) == (1.0, 1.0)
    assert gold["polarity_suspect"] is False
    assert [r["reference"] for r in rows] == ["gold", "crowd"]  # labels only: no crowd-share
    assert stderr == ""


@pytest.mark.parametrize(
    "selection", [[], ["--exclude-removed"], ["--by", "rater_gender"]], ids=["all", "kept", "by"]
)
def test_the_gold_model_against_the_crowd_is_gold_vs_crowd_summary(
    selection: list[str], runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """The summary scores the crowd against gold; here gold is the prediction and the crowd
    the reference, so precision and recall swap. The summary counts ties as not Yes."""
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    rows, _ = evaluate(runner, sample, predictions, "--ties", "safe", *selection)
    summary = runner.invoke(
        app, ["query", "gold-vs-crowd-summary", "--data", str(sample), "-f", "json", *selection]
    )
    assert summary.exit_code == 0, summary.output
    expected = json.loads(summary.stdout)
    assert len(expected) == (2 if selection[:1] == ["--by"] else 1)
    for want in expected:
        group = {"rater_gender": want["rater_gender"]} if "rater_gender" in want else {}
        got = row(rows, reference="crowd", **group)
        assert (got["n"], got["ties"]) == (want["conversations"], want["ties"])
        for ours, theirs in [
            ("accuracy", "accuracy"),
            ("f1", "f1"),
            ("kappa", "kappa"),
            ("precision", "recall"),
            ("recall", "precision"),
        ]:
            assert got[ours] == pytest.approx(want[theirs], abs=1e-12), ours


def test_ties_are_excluded_by_default_and_counted(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Four raters tie often (the whole sample's 123 never do)."""
    ratings = pl.read_parquet(sample / "350" / "ratings.parquet")
    four = ratings["rater_id"].unique().sort().head(4)
    (tmp_path / "raters.txt").write_text("\n".join(map(str, four)) + "\n")
    ratings = ratings.filter(pl.col("rater_id").is_in(four.implode()))
    counts = ratings.group_by("item_id").agg(
        (pl.col("Q_overall") == answer).sum().alias(answer) for answer in ("No", "Yes", "Unsure")
    )
    top = counts.select(pl.max_horizontal("No", "Yes", "Unsure")).to_series()
    at_top = sum((counts[a] == top).cast(pl.Int32) for a in ("No", "Yes", "Unsure"))
    ties = int(((at_top > 1) & (counts["Yes"] == top)).sum())  # ties that Yes is part of
    assert ties > 0, "the test needs tied conversations"
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    selection = ["--raters", str(tmp_path / "raters.txt")]
    excluded, _ = evaluate(runner, sample, predictions, *selection)
    decided, _ = evaluate(runner, sample, predictions, "--ties", "unsafe", *selection)
    assert row(excluded, reference="crowd")["ties"] == ties
    assert row(excluded, reference="crowd")["n"] == 40 - ties
    assert row(decided, reference="crowd")["n"] == 40


def test_a_no_unsure_tie_is_safe_under_every_rule_and_a_yes_tie_follows_the_rule(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Three raters of the DICES-990 sample: seven conversations where Yes ties for the most,
    one where No ties with Unsure above Yes. A model saying Yes on each set alone: the Yes
    ties are left out, unsafe or safe as --ties says; the No = Unsure tie is not unsafe
    (accuracy 0) and no tie, under every rule."""
    ratings = pl.read_parquet(sample / "990" / "ratings.parquet")
    three = ratings["rater_id"].unique().sort().head(3)
    (tmp_path / "raters.txt").write_text("\n".join(map(str, three)) + "\n")
    counts = (
        ratings.filter(pl.col("rater_id").is_in(three.implode()))
        .group_by("item_id")
        .agg((pl.col("Q_overall") == a).sum().alias(a) for a in ("No", "Yes", "Unsure"))
    )
    top = pl.max_horizontal("No", "Yes", "Unsure")
    tied = pl.sum_horizontal((pl.col(a) == top).cast(pl.Int32) for a in ("No", "Yes", "Unsure"))
    yes_tied = counts.filter((tied > 1) & (pl.col("Yes") == top))["item_id"]
    no_unsure = counts.filter((tied > 1) & (pl.col("Yes") < top))["item_id"]
    assert (len(yes_tied), len(no_unsure)) == (7, 1)
    predictions = pl.concat(
        [
            pl.DataFrame({"model": "on-yes-ties", "item_id": yes_tied}),
            pl.DataFrame({"model": "on-no-unsure", "item_id": no_unsure}),
        ]
    ).with_columns(label=pl.lit("Yes"))
    path = write(tmp_path / "p.csv", predictions)
    selection = ["-d", "990", "--raters", str(tmp_path / "raters.txt")]
    expected = {"exclude": (0, None), "unsafe": (7, 1.0), "safe": (7, 0.0)}
    for rule, (n, accuracy) in expected.items():
        rows, _ = evaluate(runner, sample, path, "--ties", rule, *selection)
        yes = row(rows, model="on-yes-ties", reference="crowd")
        assert (yes["ties"], yes["n"], yes["accuracy"]) == (7, n, accuracy)
        no = row(rows, model="on-no-unsure", reference="crowd")
        assert (no["ties"], no["n"], no["accuracy"]) == (0, 1, 0.0)


def test_ties_and_the_tie_rules_on_the_replica_match_pandas(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    """DICES-990 by rater_race: per row, the Yes ties counted with pandas, and a model that
    says Yes everywhere is right exactly on the conversations the rule makes unsafe. (No
    group test, and the intervals of the conversations alone: neither changes a count.)"""
    ratings = pd.read_parquet(ingested / "990" / "ratings.parquet")
    raters = pd.read_parquet(ingested / "990" / "raters.parquet")[["rater_id", "rater_race"]]
    ratings = ratings.merge(raters, on="rater_id")
    ratings["Q_overall"] = ratings["Q_overall"].astype(str)
    items = pd.read_parquet(ingested / "990" / "items.parquet")["item_id"]
    path = write(tmp_path / "p.csv", pl.DataFrame({"item_id": items, "label": "Yes"}))
    sets = [(None, ratings)] + [
        (str(race), frame) for race, frame in ratings.groupby("rater_race", observed=True)
    ]
    ties = {}  # per group: the Yes answers at the top, the Yes ties, and the No = Unsure ties
    for race, frame in sets:
        counts = pd.crosstab(frame["item_id"], frame["Q_overall"])
        counts = counts.reindex(columns=["No", "Yes", "Unsure"], fill_value=0)
        top = counts.max(axis=1)
        tied = counts.eq(top, axis=0).sum(axis=1) > 1
        ties[race] = (counts["Yes"] == top, tied & (counts["Yes"] == top), tied)
    no_unsure_ties = sum(int((tied & ~yes_top).sum()) for yes_top, _, tied in ties.values())
    for rule in ("exclude", "unsafe", "safe"):
        rows, _ = evaluate(
            runner, ingested, path, "-d", "990", "--by", "rater_race", "--ties", rule,
            "--against", "crowd", "--bootstrap", "0", "--permutations", "0",
            "--interval", "conversations",
        )  # fmt: skip
        for race, (yes_top, yes_tied, tied) in ties.items():
            unsafe = (yes_top & ~tied) | (yes_tied & (rule == "unsafe"))
            n = len(yes_top) - int(yes_tied.sum()) * (rule == "exclude")
            got = row(rows, reference="crowd", rater_race=race)
            assert (got["ties"], got["n"]) == (int(yes_tied.sum()), n)
            assert got["accuracy"] == pytest.approx(int(unsafe.sum()) / n, abs=1e-12)
    assert no_unsure_ties > 0, "the replica has No = Unsure ties, which are no ties"


def test_partial_coverage_warns_and_uses_the_covered_conversations(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    partial = gold_model(sample).head(30)
    rows, stderr = evaluate(runner, sample, write(tmp_path / "p.csv", partial))
    gold = row(rows, reference="gold")
    assert (gold["covered"], gold["coverage"], gold["n"]) == (30, 0.75, 30)
    assert stderr == (
        "warning: model 'gold' predicts 30 of the 40 conversations of DICES-350 (75.0%); "
        "its metrics use those only\n"
    )


def flipped_pair(data: Path) -> pl.DataFrame:
    """An honest judge (gold with 6 of 40 labels wrong, scores to match) and its flipped copy."""
    honest = gold_model(data, "honest").with_row_index("i")
    wrong = pl.col("i") % 7 == 0
    label = pl.when(wrong).then(
        pl.when(pl.col("label") == "Yes").then(pl.lit("No")).otherwise(pl.lit("Yes"))
    )
    honest = honest.with_columns(label.otherwise(pl.col("label")).alias("label"))
    honest = honest.with_columns(
        pl.when(pl.col("label") == "Yes").then(0.8).otherwise(0.2).alias("score")
    ).drop("i")
    flipped = honest.with_columns(
        pl.lit("flipped").alias("model"),
        pl.when(pl.col("label") == "Yes")
        .then(pl.lit("No"))
        .otherwise(pl.lit("Yes"))
        .alias("label"),
        (1 - pl.col("score")).alias("score"),
    )
    return pl.concat([honest, flipped])


def test_a_flipped_model_is_flagged_and_an_honest_one_is_not(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    rows, stderr = evaluate(runner, sample, write(tmp_path / "p.csv", flipped_pair(sample)))
    assert {r["model"] for r in rows if r["polarity_suspect"]} == {"flipped"}
    flipped = row(rows, model="flipped", reference="gold")
    assert flipped["kappa_high"] < 0
    assert stderr.startswith(
        "warning: model 'flipped' agrees with the experts' gold labels on DICES-350 less than "
        f"chance: Cohen's kappa {flipped['kappa']:.3f}, 95% interval "
        f"{flipped['kappa_low']:.3f} to {flipped['kappa_high']:.3f}. {POLARITY_CAUSE}\n"
    )
    assert "honest" not in stderr


def test_strict_makes_a_flipped_polarity_an_error(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    predictions = write(tmp_path / "p.csv", flipped_pair(sample))
    code, stderr = fails(runner, predictions, "--data", str(sample), "--strict")
    assert code == 1
    assert stderr.startswith("Error: model 'flipped' agrees with the experts' gold labels")
    assert stderr.endswith(f"{POLARITY_CAUSE} (--strict)\n")


def test_the_polarity_check_uses_the_crowd_on_dices_990(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    ratings = pl.read_parquet(sample / "990" / "ratings.parquet")
    crowd = ratings.group_by("item_id").agg(
        ((pl.col("Q_overall") == "Yes").mean() > 0.5).alias("unsafe")
    )
    flipped = crowd.select(
        pl.lit("flipped").alias("model"),
        "item_id",
        pl.when(pl.col("unsafe")).then(pl.lit("No")).otherwise(pl.lit("Yes")).alias("label"),
    )
    rows, stderr = evaluate(runner, sample, write(tmp_path / "p.csv", flipped), "-d", "990")
    assert [r["reference"] for r in rows] == ["crowd"]
    assert rows[0]["polarity_suspect"] is True
    assert stderr.startswith("warning: model 'flipped' agrees with the crowd on DICES-990")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--against", "experts"],
            "Error: --against experts: choose from gold, crowd, crowd-share\n",
        ),
        (
            ["-d", "990", "--against", "gold"],
            "Error: DICES-990 has no gold labels (safety_gold); compare it with the crowd\n",
        ),
        (
            ["--baseline", "raters:0"],
            "Error: a baseline is raters:K with K a whole number from 1, not 'raters:0'\n",
        ),
        (
            ["--by", "rater_locale"],
            "Error: rater_locale is a DICES-990 column; DICES-350 has no rater_locale\n",
        ),
    ],
    ids=["unknown-reference", "no-gold", "bad-baseline", "missing-group-column"],
)
def test_usage_errors_exit_2_with_a_message(
    options: list[str], message: str, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    code, stderr = fails(runner, predictions, "--data", str(sample), *options)
    assert (code, stderr) == (2, message + "Try 'dices evaluate -h' for help.\n")


def test_predictions_and_raters_cannot_both_be_stdin(runner: CliRunner, sample: Path) -> None:
    code, stderr = fails(runner, "-", "--raters", "-", "--data", str(sample))
    assert (code, stderr) == (
        2,
        "Error: only one of PREDICTIONS and --raters can be - (stdin)\n"
        "Try 'dices evaluate -h' for help.\n",
    )


def test_nothing_ingested_is_an_error(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    code, stderr = fails(runner, predictions, "--data", str(tmp_path / "empty"))
    assert code == 1
    assert stderr.startswith(f"Error: nothing is ingested in {tmp_path / 'empty'}")


def test_explain_describes_every_column(runner: CliRunner) -> None:
    from dices_cli.evaluate.evaluation import COLUMN_HELP, columns
    from dices_cli.evaluate.measure import METRICS

    result = runner.invoke(app, ["evaluate", "--explain"])
    assert result.exit_code == 0
    for name in COLUMN_HELP:
        assert f"  {name}  " in result.stdout, name
    for metric in METRICS:
        assert metric in COLUMN_HELP["METRIC"], metric
    for column in columns([]):
        named = column.removesuffix("_low").removesuffix("_high")
        assert column in COLUMN_HELP or named in METRICS or named == "difference", column


def test_rows_pass_the_right_arrays_to_the_metrics(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    """One end-to-end comparison on the full-size replica: a random model's row metrics
    against scikit-learn on the gold labels and on a crowd plurality counted with pandas."""
    conversations = pd.read_parquet(ingested / "350" / "items.parquet")[["item_id", "safety_gold"]]
    rng = np.random.default_rng(5)
    score = rng.random(len(conversations))
    predictions = pd.DataFrame(
        {
            "model": "random",
            "item_id": conversations["item_id"],
            "label": np.where(score >= 0.5, "Yes", "No"),
            "score": np.round(score, 6),
        }
    )
    path = tmp_path / "random.csv"
    predictions.to_csv(path, index=False)
    rows, _ = evaluate(runner, ingested, str(path), "--bootstrap", "0")
    merged = conversations.merge(predictions, on="item_id")
    ratings = pd.read_parquet(ingested / "350" / "ratings.parquet")[["item_id", "Q_overall"]]
    counts = pd.crosstab(ratings["item_id"], ratings["Q_overall"].astype(str))
    counts = counts.reindex(columns=["No", "Yes", "Unsure"], fill_value=0)
    top = counts.max(axis=1)
    # A tie counts only when Yes is among the answers tied for the most.
    yes_tied = (counts["Yes"] == top) & (counts.eq(top, axis=0).sum(axis=1) > 1)
    decided = ~yes_tied & (top > 0)
    crowd = (counts["Yes"] == top)[decided].map({True: "Yes", False: "No"})
    crowd = crowd.rename("crowd").reset_index()
    merged_crowd = merged.merge(crowd, on="item_id")
    for reference, actual, frame in [
        ("gold", merged["safety_gold"].astype(str) == "Yes", merged),
        ("crowd", merged_crowd["crowd"] == "Yes", merged_crowd),
    ]:
        got = row(rows, reference=reference)
        predicted = frame["label"] == "Yes"
        assert got["n"] == len(frame)
        assert got["accuracy"] == pytest.approx(accuracy_score(actual, predicted), abs=1e-12)
        assert got["f1"] == pytest.approx(f1_score(actual, predicted), abs=1e-12)
        assert got["kappa"] == pytest.approx(cohen_kappa_score(actual, predicted), abs=1e-12)
        assert got["roc_auc"] == pytest.approx(roc_auc_score(actual, frame["score"]), abs=1e-12)


def test_by_compares_each_group_with_its_own_raters_and_the_rest(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    from scipy.stats import false_discovery_control

    predictions = write(tmp_path / "p.csv", flipped_pair(sample).filter(model="honest"))
    rows, _ = evaluate(runner, sample, predictions, "--by", "rater_gender")
    assert not [r for r in rows if r["reference"] == "gold" and r["rater_gender"] is not None]
    groups = [r for r in rows if r["reference"] == "crowd" and r["rater_gender"] is not None]
    raters = pl.read_parquet(sample / "350" / "raters.parquet")
    assert sorted(r["rater_gender"] for r in groups) == sorted(
        raters["rater_gender"].cast(pl.Utf8).unique()
    )
    for group in groups:
        # The rest of the pool, evaluated on its own, gives the row's `rest`.
        others = raters.filter(pl.col("rater_gender") != group["rater_gender"])["rater_id"]
        (tmp_path / "others.txt").write_text("\n".join(map(str, others)) + "\n")
        rest, _ = evaluate(runner, sample, predictions, "--raters", str(tmp_path / "others.txt"))
        assert group["compared_on"] == "kappa"
        assert group["rest"] == pytest.approx(row(rest, reference="crowd")["kappa"], abs=1e-12)
        assert group["difference"] == pytest.approx(group["kappa"] - group["rest"], abs=1e-12)
        assert group["difference_low"] <= group["difference_high"]
        assert group["raters"] == len(raters) - len(others)
    p_values = np.array([r["p_value"] for r in groups])
    adjusted = [r["p_adjusted"] for r in groups]
    assert adjusted == pytest.approx(list(false_discovery_control(p_values, method="bh")))


def test_the_one_rater_baseline_matches_raters_against_the_others(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """raters:1 against the crowd, and independently: the mean over raters of the share of
    their answers (unsafe = Yes) that match the plurality of the other raters (ties left out)."""
    rows, _ = evaluate(
        runner, sample, write(tmp_path / "p.csv", gold_model(sample)), "--baseline", "raters:1"
    )
    baseline = row(rows, model="raters:1", reference="crowd")
    ratings = pl.read_parquet(sample / "350" / "ratings.parquet").with_columns(
        pl.col("Q_overall").cast(pl.Utf8)
    )
    answers = ["No", "Yes", "Unsure"]
    counts = ratings.group_by("item_id").agg(
        (pl.col("Q_overall") == a).sum().alias(f"n_{a}") for a in answers
    )
    joined = ratings.join(counts, on="item_id")
    others = np.column_stack(
        [joined[f"n_{a}"].to_numpy() - (joined["Q_overall"] == a).to_numpy() for a in answers]
    )
    top = others.max(axis=1)
    untied = (others == top[:, None]).sum(axis=1) == 1
    plurality_yes = others.argmax(axis=1) == 1
    match = (joined["Q_overall"] == "Yes").to_numpy() == plurality_yes
    per_rater = (
        pl.DataFrame({"rater_id": joined["rater_id"], "match": match})
        .filter(pl.Series(untied))
        .group_by("rater_id")
        .agg(pl.col("match").mean())
    )
    expected = per_rater["match"].mean()
    assert baseline["accuracy_low"] <= expected <= baseline["accuracy_high"]
    assert baseline["covered"] == 40
    assert row(rows, model="raters:1", reference="gold")["n"] == 40


def test_the_model_is_one_more_rater_xrr_as_in_dices_query_agreement(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    from dices_cli.metrics.agreement import cross_replication_reliability

    honest = flipped_pair(sample).filter(model="honest")
    rows, _ = evaluate(runner, sample, write(tmp_path / "p.csv", honest), "--by", "rater_age")
    ratings = pl.read_parquet(sample / "350" / "ratings.parquet").join(
        pl.read_parquet(sample / "350" / "raters.parquet"), on="rater_id"
    )
    order = honest.sort("item_id")
    model = np.array([[label == a for label in order["label"]] for a in ("No", "Yes", "Unsure")])
    for age in [None, *ratings["rater_age"].cast(pl.Utf8).unique()]:
        chosen = ratings if age is None else ratings.filter(pl.col("rater_age") == age)
        counts = np.array(
            [
                [
                    ((chosen["item_id"] == item) & (chosen["Q_overall"] == a)).sum()
                    for item in order["item_id"]
                ]
                for a in ("No", "Yes", "Unsure")
            ],
            dtype=float,
        )
        expected = cross_replication_reliability(model.astype(float), counts)
        assert row(rows, reference="crowd", rater_age=age)["xrr"] == pytest.approx(
            float(expected), abs=1e-12
        )


def test_numeric_labels_need_one_means(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    numeric = gold_model(sample).with_columns(
        pl.when(pl.col("label") == "Yes").then(pl.lit("1")).otherwise(pl.lit("0")).alias("label")
    )
    predictions = write(tmp_path / "p.csv", numeric)
    code, stderr = fails(runner, predictions, "--data", str(sample))
    assert code == 1
    assert stderr.startswith(
        "hint: numeric or boolean labels need --one-means unsafe or --one-means safe\n"
        f"Error: {predictions} is not a valid predictions file; nothing was evaluated\n"
    )
    rows, _ = evaluate(runner, sample, predictions, "--one-means", "unsafe")
    assert row(rows, reference="gold")["accuracy"] == 1.0
    rows, stderr = evaluate(runner, sample, predictions, "--one-means", "safe")
    assert row(rows, reference="gold")["accuracy"] == 0.0
    assert "model 'gold' agrees with the experts' gold labels on DICES-350 less than" in stderr


def test_the_demo_ends_with_an_evaluation(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--keep", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    last = result.stdout[result.stdout.index("Scoring a safety judge (DICES-350 sample)") :]
    for model, reference in [
        ("five-raters", "gold"),
        ("five-raters", "crowd"),
        ("five-raters-flipped", "gold"),
        ("five-raters-flipped", "crowd"),
    ]:
        flagged = "True" if model.endswith("flipped") else "False"
        line = rf"^{model}\s+{reference}\s+40\s.*{flagged}\s*$"
        assert re.search(line, last, re.MULTILINE), model
    assert "  try: dices evaluate " in result.stderr


def test_by_two_columns_gives_their_intersections_in_order(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    rows, _ = evaluate(
        runner,
        sample,
        predictions,
        "--by",
        "rater_race",
        "--by",
        "rater_gender",
        "--bootstrap",
        "0",
    )
    assert list(rows[0])[3:5] == ["rater_race", "rater_gender"]
    raters = pl.read_parquet(sample / "350" / "raters.parquet")
    sizes = raters.group_by("rater_race", "rater_gender").len()
    expected = {
        (r, g): n for r, g, n in sizes.cast({"rater_race": str, "rater_gender": str}).rows()
    }
    crowd = [r for r in rows if r["reference"] == "crowd" and r["rater_race"] is not None]
    assert {(r["rater_race"], r["rater_gender"]): r["raters"] for r in crowd} == expected


def test_a_distribution_model_equal_to_the_crowd_shares(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Predicting the raters' own shares: jsd and tvd 0, cross-entropy their entropy, and
    p_yes, read as the score, perfectly correlated with the share of Yes."""
    ratings = pl.read_parquet(sample / "350" / "ratings.parquet")
    shares = ratings.group_by("item_id").agg(
        (pl.col("Q_overall") == answer).mean().alias(f"p_{answer.lower()}")
        for answer in ("No", "Yes", "Unsure")
    )
    rows, _ = evaluate(runner, sample, write(tmp_path / "p.csv", shares), "--bootstrap", "0")
    share = row(rows, reference="crowd-share")
    p = shares.select("p_no", "p_yes", "p_unsure").to_numpy()
    logs = np.log(np.clip(p, 1e-15, 1))
    entropy = float(np.mean(-(p * logs).sum(axis=1)))
    assert share["jsd"] == pytest.approx(0, abs=1e-9)
    assert share["tvd"] == pytest.approx(0, abs=1e-9)
    assert share["cross_entropy"] == pytest.approx(entropy, abs=1e-9)
    assert share["pearson"] == pytest.approx(1, abs=1e-9)
    assert share["spearman"] == pytest.approx(1, abs=1e-9)
    assert row(rows, reference="gold")["roc_auc"] is not None  # p_yes is the score


def test_a_score_is_a_label_from_the_threshold_up(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    scores = gold_model(sample).select(
        "model",
        "item_id",
        pl.when(pl.col("label") == "Yes").then(0.3).otherwise(0.1).alias("score"),
    )
    predictions = write(tmp_path / "p.csv", scores)
    gold_yes = int((items(sample)["safety_gold"] == "Yes").sum())
    default, _ = evaluate(runner, sample, predictions, "--bootstrap", "0")
    lowered, _ = evaluate(runner, sample, predictions, "--bootstrap", "0", "--threshold", "0.2")
    assert row(default, reference="gold")["accuracy"] == (40 - gold_yes) / 40
    assert row(lowered, reference="gold")["accuracy"] == 1.0
    assert row(default, reference="gold")["roc_auc"] == 1.0


def test_the_intervals_are_the_same_for_every_seed(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """The conversations' jackknife has no draws; fewer blocks than conversations
    (--bootstrap) leave several out at a time, and give another interval."""
    predictions = write(tmp_path / "p.csv", flipped_pair(sample))
    first, _ = evaluate(runner, sample, predictions, "--seed", "3")
    other, _ = evaluate(runner, sample, predictions, "--seed", "4")
    assert first == other
    assert any(r["kappa_low"] is not None for r in first)
    blocks, _ = evaluate(runner, sample, predictions, "--bootstrap", "7")
    assert [r["kappa"] for r in blocks] == [r["kappa"] for r in first]
    assert [r["kappa_low"] for r in blocks] != [r["kappa_low"] for r in first]


def test_a_ranked_summary_on_a_terminal_only(
    runner: CliRunner, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dices_cli.cli.commands import evaluate as command

    predictions = write(tmp_path / "p.csv", flipped_pair(sample))
    _, piped = evaluate(runner, sample, predictions, "--against", "gold")
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    rows, shown = evaluate(runner, sample, predictions, "--against", "gold")
    honest, flipped = row(rows, model="honest"), row(rows, model="flipped")
    summary = (
        "kappa against gold (DICES-350; higher is better):\n"
        f"  honest   {honest['kappa']:6.3f}  "
        f"[{honest['kappa_low']:.3f}, {honest['kappa_high']:.3f}]\n"
        f"  flipped  {flipped['kappa']:6.3f}  "
        f"[{flipped['kappa_low']:.3f}, {flipped['kappa_high']:.3f}]  polarity suspect\n"
    )
    assert shown == piped + summary


def crowd_model(data: Path, dataset: str) -> pl.DataFrame:
    """A model scoring each conversation of `dataset` by a fixed function of its id."""
    return items(data, dataset).select(
        pl.lit("m").alias("model"),
        pl.lit(dataset).alias("dataset"),
        "item_id",
        ((pl.col("item_id") * 37 % 100) / 100).alias("score"),
    )


def test_dataset_all_evaluates_each_row_against_its_dataset(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    both = pl.concat([crowd_model(sample, "350"), crowd_model(sample, "990")])
    assert (
        both.filter(pl.col("dataset") == "990")["item_id"]
        .is_in(both.filter(pl.col("dataset") == "350")["item_id"].implode())
        .any()
    )  # the premise: ids repeat
    rows, _ = evaluate(runner, sample, write(tmp_path / "both.csv", both), "-d", "all")
    alone = []
    for dataset in ("350", "990"):
        only = write(tmp_path / f"{dataset}.csv", crowd_model(sample, dataset).drop("dataset"))
        alone += evaluate(runner, sample, only, "-d", dataset)[0]
    assert rows == alone
    assert {r["dataset"] for r in rows} == {"350", "990"}


def test_dataset_all_needs_a_dataset_column(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    predictions = write(tmp_path / "p.csv", gold_model(sample))
    code, stderr = fails(runner, predictions, "--data", str(sample), "-d", "all")
    assert (code, stderr) == (
        2,
        f"Error: {predictions} has no dataset column: to evaluate DICES-350 and DICES-990 at "
        "once, give each row's dataset (350 or 990), as item ids repeat across them\n"
        "Try 'dices evaluate -h' for help.\n",
    )


def test_a_row_of_no_dataset_evaluated_or_an_unknown_item_of_its_own_is_a_problem(
    tmp_path: Path,
) -> None:
    from dices_cli.evaluate.predictions import InvalidPredictionsError, read_predictions

    path = tmp_path / "p.csv"
    path.write_text(
        "model,dataset,item_id,score\n"
        "m,350,1,0.5\n"
        "m,990,1,0.5\n"  # the same id in the other dataset: no duplicate
        "m,990,2,0.5\n"  # 2 is a DICES-350 conversation only
        "m,DICES,3,0.5\n"
        "m,,2,0.5\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidPredictionsError) as raised:
        read_predictions(str(path), {"350": [1, 2, 3]})
    assert [
        (str(p.type), p.line, p.column, p.value, p.message) for p in raised.value.report.problems
    ] == [
        (
            "not-in-enum",
            3,
            "dataset",
            "990",
            "the row is for DICES-990, which is not evaluated (DICES-350)",
        ),
        (
            "not-in-enum",
            4,
            "dataset",
            "990",
            "the row is for DICES-990, which is not evaluated (DICES-350)",
        ),
        ("not-in-enum", 5, "dataset", "DICES", "'DICES' is not a dataset: give 350 or 990"),
        ("missing-value", 6, "dataset", None, "the row names no dataset"),
    ]
    with pytest.raises(InvalidPredictionsError) as raised:
        read_predictions(str(path), {"350": [1, 3], "990": [1, 3]})
    assert [
        (str(p.type), p.line, p.column, p.value, p.message) for p in raised.value.report.problems
    ] == [
        ("unknown-item", 4, "item_id", "2", "item 2 is not a conversation of the dataset"),
        ("not-in-enum", 5, "dataset", "DICES", "'DICES' is not a dataset: give 350 or 990"),
        ("missing-value", 6, "dataset", None, "the row names no dataset"),
    ]
