"""Start-up: `dices` lists its commands without loading them, and loads only the one it runs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from dices_cli.main import COMMANDS, DicesGroup, ListedCommand, app

# Run in a fresh interpreter: the modules `dices ARGS` imported, as JSON, after it ran.
MODULES_AFTER = """
import json, sys
from typer.testing import CliRunner
from dices_cli.main import app
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
print(json.dumps(sorted(sys.modules)))
"""
COMMAND_MODULES = {f"dices_cli.commands.{module}" for module, _ in COMMANDS.values()}


def modules_after(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout))


def first_paragraph(help_text: str) -> str:
    return inspect.cleandoc(help_text).split("\n\n")[0]


def test_each_listed_line_is_the_first_paragraph_of_the_commands_own_help() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, DicesGroup)
    ctx = group.make_context("dices", ["--version"], resilient_parsing=True)
    assert group.list_commands(ctx) == list(COMMANDS)
    for name, (_module, one_line) in COMMANDS.items():
        command = group.get_command(ctx, name)
        assert not isinstance(command, ListedCommand)
        assert command.name == name
        assert first_paragraph(command.help or "") == one_line, name
        assert any(p.name == "quiet" for p in command.params), f"{name} lacks -q/--quiet"


def test_every_command_a_module_registers_is_listed() -> None:
    for module in sorted(COMMAND_MODULES):
        registry = typer.Typer()
        __import__(module, fromlist=["register"]).register(registry)
        made = set(typer.main.get_group(registry).commands)
        listed = {name for name, (owner, _) in COMMANDS.items() if module.endswith(f".{owner}")}
        assert made == listed, module


def test_dices_help_lists_every_command_without_loading_one() -> None:
    loaded = modules_after("--help")
    assert not loaded & COMMAND_MODULES
    assert not loaded & {"duckdb", "pyarrow", "polars", "numpy"}
    # The exact drawing is docs/cli.md's (test_canned_commands.py checks it): here, that
    # each command's line starts with its name and its help.
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    lines = [line.strip("│ ") for line in result.stdout.splitlines()]
    for name, (_module, one_line) in COMMANDS.items():
        start = " ".join([name, *one_line.split()[:3]])
        assert any(" ".join(line.split()).startswith(start) for line in lines), name


def test_a_command_loads_its_own_module_only() -> None:
    assert modules_after("sql", "--help") & COMMAND_MODULES == {"dices_cli.commands.query"}
    assert modules_after("verify", "--help") & COMMAND_MODULES == {"dices_cli.commands.verify"}


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_a_canned_query_loads_neither_arrow_nor_numpy(fmt: str, ingested: Path) -> None:
    # Its few rows come from DuckDB as Python values: Arrow and the NumPy it imports took
    # 0.10 s of `dices query overview` (0.33 -> 0.23 s); only Parquet keeps DuckDB's types
    # through Arrow. Nor Rich, to a pipe: the query's help is marked up only when drawn.
    loaded = modules_after("query", "overview", "--data", str(ingested), "-f", fmt)
    assert not loaded & {"pyarrow", "numpy", "polars", "pandas"}
    assert ("rich" in loaded) == (fmt == "table")


def test_a_share_interval_loads_neither_pandas_nor_arrow_compute(ingested: Path) -> None:
    # The bootstrap of the share queries needs numpy and reads Arrow's buffers itself:
    # pyarrow.compute (imported by ListArray.flatten, 0.12 s) and pandas (by pyarrow's own
    # conversions, 0.2 s) would double the work of the interval.
    query = ["query", "qoverall-by-demographic", "--by", "rater_race", "--bootstrap", "10"]
    loaded = modules_after(*query, "--data", str(ingested), "-f", "csv")
    assert "numpy" in loaded
    assert not loaded & {"pyarrow.compute", "pandas", "polars"}


def test_a_canned_query_to_parquet_loads_arrow(ingested: Path, tmp_path: Path) -> None:
    target = tmp_path / "overview.parquet"
    loaded = modules_after("query", "overview", "--data", str(ingested), "-o", str(target))
    assert "pyarrow" in loaded
    assert target.stat().st_size > 0


def test_a_mistyped_command_is_still_suggested() -> None:
    result = CliRunner().invoke(app, ["ingets"])
    assert result.exit_code == 2
    assert "No such command 'ingets'. Did you mean 'ingest'?" in result.output
