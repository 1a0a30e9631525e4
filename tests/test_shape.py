"""The shape of the code: the core never reaches up into the CLI, and no import circles.

Every module of the package is read (not imported) and each `import` found anywhere in it,
inside functions too, is an edge: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dices_cli"
CLI = {"dices_cli.__main__", "dices_cli.main", "dices_cli.render"}  # and dices_cli.commands
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
