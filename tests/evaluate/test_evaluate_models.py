"""`dices evaluate` with several models in one file: each model's kinds of prediction are its
own. A model is scored exactly as it is in a file holding it alone (rows, warnings and the
polarity check), whichever label, score and distribution columns the file has and whichever
of them the other models fill."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app

DRAWS = "20"  # bootstrap resamples: the same in every run, so rows compare cell by cell
BY = ("--by", "rater_gender")  # group rows too
# A model's kinds: a label, a score, and a distribution of two shares or three (0: none).
Kinds = tuple[bool, bool, int]
# The files: every combination of label, score, p_no + p_yes, and p_unsure beside them.
LAYOUTS = [
    (label, score, shares)
    for label, score, shares in itertools.product((False, True), (False, True), (0, 2, 3))
    if label or score or shares
]


def name(kinds: Kinds) -> str:
    label, score, shares = kinds
    parts = ["label"] * label + ["score"] * score + [f"p{shares}"] * bool(shares)
    return "+".join(parts)


def models_of(layout: Kinds) -> list[Kinds]:
    """Every model a file of `layout` can hold: each non-empty choice of its columns (a
    file with p_unsure holds models of two shares and of three)."""
    label, score, shares = layout
    return [
        (lab, sco, sha)
        for lab, sco, sha in itertools.product(
            (False, True) if label else (False,),
            (False, True) if score else (False,),
            {0, 2, shares} if shares else {0},
        )
        if lab or sco or sha
    ]


def predictions(sample: Path, kinds: Kinds, layout: Kinds, dataset: str = "350") -> pl.DataFrame:
    """The model `kinds` in the columns of `layout` (those it does not give left empty):
    noisy copies of the crowd's share of Yes, each model its own noise, and its own one
    conversation left out (coverage under 100%)."""
    ratings = pl.read_parquet(sample / dataset / "ratings.parquet")
    share = (
        ratings.group_by("item_id")
        .agg((pl.col("Q_overall").cast(pl.String) == "Yes").mean().alias("share"))
        .sort("item_id")
    )
    label, score, shares = kinds
    seed = 4 * label + 2 * score + shares
    rng = np.random.default_rng(seed)
    truth = share["share"].to_numpy()
    p_yes = np.clip(truth * 0.7 + rng.random(len(truth)) * 0.3, 0, 1).round(3)
    p_unsure = (rng.random(len(truth)) * (1 - p_yes) * (shares == 3)).round(3)
    answers = np.where(p_yes >= 0.5, "Yes", "No").astype(object)
    answers[rng.random(len(truth)) < 0.1] = "Unsure"
    columns: dict[str, Any] = {
        "model": name(kinds),
        "item_id": share["item_id"],
        "label": answers if label else None,
        "score": np.clip(p_yes + rng.normal(0, 0.05, len(truth)), 0, 1).round(6) if score else None,
        "p_no": (1 - p_yes - p_unsure).round(3) if shares else None,
        "p_yes": p_yes if shares else None,
        "p_unsure": p_unsure if shares == 3 else None,
    }
    given = ["model", "item_id"]
    given += ["label"] * layout[0] + ["score"] * layout[1]
    given += ["p_no", "p_yes"] * bool(layout[2]) + ["p_unsure"] * (layout[2] == 3)
    types = {
        "label": pl.String,
        **dict.fromkeys(["score", "p_no", "p_yes", "p_unsure"], pl.Float64),
    }
    frame = pl.DataFrame(columns, schema_overrides=types)
    return frame.select(given).filter(pl.int_range(pl.len()) != seed)


def run(runner: CliRunner, data: Path, frame: pl.DataFrame, path: Path, *options: str) -> Any:
    frame.write_csv(path)
    result = runner.invoke(
        app,
        ["evaluate", str(path), "--data", str(data), "-f", "jsonl", "--bootstrap", DRAWS, *options],
    )
    return result


def rows(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


ALONE: dict[Kinds, tuple[list[dict[str, Any]], str]] = {}


def alone(runner: CliRunner, sample: Path, kinds: Kinds, tmp_path: Path) -> Any:
    """The rows and stderr of the model in a file of its own columns only (made once)."""
    if kinds not in ALONE:
        result = run(runner, sample, predictions(sample, kinds, kinds), tmp_path / "alone.csv", *BY)
        ALONE[kinds] = rows(result), result.stderr
    return ALONE[kinds]


@pytest.mark.parametrize("layout", LAYOUTS, ids=name)
def test_each_model_is_scored_as_it_is_alone(
    layout: Kinds, runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    models = models_of(layout)
    frame = pl.concat([predictions(sample, kinds, layout) for kinds in models])
    together = run(runner, sample, frame, tmp_path / "together.csv", *BY)
    got = rows(together)
    warnings = []
    for kinds in models:
        expected, stderr = alone(runner, sample, kinds, tmp_path)
        assert [r for r in got if r["model"] == name(kinds)] == expected, name(kinds)
        warnings.append(stderr)
    # Each model's notes, as it has them alone, in file order.
    assert together.stderr == "".join(warnings)
    # Every model is measured on its own kinds: labels on the covered conversations, a
    # probability (score or p_yes) against crowd-share.
    for kinds in models:
        gold = next(r for r in got if r["model"] == name(kinds) and r["reference"] == "gold")
        assert gold["n"] == 39
        share = [r for r in got if r["model"] == name(kinds) and r["reference"] == "crowd-share"]
        assert bool(share) == (kinds[1] or bool(kinds[2]))


def test_a_model_giving_labels_on_one_dataset_and_scores_on_the_other(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """The kinds are decided per dataset too: a model that gives scores on DICES-990 only is
    scored on DICES-350 as a labelled model (its empty score there was a crash)."""
    both: Kinds = (True, True, 0)
    labels = predictions(sample, (True, False, 0), both).with_columns(dataset=pl.lit("350"))
    scores = predictions(sample, (False, True, 0), both, "990").with_columns(
        model=pl.lit("label"), dataset=pl.lit("990")
    )
    got = rows(run(runner, sample, pl.concat([labels, scores]), tmp_path / "p.csv", "-d", "all"))
    for dataset, part in [("350", labels), ("990", scores)]:
        expected = rows(run(runner, sample, part, tmp_path / f"{dataset}.csv", "-d", dataset))
        assert [r for r in got if r["dataset"] == dataset] == expected
    assert [r["reference"] for r in got] == ["gold", "crowd", "crowd", "crowd-share"]


def test_a_flipped_score_only_judge_beside_a_labelled_one_is_flagged(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    gold = pl.read_parquet(sample / "350" / "items.parquet").sort("item_id")
    unsafe = gold["safety_gold"].cast(pl.String) == "Yes"
    labelled = pl.DataFrame(
        {"model": "labelled", "item_id": gold["item_id"], "label": gold["safety_gold"]},
        schema_overrides={"label": pl.String},
    ).with_columns(score=pl.lit(None, pl.Float64))
    rng = np.random.default_rng(3)
    flipped = pl.DataFrame(
        {
            "model": "flipped",
            "item_id": gold["item_id"],
            "label": None,
            "score": np.clip(1 - unsafe.to_numpy() * 0.6 - rng.random(len(gold)) * 0.4, 0, 1),
        },
        schema_overrides={"label": pl.String},
    )
    result = run(runner, sample, pl.concat([labelled, flipped]), tmp_path / "p.csv")
    got = rows(result)
    alone_flipped = run(runner, sample, flipped.drop("label"), tmp_path / "alone.csv")
    assert result.stderr == alone_flipped.stderr
    assert result.stderr.startswith(
        "warning: model 'flipped' agrees with the experts' gold labels on DICES-350 less than "
        "chance: Cohen's kappa -"
    )
    assert result.stderr.count("warning:") == 1
    assert [r for r in got if r["model"] == "flipped"] == rows(alone_flipped)
    flagged = {(r["model"], r["reference"], r["n"], r["polarity_suspect"]) for r in got}
    assert flagged == {
        ("labelled", "gold", 40, False),
        ("labelled", "crowd", 40, False),
        ("flipped", "gold", 40, True),
        ("flipped", "crowd", 40, True),
        ("flipped", "crowd-share", 40, True),
    }
    strict = run(runner, sample, pl.concat([labelled, flipped]), tmp_path / "p.csv", "--strict")
    assert strict.exit_code == 1
    assert strict.stderr.startswith("Error: model 'flipped' agrees with the experts' gold labels")


def test_an_empty_score_column_is_no_crash(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    """A label model whose file has a score column left empty is a label model: the same
    rows as without the column; asked for crowd-share only, a usage error, not a bug."""
    labels = predictions(sample, (True, False, 0), (True, True, 0))
    assert labels["score"].null_count() == labels.height
    got = rows(run(runner, sample, labels, tmp_path / "p.csv", *BY))
    assert got == rows(run(runner, sample, labels.drop("score"), tmp_path / "q.csv", *BY))
    assert "crowd-share" not in {r["reference"] for r in got}
    only_shares = run(runner, sample, labels, tmp_path / "p.csv", "--against", "crowd-share")
    assert (only_shares.exit_code, only_shares.stdout) == (2, "")
    assert only_shares.stderr == (
        "Error: --against crowd-share compares a score or a distribution with the shares; "
        "p.csv gives labels only\nTry 'dices evaluate -h' for help.\n"
    )


def test_a_model_whose_rows_give_no_prediction_is_refused(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    """Every model gives some kind of prediction: a row without one is a problem record,
    and the file is refused (exit 1), whatever the other models give."""
    labels = predictions(sample, (True, False, 0), (True, True, 0)).head(2)
    nothing = labels.with_columns(model=pl.lit("nothing"), label=pl.lit(None, pl.String)).head(1)
    path = tmp_path / "p.csv"
    result = run(runner, sample, pl.concat([labels, nothing]), path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: {path} is not a valid predictions file; nothing was evaluated\n"
        f"{path}: 1 error; 3 rows read, 1 would be rejected [1 missing-value]\n"
        "  line 4: the row gives no prediction: label and score empty [missing-value]\n"
    )
