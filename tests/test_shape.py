"""The shape of the code: floors that every import runs down, the command line on top, no
private name taken across modules, no import circles.

Every module of the package is read (not imported) and each `import` found anywhere in it,
inside functions too, is an edge: a deferred import is still a dependency. The floors and the
packages on them are docs/architecture.md's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dices_cli"

# The floors, top down: a module imports its own package's modules and those of lower floors
# only; two packages on one floor never import each other. A package or a top-level module is
# named without `dices_cli.`; the package's face (`dices_cli/__init__.py`: the version and the
# public API's names) is on no floor, since importing any module runs it anyway.
FLOORS = (
    ("__main__",),
    ("cli",),
    ("api",),
    ("runs",),
    ("report",),
    ("evaluate", "judge"),
    ("raters", "formats"),
    ("queries",),
    ("metrics", "download", "store"),
    ("shape", "read"),
    ("output",),
    ("arrow_text", "errors"),
    ("problems",),
    ("families", "terminal_text"),
)
FLOOR = {part: number for number, parts in enumerate(FLOORS, 1) for part in parts}
COMMAND_LINE = {"__main__", "cli"}
FRONT_END_LIBRARIES = {"typer", "rich", "click"}
MOST_TOP_LEVEL_MODULES = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module `path` imports, as written (absolute names; the package uses no relative
    imports), and every name it takes from one (`module.name`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


PATHS = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
FILES = set(PATHS)  # the modules as the files name them, which the code's imports spell
MODULES = {module: imports(path) for module, path in PATHS.items()}


def part_of(module: str) -> str:
    """The package or top-level module `module` belongs to, `""` for the package's face."""
    return module.split(".")[1] if "." in module else ""


def is_cli(module: str) -> bool:
    return part_of(module) in COMMAND_LINE


def internal_edges(module: str) -> set[str]:
    return {name for name in MODULES[module] if name in MODULES and name != module}


def test_every_module_is_read() -> None:
    assert {"dices_cli.cli.main", "dices_cli.read.source", "dices_cli.queries.engine"} <= set(
        MODULES
    )


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "dices_cli"))
def test_every_module_stands_on_a_floor(module: str) -> None:
    assert part_of(module) in FLOOR, f"{module}: add its package to FLOORS (a decision)"


def runs_up(importer: str, imported: str) -> bool:
    """Whether `importer` importing `imported` breaks the floors."""
    own, other = part_of(importer), part_of(imported)
    return other not in ("", own) and FLOOR[other] <= FLOOR[own]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "dices_cli"))
def test_every_import_runs_down(module: str) -> None:
    upward = sorted(name for name in internal_edges(module) if runs_up(module, name))
    assert not upward, f"{module} imports {upward}, not on a floor below its own"


def test_the_floor_check_finds_an_import_that_runs_up_or_sideways() -> None:
    assert runs_up("dices_cli.read.source", "dices_cli.store.datasets")
    assert runs_up("dices_cli.evaluate.references", "dices_cli.judge.plan")  # one floor
    assert runs_up("dices_cli.queries.engine", "dices_cli.cli.render")
    assert not runs_up("dices_cli.store.datasets", "dices_cli.read.checksum")
    assert not runs_up("dices_cli.judge.run", "dices_cli.judge.plan")  # its own package
    assert not runs_up("dices_cli.errors", "dices_cli")  # the face: __version__


def test_at_most_a_dozen_modules_stand_at_the_top() -> None:
    top = sorted(
        module
        for module, path in PATHS.items()
        if module.count(".") == 1 and path.stem != "__init__"
    )
    assert len(top) + 1 <= MOST_TOP_LEVEL_MODULES, f"{len(top)} + __init__: {top}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_cli(m)))
def test_the_core_imports_no_front_end_library(module: str) -> None:
    used = {name.split(".")[0] for name in MODULES[module]} & FRONT_END_LIBRARIES
    assert not used, f"{module} imports {used}: only cli/ may know the command line"


