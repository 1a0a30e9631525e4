"""What a newcomer meets: every command that writes a result takes --columns, --sort and
--limit, and each mistake a first run makes is answered with the fix, in one message."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.queries.catalog import GROUP_COLUMNS
from dices_cli.runs.demo import demo_predictions_path, sample_paths

REPO = Path(__file__).resolve().parents[2]
GROUPS = ", ".join(GROUP_COLUMNS)


def run(*arguments: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in arguments])


def refused(result: Result, code: int, command: str) -> str:
    """The one `Error:` line of a refusal by `dices COMMAND` with exit `code` (and, for a
    usage error, the line pointing to the help), nothing on stdout."""
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    first, *rest = result.stderr.splitlines()
    assert first.startswith("Error: "), result.stderr
    assert rest == ([f"Try 'dices {command} -h' for help."] if code == 2 else []), result.stderr
    return first.removeprefix("Error: ")


@pytest.fixture(scope="module")
def both_families(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample and a small synthetic ProsocialDialog, in one data directory."""
    folder = tmp_path_factory.mktemp("prosocial")
    script = REPO / "scripts" / "make_prosocial.py"
    subprocess.run(
        [sys.executable, str(script), str(folder), "--split", "test", "--rows", "60"], check=True
    )
    data = folder / "data"
    assert run("ingest", *sample_paths(), "--data", data).exit_code == 0
    assert run("ingest", folder / "test.json", "--data", data).exit_code == 0
    return data


# ----------------------------------------------------------------------------- one shape


def test_evaluate_takes_columns_sort_and_limit(sample: Path) -> None:
    result = run(
        "evaluate", demo_predictions_path(), "--data", sample, "--bootstrap", "20",
        "--columns", "model,reference,kappa", "--sort", "-kappa", "--limit", "3", "-f", "csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "model,reference,kappa\n"
        "five-raters,crowd,0.7540983606557377\n"
        "five-raters,gold,0.445983379501385\n"
        "five-raters-flipped,crowd,-0.3309352517985611\n"
    )


def test_filter_raters_shapes_its_table_its_ids_and_its_audit(sample: Path) -> None:
    table = run(
        "filter-raters", "--data", sample, "-d", "350", "--columns", "rater_id,score",
        "--sort", "score", "--limit", "2", "-f", "csv",
    )  # fmt: skip
    assert table.stdout == "rater_id,score\n296709579639777,0.0\n297514915688416,0.0\n"
    ids = run(
        "filter-raters", "--data", sample, "-d", "350", "--ids-only", "--sort", "-rater_id",
        "--limit", "2",
    )  # fmt: skip
    assert ids.stdout == "297545639845049\n297541515754473\n"
    audit = run("filter-raters", "--data", sample, "--audit", "--columns", "dataset,raters_kept")
    assert json.loads(audit.stdout) == [
        {"dataset": "350", "raters_kept": 103},
        {"dataset": "990", "raters_kept": 171},
    ]
    wrong = run("filter-raters", "--data", sample, "--ids-only", "--columns", "score")
    assert refused(wrong, 2, "filter-raters") == (
        "the result has no column 'score'; its columns are: rater_id"
    )


def test_info_validate_and_the_query_list_take_the_same_shape(sample: Path) -> None:
    info = run("info", "--data", sample, "--columns", "dataset,ratings", "--sort", "-ratings")
    assert info.stdout == "dataset,ratings\n990,5855\n350,4920\n"
    listed = run("query", "--list", "--columns", "name", "--limit", "2", "-f", "csv")
    assert listed.stdout == "name\nagreement\ndegree-of-harm\n"
    (path,) = [p for p in sample_paths() if "350" in p.name]
    problems = run("validate", path, "--columns", "line,message", "--limit", "1", "-f", "csv")
    assert (problems.exit_code, problems.stdout) == (
        0,
        "line,message\n"
        ",the file holds 40 of the 350 conversations of DICES-350; it may be cut short\n",
    )


