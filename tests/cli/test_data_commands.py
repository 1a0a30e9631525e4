"""The data commands as a user meets them: validate, info, export, demo, help and usage errors."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.dices_csv import build, header, rows, to_csv
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.cli.main import app
from tests.drivers.demo import KeptDemo, kept_demo_fixture  # noqa: F401 (a fixture)

PROBLEM_COLUMNS = ["file", "type", "severity", "line", "column", "value", "message"]
INFO_COLUMNS = [
    "dataset",
    "conversations",
    "raters",
    "ratings",
    "rows_rejected",
    "source",
    "sha256",
    "ingested",
    "filter",
    "path",
]
COMMANDS = ["ingest", "validate", "info", "export", "demo"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(data: Path, name: str) -> dict[str, Any]:
    return json.loads((data / name / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    body = rows("350", 2, 3)
    body[3]["phase"] = "Phase9"
    path = tmp_path / "bad.csv"
    path.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    return path


@pytest.fixture
def small_990(tmp_path: Path, runner: CliRunner) -> Path:
    """A data directory holding only a small DICES-990."""
    path, data = tmp_path / "990.csv", tmp_path / "only-990"
    path.write_bytes(build("990"))
    assert runner.invoke(app, ["ingest", str(path), "--data", str(data)]).exit_code == 0
    return data


# --- validate --------------------------------------------------------------------------------


def test_validate_valid_file(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "good.csv"
    path.write_bytes(build())

    result = runner.invoke(app, ["validate", str(path)])

    assert result.exit_code == 0
    # CSV when stdout is not a terminal; the only problems: a small file is not all of DICES-350
    warning = f"{path},incomplete-dataset,warning,,,"
    assert result.stdout.splitlines() == [
        ",".join(PROBLEM_COLUMNS),
        f"{warning}2 of 350 conversations,"
        "the file holds 2 of the 350 conversations of DICES-350; it may be cut short",
        f"{warning}3 of 123 raters,"
        "the file holds 3 of the 123 raters of DICES-350; it may be cut short",
        f'{warning}"6 of 43,050 ratings",'
        '"the file holds 6 of the 43,050 ratings of DICES-350; it may be cut short"',
    ]
    assert result.stderr == (
        f"{path}: valid (DICES-350); 6 rows read, 0 would be rejected [3 incomplete-dataset]\n"
    )


@pytest.mark.parametrize("name", ["350", "990"])
def test_validate_replica(
    name: str, replica_350: Path, replica_990: Path, runner: CliRunner
) -> None:
    path = {"350": replica_350, "990": replica_990}[name]
    rows_read = {"350": 43_050, "990": 72_103}[name]

    result = runner.invoke(app, ["validate", str(path), "--format", "json"])

    assert result.exit_code == 0
    assert json.loads(result.stdout) == []
    assert result.stderr == (
        f"{path}: valid (DICES-{name}); {rows_read} rows read, 0 would be rejected\n"
    )


def test_validate_json(bad_file: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["validate", str(bad_file), "--format", "json"])

    assert result.exit_code == 1
    assert json.loads(result.stdout) == [
        {
            "file": str(bad_file),
            "type": "not-in-enum",
            "severity": "error",
            "line": 11,
            "column": "phase",
            "value": "Phase9",
            "message": "'Phase9' is not an allowed value; allowed: 'Phase1', 'Phase2', 'Phase3'",
        }
    ]


def test_validate_output_file_format_from_extension(
    bad_file: Path, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "problems.jsonl"

    result = runner.invoke(app, ["validate", str(bad_file), "-o", str(out)])

    assert result.exit_code == 1
    assert result.stdout == ""
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["type"], record["line"], record["column"]) == ("not-in-enum", 11, "phase")


def test_validate_several_files(bad_file: Path, runner: CliRunner, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_bytes(build("990"))

    result = runner.invoke(app, ["validate", str(good), str(bad_file), "--format", "csv"])

    assert result.exit_code == 1
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["file"], r["type"]) for r in records] == [
        *[(str(good), "incomplete-dataset")] * 3,
        (str(bad_file), "not-in-enum"),
    ]
    assert result.stderr == (
        f"{good}: valid (DICES-990); 6 rows read, 0 would be rejected [3 incomplete-dataset]\n"
        f"{bad_file}: 1 error (DICES-350); 6 rows read, 1 would be rejected [1 not-in-enum]\n"
    )


def test_validate_writes_nothing(bad_file: Path, runner: CliRunner, tmp_path: Path) -> None:
    before = sorted(tmp_path.rglob("*"))
    runner.invoke(app, ["validate", str(bad_file), "--format", "csv"])
    assert sorted(tmp_path.rglob("*")) == before


# --- info ----------------------------------------------------------------------------------


def test_info_csv(ingested: Path, replica_350: Path, replica_990: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["info", "--data", str(ingested), "--format", "csv"])

    assert result.exit_code == 0
    assert result.stderr == ""
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(records[0]) == INFO_COLUMNS
    expected = [
        ("350", "350", "123", "43050", "0", replica_350.name, sha256(replica_350)),
        ("990", "990", "173", "72103", "0", replica_990.name, sha256(replica_990)),
    ]
    assert [tuple(r[c] for c in INFO_COLUMNS[:7]) for r in records] == expected
    for record in records:
        name = record["dataset"]
        assert record["ingested"] == manifest(ingested, name)["created"]
        assert record["filter"] == ""
        assert Path(record["path"]) == (ingested / name).resolve()


def test_info_json(ingested: Path, replica_350: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["info", "--data", str(ingested), "--format", "json"])

    assert result.exit_code == 0
    found = json.loads(result.stdout)
    assert [r["dataset"] for r in found] == ["350", "990"]
    first = found[0]
    assert list(first) == INFO_COLUMNS
    assert (first["conversations"], first["raters"], first["ratings"]) == (350, 123, 43_050)
    assert first["rows_rejected"] == 0
    assert first["sha256"] == sha256(replica_350)
    assert first["filter"] is None


def test_info_reads_data_dir_from_environment(small_990: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["info", "--format", "json"], env={"DICES_DATA": str(small_990)})

    assert result.exit_code == 0
    assert [(r["dataset"], r["ratings"]) for r in json.loads(result.stdout)] == [("990", 6)]


@pytest.mark.parametrize("exists", [True, False], ids=["empty-dir", "missing-dir"])
def test_info_on_empty_data_dir(exists: bool, runner: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    if exists:
        data.mkdir()

    result = runner.invoke(app, ["info", "--data", str(data)])

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: nothing is ingested in {data}; run `dices ingest FILE --data {data}` first\n"
    )


def test_info_table_format_with_output_file_is_a_usage_error(
    small_990: Path, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "info.csv"

    result = runner.invoke(
        app, ["info", "--data", str(small_990), "--format", "table", "-o", str(out)]
    )

    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --format table is for the terminal; with -o pick csv, tsv, json, jsonl or parquet\n"
    )
    assert not out.exists()


# --- export --------------------------------------------------------------------------------


def test_export_of_a_dataset_not_ingested(small_990: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["export", "--dataset", "350", "--data", str(small_990)])

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: DICES-350 is not ingested in {small_990}; "
        f"run `dices ingest FILE --data {small_990}` first\n"
    )


def test_export_to_a_closed_pipe_stops_quietly(ingested: Path) -> None:
    """`dices export | head -1`: the reader leaves early; no error, no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dices_cli", "export", "-d", "990", "--data", str(ingested)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    process.wait(timeout=60)

    assert first.startswith(b"id,rater_id,rater_gender,rater_locale,")
    assert stderr == b""
    assert process.returncode == 0


