"""`dices evaluate -d prosocial`: ProsocialDialog's published label made binary and its
annotations' share of flags as references, checked against scikit-learn on a small ingested
fixture (the five real sample rows, every annotation triple by hand, synthetic train rows)."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    brier_score_loss,
    cohen_kappa_score,
    f1_score,
    matthews_corrcoef,
    roc_auc_score,
)
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.conftest import SHARED

REPO = Path(__file__).resolve().parents[2]
SAMPLES = SHARED / "data" / "prosocial" / "samples.jsonl"
ANNOTATIONS = ("casual", "needs caution", "needs intervention")
UNSAFE = ("__probably_needs_caution__", "__needs_caution__", "__needs_intervention__")
DRAWS = "200"
CAUSE = (
    "Yes means unsafe (needs caution or intervention) in ProsocialDialog; "
    "is your judge answering 'is it safe?'"
)


def label_of(annotations: tuple[str, ...]) -> str:
    """The published grading (Kim et al. 2022, Appendix A.4), so that no row is a mismatch."""
    if "needs intervention" in annotations:
        return "__needs_intervention__"
    return (
        "__casual__",
        "__possibly_needs_caution__",
        "__probably_needs_caution__",
        "__needs_caution__",
    )[annotations.count("needs caution")]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test.json: the five real rows and one row per annotation triple (27); train.json: 40
    synthetic rows. Ingested."""
    if not SAMPLES.exists():
        pytest.skip("the ProsocialDialog sample rows are not there")
    folder = tmp_path_factory.mktemp("prosocial-evaluate")
    real = SAMPLES.read_text(encoding="utf-8").splitlines()
    template = json.loads(real[0])
    made = []
    for number, triple in enumerate(product(ANNOTATIONS, repeat=3)):
        row = template | {
            "dialogue_id": 100 + number,
            "response_id": 0,
            "episode_done": True,
            "safety_annotations": list(triple),
            "safety_label": label_of(triple),
        }
        made.append(json.dumps(row))
    (folder / "test.json").write_text("".join(f"{line}\n" for line in [*real, *made]), "utf-8")
    subprocess.run(
        [
            *(sys.executable, str(REPO / "scripts" / "make_prosocial.py"), str(folder)),
            *("--split", "train", "--rows", "40", "--seed", "3"),
        ],
        check=True,
    )
    result = CliRunner().invoke(
        app,
        ["ingest", str(folder / "train.json"), str(folder / "test.json"), "--data", str(folder)],
    )
    assert result.exit_code == 0, result.output
    assert "safety_label" not in result.stderr  # no published label differs from the rule
    return folder


def truth(data: Path) -> pl.DataFrame:
    """Per utterance, from the stored tables: split, unsafe by its published label, the share
    of its annotations that are not casual."""
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    ratings = pl.read_parquet(data / "prosocial" / "ratings.parquet")
    flagged = ratings.group_by("item_id").agg(
        (pl.col("annotation").cast(pl.String) != "casual").mean().alias("share")
    )
    return (
        items.select(
            "item_id",
            pl.col("split").cast(pl.String),
            pl.col("safety_label").cast(pl.String).is_in(UNSAFE).alias("unsafe"),
        )
        .join(flagged, on="item_id")
        .sort("item_id")
    )


def labelled(frame: pl.DataFrame, model: str, unsafe: pl.Expr) -> pl.DataFrame:
    yes_no = pl.when(unsafe).then(pl.lit("Yes")).otherwise(pl.lit("No"))
    return frame.select(pl.lit(model).alias("model"), "item_id", yes_no.alias("label"))


def evaluate(data: Path, predictions: Path, *options: str) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(predictions),
            *("-d", "prosocial", "--data", str(data), "-f", "jsonl", "--bootstrap", DRAWS),
            *options,
        ],
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def fails(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["evaluate", *arguments])
    assert result.stdout == ""
    return result.exit_code, result.stderr


