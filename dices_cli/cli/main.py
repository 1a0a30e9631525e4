"""The `dices` command line: parses arguments, calls the core, renders the result.

Heavy libraries (Polars, DuckDB) are imported inside the commands that need them, so
`dices --help` starts fast.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from typing import Annotated, Any, Literal, NoReturn

import typer
from typer.core import TyperCommand

from dices_cli import __version__
from dices_cli.cli.commands.listing import ListingGroup, unwrapped
from dices_cli.cli.commands.quiet import quiet_option
from dices_cli.cli.commands.wording import worded
from dices_cli.errors import DicesError, InvalidInputError, UsageError

# DuckDB (2.0) reports Ctrl-C during a statement as RuntimeError("Query interrupted"), not as
# KeyboardInterrupt (`dices sql` said "unexpected RuntimeError ... a bug in dices", exit 1).
DUCKDB_INTERRUPTED = "Query interrupted"
STDOUT_FAILURES = (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT)
RICH_MARKUP_MODE: Literal["rich"] = "rich"

# Every command, in the order `dices --help` lists them: its name, the module of
# dices_cli.cli.commands whose `register(app)` makes it, and the one-line help `dices --help`
# shows (the first paragraph of the command's own help; a test keeps them equal).
# A command's module is imported, and Typer builds its options, only when the command runs
# or shows its own help (`DicesGroup.get_command`), never to list it: `dices sql` no longer
# imports the other six modules nor builds their commands (a large share of the time before
# the first bytes of `dices sql ... | head -c 100`; bench/startup.py). `dices sql` and
# `dices query` have a module each: when one module made both, Typer built both for either.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("data", "Validate DICES CSV files and store them as typed Parquet."),
    "validate": (
        "data",
        "Check DICES CSV files without ingesting them; list every problem found.",
    ),
    "info": (
        "data",
        "Show what is ingested: per dataset, conversations, raters, ratings, source and checksum.",
    ),
    "describe": ("describe", "Write a draft declaration (TOML) for files dices does not know yet."),
    "export": (
        "data",
        "Write an ingested dataset back as the original wide CSV, or in a layout other tools read.",
    ),
    "demo": (
        "data",
        "Ingest the small sample that ships with dices and show a short tour. Works offline.",
    ),
    "download": (
        "download",
        "Fetch the official files, verify their size and SHA-256, print their paths.",
    ),
    "verify": (
        "verify",
        "Check that every stored file is intact: its size and SHA-256 as recorded at ingest.",
    ),
    "sql": ("sql", "Run your own read-only SQL over the ingested data."),
    "filter-raters": (
        "raters",
        "Score every rater's quality, keep the good ones, and audit what the filter changes.",
    ),
    "evaluate": (
        "evaluate",
        "Score a model's predictions against the experts and the raters of DICES, or against "
        "ProsocialDialog's published labels and annotations.",
    ),
    "judge": (
        "judge",
        "Run an LLM judge or a safety classifier over DICES or ProsocialDialog: cached, "
        "resumable, polarity declared, straight into evaluate.",
    ),
    "report": (
        "report",
        "Write one HTML report: charts of the canned queries, with the numbers behind each.",
    ),
    "query": ("canned", "Run a canned query: the field's standard questions, as documented SQL."),
}


class ListedCommand(TyperCommand):
    """A command not loaded yet, as the list of commands shows it: its name and one-line help."""


class DicesGroup(ListingGroup):
    """Turns core exceptions into `Error: ...` and an exit code, and a closed pipe into exit 0.

    Every command, and dices itself, takes -q/--quiet. The commands are listed from
    `COMMANDS` and loaded one module at a time, when one of them is wanted.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(quiet_option())
        for name, (_module, one_line) in COMMANDS.items():
            self.commands.setdefault(name, ListedCommand(name, help=one_line))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, ListedCommand) and not self.listing:
            self._load(COMMANDS[cmd_name][0])
            command = self.commands[cmd_name]
        return command

    def _load(self, module_name: str) -> None:
        """Make the commands of dices_cli.cli.commands.`module_name` as Typer makes them for an app
        they are registered with, each with -q/--quiet."""
        import typer.main

        module = importlib.import_module(f"dices_cli.cli.commands.{module_name}")
        registry = typer.Typer(rich_markup_mode=RICH_MARKUP_MODE)
        module.register(registry)
        for name, command in typer.main.get_group(registry).commands.items():
            command.params.append(quiet_option())
            command.help = unwrapped(command.help)
            self.commands[name] = command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from dices_cli.cli.render import set_quiet

        set_quiet(False)  # each run starts talking (tests run many in one process)
        try:
            return super().main(*args, **kwargs)
        finally:
            set_quiet(False)  # and ends so: what the process draws next (a test's) is not -q

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except DicesError as error:
            _refused(error, ctx.invoked_subcommand)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise  # Typer's own exits and usage errors (exit 2) stay as they are
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, and stop Python complaining
            # about the unflushable stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except OSError as error:
            _stdout_failed(error)
        except MemoryError:
            _not_enough_memory()
        except Exception as error:
            _unexpected(error)


