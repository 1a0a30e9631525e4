"""The `dices` command line: parses arguments, calls the core, renders the result.

Heavy libraries (Polars, DuckDB) are imported inside the commands that need them, so
`dices --help` starts fast.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from dices_cli import __version__
from dices_cli.commands import data, download, evaluate, query, raters, report, verify
from dices_cli.commands.options import quiet_option
from dices_cli.commands.wording import worded
from dices_cli.errors import DicesError, InvalidInputError, UsageError

STDOUT_FAILURES = (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT)


class DicesGroup(TyperGroup):
    """Turns core exceptions into `Error: ...` and an exit code, and a closed pipe into exit 0.

    Every command, and dices itself, takes -q/--quiet.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in [self, *self.commands.values()]:
            command.params.append(quiet_option())

    def main(self, *args: Any, **kwargs: Any) -> Any:
        from dices_cli.render import set_quiet

        set_quiet(False)  # each run starts talking (tests run many in one process)
        return super().main(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as error:
            from dices_cli.render import say, set_quiet

            set_quiet(False)
            command = " ".join(filter(None, ["dices", ctx.invoked_subcommand]))
            say(f"Error: {worded(error)}")
            say(f"Try '{command} -h' for help.")
            raise typer.Exit(error.exit_code) from None
        except DicesError as error:
            from dices_cli.render import report_problems, say, set_quiet

            set_quiet(False)
            say(f"Error: {worded(error)}")
            if isinstance(error, InvalidInputError):
                report_problems(error.report, error.report.errors)
            raise typer.Exit(error.exit_code) from None
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise  # Typer's own exits and usage errors (exit 2) stay as they are
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, and stop Python complaining
            # about the unflushable stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except OSError as error:
            if error.errno not in STDOUT_FAILURES:
                raise
            # Help and usage text that Click writes itself: every other write of ours
            # reports its own failure, naming the file.
            from dices_cli.errors import system_reason
            from dices_cli.render import say

            say(f"Error: cannot write to standard output: {system_reason(error)}")
            raise typer.Exit(1) from None
        except MemoryError:
            from dices_cli.render import say, set_quiet

            set_quiet(False)
            say("Error: not enough memory to finish; nothing was written")
            raise typer.Exit(1) from None
        except Exception as error:
            if os.environ.get("DICES_DEBUG"):
                raise
            from dices_cli.render import say, set_quiet

            set_quiet(False)
            say(f"Error: unexpected {type(error).__name__}: {error}")
            say("This is a bug in dices; rerun with DICES_DEBUG=1 for the traceback and report it.")
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
    rich_markup_mode="rich",
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


data.register(app)
download.register(app)
verify.register(app)
query.register(app)
raters.register(app)
evaluate.register(app)
report.register(app)


def run() -> None:
    """The console script: run the command, then leave without the interpreter's teardown.

    Freeing Polars' and DuckDB's memory and unloading their modules takes 0.04 s, a tenth
    of an ingest. Every file a command writes is closed (and synced) before it returns,
    so only our own output is left to flush.
    """
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
