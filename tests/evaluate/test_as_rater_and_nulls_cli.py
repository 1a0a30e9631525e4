"""`dices evaluate --as-rater` and `--no-persona` on the packaged sample: the command and its
API twin give one table, and every misuse is refused with its message and exit code."""

from __future__ import annotations

import csv
import io
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import dices_cli as dices
from dices_cli.cli.main import app
from dices_cli.runs.demo import demo_predictions_path
from tests.api.test_api import assert_same_rows
from tests.metrics.test_judge_rater import alpha_by_package, xrr_by_pairs

AS_RATER_COLUMNS = (
    "dataset,model,other,group,raters,figure,n,value,null_low,null_high,p_value,p_adjusted"
)


@pytest.fixture(scope="module")
def folder(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample, and the random baseline judged with and without personas."""
    root = tmp_path_factory.mktemp("nulls")
    data = root / "data"
    shutil.copytree(sample, data, symlinks=True)
    for name, persona in (("plain", []), ("personas", ["--persona", "rater_gender"])):
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "--model",
                "baseline:random",
                "--data",
                str(data),
                "--seed",
                "3",
                "-o",
                str(root / f"{name}.csv"),
                *persona,
            ],
        )
        assert result.exit_code == 0, result.output
    return root


def run(folder: Path, *args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, ["evaluate", *map(str, args), "--data", str(folder / "data"), "-f", "csv"]
    )
    return result.exit_code, result.stdout, result.stderr


def test_as_rater_is_the_apis_table(folder: Path) -> None:
    code, out, _ = run(
        folder, demo_predictions_path(), "--as-rater", "--by", "rater_gender",
        "--permutations", "50",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[0] == AS_RATER_COLUMNS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dices.DicesNote)
        table = dices.open(folder / "data").as_rater(
            demo_predictions_path(), by="rater_gender", permutations=50
        )
    assert_same_rows(out, table)
    figures = [r for r in table.rows(named=True) if r["group"] == "Woman"]
    assert [r["figure"] for r in figures] == ["xrr", "irr", "xrr_over_irr"] * 2


def test_no_persona_is_the_apis_table_and_opens_it(folder: Path) -> None:
    args = ["--no-persona", folder / "plain.csv", "--permutations", "50", "--bootstrap", "20"]
    code, out, _ = run(folder, folder / "personas.csv", *args)
    assert code == 0
    figures = [line.split(",")[5] for line in out.splitlines()[1:5]]
    assert figures == ["persona_signal", "fit_persona", "fit_no_persona", "fit_gain"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dices.DicesNote)
        table = dices.open(folder / "data").evaluate(
            folder / "personas.csv",
            no_persona=folder / "plain.csv",
            permutations=50,
            bootstrap=20,
        )
    assert_same_rows(out, table)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ("DEMO", "--as-rater", "--baseline", "raters:1"),
            2,
            "Error: --baseline does not apply with --as-rater (its figures have permutation "
            "tests and null ranges, not references or intervals)",
        ),
        (
            ("DEMO", "--as-rater", "--no-persona", "PLAIN"),
            2,
            "Error: --no-persona does not apply with --as-rater (its figures have permutation "
            "tests and null ranges, not references or intervals)",
        ),
        (
            ("DEMO", "--as-rater", "-d", "prosocial"),
            2,
            "Error: --as-rater places a model beside a dataset's raters: choose 350, 990 or all",
        ),
        (
            ("PERSONAS", "--as-rater"),
            2,
            "Error: PERSONAS is a persona file: --as-rater places one label per conversation "
            "beside the raters",
        ),
        (
            ("DEMO", "--no-persona", "PLAIN"),
            2,
            "Error: --no-persona is the baseline of a persona file (dices judge's persona "
            "mode); DEMO has no persona column",
        ),
        (
            ("PERSONAS", "--no-persona", "PERSONAS"),
            2,
            "Error: --no-persona PERSONAS: a file of the same prompt without a persona, one "
            "row per conversation; this one has personas",
        ),
        (
            ("PERSONAS", "--no-persona", "DEMO"),
            1,
            "Error: --no-persona DEMO has the models five-raters, five-raters-flipped; none "
            "is 'baseline:random', the persona file's (give a file of one model, or of the "
            "same names)",
        ),
    ],
)
def test_misuse_is_refused(folder: Path, args: tuple[str, ...], code: int, message: str) -> None:
    paths = {
        "DEMO": str(demo_predictions_path()),
        "PLAIN": str(folder / "plain.csv"),
        "PERSONAS": str(folder / "personas.csv"),
    }
    given = [paths.get(arg, arg) for arg in args]
    got, out, err = run(folder, *given, "--permutations", "10")
    assert got == code
    assert out == ""
    expected = message
    for name, path in paths.items():  # a file is named by its name
        expected = expected.replace(name, Path(path).name)
    hint = " Try 'dices evaluate -h' for help." if code == 2 else ""
    assert " ".join(err.split()) == expected + hint


def test_the_figures_are_kappa_x_and_alpha_by_hand_on_the_sample(folder: Path) -> None:
    """The command's pool and group rows against the pairs listed in plain Python and the
    `krippendorff` package, from the raters' answers as `dices sql` gives them."""
    code, out, _ = run(
        folder, demo_predictions_path(), "--as-rater", "--by", "rater_gender",
        "--permutations", "0",
    )  # fmt: skip
    assert code == 0
    rows = {(r["model"], r["group"], r["figure"]): r for r in csv.DictReader(io.StringIO(out))}
    ratings = dices.open(folder / "data").sql(
        "SELECT rater_id, item_id, rater_gender, Q_overall::VARCHAR AS answer "
        "FROM ratings_wide WHERE dataset = '350'"
    )
    items = sorted(set(ratings["item_id"]))
    code_of = {"No": 0, "Yes": 1, "Unsure": 2}
    answers: dict[tuple[int, str], list[int]] = {}
    for rater, item, gender, answer in ratings.iter_rows():
        row = answers.setdefault((rater, gender), [-1] * len(items))
        row[items.index(item)] = code_of[answer] if answer else -1
    labels = {}
    for model, item, label in (
        pl.read_csv(demo_predictions_path()).select("model", "item_id", "label").iter_rows()
    ):
        labels.setdefault(model, [-1] * len(items))[items.index(item)] = code_of[label]
    for model, judged in labels.items():
        for group in ("", "Man", "Woman"):
            raters = [a for (_, g), a in answers.items() if group in ("", g)]
            xrr, alpha = xrr_by_pairs(judged, raters), alpha_by_package(raters)
            row = rows[model, group, "xrr"]
            assert float(row["value"]) == pytest.approx(xrr, abs=1e-12)
            assert float(rows[model, group, "irr"]["value"]) == pytest.approx(alpha, abs=1e-12)
            ratio = float(rows[model, group, "xrr_over_irr"]["value"])
            assert ratio == pytest.approx(xrr / alpha, abs=1e-12)


def test_all_datasets_give_the_rows_of_those_predicted(folder: Path, tmp_path: Path) -> None:
    """-d all with a file of DICES-350's conversations only: its rows, none for DICES-990."""
    both = pl.read_csv(demo_predictions_path()).with_columns(dataset=pl.lit("350"))
    path = tmp_path / "both.csv"
    both.write_csv(path)
    code, out, _ = run(folder, path, "--as-rater", "-d", "all", "--permutations", "0")
    assert code == 0
    assert {r["dataset"] for r in csv.DictReader(io.StringIO(out))} == {"350"}