def _refused(error: DicesError, subcommand: str | None) -> NoReturn:
    """Our own error, said on stderr; a usage error with where to find help, bad input with
    its problems."""
    from dices_cli.cli.render import report_problems, say, set_quiet

    set_quiet(False)
    say(f"Error: {worded(error)}")
    if isinstance(error, UsageError):
        say(f"Try '{' '.join(filter(None, ['dices', subcommand]))} -h' for help.")
    if isinstance(error, InvalidInputError):
        report_problems(error.report, error.report.errors)
    raise typer.Exit(error.exit_code) from None


def _stdout_failed(error: OSError) -> NoReturn:
    """Help and usage text that Click writes itself could not be written: every other write
    of ours reports its own failure, naming the file."""
    if error.errno not in STDOUT_FAILURES:
        raise error
    from dices_cli.cli.render import say
    from dices_cli.errors import system_reason

    say(f"Error: cannot write to standard output: {system_reason(error)}")
    raise typer.Exit(1) from None


def _unexpected(error: Exception) -> NoReturn:
    """An error dices did not foresee: a bug, said as one (the traceback with DICES_DEBUG)."""
    if isinstance(error, RuntimeError) and str(error) == DUCKDB_INTERRUPTED:
        raise typer.Exit(130) from None  # Ctrl-C, as Typer answers KeyboardInterrupt
    duckdb = sys.modules.get("duckdb")  # loaded, if it raised
    if duckdb is not None and isinstance(error, duckdb.OutOfMemoryException):
        # DuckDB's own MemoryError (`sql --table` of a 20 MiB value under a 2 GiB
        # address-space cap said "a bug in dices").
        _not_enough_memory()
    if os.environ.get("DICES_DEBUG"):
        raise error
    from dices_cli.cli.render import say, set_quiet

    set_quiet(False)
    say(f"Error: unexpected {type(error).__name__}: {error}")
    say("This is a bug in dices; rerun with DICES_DEBUG=1 for the traceback and report it.")
    raise typer.Exit(1) from None


def _not_enough_memory() -> NoReturn:
    from dices_cli.cli.render import say, set_quiet

    set_quiet(False)
    say("Error: not enough memory to finish; nothing was written")
    raise typer.Exit(1) from None


app = typer.Typer(
    cls=DicesGroup,
    name="dices",
    help=(
        "Validated Parquet and canned queries for the DICES crowd safety ratings.\n\n"
        "Start with `dices demo`, then `dices ingest FILE` and `dices query --list`."
    ),
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=RICH_MARKUP_MODE,
)


def _show_version(value: bool) -> None:
    if value:
        print(f"dices {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_show_version, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Validated Parquet and canned queries for the DICES crowd safety ratings."""


def run() -> None:
    """The console script: run the command, then leave without the interpreter's teardown.

    Freeing Polars' and DuckDB's memory and unloading their modules is a visible part of a
    short command (bench/startup.py). Every file a command writes is closed (and synced)
    before it returns, so only our own output is left to flush.
    """
    # Arrow's default memory pool (mimalloc) reserves a large block of address space at its
    # first allocation: under `ulimit -v` (clusters set one), a command could abort on a
    # small input. The system allocator reserves none and is as fast, in less memory
    # (bench/output.py, bench/prosocial.py). Set before Arrow is loaded; a user's choice stays.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    try:
        app()
        code = 0
    except SystemExit as done:  # Click always exits with an int status, or None for 0
        code = done.code if isinstance(done.code, int) else 0
    except BrokenPipeError:  # help or usage text to a reader that went away
        code = 0
    except OSError as error:  # help or usage text to a full disk, written before our handler
        from dices_cli.errors import system_reason

        print(f"Error: cannot write to standard output: {system_reason(error)}", file=sys.stderr)
        code = 1
    # A reader that went away (`| head`) may have left stdout broken or closed.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