# --- demo ----------------------------------------------------------------------------------


def test_demo(kept_demo: KeptDemo) -> None:
    result, keep = kept_demo.result, kept_demo.keep

    assert result.exit_code == 0, result.output
    # The first sections are stable: what was ingested, and how raters answered.
    assert "What was ingested" in result.stdout
    assert re.search(r"^\s*350\s+40\s+123\s+4920\s+0\s", result.stdout, re.MULTILINE)
    assert re.search(r"^\s*990\s+80\s+173\s+5855\s+0\s", result.stdout, re.MULTILINE)
    assert "How raters answered Q_overall" in result.stdout
    assert result.stderr.startswith(f"Ingesting the bundled sample into {keep} ...\n")
    assert "Both sample files were validated and split into typed Parquet tables." in result.stderr
    assert f"  try: dices info --data {shlex.quote(str(keep))}\n" in result.stderr
    assert f"  try: dices query overview --data {shlex.quote(str(keep))}\n" in result.stderr
    assert "Traceback" not in result.output
    assert manifest(keep, "350")["counts"] == {"conversations": 40, "raters": 123, "ratings": 4920}
    assert manifest(keep, "990")["counts"] == {"conversations": 80, "raters": 173, "ratings": 5855}


# --- version, help, usage errors -----------------------------------------------------------


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])

    assert result.exit_code == 0
    assert result.stdout == f"dices {__version__}\n"