def private_names_taken(path: Path, own: str) -> set[str]:
    """The `_private` names (not dunders) the module `own` (at `path`) takes from another
    module of the package: imported by name, or read as an attribute of a module it imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # a local name -> the module of the package it stands for
    taken = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name: a.name for a in node.names if a.name in FILES}
        elif isinstance(node, ast.ImportFrom) and node.module in FILES and node.module != own:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in FILES:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif is_private(alias.name):
                    taken.add(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and is_private(node.attr)
        ):
            taken.add(f"{modules[node.value.id]}.{node.attr}")
    return taken


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_module(module: str) -> None:
    path = PATHS[module]
    assert not private_names_taken(path, module_name(path)), (
        "a helper two modules share is public in the lower one"
    )


def test_the_private_name_scan_finds_both_ways_of_taking_one(tmp_path: Path) -> None:
    taker = tmp_path / "taker.py"
    taker.write_text(
        "from dices_cli.errors import _x, Option, __doc__\n"
        "from dices_cli.metrics import compute\n"
        "import dices_cli.output as out\n"
        "compute._values(out._y, out.Output, compute.__name__)\n",
        encoding="utf-8",
    )
    assert private_names_taken(taker, "dices_cli.taker") == {
        "dices_cli.errors._x",
        "dices_cli.metrics.compute._values",
        "dices_cli.output._y",
    }


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


def flags_named(module: str) -> set[str]:
    """The flags (`--name`) in the module's string literals, docstrings left out (they may
    say how the command line uses the code)."""
    tree = ast.parse(PATHS[module].read_text(encoding="utf-8"))
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
    assert not flags_named(module), (
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
        for node in ast.walk(ast.parse(PATHS[module].read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Option"
        and isinstance(node.args[0], ast.Constant)
    }


def command_line_options() -> set[str]:
    """Every option name of every command of `dices`, generated query commands too."""
    from dices_cli.cli.commands.cli_docs import commands
    from dices_cli.queries.catalog import declared_queries

    declared = {  # a declared dataset's queries take their options from their .sql headers
        "--" + parameter.name.replace("_", "-")
        for query in declared_queries().values()
        for parameter in query.parameters
    }
    return declared | {
        flag
        for _, command in commands()
        for param in command.params
        for flag in [*param.opts, *param.secondary_opts]
        if flag.startswith("-")
    }


def test_every_option_the_core_names_is_an_option_of_the_command_line() -> None:
    """The command line words an `Option("min_quality")` as `--min-quality`: an option the
    core names by another name (a parameter's, say) would send the user to no option."""
    from dices_cli.cli.commands.wording import flag
    from dices_cli.errors import Option

    named = options_named_by_the_core()
    assert {"min_quality", "preset", "write", "timeout", "question", "dataset", "force"} <= named
    assert {"output", "format", "rejects"} <= named
    assert {flag(Option(name)) for name in named} <= command_line_options()


def test_the_core_says_an_option_by_its_name_and_the_command_line_as_a_flag() -> None:
    from dices_cli.cli.commands.wording import worded
    from dices_cli.errors import Option, UsageError

    error = UsageError("give ", Option("min_quality"), " or ", Option("preset"), ", not {both}")
    assert str(error) == "give min_quality or preset, not {both}"
    assert worded(error) == "give --min-quality or --preset, not {both}"
    assert error.exit_code == 2


def test_the_command_line_adds_the_command_that_repairs(tmp_path: Path) -> None:
    from dices_cli.cli.commands.wording import worded
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


# --- a command calls the library --------------------------------------------------------------

COMMANDS = PACKAGE / "cli" / "commands"
CLI_MODULES = sorted((PACKAGE / "cli").rglob("*.py"))
# What a module of `cli/` may import from the package: the library's commands
# (`dices_cli.runs`), our errors, how a result is written and shaped (`output`, `shape`), the
# registry's names for choices and help (`families`, the package's face only), the text a
# terminal may show (`terminal_text`), and the rest of the command line (`cli`).
LIBRARY_SURFACE = ("runs", "errors", "output", "shape", "families", "terminal_text", "cli")
OPEN_PACKAGES = ("runs", "cli")  # their modules too; the others are one module each
# From the core below the library, only these names: help texts and defaults, the canned
# queries' declarations the query commands are made from, and the types of what a command
# renders. No function that does a command's work.
VOCABULARY = {
    "dices_cli.evaluate.evaluation": {"COLUMN_HELP", "HEADLINE"},
    "dices_cli.evaluate.personas": {"COLUMN_HELP", "ANSWER", "persona_chart"},
    "dices_cli.evaluate.persona_signal": {"FIGURE_HELP"},
    "dices_cli.evaluate.as_rater": {"COLUMN_HELP"},
    "dices_cli.formats.validate": {"Progress"},
    "dices_cli.problems": {"PredictionProblemType", "Problem", "Report"},
    "dices_cli.queries.catalog": {
        "Chart",
        "DECLARED",
        "GROUP_COLUMNS",
        "Parameter",
        "ParameterError",
        "Query",
        "SQL_DIR_VARIABLE",
        "catalog",
        "command_queries",
        "command_query",
        "declared_queries",
        "family_queries",
        "usage_error",
    },
    "dices_cli.queries.engine": {"RaterSelection"},
    "dices_cli.raters.audit": {"ColumnAudit", "DatasetAudit"},
    "dices_cli.raters.quality": {
        "COMPONENTS",
        "DEFAULT_MIN_QUALITY",
        "RaterFilter",
        "RaterQuality",
    },
    "dices_cli.store.datasets": {"Store"},
}


def on_the_surface(module: str) -> bool:
    """Whether `module` (a module of the package) is the library's surface."""
    if module == "dices_cli":  # the package's face: its version and `open`
        return True
    part = part_of(module)
    if part in OPEN_PACKAGES:
        return True
    return part in LIBRARY_SURFACE and module == f"dices_cli.{part}"


def core_imports(path: Path) -> list[str]:
    """The modules beneath the library's surface that the module at `path` takes from,
    leaving out VOCABULARY's names."""
    taken = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            taken += [a.name for a in node.names if a.name.startswith("dices_cli.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dices_cli"):
            module = str(node.module)
            for alias in node.names:
                name = f"{module}.{alias.name}"
                if name in FILES:  # a module taken by name: judged by its own name, below
                    taken.append(name)
                elif not on_the_surface(module) and alias.name not in VOCABULARY.get(module, ()):
                    taken.append(module)
    return sorted({name for name in taken if not on_the_surface(name)})


@pytest.mark.parametrize(
    "path", CLI_MODULES, ids=lambda path: str(path.relative_to(PACKAGE / "cli"))
)
def test_a_command_calls_the_library_not_the_core(path: Path) -> None:
    taken = core_imports(path)
    assert not taken, f"{path.stem} imports {taken}: call a function of dices_cli.runs instead"


def test_the_command_rule_finds_the_core_and_passes_the_surface(tmp_path: Path) -> None:
    module = tmp_path / "command.py"
    module.write_text(
        "from dices_cli.runs.sql import run_sql\n"
        "from dices_cli.output import Output\n"
        "from dices_cli.queries.catalog import catalog\n"
        "from dices_cli.queries.catalog import get_query\n"
        "from dices_cli.formats import ingest\n"
        "from dices_cli.families.schema import DATASETS\n"
        "import dices_cli.store.datasets\n"
    )
    assert core_imports(module) == [
        "dices_cli.families.schema",
        "dices_cli.formats.ingest",
        "dices_cli.queries.catalog",
        "dices_cli.store.datasets",
    ]