def row(rows: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    chosen = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(chosen) == 1, chosen
    return chosen[0]


def test_the_published_binary_label_as_a_model_scores_1(data: Path, tmp_path: Path) -> None:
    frame = truth(data)
    path = tmp_path / "p.csv"
    labelled(frame, "published", pl.col("unsafe")).write_csv(path)
    rows, stderr = evaluate(data, path)
    assert [r["reference"] for r in rows] == ["label"]  # labels only: no crowd-share
    label = rows[0]
    assert (label["dataset"], label["model"]) == ("prosocial", "published")
    assert [label[m] for m in ("accuracy", "precision", "recall", "f1", "kappa", "mcc")] == [
        1.0
    ] * 6
    assert (label["accuracy_low"], label["accuracy_high"]) == (1.0, 1.0)
    assert (label["conversations"], label["covered"], label["coverage"], label["n"]) == (
        72,
        72,
        1.0,
        72,
    )
    assert (label["raters"], label["ties"], label["polarity_suspect"]) == (None, None, False)
    assert stderr == ""


def test_a_flipped_copy_is_a_polarity_suspect_and_an_error_with_strict(
    data: Path, tmp_path: Path
) -> None:
    frame = truth(data)
    path = tmp_path / "p.csv"
    pl.concat(
        [
            labelled(frame, "published", pl.col("unsafe")),
            labelled(frame, "flipped", ~pl.col("unsafe")),
        ]
    ).with_columns(  # and a score to match, for the crowd-share rows
        pl.when(pl.col("label") == "Yes").then(0.9).otherwise(0.1).alias("score")
    ).write_csv(path)
    rows, stderr = evaluate(data, path)
    assert {r["model"] for r in rows if r["polarity_suspect"]} == {"flipped"}
    flipped = row(rows, model="flipped", reference="label")
    unsafe = frame["unsafe"].to_numpy()
    assert flipped["kappa"] == pytest.approx(cohen_kappa_score(unsafe, ~unsafe), abs=1e-12)
    assert flipped["kappa_high"] < 0
    message = (
        "model 'flipped' agrees with the published labels on ProsocialDialog less than "
        f"chance: Cohen's kappa {flipped['kappa']:.3f}, 95% interval {flipped['kappa_low']:.3f} to "
        f"{flipped['kappa_high']:.3f}. {CAUSE}"
    )
    assert stderr == f"warning: {message}\n"
    code, stderr = fails(
        str(path), "-d", "prosocial", "--data", str(data), "--bootstrap", DRAWS, "--strict"
    )
    assert (code, stderr) == (1, f"Error: {message} (--strict)\n")
    # Compared with the annotations' share only, the check still reads the published label.
    rows, stderr = evaluate(data, path, "--against", "crowd-share")
    assert [(r["model"], r["reference"], r["polarity_suspect"]) for r in rows] == [
        ("published", "crowd-share", False),
        ("flipped", "crowd-share", True),
    ]
    assert stderr == f"warning: {message}\n"


def test_metrics_on_the_test_split_equal_scikit_learn(data: Path, tmp_path: Path) -> None:
    frame = truth(data)
    test = frame.filter(pl.col("split") == "test")
    rng = np.random.default_rng(4)
    # A noisy judge: the flag share plus noise as its score, its label from 0.5 up.
    score = np.clip(test["share"].to_numpy() + rng.normal(0, 0.3, test.height), 0, 1).round(3)
    judge = test.select(pl.lit("judge").alias("model"), "item_id").with_columns(
        pl.Series("score", score),
        pl.Series("label", np.where(score >= 0.5, "unsafe", "safe")),
    )
    path = tmp_path / "p.jsonl"
    judge.write_ndjson(path)
    rows, stderr = evaluate(data, path)
    assert stderr == (
        "warning: model 'judge' predicts 32 of the 72 utterances of ProsocialDialog (44.4%): "
        "train 0 of 40 (0.0%), test 32 of 32 (100.0%); its metrics use those only\n"
    )
    truth_unsafe = test["unsafe"].to_numpy()
    predicted = score >= 0.5
    label = row(rows, reference="label")
    assert (label["n"], label["covered"], label["conversations"]) == (32, 32, 72)
    expected = {
        "accuracy": accuracy_score(truth_unsafe, predicted),
        "f1": f1_score(truth_unsafe, predicted),
        "kappa": cohen_kappa_score(truth_unsafe, predicted),
        "mcc": matthews_corrcoef(truth_unsafe, predicted),
        "roc_auc": roc_auc_score(truth_unsafe, score),
        "average_precision": average_precision_score(truth_unsafe, score),
        "brier": brier_score_loss(truth_unsafe, score),
    }
    for metric, value in expected.items():
        assert label[metric] == pytest.approx(value, abs=1e-12), metric
    share = row(rows, reference="crowd-share")
    shares = test["share"].to_numpy()
    assert share["n"] == 32
    assert share["pearson"] == pytest.approx(np.corrcoef(score, shares)[0, 1], abs=1e-12)
    assert share["tvd"] == pytest.approx(np.mean(np.abs(score - shares)), abs=1e-12)
    assert share["raters"] is None


def test_unknown_item_ids_are_problem_records(data: Path, tmp_path: Path) -> None:
    from dices_cli.evaluate.predictions import (
        PROSOCIAL_ITEMS,
        InvalidPredictionsError,
        read_predictions,
    )

    path = tmp_path / "p.csv"
    path.write_text("item_id,label\ntest-0-0,Yes\ntest-0-9,No\n17,Yes\ntest-1-0,Unsure\n", "utf-8")
    with pytest.raises(InvalidPredictionsError) as raised:
        read_predictions(str(path), {"prosocial": ["test-0-0", "test-1-0"]}, kind=PROSOCIAL_ITEMS)
    where = "an utterance of ProsocialDialog (ids are split-dialogue_id-response_id, as test-0-0)"
    assert [
        (str(p.type), p.line, p.column, p.value, p.message) for p in raised.value.report.problems
    ] == [
        ("unknown-item", 3, "item_id", "test-0-9", f"item test-0-9 is not {where}"),
        ("unknown-item", 4, "item_id", "17", f"item 17 is not {where}"),
        (
            "not-in-enum",
            5,
            "label",
            "Unsure",
            "'Unsure' is not a label: give Yes or No (Yes = unsafe), or unsafe/safe",
        ),
    ]
    code, stderr = fails(str(path), "-d", "prosocial", "--data", str(data))
    assert code == 1
    assert "item test-0-9 is not an utterance of ProsocialDialog" in stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--by", "rater_gender"],
            "ProsocialDialog has no rater ids or demographics; `evaluate --by` needs them",
        ),
        (
            ["--baseline", "raters:1"],
            "ProsocialDialog has no rater ids; `evaluate --baseline` needs them",
        ),
        (
            ["--exclude-removed"],
            "ProsocialDialog has no rater ids; --exclude-removed, --raters and --min-quality "
            "choose raters",
        ),
        (
            ["--min-quality", "0.5"],
            "ProsocialDialog has no rater ids; --exclude-removed, --raters and --min-quality "
            "choose raters",
        ),
        (
            ["--ties", "unsafe"],
            "--ties decides a tied crowd plurality; ProsocialDialog's label has no ties "
            "(two of three workers decide it)",
        ),
        (["--against", "gold"], "--against gold: choose from label, crowd-share"),
    ],
    ids=["by", "baseline", "exclude-removed", "min-quality", "ties", "against-gold"],
)
def test_options_that_need_dices_are_refused(
    options: list[str], message: str, data: Path, tmp_path: Path
) -> None:
    path = tmp_path / "p.csv"
    path.write_text("item_id,label\ntest-0-0,Yes\n", "utf-8")
    code, stderr = fails(str(path), "-d", "prosocial", "--data", str(data), *options)
    assert (code, stderr) == (2, f"Error: {message}\nTry 'dices evaluate -h' for help.\n")