def test_top_level_help(runner: CliRunner) -> None:
    result = runner.invoke(app, ["-h"])

    assert result.exit_code == 0
    assert "Usage: dices [OPTIONS] COMMAND [ARGS]..." in result.stdout
    assert "dices demo" in result.stdout
    for command in COMMANDS:
        assert re.search(rf"^│ {command}\s", result.stdout, re.MULTILINE), command


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_command_help_shows_an_example(command: str, flag: str, runner: CliRunner) -> None:
    result = runner.invoke(app, [command, flag])

    assert result.exit_code == 0
    assert f"Usage: dices {command} [OPTIONS]" in result.stdout
    assert re.search(r"^\s*Examples?:\s*$", result.stdout, re.MULTILINE)
    assert re.search(rf"^\s+dices {command}( |$)", result.stdout, re.MULTILINE)


USAGE_ERRORS = {
    "export-bad-dataset": (
        ["export", "--dataset", "351", "--data", "DATA"],
        "Invalid value for '--dataset'",
    ),
    "export-no-dataset": (
        ["export", "--data", "DATA"],
        "--layout wide writes one dataset: give --dataset 350, 990 or prosocial",
    ),
    "ingest-bad-dataset": (
        ["ingest", "FILE", "--dataset", "351", "--data", "DATA"],
        "'351' is not a dataset dices knows: auto, 350, 990, prosocial, d3code,",
    ),
    "ingest-no-such-file": (
        ["ingest", "missing.csv", "--data", "DATA"],
        "'missing.csv' does not exist",
    ),
    "validate-bad-format": (
        ["validate", "FILE", "--format", "xml"],
        "Invalid value for '--format'",
    ),
    "unknown-option": (["info", "--bogus", "--data", "DATA"], "No such option: --bogus"),
    "unknown-command": (["bogus"], "No such command 'bogus'"),
}


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS.values(), ids=USAGE_ERRORS.keys())
def test_usage_errors_exit_2(
    args: list[str], message: str, runner: CliRunner, tmp_path: Path
) -> None:
    path, data = tmp_path / "good.csv", tmp_path / "data"
    path.write_bytes(build())
    places = {"FILE": str(path), "DATA": str(data)}

    result = runner.invoke(app, [places.get(a, a) for a in args])

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert message in re.sub(r"[\s│]+", " ", result.stderr)  # unwrap Rich's error box
    assert "Traceback" not in result.output
    assert not data.exists()


@pytest.mark.parametrize("command", ["ingest", "validate"])
def test_command_without_files_shows_help(command: str, runner: CliRunner) -> None:
    result = runner.invoke(app, [command])

    assert result.exit_code == 2
    assert f"Usage: dices {command} [OPTIONS]" in result.stdout
    assert "Error" not in result.output
