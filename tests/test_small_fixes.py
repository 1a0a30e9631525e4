"""Smaller things a user hits (issue 11, section 5): each with its exact output and exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.dices_csv import build
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.main import app

KNOWN = ".csv, .tsv, .tab, .json, .jsonl, .ndjson, .parquet"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding a small DICES-350. Read-only."""
    root = tmp_path_factory.mktemp("small")
    source, data = root / "dices_350.csv", root / "data"
    source.write_bytes(build("350", 4, 5))
    result = CliRunner().invoke(app, ["ingest", str(source), "--data", str(data)])
    assert result.exit_code == 0, result.output
    return data


# ----------------------------------------------------------------- -o with an unknown extension


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["query", "--list"], "out.xlsx"),
        (["info"], "out.txt"),
        (["query", "overview"], "OUT.XLSX"),
        (["sql", "SELECT 1 AS one"], "out.csv.bak"),
        (["filter-raters"], "raters.xlsx"),
    ],
)
def test_an_unknown_output_extension_is_a_usage_error(
    runner: CliRunner, small: Path, tmp_path: Path, command: list[str], name: str
) -> None:
    out = tmp_path / name
    data = ["--data", str(small)] if command != ["query", "--list"] else []
    result = runner.invoke(app, [*command, *data, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    suffix = Path(name).suffix
    assert result.stderr == (
        f"Error: -o {out}: dices does not write {suffix} files; name it {KNOWN}, "
        "or give --format\n"
        f"Try 'dices {command[0]} -h' for help.\n"
    )
    assert not out.exists()


def test_filter_raters_refuses_the_extension_before_writing(
    runner: CliRunner, small: Path, tmp_path: Path
) -> None:
    written, out = tmp_path / "filtered", tmp_path / "raters.xlsx"
    result = runner.invoke(
        app, ["filter-raters", "--data", str(small), "--write", str(written), "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: -o {out}: dices does not write .xlsx files")
    assert not written.exists()
    assert not out.exists()


@pytest.mark.parametrize(("fmt", "expected"), [("csv", "one\n1\n"), ("json", '[{"one": 1}]\n')])
def test_format_given_writes_any_extension(
    runner: CliRunner, small: Path, tmp_path: Path, fmt: str, expected: str
) -> None:
    out = tmp_path / "out.txt"
    result = runner.invoke(
        app, ["sql", "SELECT 1 AS one", "--data", str(small), "--format", fmt, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text() == expected


def test_no_extension_is_csv(runner: CliRunner, small: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = runner.invoke(app, ["sql", "SELECT 1 AS one", "--data", str(small), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == "one\n1\n"


# ----------------------------------------------------------------------------- -V


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(runner: CliRunner, flag: str) -> None:
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"dices {__version__}\n"
    assert result.stderr == ""
