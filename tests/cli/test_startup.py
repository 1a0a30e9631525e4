"""Start-up: `dices` lists its commands without loading them, and loads only the one it runs."""

from __future__ import annotations

import fcntl
import inspect
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from dices_cli.cli import launch
from dices_cli.cli.commands import cli_docs
from dices_cli.cli.main import COMMANDS, DicesGroup, ListedCommand, app

# Run in a fresh interpreter: the modules `dices ARGS` imported, as JSON, after it ran.
MODULES_AFTER = """
import json, sys
from typer.testing import CliRunner
from dices_cli.cli.main import app
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
print(json.dumps(sorted(sys.modules)))
"""
COMMAND_MODULES = {f"dices_cli.cli.commands.{module}" for module, _ in COMMANDS.values()}


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
    assert modules_after("sql", "--help") & COMMAND_MODULES == {"dices_cli.cli.commands.sql"}
    assert modules_after("verify", "--help") & COMMAND_MODULES == {"dices_cli.cli.commands.verify"}


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_a_canned_query_loads_neither_arrow_nor_numpy(fmt: str, ingested: Path) -> None:
    # Its few rows come from DuckDB as Python values: Arrow and the NumPy it imports took
    # 0.10 s of `dices query overview` (0.33 -> 0.23 s); only Parquet keeps DuckDB's types
    # through Arrow. Nor Rich, to a pipe: the query's help is marked up only when drawn.
    loaded = modules_after("query", "overview", "--data", str(ingested), "-f", fmt)
    assert not loaded & {"pyarrow", "numpy", "polars", "pandas"}
    assert ("rich" in loaded) == (fmt == "table")
    # Nor the thread pool of the checksums (`dices verify`'s), which brings logging: 10 ms.
    assert not loaded & {"concurrent.futures", "logging"}
    # Nor, to a pipe, the table layout, the SQL sandbox or the checksums: about 7 ms.
    unneeded = {"dices_cli.cli.tabular", "dices_cli.queries.sandbox", "dices_cli.read.checksum"}
    assert not loaded & unneeded if fmt != "table" else "dices_cli.cli.tabular" in loaded
    # Nor `dices sql`'s command, nor the rater id reader without --raters: 2 ms.
    assert not loaded & {"dices_cli.cli.commands.sql", "dices_cli.raters.id_list"}


def test_a_canned_query_opens_only_the_views_it_reads(ingested: Path) -> None:
    """Binding a view takes DuckDB up to 50 ms: `overview` reads ratings, and only its
    stored files are registered."""
    from dices_cli.queries import engine

    opened: list[str] = []
    stored_view = engine.stored_view

    def record(name: str) -> str:
        opened.append(name)
        return stored_view(name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "stored_view", record)
        query = ["query", "overview", "--data", str(ingested), "-f", "csv"]
        result = CliRunner().invoke(app, query)
    assert result.exit_code == 0, result.output
    assert sorted(opened) == ["ratings_350", "ratings_990"]
    assert result.stdout.startswith("dataset,conversations,raters,ratings,share_no,")


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl"])
def test_a_small_sql_answer_loads_neither_arrow_nor_numpy(fmt: str, ingested: Path) -> None:
    """DuckDB reads the stored files itself inside the sandbox, and gives a small answer's
    few values to Python (`Session.small_or_stream`): 0.1-0.2 s of imports a count does
    not need."""
    statement = "SELECT dataset, count(*) AS n, avg(rater_id) FROM ratings GROUP BY ALL"
    loaded = modules_after("sql", statement, "--data", str(ingested), "-f", fmt)
    assert "duckdb" in loaded
    assert not loaded & {"pyarrow", "numpy", "polars", "pandas", "rich"}


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM ratings",  # more than a small answer's cells
        "SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' AS t",  # a type Python gives otherwise
    ],
)
def test_a_large_or_unusual_sql_answer_is_written_by_arrow(statement: str, ingested: Path) -> None:
    loaded = modules_after("sql", statement, "--data", str(ingested), "-f", "csv")
    assert "pyarrow" in loaded


def test_dices_sql_loads_neither_the_catalogue_nor_the_checksums(ingested: Path) -> None:
    # It runs no canned query and reads no file of the user's: the catalogue, the checksums
    # and gzip, the canned queries' run, `dices query`'s command and the rater id reader are
    # start-up it does not need (bench/startup.py measures it).
    loaded = modules_after("sql", "SELECT count(*) AS n FROM ratings", "--data", str(ingested))
    unneeded = {
        "dices_cli.queries.catalog",
        "dices_cli.read.checksum",
        "gzip",
        "dices_cli.runs.canned",
        "dices_cli.cli.commands.canned",
        "dices_cli.raters.id_list",
    }
    assert not loaded & unneeded


def test_a_share_interval_loads_neither_pandas_nor_arrow_compute(ingested: Path) -> None:
    # The share queries' intervals and group test need numpy and read Arrow's buffers
    # themselves: pyarrow.compute (imported by ListArray.flatten, 0.12 s) and pandas (by
    # pyarrow's own conversions, 0.2 s) would double their work.
    query = ["query", "qoverall-by-demographic", "--by", "rater_race", "--permutations", "10"]
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


