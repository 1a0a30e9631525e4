"""Issue 25's package layout, applied to whatever the branch holds when it runs.

    python tools/relayout.py           # say what would move, and what is not mapped
    python tools/relayout.py --apply   # make the two commits

The layout and why it has these floors: docs/architecture.md. The moves are a table here
(`MOVES`), so the script can run on a later main than the one it was written on; files that
others added meanwhile under a folder that moves go with the folder, and any other new module
is listed for a person to place (`--move OLD=NEW`, `--stay PATH`): the script never guesses.

It refuses to run on a dirty tree, when a mapped source is missing or a target exists, or
when a module is not placed. Then two commits:

1. "moves only": `git mv` of every file, nothing else, so that history follows each file;
2. the rewrite: every dotted name and path of a moved module in every tracked text file
   (imports, `from dices_cli import x`, `python -m dices_cli.x`, `mock.patch("dices_cli.x.y")`,
   importlib strings, entry points, docs), `Path(__file__).parents[N]` in a file that changed
   depth, a face (`__init__.py`) for each new package, and the block of tests/test_shape.py
   that checked the old tree under the new names. ruff then sorts the imports and formats;
   ruff check and mypy must pass before the commit is made. This script deletes itself in
   that commit: its work is done, and history keeps it.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = "dices_cli"

# Old path -> new path, from the repository's root. A path ending in "/" moves a folder with
# whatever it holds on the day the script runs.
MOVES: dict[str, str] = {
    # cli/: parsing arguments and drawing for a terminal (the only users of Typer and Rich)
    "dices_cli/main.py": "dices_cli/cli/main.py",
    "dices_cli/launch.py": "dices_cli/cli/launch.py",
    "dices_cli/commands/": "dices_cli/cli/commands/",
    "dices_cli/render.py": "dices_cli/cli/render.py",
    "dices_cli/tabular.py": "dices_cli/cli/tabular.py",
    "dices_cli/bars.py": "dices_cli/cli/bars.py",
    "dices_cli/demo.py": "dices_cli/cli/demo.py",
    # raters/: which raters a command sees
    "dices_cli/quality.py": "dices_cli/raters/quality.py",
    "dices_cli/audit.py": "dices_cli/raters/audit.py",
    "dices_cli/selection.py": "dices_cli/raters/selection.py",
    "dices_cli/raters.py": "dices_cli/raters/id_list.py",
    # formats/: each family's reading, checks, ingester and exports, and the dispatch
    "dices_cli/ingest.py": "dices_cli/formats/ingest.py",
    "dices_cli/validate.py": "dices_cli/formats/validate.py",
    "dices_cli/csvparse.py": "dices_cli/formats/dices/csvparse.py",
    "dices_cli/checks.py": "dices_cli/formats/dices/checks.py",
    "dices_cli/tables.py": "dices_cli/formats/dices/tables.py",
    "dices_cli/dices_ingest.py": "dices_cli/formats/dices/ingest.py",
    "dices_cli/export.py": "dices_cli/formats/dices/export.py",
    "dices_cli/layouts.py": "dices_cli/formats/dices/layouts.py",
    "dices_cli/prosocial/": "dices_cli/formats/prosocial/",
    # store/: the data directory (the judge's cache lives there too, and `dices sql` reads it)
    "dices_cli/store.py": "dices_cli/store/datasets.py",
    "dices_cli/judge/cache.py": "dices_cli/store/judge_cache.py",
    # read/: bytes to records
    "dices_cli/source.py": "dices_cli/read/source.py",
    "dices_cli/lines.py": "dices_cli/read/lines.py",
    "dices_cli/checksum.py": "dices_cli/read/checksum.py",
    "dices_cli/file_formats.py": "dices_cli/read/file_formats.py",
    "dices_cli/json_lines.py": "dices_cli/read/json_lines.py",
    "dices_cli/ids.py": "dices_cli/read/ids.py",
    # families/: declarations only
    "dices_cli/schema.py": "dices_cli/families/schema.py",
}

# What stays where it is: the top-level modules (api.py may not exist yet) and the packages
# that keep their place. A module under dices_cli/ that neither moves nor stays is refused.
STAYS: tuple[str, ...] = (
    "dices_cli/__init__.py",
    "dices_cli/__main__.py",
    "dices_cli/api.py",
    "dices_cli/runs.py",
    "dices_cli/errors.py",
    "dices_cli/problems.py",
    "dices_cli/terminal_text.py",
    "dices_cli/output.py",
    "dices_cli/arrow_text.py",
    "dices_cli/shape.py",
    "dices_cli/download.py",
    "dices_cli/report/",
    "dices_cli/evaluate/",
    "dices_cli/judge/",
    "dices_cli/queries/",
    "dices_cli/metrics/",
    "dices_cli/families/",
    "dices_cli/data/",
)

# The face of each package the moves make.
NEW_PACKAGES: dict[str, str] = {
    "dices_cli/cli": "The command line: parsing arguments, one module per command group, and "
    "drawing for a terminal.",
    "dices_cli/raters": "Which raters a command sees: quality scores, the filter's audit, and "
    "the selection resolved once above the query engine.",
    "dices_cli/formats": "Each dataset family's reading, checks, ingester and exports; "
    "`validate` and `ingest` dispatch to them by family.",
    "dices_cli/formats/dices": "DICES's CSV: parsing, cell checks, typed tables, the ingester, "
    "and the exports.",
    "dices_cli/store": "The data directory: stored datasets published atomically with their "
    "manifests, and the judge's cache.",
    "dices_cli/read": "Bytes to records with line numbers: sources, lines, checksums in the "
    "same pass, file formats, JSON Lines, integers.",
}

SHAPE_TEST = "tests/test_shape.py"
SELF = "tools/relayout.py"
WRITTEN = "relayout_written_in_the_new_layout"
SHAPE_BLOCK = re.compile(r"\n# relayout: begin\b.*?\n# relayout: end[^\n]*\n", re.DOTALL)

DOTTED = re.compile(r"(?<![\w.])dices_cli((?:\.[A-Za-z_]\w*)*)(?!\w)")
SLASHED = re.compile(r"(?<![\w./-])dices_cli((?:/[\w.-]+)+/?)")
PARENTS = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?\.parents\[)(\d+)(\])")


class Refused(Exception):
    pass


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=REPOSITORY, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise Refused(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def tracked() -> list[str]:
    return git("ls-files", "-z").split("\0")[:-1]


def dotted(path: str) -> str:
    """The module a .py path (or a package folder) names: dices_cli/a/b.py -> dices_cli.a.b."""
    parts = path.rstrip("/").removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_moves(files: Iterable[str], moves: dict[str, str]) -> dict[str, str]:
    """Every tracked file that moves, old -> new: folders expanded, files named alone win."""
    moved = {}
    for name in files:
        for old, new in moves.items():
            if old.endswith("/") and name.startswith(old) and name not in moves:
                moved[name] = new + name.removeprefix(old)
        if name in moves:
            moved[name] = moves[name]
    return moved


def module_map(moved: dict[str, str], moves: dict[str, str]) -> dict[str, str]:
    """Old dotted module -> new, for every moved module and every moved package."""
    names = {dotted(old): dotted(new) for old, new in moved.items() if old.endswith(".py")}
    names |= {dotted(old): dotted(new) for old, new in moves.items() if old.endswith("/")}
    return names


def renamed(name: str, modules: dict[str, str], new_names: set[str]) -> str:
    """`name` (dices_cli.x.y.attribute) under the new layout: its longest prefix that is an
    old module is replaced. A name already written in the new layout is left as it is."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in new_names and prefix not in modules:
            return name
        if prefix in modules:
            return ".".join([modules[prefix], *parts[end:]])
    return name


