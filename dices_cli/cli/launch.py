"""The console script `dices`: answers `dices --help` from its stored drawing, the simplest
`dices query NAME` and `dices sql STATEMENT` without Typer (`dices_cli.cli.quick`), and hands
everything else to `dices_cli.cli.main.run`.

Typer, Click and Rich take many times the interpreter's own start to import and draw the
list of commands (bench/startup.py). The drawing Typer makes 80 columns wide (in a pipe, and
with colours on a terminal) is stored in dices_cli/data by
`python -m dices_cli.cli.commands.cli_docs`, and a test fails when it differs from Typer's
own. It is printed only where Typer would draw exactly it: anything that changes the width,
the colours or the box characters leaves the drawing to Typer.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import NoReturn

from dices_cli import __version__

# Python collects the youngest generation of cyclic garbage every 700 new container objects.
# Start-up makes tens of thousands (imports, Typer's commands, DuckDB's Python layer), nearly
# all freed by reference counting, so a small answer's collections find almost nothing.
# Every 50,000, a small answer runs none (bench/startup.py times it). A long command
# still collects, less often. The library (`import dices_cli`)
# leaves the collector to its user.
GC_YOUNGEST_THRESHOLD = 50_000
HELP_ARGUMENTS = (["--help"], ["-h"])
VERSION_ARGUMENTS = (["--version"], ["-V"])  # answered here: as fast as the stored help
HELP_WIDTH = 80  # columns: what Typer draws in a pipe
DATA = Path(__file__).resolve().parents[1] / "data"
PLAIN_HELP = DATA / "help.txt"  # without colours: a pipe or a file
TERMINAL_HELP = DATA / "help-terminal.txt"  # with a terminal's colours
# Settings that change Typer's or Rich's drawing: its width, colours, boxes or Rich itself;
# and Click's completion mode, which answers instead of the command line.
DRAWING_SETTINGS = (
    "COLUMNS",
    "JUPYTER_COLUMNS",
    "TERMINAL_WIDTH",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "DATABRICKS_RUNTIME_VERSION",
    "TYPER_USE_RICH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "_DICES_COMPLETE",
)


def stored_help(arguments: list[str]) -> Path | None:
    """The file holding what `dices ARGUMENTS` would print, when it is a stored drawing of
    the top-level help; None when Typer must draw it (or it is not help at all)."""
    if arguments not in HELP_ARGUMENTS or any(os.environ.get(n) for n in DRAWING_SETTINGS):
        return None
    if (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        return None  # Rich would draw the boxes in ASCII
    if not sys.stdout.isatty():
        return PLAIN_HELP
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None  # no colours there
    try:
        width = os.get_terminal_size(sys.stdout.fileno()).columns
    except OSError:
        return None
    return TERMINAL_HELP if width == HELP_WIDTH else None


def run() -> None:
    """The console script (see the module)."""
    gc.set_threshold(GC_YOUNGEST_THRESHOLD, *gc.get_threshold()[1:])
    if sys.argv[1:] in VERSION_ARGUMENTS:
        _write(f"dices {__version__}\n".encode())
    drawing = stored_help(sys.argv[1:])
    if drawing is None:
        from dices_cli.cli.quick import answer

        answer(sys.argv[1:])  # ends the process when it answers without Typer
        from dices_cli.cli.main import run as run_dices

        run_dices()
        return
    _write(drawing.read_bytes())


def _write(text: bytes) -> NoReturn:
    """`text` to stdout, then leave as dices_cli.cli.main.run does."""
    code = 0
    try:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that went away (`| head`), as for any help
        pass
    except OSError as error:
        from dices_cli.errors import system_reason

        print(f"Error: cannot write to standard output: {system_reason(error)}", file=sys.stderr)
        code = 1
    os._exit(code)  # as dices_cli.cli.main.run: nothing of the interpreter's teardown is needed
