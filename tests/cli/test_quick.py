"""A small `dices query NAME` or `dices sql STATEMENT` answered without Typer
(`dices_cli.cli.quick`) is Typer's answer: the same output, messages and exit status, from
the same functions with the same values; any other command line is left to Typer."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dices_cli.cli import quick
from dices_cli.cli.commands.canned import _options_every_query_takes, query_command
from dices_cli.cli.commands.sql import sql
from dices_cli.queries.catalog import SQL_DIR_VARIABLE, command_queries
from dices_cli.queries.own_sql import packaged_sql_directory

# `dices ARGS` through `dices_cli.cli.MODULE.run` (launch: the console script; main: Typer's
# path alone): what it writes, and the top-level packages it loaded, after a marker line.
CONSOLE_SCRIPT = """
import json, os, sys
sys.argv[0] = "dices"
from dices_cli.cli.{module} import run
exit_now = os._exit
def said(code):
    sys.stdout.flush()
    sys.stderr.write("\\nLOADED " + json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
    sys.stderr.flush()
    exit_now(code)
os._exit = said
run()
"""


def dices(module: str, *args: str) -> tuple[int, str, str, set[str]]:
    """`dices ARGS` through `MODULE.run`: exit status, stdout, stderr, packages loaded."""
    environment = {n: v for n, v in os.environ.items() if n != quick.COMPLETION}
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT.format(module=module), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    said, _, loaded = done.stderr.rpartition("\nLOADED ")
    return done.returncode, done.stdout, said, set(json.loads(loaded))


def test_the_defaults_are_typers() -> None:
    """The options not answered here take the values Typer gives when they are not given."""

    def defaults(function: object, *answered: str) -> dict[str, object]:
        parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        return {p.name: p.default for p in parameters if p.name not in answered}

    assert quick._query_defaults() == defaults(_options_every_query_takes, "data", "fmt")
    assert quick._sql_defaults() == defaults(sql, "statement", "data", "fmt")


def test_typer_takes_every_packaged_querys_defaults() -> None:
    """A query answered here gets no option: Click checks nothing but its defaults, which
    it takes for every query of the packaged catalogue (a user's, $DICES_SQL_DIR, is
    Typer's to check)."""
    for query in command_queries().values():
        if not any(parameter.required for parameter in query.parameters):
            context = query_command(query).make_context(query.name, [])
            assert all(name in context.params for name in ("data", "fmt")), query.name


def test_a_catalogue_of_the_users_is_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SQL_DIR_VARIABLE, str(packaged_sql_directory()))
    monkeypatch.setattr(quick, "_answered", not_answered)
    assert quick.answer(["query", "overview"]) is None  # returned: left to Typer


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["query", "overview"], ("query", "overview", {})),
        (["sql", "SELECT 1", "-f", "csv"], ("sql", "SELECT 1", {"fmt": "csv"})),
        (
            ["query", "agreement", "--format", "json", "--data", "d"],
            ("query", "agreement", {"fmt": "json", "data": "d"}),
        ),
    ],
)
def test_the_command_lines_answered_here(args: list[str], words: object) -> None:
    assert quick.quick_words(args) == words


@pytest.mark.parametrize(
    "args",
    [
        ["query"],
        ["info", "--data", "d"],
        ["query", "--list"],
        ["query", "overview", "-f"],
        ["query", "overview", "--data=d"],  # one word: Typer's
        ["query", "overview", "-fcsv", "--data", "d"],
        ["query", "overview", "-d", "350"],
        ["query", "overview", "-f", "csv", "-f", "json"],  # given twice
        ["query", "overview", "--data", "-"],
        ["query", "overview", "--data", ""],
        ["sql", "", "-f", "csv"],
        ["sql", "--schema", "-f", "csv"],
        ["sql", "SELECT 1", "--", "-f"],
        ["-q", "query", "overview"],
    ],
)
def test_every_other_command_line_is_typers(args: list[str]) -> None:
    assert quick.quick_words(args) is None


def not_answered(command: str, run: object) -> None:
    raise AssertionError(f"{command} answered without Typer")


def test_a_completion_request_is_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quick.COMPLETION, "bash_complete")
    monkeypatch.setattr(quick, "_answered", not_answered)
    assert quick.answer(["query", "overview"]) is None  # returned: left to Typer


@pytest.mark.parametrize(
    ("args", "answered", "status"),
    [
        (("query", "overview", "-f", "csv"), True, 0),
        (("query", "overview", "--format", "json"), True, 0),
        (("query", "item-distribution", "-f", "csv"), True, 0),
        (
            ("sql", "SELECT dataset, count(*) FROM ratings GROUP BY 1 ORDER BY 1", "-f", "csv"),
            True,
            0,
        ),
        (("sql", "SELECT * FROM ratings LIMIT 20000", "-f", "jsonl"), True, 0),  # Arrow's
        (("sql", "SELECT nosuch FROM ratings", "-f", "csv"), True, 1),  # DuckDB's error
        (("sql", "DELETE FROM ratings", "-f", "csv"), True, 1),  # refused
        (("query", "gold-vs-crowd", "-f", "chart"), True, 2),  # it draws no chart
        (("query", "qoverall-by-demographic", "-f", "csv"), False, 2),  # requires --by
        (("query", "nosuch", "-f", "csv"), False, 2),  # no such query
        (("query", "overview", "-f", "xml"), False, 2),  # no such format
    ],
)
def test_an_answer_without_typer_is_typers(
    args: tuple[str, ...], answered: bool, status: int, ingested: Path
) -> None:
    full = (*args, "--data", str(ingested))
    code, out, err, loaded = dices("launch", *full)
    assert (code, out, err) == dices("main", *full)[:3]
    assert code == status, err
    assert ("typer" in loaded) == (not answered)


@pytest.mark.parametrize("command", [("query", "overview"), ("sql", "SELECT 1 AS one")])
def test_nothing_ingested_or_no_directory_is_said_as_typer_says_it(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    for data in (tmp_path, tmp_path / "absent"):  # a directory: answered here; else Typer's
        full = (*command, "--data", str(data), "-f", "csv")
        code, out, err, loaded = dices("launch", *full)
        assert (code, out, err) == dices("main", *full)[:3]
        assert ("typer" in loaded) == (not data.exists())
