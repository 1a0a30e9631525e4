"""Every command that reads data and its API twin give one result: both call the same
function of `dices_cli.runs`, so the command's output (CSV, a file, a page) is the API's
result, on the shared `sample` data directory."""

from __future__ import annotations

import csv
import gzip
import io
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import polars as pl
import pytest
from typer.testing import CliRunner

import dices_cli as dices
from dices_cli.cli.main import app
from dices_cli.output import text_cell
from dices_cli.runs.demo import demo_predictions_path, sample_paths
from tests.api.test_api import assert_same_rows

T = TypeVar("T")


def run(*args: str | Path, code: int = 0) -> str:
    """What `dices ARGS` writes to stdout; it must exit with `code`."""
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == code, result.output
    return result.stdout


def quietly(call: Callable[[], T]) -> T:
    """`call`'s result, its `DicesNote`s (the command line's stderr) left out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dices.DicesNote)
        return call()


def page(path: Path) -> str:
    """A report without the lines that say when and how it was made."""
    made = r"<dt>Command</dt><dd><code>.*?</code>|<dt>Created</dt><dd>[^<]*"
    return re.sub(made, "", path.read_text(encoding="utf-8"))


def broken_csv(tmp_path: Path) -> Path:
    """The sample's DICES-350 file, five lines of it, one cell broken."""
    text = gzip.decompress(sample_paths()[0].read_bytes()).decode("utf-8").splitlines()
    path = tmp_path / "broken.csv"
    path.write_text("\n".join([text[0], text[1].replace(",", ",x", 1), *text[2:5]]) + "\n")
    return path


def query(sample: Path, tmp_path: Path) -> None:
    by = ["--by", "rater_gender"]
    written = run("query", "qoverall-by-demographic", *by, "--data", sample, "-f", "csv")
    d = dices.open(sample)
    assert_same_rows(
        written, quietly(lambda: d.query("qoverall-by-demographic", by="rater_gender"))
    )


def sql(sample: Path, tmp_path: Path) -> None:
    statement = (
        "SELECT dataset, rater_gender, count(*) AS n FROM ratings_wide GROUP BY ALL ORDER BY ALL"
    )
    written = run("sql", statement, "--data", sample, "-f", "csv")
    assert_same_rows(written, dices.open(sample).sql(statement))


def evaluate(sample: Path, tmp_path: Path) -> None:
    predictions = demo_predictions_path()
    settings = ["--by", "rater_gender", "--bootstrap", "50", "--permutations", "20"]
    written = run("evaluate", predictions, *settings, "--data", sample, "-f", "csv")
    d = dices.open(sample)
    scored = quietly(
        lambda: d.evaluate(predictions, by="rater_gender", bootstrap=50, permutations=20)
    )
    assert_same_rows(written, scored)


def filter_raters(sample: Path, tmp_path: Path) -> None:
    written = run("filter-raters", "--min-quality", "0.6", "--data", sample, "-f", "csv")
    good = dices.open(sample).filter_raters(min_quality=0.6)
    assert_same_rows(written, good.raters)
    ids = run("filter-raters", "--min-quality", "0.6", "--ids-only", "--data", sample)
    assert sorted(map(int, ids.split())) == sorted(good.kept)


def report(sample: Path, tmp_path: Path) -> None:
    """With predictions too: `Data.report(predictions=...)` is `dices report --predictions`,
    its notes (the command line's stderr) given as warnings."""
    predictions = demo_predictions_path()
    settings = ["--predictions", str(predictions), "--bootstrap", "20"]
    by_command = tmp_path / "command.html"
    run(
        "report", "-d", "350", "--by", "rater_gender", *settings, "--data", sample, "-o", by_command
    )
    d = dices.open(sample)
    with pytest.warns(dices.DicesNote, match="'five-raters-flipped' agrees with the experts"):
        by_api = d.report(
            tmp_path / "api.html",
            by="rater_gender",
            dataset="350",
            predictions=predictions,
            bootstrap=20,
        )
    assert by_api == tmp_path / "api.html"
    assert "predictions=" in by_api.read_text(encoding="utf-8")
    assert page(by_api) == page(by_command)


def info(sample: Path, tmp_path: Path) -> None:
    assert_same_rows(run("info", "--data", sample, "-f", "csv"), dices.open(sample).info())


def export(sample: Path, tmp_path: Path) -> None:
    d = dices.open(sample)
    for layout, by in [
        ("wide", []),
        ("long", []),
        ("crowdkit", []),
        ("soft-labels", ["rater_age"]),
    ]:
        options = [word for column in by for word in ("--by", column)]
        written = run("export", "-d", "350", "--layout", layout, *options, "--data", sample)
        target = quietly(lambda: d.export(tmp_path / f"{layout}.csv", "350", layout, by))  # noqa: B023
        assert written.encode() == Path(target).read_bytes()
    written = run("export", "-d", "990", "--layout", "judge-bench", "--data", sample)
    target = d.export(tmp_path / "judge-bench.json", "990", "judge-bench")
    assert written.encode() == target.read_bytes()
    parquet = tmp_path / "long.parquet"
    run("export", "-d", "all", "--layout", "long", "--data", sample, "-o", parquet)
    by_api = d.export(tmp_path / "api.parquet", layout="long")
    assert pl.read_parquet(parquet).equals(pl.read_parquet(by_api))


def validate(sample: Path, tmp_path: Path) -> None:
    path = broken_csv(tmp_path)
    rows = list(csv.reader(io.StringIO(run("validate", path, "-f", "csv", code=1))))
    report = dices.validate(path)
    assert not report.ok
    assert rows[0] == ["file", *report.problems.columns]
    assert [row[1:] for row in rows[1:]] == [
        [text_cell(v) for v in r] for r in report.problems.rows()
    ]
    assert len(rows) > 1


def describe(sample: Path, tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text(
        "item_id,rater_id,toxicity\n"
        + "".join(f"{i},{r},{(i + r) % 2}\n" for i in range(6) for r in range(4))
    )
    assert run("describe", path) == quietly(lambda: dices.describe([path]))


COMMANDS = [query, sql, evaluate, filter_raters, report, info, export, validate, describe]


# The report's case draws a page with charts (a renderer process): slow, in the full suite.
CASES = [
    pytest.param(command, marks=[pytest.mark.slow] if command is report else [])
    for command in COMMANDS
]


@pytest.mark.parametrize("command", CASES, ids=lambda command: command.__name__)
def test_every_command_that_reads_data_gives_the_apis_result(
    command: Callable[[Path, Path], None], sample: Path, tmp_path: Path
) -> None:
    command(sample, tmp_path)


def test_the_cases_cover_every_command_that_reads_data() -> None:
    """A command that reads data and has no case here is a gap: add its case."""
    reads_data = {
        "query", "sql", "evaluate", "filter-raters", "report", "info", "export", "validate",
        "describe",
    }  # fmt: skip
    assert {command.__name__.replace("_", "-") for command in COMMANDS} == reads_data
