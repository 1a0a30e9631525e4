"""`dices judge` and `Data.judge` both run `dices_cli.runs.judge.run_judge`: the same
predictions from the local test server (tests/drivers/judge_server.py), the same dry run and
batch, and every refused setting with its exit code and message: the command line's with
flags, the API's with parameter names. Nothing refused asks the server or writes a file."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import dices_cli as dices
from dices_cli.cli.commands import judge as command
from dices_cli.cli.main import app
from dices_cli.errors import DicesError
from dices_cli.judge import client
from dices_cli.output import text_cell
from dices_cli.runs.judge import BOUNDS, JudgeSettings
from tests.drivers.judge_server import JudgeServer, running

KEY = "sk-test-api-7d0e"


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with running() as started:
        yield started


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "BACKOFF_SECONDS", 0.001)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def copied(sample: Path, target: Path) -> Path:
    shutil.copytree(sample, target, symlinks=True)
    return target


def cli(data: Path, *args: str | Path) -> Any:
    return CliRunner().invoke(app, ["judge", "--data", str(data), *map(str, args)])


def assert_same_rows(csv_text: str, rows: list[tuple[Any, ...]], columns: list[str]) -> None:
    """The CSV's header and cells are the frame's columns and values, as a CSV cell says
    each (a float to within 1e-12)."""
    written = list(csv.reader(io.StringIO(csv_text)))
    assert written[0] == columns
    assert len(written) - 1 == len(rows) > 0
    for line, row in zip(written[1:], rows, strict=True):
        for cell, value in zip(line, row, strict=True):
            made = text_cell(value)
            assert cell == made or math.isclose(float(cell), float(made), rel_tol=1e-12)


def test_the_api_gives_the_command_lines_predictions_from_the_server(
    sample: Path, tmp_path: Path, server: JudgeServer
) -> None:
    """Each asks the server for every conversation (two data directories: no shared cache),
    and their predictions and -o files are the same."""
    ours, theirs = copied(sample, tmp_path / "cli"), copied(sample, tmp_path / "api")
    args = ("--model", "m", "--base-url", server.base_url, "--limit", "10", "--samples", "2")
    result = cli(ours, *args, "-o", tmp_path / "cli.csv")
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 20
    predictions = dices.open(theirs).judge(
        "m", base_url=server.base_url, limit=10, samples=2, output=tmp_path / "api.csv"
    )
    assert len(server.bodies) == 40
    written = (tmp_path / "cli.csv").read_text()
    assert_same_rows(written, predictions.rows(), predictions.columns)
    assert (tmp_path / "api.csv").read_text() == written
    manifests = [json.loads((tmp_path / f"{n}.csv.judge.json").read_text()) for n in ("cli", "api")]
    for manifest in manifests:
        del manifest["started"], manifest["seconds"]
    assert manifests[0] == manifests[1]
    assert manifests[0]["counts"]["requests"] == 20


def test_the_api_gives_the_command_lines_baseline_offline(sample: Path) -> None:
    result = cli(sample, "--model", "baseline:random", "-d", "990")
    assert result.exit_code == 0, result.output
    predictions = dices.open(sample).judge("baseline:random", dataset="990")
    assert predictions.height == 80
    assert_same_rows(result.stdout, predictions.rows(), predictions.columns)


def test_the_api_dry_run_has_the_command_lines_figures(sample: Path) -> None:
    args = ("--model", "m", "--limit", "6", "--samples", "2", "--price-in", "2", "--price-out", "8")
    result = cli(sample, *args, "--dry-run")
    assert result.exit_code == 0, result.output
    figures = [line.rpartition(": ")[2] for line in result.stdout.splitlines()[:6]]
    cost = re.findall(r"\$([\d.]+)", result.stdout.splitlines()[6])[2:]
    planned = dices.open(sample).judge(
        "m", limit=6, samples=2, price_in=2, price_out=8, dry_run=True
    )
    assert planned.columns == [
        "calls",
        "cached",
        "requests",
        "prompt_tokens",
        "answer_tokens",
        "tokens",
        "cost_online",
        "cost_batch",
    ]
    (row,) = planned.rows()
    assert [str(n) for n in row[:6]] == figures
    assert figures[:3] == ["12", "0", "12"]
    assert [f"{n:.4f}" for n in row[6:]] == cost


def test_the_api_batch_is_the_command_lines(sample: Path, tmp_path: Path) -> None:
    result = cli(sample, "--model", "m", "--limit", "3", "--batch", tmp_path / "cli.jsonl")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{tmp_path / 'cli.jsonl'}\n"
    files = dices.open(sample).judge("m", limit=3, batch=str(tmp_path / "api.jsonl"))
    size = (tmp_path / "api.jsonl").stat().st_size
    assert files.rows() == [(str(tmp_path / "api.jsonl"), 3, size)]
    assert (tmp_path / "api.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()


def test_the_api_writes_output_in_the_format_named(sample: Path, tmp_path: Path) -> None:
    import polars as pl

    judged = dices.open(sample).judge(
        "baseline:random", limit=3, output=tmp_path / "p.out", format="Parquet"
    )
    assert pl.read_parquet(tmp_path / "p.out").equals(judged)
    with pytest.raises(DicesError) as raised:
        dices.open(sample).judge("baseline:random", output=tmp_path / "q.csv", format="table")
    assert str(raised.value) == (
        "format must be one of: csv, tsv, json, jsonl, parquet (got 'table')"
    )


def test_the_apis_warnings_are_notes_and_its_summary_is_the_result(
    sample: Path, tmp_path: Path, server: JudgeServer
) -> None:
    """The command line's `warning:` lines are `DicesNote`s; its other lines are not."""
    server.answer = lambda _message: "Perhaps"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predictions = dices.open(copied(sample, tmp_path / "d")).judge(
            "m", base_url=server.base_url, limit=3
        )
    assert predictions["label"].to_list() == [None, None, None]
    assert [str(w.message) for w in caught] == [
        'warning: 3 answers could not be read (kept raw in the cache: dices sql "SELECT * '
        'FROM judge_calls WHERE ok AND verdict IS NULL"); 0 conversations have no prediction'
    ]
    assert all(issubclass(w.category, dices.DicesNote) for w in caught)