@functools.cache
def _modules_today() -> dict[str, str]:
    files = [p.relative_to(REPOSITORY).as_posix() for p in (REPOSITORY / PACKAGE).rglob("*.py")]
    return module_map(file_moves(files, MOVES), MOVES)


def new_module(name: str) -> str:
    """`name` under the new layout, as today's tree lays its modules out: for
    tests/test_shape.py, which checks the floors of the new layout before the files move."""
    return renamed(name, _modules_today(), set())


def unplaced(files: Iterable[str], moves: dict[str, str], stays: Iterable[str]) -> list[str]:
    placed = (*moves, *stays)
    return [
        name
        for name in files
        if name.startswith(f"{PACKAGE}/") and name.endswith(".py")
        if not any(name == p or (p.endswith("/") and name.startswith(p)) for p in placed)
    ]


def rewrite_imports_from(text: str, modules: dict[str, str]) -> str:
    """`from A import b` where A.b is a module that moved away from A: the statement is split
    so that each moved module is imported from its new parent (under its old name, if it was
    renamed). Other statements are left to the dotted-name rewrite."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if not node.module.startswith(PACKAGE):
            continue
        stay, moved = [], []
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if full in modules:
                moved.append((alias, modules[full]))
            else:
                stay.append(alias)
        if not moved:
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        statements = []
        if stay:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in stay)
            statements.append(f"from {node.module} import {names}")
        for alias, target in moved:
            parent, _, leaf = target.rpartition(".")
            local = alias.asname or alias.name
            alias_part = f" as {local}" if local != leaf else ""
            # Written in the new layout already: kept from the dotted-name rewrite.
            statements.append(
                f"from {WRITTEN}{parent.removeprefix(PACKAGE)} import {leaf}{alias_part}"
            )
        last_line = lines[(node.end_lineno or node.lineno) - 1]
        statements[-1] += last_line[node.end_col_offset :].rstrip("\n")  # a comment, say
        edits.append((node.lineno, node.end_lineno, indent, statements))
    for first, last, indent, statements in sorted(edits, reverse=True):
        block = "".join(f"{indent}{statement}\n" for statement in statements)
        lines[first - 1 : last] = [block]
    return "".join(lines)


def rewrite_text(
    text: str, modules: dict[str, str], new_names: set[str], paths: dict[str, str]
) -> str:
    text = DOTTED.sub(lambda m: renamed(m.group(0), modules, new_names), text)

    def path(match: re.Match[str]) -> str:
        whole = match.group(0)
        for old in sorted(paths, key=len, reverse=True):
            if whole == old.rstrip("/") or whole.startswith(old.rstrip("/") + "/"):
                return paths[old].rstrip("/") + whole[len(old.rstrip("/")) :]
        return whole

    return SLASHED.sub(path, text)


def with_depth(text: str, old: str, new: str) -> str:
    """`Path(__file__).parents[N]` kept pointing where it pointed, in a file that moved
    between folders of different depth."""
    shift = new.count("/") - old.count("/")
    return PARENTS.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + shift}{m.group(3)}", text)


def leftovers(files: Iterable[str], moved: dict[str, str]) -> list[str]:
    """Lines that still name a moved file by a partial path (`commands/canned.py`): for a
    person to read, since a bare file name is often right as it stands."""
    tails = {
        old.removeprefix(f"{PACKAGE}/"): new.removeprefix(f"{PACKAGE}/")
        for old, new in moved.items()
        if "/" in old.removeprefix(f"{PACKAGE}/")
    }
    pattern = re.compile(r"(?<![\w/])(" + "|".join(map(re.escape, tails)) + r")\b")
    found = []
    for name in files:
        try:
            text = (REPOSITORY / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if match := pattern.search(line):
                found.append(f"{name}:{number}: {match.group(1)} (now {tails[match.group(1)]})")
    return found


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apply", action="store_true", help="make the two commits")
    parser.add_argument("--move", action="append", default=[], metavar="OLD=NEW")
    parser.add_argument("--stay", action="append", default=[], metavar="PATH")
    args = parser.parse_args(argv)
    moves = dict(MOVES)
    for pair in args.move:
        old, _, new = pair.partition("=")
        moves[old] = new
    try:
        if git("status", "--porcelain"):
            raise Refused("the work tree has changes: commit or stash them first")
        files = tracked()
        missing = [old for old in moves if not (REPOSITORY / old).exists()]
        if missing:
            raise Refused(f"mapped sources missing: {', '.join(missing)}")
        moved = file_moves(files, moves)
        taken = [new for new in moved.values() if (REPOSITORY / new).exists()]
        if taken:
            raise Refused(f"targets exist already: {', '.join(taken)}")
        if left := unplaced(files, moves, (*STAYS, *args.stay)):
            raise Refused(
                "modules in no place: "
                + ", ".join(left)
                + "; give each --move OLD=NEW or --stay PATH (or add it to the table, and commit)"
            )
    except Refused as refusal:
        print(f"relayout: refused: {refusal}", file=sys.stderr)
        return 1
    print(f"{len(moved)} files move:")
    for old, new in sorted(moved.items()):
        print(f"  {old} -> {new}")
    if not args.apply:
        print("(nothing changed: --apply makes the commits)")
        return 0

    for old, new in sorted(moved.items()):
        (REPOSITORY / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    for folder in (old for old in moves if old.endswith("/")):
        # Emptied of tracked files, a folder left behind (with its __pycache__) would still
        # import, as a namespace package.
        shutil.rmtree(REPOSITORY / folder, ignore_errors=True)
    git(
        "commit",
        "-q",
        "-m",
        "layout (issue 25): moves only, no edits\n\nMade by tools/relayout.py.",
    )

    modules = module_map(moved, moves)
    after = [moved.get(name, name) for name in files]
    new_names = {dotted(n) for n in after if n.startswith(f"{PACKAGE}/") and n.endswith(".py")}
    new_names |= {dotted(package) for package in NEW_PACKAGES}
    paths = moves | moved
    for name in after:
        if name == SELF:
            continue
        file = REPOSITORY / name
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        new = text
        if name.endswith(".py"):
            new = rewrite_imports_from(new, modules)
        new = rewrite_text(new, modules, new_names, paths).replace(WRITTEN, PACKAGE)
        old = next((o for o, n in moved.items() if n == name), None)
        if old is not None:
            new = with_depth(new, old, name)
        if name == SHAPE_TEST:
            new = SHAPE_BLOCK.sub("\n", new)
        if new != text:
            file.write_text(new, encoding="utf-8")
    for package, face in NEW_PACKAGES.items():
        init = REPOSITORY / package / "__init__.py"
        if not init.exists():
            text = textwrap.fill(f'"""{face}"""', width=96, break_on_hyphens=False)
            init.write_text(text + "\n", encoding="utf-8")
    git("rm", "-q", SELF)
    run("ruff", "check", "--fix", "-q", ".")  # sorts the imports; drops test_shape's last one
    run("ruff", "format", "-q", ".")
    git("add", "-A")
    for check in (("ruff", "check", "."), ("ruff", "format", "--check", "."), ("mypy",)):
        done = run(*check)
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            print(
                f"relayout: `{' '.join(check)}` fails after the rewrite: the changes are staged"
                " and not committed; mend them, then `git commit`",
                file=sys.stderr,
            )
            return 1
    git(
        "commit",
        "-q",
        "-m",
        "layout (issue 25): imports, names and paths follow the moves\n\n"
        "Made by tools/relayout.py, which this commit deletes (its work is done).",
    )
    if found := leftovers(git("ls-files").split("\n"), moved):
        print("partial paths of moved files, to read (often right as they are):")
        print("\n".join(f"  {line}" for line in found))
    print(
        "done: two commits. The entry point moved: `pip install -e .` again, then the tests,"
        " and `python -m dices_cli.cli.commands.cli_docs` (it must change nothing)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