# The console script in a fresh interpreter, as `dices ARGS`: `dices_cli.{module}.run`, which
# leaves through os._exit, after which the modules it loaded are written to stderr.
CONSOLE_SCRIPT = """
import json, os, sys
sys.argv[0] = "dices"
from dices_cli.cli.{module} import run
exit_now = os._exit
def said(code):
    sys.stdout.flush()
    if os.isatty(1):
        os.close(1)  # the end of what a terminal shows
    sys.stderr.write(json.dumps(sorted(sys.modules)))
    sys.stderr.flush()
    exit_now(code)
os._exit = said
run()
"""
FRONT_END = {"typer", "click", "rich", "duckdb", "pyarrow", "polars", "numpy"}


def _environment(**settings: str) -> dict[str, str]:
    """This environment without the settings that change the help's drawing, and `settings`."""
    kept = {n: v for n, v in os.environ.items() if n not in launch.DRAWING_SETTINGS}
    return {**kept, **settings}


def console(module: str, *args: str, **settings: str) -> tuple[int, bytes, set[str]]:
    """`dices ARGS` through `dices_cli.cli.MODULE.run` into a pipe, with `settings`: its exit
    code, its output and the modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT.format(module=module), *args],
        capture_output=True,
        env=_environment(**settings),
        timeout=60,
    )
    return done.returncode, done.stdout, set(json.loads(done.stderr))


def test_the_stored_drawings_of_the_help_are_typers_own() -> None:
    """The drawings `dices --help` prints without Typer are those Typer makes (regenerate
    them with `python -m dices_cli.cli.commands.cli_docs`)."""
    for path, drawing in cli_docs.stored_helps().items():
        assert path.read_bytes() == drawing, f"{path.name} is out of date: {cli_docs.REGENERATE}"
    code, typer_drew, _ = console("main", "--help")
    assert (code, typer_drew) == (0, launch.PLAIN_HELP.read_bytes())


@pytest.mark.parametrize("asked", ["--help", "-h"])
def test_dices_help_in_a_pipe_loads_neither_typer_nor_rich(asked: str) -> None:
    code, shown, loaded = console("launch", asked)
    assert (code, shown) == (0, launch.PLAIN_HELP.read_bytes())
    assert not {module.split(".")[0] for module in loaded} & FRONT_END
    launched = {"dices_cli", "dices_cli.cli", "dices_cli.cli.launch"}
    assert {m for m in loaded if m.startswith("dices_cli")} == launched


@pytest.mark.parametrize(
    "setting",
    [{"COLUMNS": "100"}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}, {"TERMINAL_WIDTH": "60"}],
)
def test_a_setting_that_changes_the_drawing_leaves_it_to_typer(setting: dict[str, str]) -> None:
    code, shown, loaded = console("launch", "--help", **setting)
    assert (code, shown) == console("main", "--help", **setting)[:2]
    assert "typer" in loaded


def test_other_arguments_go_to_typer() -> None:
    code, shown, loaded = console("launch", "-q", "--version")
    assert (code, shown) == (0, b"dices 0.1.0\n")
    assert "typer" in loaded


@pytest.mark.parametrize("asked", ["--version", "-V"])
def test_the_version_is_answered_without_typer(asked: str) -> None:
    code, shown, loaded = console("launch", asked)
    assert (code, shown) == (0, b"dices 0.1.0\n")
    assert not {module.split(".")[0] for module in loaded} & FRONT_END


def on_a_terminal(module: str, columns: int) -> bytes:
    """What `dices --help` through `dices_cli.cli.MODULE.run` shows on a terminal `columns` wide."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child, on the terminal; its stderr goes nowhere
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        script = CONSOLE_SCRIPT.format(module=module)
        environment = _environment(TERM="xterm-256color", LANG="C.UTF-8")
        os.execve(sys.executable, [sys.executable, "-c", script, "--help"], environment)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.waitpid(pid, 0)
    os.close(terminal)
    return shown.replace(b"\r\n", b"\n")  # the terminal's line ends, as written


@pytest.mark.parametrize("columns", [80, 120])
def test_on_a_terminal_dices_help_is_typers_drawing(columns: int) -> None:
    """With colours, 80 columns wide as stored; any other width is drawn by Typer."""
    typer_drew = on_a_terminal("main", columns)
    assert on_a_terminal("launch", columns) == typer_drew
    assert (typer_drew == launch.TERMINAL_HELP.read_bytes()) == (columns == launch.HELP_WIDTH)


GC_THRESHOLD_AT_EXIT = """
import gc, os, sys
real_exit = os._exit
def report(code):
    print(gc.get_threshold()[0], flush=True)
    real_exit(code)
os._exit = report
sys.argv = ["dices", *sys.argv[1:]]
from dices_cli.cli.launch import run
run()
"""


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_the_command_line_collects_young_garbage_less_often(args: list[str]) -> None:
    """Start-up makes tens of thousands of objects that reference counting frees: the
    command line collects the youngest generation every 50,000 of them, not every 700."""
    done = subprocess.run(
        [sys.executable, "-c", GC_THRESHOLD_AT_EXIT, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == str(launch.GC_YOUNGEST_THRESHOLD) == "50000"


def test_the_library_leaves_the_garbage_collector_to_its_user() -> None:
    code = (
        "import gc; before = gc.get_threshold(); import dices_cli, dices_cli.cli.main; "
        "print(gc.get_threshold() == before)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "True\n"