# ----------------------------------------------------------------------------- the fix, named


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate", str(demo_predictions_path())],
        ["report", "-o", "r.html"],
        ["export", "-d", "350", "--layout", "soft-labels"],
    ],
    ids=lambda words: words[0],
)
def test_a_wrong_by_is_a_usage_error_listing_the_columns(
    command: list[str], sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(*command, "--by", "gender", "--data", sample)
    assert refused(result, 2, command[0]) == (
        f"--by names an unknown column 'gender'; choose from: {GROUPS}"
    )


def _parquet(path: Path) -> Path:
    pd.DataFrame({"item_id": [1], "Q_overall": ["Yes"]}).to_parquet(path)
    return path


def _xlsx(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as workbook:
        workbook.writestr("[Content_Types].xml", "<Types/>")
    return path


def _json(path: Path) -> Path:
    path.write_text('[{"item_id": 1}]\n')
    return path


def _gzip_parquet(path: Path) -> Path:
    with gzip.open(path, "wb") as handle:
        handle.write(_parquet(path.with_suffix(".tmp")).read_bytes())
    return path


@pytest.mark.parametrize(
    ("make", "name", "what"),
    [
        (_parquet, "x.parquet", "a Parquet file"),
        (_xlsx, "x.xlsx", "a ZIP archive (an Excel .xlsx workbook, say)"),
        (_json, "x.json", "JSON"),
        (_gzip_parquet, "x.parquet.gz", "a Parquet file (gzip-compressed)"),
    ],
    ids=["parquet", "xlsx", "json", "gzip-of-parquet"],
)
@pytest.mark.parametrize("command", ["ingest", "validate"])
def test_a_file_of_another_format_is_named_in_one_line(
    make: object, name: str, what: str, command: str, tmp_path: Path
) -> None:
    path = make(tmp_path / name)  # type: ignore[operator]
    result = run(command, path, *(["--data", tmp_path / "data"] if command == "ingest" else []))
    assert refused(result, 1, command) == (
        f"{path} is {what}, not a table dices reads: DICES CSV files (plain or gzip-compressed) "
        "and ProsocialDialog's JSON Lines files"
    )


def test_a_dataset_folder_given_as_data_names_its_directory(sample: Path) -> None:
    for command in (["info"], ["query", "overview"]):
        result = run(*command, "--data", sample / "350")
        assert refused(result, 2, command[0]) == (
            f"{sample / '350'} is one dataset of the data directory {sample}; "
            f"give the directory: --data {sample}"
        )


def test_a_directory_given_as_a_file_says_how_a_data_directory_is_given(sample: Path) -> None:
    (path,) = [p for p in sample_paths() if "350" in p.name]
    assert refused(run("ingest", path, sample), 2, "ingest") == (
        f"'{sample}' is a directory: give the files to read; a data directory is given as "
        f"--data {sample}"
    )
    assert refused(run("validate", sample), 2, "validate") == (
        f"'{sample}' is a directory: give the files to read"
    )


def test_report_strict_refuses_a_flipped_model_as_evaluate_does(
    sample: Path, tmp_path: Path
) -> None:
    target = tmp_path / "r.html"
    result = run(
        "report", "-d", "350", "--data", sample, "--predictions", demo_predictions_path(),
        "--bootstrap", "20", "--strict", "-o", target,
    )  # fmt: skip
    message = refused(result, 1, "report")
    assert message.startswith("model 'five-raters-flipped' agrees with the experts' gold labels")
    assert message.endswith("is your judge answering 'is it safe?' (--strict)")
    assert not target.exists()
    alone = run("report", "--data", sample, "--strict", "-o", target)
    assert refused(alone, 2, "report") == "--strict scores predictions: give --predictions FILE too"


def test_overview_of_all_notes_that_prosocialdialog_is_there(both_families: Path) -> None:
    result = run("query", "overview", "--data", both_families, "-f", "csv")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: ProsocialDialog is ingested too; -d prosocial runs its own overview\n"
    )
    assert [line.split(",")[0] for line in result.stdout.splitlines()] == ["dataset", "350", "990"]


def test_info_counts_each_familys_own_units(both_families: Path) -> None:
    result = run(
        "info", "--data", both_families, "--columns",
        "dataset,conversations,raters,ratings,dialogues,utterances,annotations",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(io.StringIO(result.stdout), dtype=str).fillna("")
    assert rows.to_dict("records") == [
        {"dataset": "350", "conversations": "40", "raters": "123", "ratings": "4920",
         "dialogues": "", "utterances": "", "annotations": ""},
        {"dataset": "990", "conversations": "80", "raters": "173", "ratings": "5855",
         "dialogues": "", "utterances": "", "annotations": ""},
        {"dataset": "prosocial", "conversations": "", "raters": "", "ratings": "",
         "dialogues": rows.loc[2, "dialogues"], "utterances": "60", "annotations": "180"},
    ]  # fmt: skip
    assert int(rows.loc[2, "dialogues"]) > 0