def named(message: str) -> str:
    """A command-line message as the API says it: each flag by its parameter's name."""
    message = re.sub(r"(?<![\w-])--([a-z][a-z-]*)", lambda m: m[1].replace("-", "_"), message)
    return re.sub(r"(?<![\w-])-o\b", "output", message)


# Each refused setting: the API's keyword arguments, the command line's options, the exit
# code and the command line's message ({tmp}: the test's directory).
REFUSED: list[tuple[dict[str, Any], list[str], int, str]] = [
    (
        {"base_url": "ftp://x"},
        ["--base-url", "ftp://x"],
        2,
        "--base-url ftp://x: give an http:// or https:// URL",
    ),
    (
        {"temperature": math.nan},
        ["--temperature", "nan"],
        2,
        "--temperature nan: give a finite number",
    ),
    ({"timeout": math.nan}, ["--timeout", "nan"], 2, "--timeout nan: give a finite number"),
    (
        {"batch": "b.jsonl", "batch_results": "r.jsonl"},
        ["--batch", "b.jsonl", "--batch-results", "r.jsonl"],
        2,
        "--batch writes a batch, --batch-results reads one: give one",
    ),
    (
        {"batch": "b.jsonl", "dry_run": True},
        ["--batch", "b.jsonl", "--dry-run"],
        2,
        "--batch writes files: it is no dry run (drop --dry-run)",
    ),
    (
        {"batch": "b.jsonl", "output": "p.csv"},
        ["--batch", "b.jsonl", "-o", "p.csv"],
        2,
        "--batch stops once the batch is written: give -o (and --evaluate) with --batch-results",
    ),
    (
        {"batch_results": ["r.jsonl"], "dry_run": True},
        ["--batch-results", "r.jsonl", "--dry-run"],
        2,
        "--batch-results reads answers into the cache: it takes no --dry-run",
    ),
    (
        {"batch_results": "r.jsonl", "refresh": True},
        ["--batch-results", "r.jsonl", "--refresh"],
        2,
        "--batch-results reads answers into the cache: it takes no --refresh",
    ),
    (
        {"submit": True, "refresh": True},
        ["--submit", "--refresh"],
        2,
        "--submit writes, sends and reads the batch itself: it takes no --batch, "
        "--batch-results, --dry-run or --refresh",
    ),
    (
        {"price_in": 1.0},
        ["--price-in", "1"],
        2,
        "give both --price-in and --price-out (or a [price] in the prompt)",
    ),
    (
        {"model": "baseline:never"},
        ["--model", "baseline:never"],
        2,
        "--model baseline:never: the offline baselines are baseline:always-unsafe, "
        "baseline:always-safe, baseline:random",
    ),
    (
        {"api_key_env": "H37A_UNSET_KEY"},
        ["--api-key-env", "H37A_UNSET_KEY"],
        2,
        "--api-key-env H37A_UNSET_KEY: that environment variable is not set",
    ),
    (
        {"api_key_env": "H37A_SPACED_KEY"},
        ["--api-key-env", "H37A_SPACED_KEY"],
        2,
        "the API key in $H37A_SPACED_KEY has spaces, control or non-ASCII characters, which an "
        "HTTP header cannot carry",
    ),
    (
        {"prompt": "nope"},
        ["--prompt", "nope"],
        2,
        "--prompt nope: no such prompt; choose dices-safety, guard, judge-bench, "
        "offensiveness-1-5 or give a file",
    ),
    (
        {"items": "{tmp}/missing.txt"},
        ["--items", "{tmp}/missing.txt"],
        1,
        "cannot read --items {tmp}/missing.txt: No such file or directory",
    ),
    (
        {"items": "{tmp}/empty.txt"},
        ["--items", "{tmp}/empty.txt"],
        1,
        "--items {tmp}/empty.txt holds no item ids",
    ),
    (
        {"items": "{tmp}/latin1.txt"},
        ["--items", "{tmp}/latin1.txt"],
        1,
        "cannot read --items {tmp}/latin1.txt: not UTF-8 text",
    ),
    (
        {"output": "{tmp}/linked.csv"},
        ["-o", "{tmp}/linked.csv"],
        1,
        "{tmp}/linked.csv.judge.json is a symbolic link; dices does not write through one: "
        "remove it",
    ),
    (
        {"output": "{tmp}/folder.csv"},
        ["-o", "{tmp}/folder.csv"],
        1,
        "{tmp}/folder.csv.judge.json exists and is not a file; remove it or choose another -o",
    ),
    (
        {"output": "{tmp}/kept.csv"},
        ["-o", "{tmp}/kept.csv"],
        1,
        "{tmp}/kept.csv.judge.json exists; use --force to overwrite it",
    ),
    (
        {"output": "{tmp}/p.xlsx"},
        ["-o", "{tmp}/p.xlsx"],
        2,
        "-o {tmp}/p.xlsx: dices does not write .xlsx files; name it .csv, .tsv, .tab, .json, "
        ".jsonl, .ndjson, .parquet, or give --format",
    ),
]


