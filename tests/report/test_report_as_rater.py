"""The report's models section: each model as one more rater (the table of `dices evaluate
--as-rater`, per group column) and a persona file's rows opening with its persona signal."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.evaluate.evaluation import Settings
from dices_cli.queries.engine import RaterSelection
from dices_cli.report import sections as report_sections
from dices_cli.report.context import Context
from dices_cli.report.models import ModelsRequest, score_models
from dices_cli.runs.demo import demo_predictions_path
from dices_cli.store.datasets import Store


def _section(data: Path, predictions: Path, by: list[str]):  # type: ignore[no-untyped-def]
    store = Store(data)
    context = Context(store, "350", RaterSelection(), by, 20, 0)
    request = ModelsRequest(str(predictions), None, Settings(bootstrap=20, permutations=20))
    context.models = score_models(store, RaterSelection(), request, context.datasets, by)
    section = report_sections.models(context)
    assert section is not None
    return context.models, section


def _evaluated(data: Path, *args: str | Path) -> list[dict[str, str]]:
    result = CliRunner().invoke(
        app, ["evaluate", *map(str, args), "--data", str(data), "-f", "csv", "--permutations", "20"]
    )
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _text(value: object) -> str:
    return "" if value is None else str(value)


def test_the_models_section_shows_each_model_as_one_more_rater(sample: Path) -> None:
    scored, section = _section(sample, demo_predictions_path(), ["rater_gender"])
    titles = [title for title, _ in section.tables]
    assert titles[0] == (
        "Each model as one more rater, by rater_gender (DICES-350): dices evaluate's figures"
    )
    table = section.tables[0][1]
    expected = _evaluated(sample, demo_predictions_path(), "--as-rater", "--by", "rater_gender")
    shown = [[_text(v) for v in row] for row in table.rows]
    assert shown == [[row[c] for c in table.columns] for row in expected]
    assert any("effective_judges" in note for note in section.notes)
    assert scored.as_rater is not None and list(scored.as_rater) == ["rater_gender"]


def test_without_group_columns_the_pool_is_shown(sample: Path) -> None:
    _, section = _section(sample, demo_predictions_path(), [])
    title, table = section.tables[0]
    assert title == "Each model as one more rater (DICES-350): dices evaluate's figures"
    assert {r["group"] for r in table.records()} == {None}


def test_a_persona_files_rows_open_with_its_signal(sample: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(sample, data, symlinks=True)
    personas = tmp_path / "personas.csv"
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "--model",
            "baseline:random",
            "--persona",
            "rater_gender",
            "--data",
            str(data),
            "-o",
            str(personas),
        ],
    )
    assert result.exit_code == 0, result.output
    scored, _ = _section(data, personas, ["rater_gender"])
    assert scored.pool.table.records()[0]["figure"] == "persona_signal"