def test_a_distribution_is_refused(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("item_id,p_no,p_yes\ntest-0-0,0.2,0.8\n", "utf-8")
    code, stderr = fails(str(path), "-d", "prosocial", "--data", str(data))
    assert (code, stderr) == (
        2,
        f"Error: {path} has p_no, p_yes: ProsocialDialog has no answer distribution to compare "
        "them with (its three annotations are not DICES's No/Yes/Unsure); give a label and/or "
        "a score (the probability of unsafe)\nTry 'dices evaluate -h' for help.\n",
    )


def test_label_is_prosocials_reference_and_dices_knows_none(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("item_id,label\n1,Yes\n", "utf-8")
    code, stderr = fails(str(path), "--against", "label", "--data", str(tmp_path))
    assert (code, stderr) == (
        2,
        "Error: --against label: choose from gold, crowd, crowd-share\n"
        "Try 'dices evaluate -h' for help.\n",
    )


def test_prosocial_not_ingested_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("item_id,label\ntest-0-0,Yes\n", "utf-8")
    data = tmp_path / "data"
    code, stderr = fails(str(path), "-d", "prosocial", "--data", str(data))
    assert (code, stderr) == (
        1,
        f"Error: ProsocialDialog is not ingested in {data}; run `dices ingest FILE --data "
        f"{data}` first\n",
    )


def test_crowd_share_alone_needs_a_score(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("item_id,label\ntest-0-0,Yes\n", "utf-8")
    code, stderr = fails(
        str(path), "-d", "prosocial", "--data", str(data), "--against", "crowd-share"
    )
    assert (code, stderr) == (
        2,
        "Error: --against crowd-share compares a score or a distribution with the shares; "
        "p.csv gives labels only\nTry 'dices evaluate -h' for help.\n",
    )


def test_dices_against_crowd_share_alone(tmp_path: Path) -> None:
    """Only crowd-share asked for: no binary reference to measure (this crashed before)."""
    from dices_cli.runs.demo import sample_paths

    data = tmp_path / "data"
    result = CliRunner().invoke(
        app, ["ingest", *(str(p) for p in sample_paths()), "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    items = pl.read_parquet(data / "350" / "items.parquet")
    path = tmp_path / "p.csv"
    items.select(
        "item_id", pl.when(pl.col("safety_gold") == "Yes").then(0.8).otherwise(0.2).alias("score")
    ).write_csv(path)
    result = CliRunner().invoke(
        app,
        [
            *("evaluate", str(path), "--data", str(data), "--against", "crowd-share"),
            *("-f", "jsonl", "--bootstrap", DRAWS),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["dataset"], r["reference"], r["n"]) for r in rows] == [("350", "crowd-share", 40)]


def test_a_bootstrap_too_large_for_memory_is_refused_before_it_allocates(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dices_cli.evaluate import evaluation

    frame = truth(data)
    path = tmp_path / "p.csv"
    labelled(frame, "published", pl.col("unsafe")).write_csv(path)
    # 72 utterances, each its own block (72 < 1,000): 72 x 73 rows = 5,256 cells, past a
    # bound of 5,000, within 5,256.
    monkeypatch.setattr(evaluation, "MAX_RESAMPLED_CELLS", 5_000)
    code, stderr = fails(str(path), "-d", "prosocial", "--data", str(data))
    assert (code, stderr) == (
        2,
        "Error: 72 items in 72 jackknife blocks would take about 0.3 MB of memory; give "
        "--bootstrap 68 or less, or predict fewer items\nTry 'dices evaluate -h' for help.\n",
    )
    monkeypatch.setattr(evaluation, "MAX_RESAMPLED_CELLS", 5_256)
    rows, _ = evaluate(data, path, "--bootstrap", "1000")
    assert rows[0]["accuracy"] == 1.0
