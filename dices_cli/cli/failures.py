"""How the command line ends: an error said as dices says it, and its exit status; then the
process left without the interpreter's teardown. No Typer here: `dices_cli.cli.main` (Typer's
path) and `dices_cli.cli.quick` (a small answer's, without it) end alike through these."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from dices_cli.cli.commands.wording import worded
from dices_cli.errors import DicesError, InvalidInputError, UsageError

# DuckDB (2.0) reports Ctrl-C during a statement as RuntimeError("Query interrupted"), not as
# KeyboardInterrupt (`dices sql` said "unexpected RuntimeError ... a bug in dices", exit 1).
DUCKDB_INTERRUPTED = "Query interrupted"
STDOUT_FAILURES = (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT)
INTERRUPTED = 130  # Ctrl-C, as Typer answers KeyboardInterrupt


def failed(error: Exception, subcommand: str | None) -> int:
    """The exit status of a command that raised `error` (not Typer's own), said on stderr;
    `error` is raised again where dices has nothing to say of it."""
    if isinstance(error, DicesError):
        return _refused(error, subcommand)
    if isinstance(error, BrokenPipeError):
        # The reader went away (`| head`): stop quietly, and stop Python complaining about
        # the unflushable stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if isinstance(error, OSError):
        return _stdout_failed(error)
    if isinstance(error, MemoryError):
        return _not_enough_memory()
    return _unexpected(error)


def _refused(error: DicesError, subcommand: str | None) -> int:
    """Our own error, said on stderr; a usage error with where to find help, bad input with
    its problems."""
    from dices_cli.cli.render import report_problems, say, set_quiet

    set_quiet(False)
    say(f"Error: {worded(error)}")
    if isinstance(error, UsageError):
        say(f"Try '{' '.join(filter(None, ['dices', subcommand]))} -h' for help.")
    if isinstance(error, InvalidInputError):
        report_problems(error.report, error.report.errors)
    return error.exit_code


def _stdout_failed(error: OSError) -> int:
    """Help and usage text that Click writes itself could not be written: every other write
    of ours reports its own failure, naming the file."""
    if error.errno not in STDOUT_FAILURES:
        raise error
    from dices_cli.cli.render import say
    from dices_cli.errors import system_reason

    say(f"Error: cannot write to standard output: {system_reason(error)}")
    return 1


def _unexpected(error: Exception) -> int:
    """An error dices did not foresee: a bug, said as one (the traceback with DICES_DEBUG)."""
    if isinstance(error, RuntimeError) and str(error) == DUCKDB_INTERRUPTED:
        return INTERRUPTED
    duckdb = sys.modules.get("duckdb")  # loaded, if it raised
    if duckdb is not None and isinstance(error, duckdb.OutOfMemoryException):
        # DuckDB's own MemoryError (`sql --table` of a 20 MiB value under a 2 GiB
        # address-space cap said "a bug in dices").
        return _not_enough_memory()
    if os.environ.get("DICES_DEBUG"):
        raise error
    from dices_cli.cli.render import say, set_quiet

    set_quiet(False)
    say(f"Error: unexpected {type(error).__name__}: {error}")
    say("This is a bug in dices; rerun with DICES_DEBUG=1 for the traceback and report it.")
    return 1


def _not_enough_memory() -> int:
    from dices_cli.cli.render import say, set_quiet

    set_quiet(False)
    say("Error: not enough memory to finish; nothing was written")
    return 1


def run_and_leave(command: Callable[[], None]) -> NoReturn:
    """The console script: run `command`, then leave without the interpreter's teardown.

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
        command()
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
