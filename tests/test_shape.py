"""The shape of the code: the core never reaches up into the CLI, and no import circles.

Every module of the package is read (not imported) and each `import` found anywhere in it,
inside functions too, is an edge: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dices_cli"
CLI = {
    "dices_cli.__main__",
    "dices_cli.launch",
    "dices_cli.main",
    "dices_cli.render",
    "dices_cli.bars",
}  # and dices_cli.commands
FRONT_END_LIBRARIES = {"typer", "rich", "click"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module `path` imports, as written (absolute names; the package uses no relative
    imports)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


MODULES = {module_name(path): imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def is_cli(module: str) -> bool:
    return module in CLI or module.startswith("dices_cli.commands")


def internal_edges(module: str) -> set[str]:
    return {name for name in MODULES[module] if name in MODULES and name != module}


def test_every_module_is_read() -> None:
    assert {"dices_cli.main", "dices_cli.source", "dices_cli.queries.engine"} <= set(MODULES)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_cli(m)))
def test_the_core_imports_no_front_end_library(module: str) -> None:
    used = {name.split(".")[0] for name in MODULES[module]} & FRONT_END_LIBRARIES
    assert not used, f"{module} imports {used}: the core must not know the command line"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_cli(m)))
def test_the_core_imports_no_command_line_module(module: str) -> None:
    assert not {name for name in internal_edges(module) if is_cli(name)}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("dices_cli.queries")))
def test_the_query_engine_knows_nothing_of_rater_quality(module: str) -> None:
    assert not internal_edges(module) & {"dices_cli.quality", "dices_cli.selection"}


def test_there_is_no_import_circle() -> None:
    def visit(module: str, path: list[str]) -> None:
        for imported in sorted(internal_edges(module)):
            if imported in path:
                circle = [*path[path.index(imported) :], imported]
                pytest.fail("import circle: " + " -> ".join(circle))
            if imported not in done:
                visit(imported, [*path, imported])
        done.add(module)

    done: set[str] = set()
    for module in sorted(MODULES):
        visit(module, [module])


# --- the core never names a command-line flag -----------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
# Core modules whose messages still name flags, with the flags, until they raise facts for
# the CLI to word. The demo is here by design: it prints commands for the user to type.
STILL_NAMING_FLAGS = {
    "dices_cli.demo": {"--data", "--by", "--sort", "--limit", "--model", "--seed", "--evaluate"},
}


def module_path(module: str) -> Path:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def flags_named(module: str) -> set[str]:
    """The flags (`--name`) in the module's string literals, docstrings left out (they may
    say how the command line uses the code)."""
    tree = ast.parse(module_path(module).read_text(encoding="utf-8"))
    documentation = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                documentation.add(id(first.value))
    return {
        flag
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in documentation
        for flag in FLAG.findall(node.value)
    }


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_cli(m)))
def test_the_core_names_no_command_line_flag(module: str) -> None:
    assert flags_named(module) == STILL_NAMING_FLAGS.get(module, set()), (
        "the core raises exceptions carrying the facts; the CLI words them as options"
    )


def test_the_flag_scan_finds_flags() -> None:
    assert FLAG.findall("use `--by-x` or --force, not -o nor x--y nor '-- comment'") == [
        "--by-x",
        "--force",
    ]


def options_named_by_the_core() -> set[str]:
    """The names of every `Option(...)` the core's code builds for a message."""
    return {
        node.args[0].value
        for module in MODULES
        if not is_cli(module)
        for node in ast.walk(ast.parse(module_path(module).read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Option"
        and isinstance(node.args[0], ast.Constant)
    }


def command_line_options() -> set[str]:
    """Every option name of every command of `dices`, generated query commands too."""
    from dices_cli.commands.cli_docs import commands

    return {
        flag
        for _, command in commands()
        for param in command.params
        for flag in [*param.opts, *param.secondary_opts]
        if flag.startswith("-")
    }


def test_every_option_the_core_names_is_an_option_of_the_command_line() -> None:
    """The command line words an `Option("min_quality")` as `--min-quality`: an option the
    core names by another name (a parameter's, say) would send the user to no option."""
    from dices_cli.commands.wording import flag
    from dices_cli.errors import Option

    named = options_named_by_the_core()
    assert {"min_quality", "preset", "write", "timeout", "question", "dataset", "force"} <= named
    assert {"output", "format", "rejects"} <= named
    assert {flag(Option(name)) for name in named} <= command_line_options()


def test_the_core_says_an_option_by_its_name_and_the_command_line_as_a_flag() -> None:
    from dices_cli.commands.wording import worded
    from dices_cli.errors import Option, UsageError

    error = UsageError("give ", Option("min_quality"), " or ", Option("preset"), ", not {both}")
    assert str(error) == "give min_quality or preset, not {both}"
    assert worded(error) == "give --min-quality or --preset, not {both}"
    assert error.exit_code == 2


def test_the_command_line_adds_the_command_that_repairs(tmp_path: Path) -> None:
    from dices_cli.commands.wording import worded
    from dices_cli.errors import DamagedDataError, DicesError, NotIngestedError

    missing = NotIngestedError(f"DICES-350 is not ingested in {tmp_path}", root=tmp_path)
    assert str(missing) == f"DICES-350 is not ingested in {tmp_path}"
    assert worded(missing) == (
        f"DICES-350 is not ingested in {tmp_path}; run `dices ingest FILE --data {tmp_path}` first"
    )
    damaged = DamagedDataError("DICES-350: x.parquet is missing")
    assert str(damaged) == "DICES-350: x.parquet is missing"
    assert worded(damaged) == (
        "DICES-350: x.parquet is missing; ingest the dataset again (`dices ingest FILE --force`)"
    )
    assert worded(DicesError("a fact")) == "a fact"