def refused_setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files and variables the refused settings name."""
    monkeypatch.delenv("H37A_UNSET_KEY", raising=False)
    monkeypatch.setenv("H37A_SPACED_KEY", "sk two words")
    (tmp / "empty.txt").write_text("\n \n")
    (tmp / "latin1.txt").write_bytes(b"caf\xe9\n")
    (tmp / "elsewhere.json").write_text("{}")
    (tmp / "linked.csv.judge.json").symlink_to(tmp / "elsewhere.json")
    (tmp / "folder.csv.judge.json").mkdir()
    (tmp / "kept.csv.judge.json").write_text("{}")


@pytest.mark.parametrize(("given", "args", "code", "message"), REFUSED)
def test_a_refused_setting_is_the_same_error_from_the_api_and_the_command_line(
    sample: Path,
    tmp_path: Path,
    server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    given: dict[str, Any],
    args: list[str],
    code: int,
    message: str,
) -> None:
    refused_setup(tmp_path, monkeypatch)
    before = sorted(tmp_path.iterdir())
    said = message.format(tmp=tmp_path)
    arguments = ["--model", "m", "--base-url", server.base_url, "--limit", "2"]
    result = cli(sample, *arguments, *(a.format(tmp=tmp_path) for a in args))
    assert (result.exit_code, result.stdout) == (code, "")
    assert result.stderr.startswith(f"Error: {said}\n")
    values = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in given.items()}
    values = {"model": "m", "base_url": server.base_url, "limit": 2, **values}
    with pytest.raises(DicesError) as raised:
        dices.open(sample).judge(**values)
    assert (raised.value.exit_code, str(raised.value)) == (code, named(said))
    assert server.bodies == [] and sorted(tmp_path.iterdir()) == before


def test_the_command_lines_own_checks_of_evaluate(sample: Path, server: JudgeServer) -> None:
    """--evaluate scores the -o file, one row per conversation: it needs -o, no --persona."""
    cases = [
        ([], "--evaluate reads the predictions file: give -o FILE"),
        (
            ["--persona", "rater_gender", "-o", "x.csv"],
            "--evaluate scores one row per conversation; a --persona file has one per group "
            "(docs/judge.md says how to score it)",
        ),
    ]
    for more, message in cases:
        result = cli(sample, "--model", "m", "--base-url", server.base_url, "--evaluate", *more)
        assert (result.exit_code, result.stderr.splitlines()[0]) == (2, f"Error: {message}")
    assert server.bodies == []


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"samples": 0}, "samples must be between 1 and 100 (got 0)"),
        ({"temperature": 2.5}, "temperature must be between 0 and 2 (got 2.5)"),
        ({"rpm": 0}, "rpm must be at least 1 (got 0)"),
        ({"batch_max_bytes": 10}, "batch_max_bytes must be at least 1024 (got 10)"),
        ({"price_out": math.inf}, "price_out inf: give a finite number"),
        ({"then_evaluate": True}, "judge does not take then_evaluate; it takes: api_key_env, "),
        ({"colour": "red"}, "judge does not take colour; it takes: api_key_env, base_url, "),
    ],
)
def test_the_api_checks_what_the_command_lines_parser_checks(
    sample: Path, given: dict[str, Any], message: str
) -> None:
    """Ranges that Click checks on the command line, and names the API does not take."""
    with pytest.raises(DicesError) as raised:
        dices.open(sample).judge("m", **given)
    assert raised.value.exit_code == 2
    assert str(raised.value).startswith(message)


def test_the_options_ranges_and_defaults_are_the_librarys() -> None:
    """What --help says (each option's range and default) is what the library checks."""
    import typer.main

    registry = typer.Typer()
    command.register(registry)
    params = {p.name: p for p in typer.main.get_command(registry).params}
    defaults = JudgeSettings(model="m")
    for name, (low, high) in BOUNDS.items():
        kind = params[name].type
        assert (kind.min, kind.max) == (low, None if high == math.inf else high), name
        assert params[name].default == getattr(defaults, name), name
    assert params["prompt"].default == defaults.prompt
    assert params["dataset"].default == defaults.dataset
