"""`dices query NAME` and `dices sql STATEMENT` answered without Typer, for the command lines
that give nothing but the data directory and the format (`--data DIR`, `-f`/`--format
FORMAT`, each once, as separate words): Typer's import and its building of the command are
a large part of such a small answer (bench/startup.py).

The answer is Typer's path's own: the same function runs (`answers.run_query`,
`answers.answer_sql`) with the values Typer would give it, and the same functions say a
failure and end the process (`dices_cli.cli.failures`). Any other command line, or a value
Typer would check or refuse (a data directory that is not a readable one, a format it does
not name, a query that is not the packaged catalogue's or requires an option), is left to
Typer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# The options answered here, by the parameter of the command each gives a value to.
OPTIONS = {"--data": "data", "-f": "fmt", "--format": "fmt"}
COMMANDS = ("query", "sql")
COMPLETION = "_DICES_COMPLETE"  # Click's shell completion answers instead of the command


def quick_words(args: list[str]) -> tuple[str, str, dict[str, str]] | None:
    """The command, its first word (the query's name, the statement) and the options'
    values by parameter, when `args` is a command line answered here; else None."""
    if len(args) < 2 or args[0] not in COMMANDS or len(args) % 2:
        return None
    first, rest = args[1], args[2:]
    if not first or first.startswith("-"):
        return None
    given: dict[str, str] = {}
    for option, value in zip(rest[::2], rest[1::2], strict=True):
        name = OPTIONS.get(option)
        if name is None or name in given or not value or value.startswith("-"):
            return None
        given[name] = value
    return args[0], first, given


def answer(args: list[str]) -> None:
    """Answer `args` and end the process when they are a command line answered here (see
    the module); else return, leaving them to Typer."""
    words = quick_words(args)
    if words is None or os.environ.get(COMPLETION):
        return
    command, first, given = words
    values = _values(given)
    if values is None:
        return
    if command == "sql":
        from dices_cli.cli.commands.answers import answer_sql

        _answered(command, lambda: answer_sql(first, **_sql_defaults(), **values))
    from dices_cli.queries.catalog import SQL_DIR_VARIABLE, command_query

    if os.environ.get(SQL_DIR_VARIABLE):  # a catalogue of the user's: Typer checks its headers
        return
    try:
        query = command_query(first)
    except Exception:  # a catalogue that does not parse: Typer's path says so
        return
    if query is None or any(parameter.required for parameter in query.parameters):
        return
    from dices_cli.cli.commands.answers import run_query

    _answered(command, lambda: run_query(query, {}, **_query_defaults(), **values))


def _values(given: dict[str, str]) -> dict[str, Any] | None:
    """The options' values as Typer converts them (a `Path`, a `Format`), or None where it
    would check more than that or refuse one."""
    from dices_cli.output import Format

    data, fmt = given.get("data"), given.get("fmt")
    if data is not None and not (os.path.isdir(data) and os.access(data, os.R_OK)):
        return None
    if fmt is not None and fmt not in {f.value for f in Format}:
        return None
    return {
        "data": None if data is None else Path(data),
        "fmt": None if fmt is None else Format(fmt),
    }


def _query_defaults() -> dict[str, Any]:
    """The values of the options every canned query takes that are not answered here, as
    Typer gives them when not given (`canned._options_every_query_takes`)."""
    return {
        "dataset": "all",
        "exclude_removed": False,
        "raters": None,
        "min_quality": None,
        "show_sql": False,
        "keep_columns": None,
        "sort": None,
        "limit": None,
        "output": None,
        "force": False,
    }


def _sql_defaults() -> dict[str, Any]:
    """The same for `dices sql` (`dices_cli.cli.commands.sql.sql`)."""
    return {
        "schema": False,
        "dataset": "all",
        "exclude_removed": False,
        "raters": None,
        "min_quality": None,
        "table": None,
        "timeout": 60.0,
        "keep_columns": None,
        "sort": None,
        "limit": None,
        "output": None,
        "force": False,
    }


def _answered(command: str, run: Any) -> None:
    """Run `run` as Typer's path runs a command (`main.DicesGroup`), and end the process."""
    from dices_cli.cli.failures import INTERRUPTED, failed, run_and_leave
    from dices_cli.cli.render import set_quiet

    def invoked() -> None:
        set_quiet(False)
        try:
            run()
        except KeyboardInterrupt:
            raise SystemExit(INTERRUPTED) from None
        except Exception as error:
            raise SystemExit(failed(error, command)) from None
        finally:
            set_quiet(False)

    run_and_leave(invoked)
