"""A family whose files are splits declares them; `ingest --split` names a file's split when
its name does not, and each way it can be wrong is a usage error saying what to give."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES
from dices_cli.families.prosocial import PROSOCIAL, SPLITS
from dices_cli.runs.demo import sample_paths
from tests.formats.test_prosocial_ingest import sample_lines, write_lines

__all__ = ["sample_lines"]  # the fixture, used by name


def run(*args: str | Path, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], input=stdin)


def test_only_prosocialdialog_declares_splits() -> None:
    assert PROSOCIAL.splits == SPLITS == ("train", "valid", "test")
    assert [f.name for f in FAMILIES.values() if f.splits] == [PROSOCIAL.name]


def stored_splits(data: Path) -> list[str]:
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    return items["split"].cast(pl.String).unique().sort().to_list()


@pytest.mark.parametrize("split", SPLITS)
def test_a_file_of_another_name_takes_its_split(
    sample_lines: list[str], tmp_path: Path, split: str
) -> None:
    samples = write_lines(tmp_path / "prosocial-sample.jsonl", sample_lines)
    result = run("ingest", samples, "--split", split, "--data", tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert stored_splits(tmp_path / "data") == [split]
    manifest = json.loads((tmp_path / "data" / "prosocial" / "manifest.json").read_text())
    assert [s["split"] for s in manifest["sources"]] == [split]


def test_stdin_takes_its_split(sample_lines: list[str], tmp_path: Path) -> None:
    text = "".join(line + "\n" for line in sample_lines)
    result = run("ingest", "-", "--split", "valid", "--data", tmp_path / "data", stdin=text)
    assert result.exit_code == 0, result.output
    assert stored_splits(tmp_path / "data") == ["valid"]


def test_a_file_named_as_its_split_needs_no_split(sample_lines: list[str], tmp_path: Path) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines)
    result = run("ingest", train, "--split", "train", "--data", tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert stored_splits(tmp_path / "data") == ["train"]


def test_wrong_splits_are_usage_errors(sample_lines: list[str], tmp_path: Path) -> None:
    samples = write_lines(tmp_path / "samples.jsonl", sample_lines)
    train = write_lines(tmp_path / "train.json", sample_lines)
    dices = sample_paths()[0]
    data = tmp_path / "data"
    cases = [
        (
            [samples],
            "samples.jsonl does not say which split it holds: name it train.json, "
            "valid.json or test.json, or give --split (train, valid or test)",
        ),
        (
            [samples, "--split", "dev"],
            "--split is train, valid or test for ProsocialDialog (got 'dev')",
        ),
        (
            [train, "--split", "valid"],
            "train.json is named as the train split, not valid: give --split for files "
            "whose name does not say their split",
        ),
        (
            [dices, "--split", "train"],
            "DICES files hold no splits: --split is for ProsocialDialog",
        ),
        (
            [samples, train, "--split", "train"],
            f"{samples} and {train} are both the train split; give each split once",
        ),
    ]
    for arguments, message in cases:
        result = run("ingest", *arguments, "--data", data)
        assert result.exit_code == 2, result.output
        assert result.stderr.splitlines()[0] == f"Error: {message}"
    assert not (data / "prosocial").exists()
