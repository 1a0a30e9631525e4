"""Everything the CLI shows a person: tables, progress, problems and errors (Rich, stderr)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.output import (
    Format,
    Table,
    choose_format,
    open_output,
    open_stdout,
    write_table,
)

if TYPE_CHECKING:
    from rich.console import Console

    from dices_cli.ingest import Progress
    from dices_cli.problems import Problem, Report

PROBLEMS_SHOWN = 20
TABLE_DECIMALS = 3


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def say(message: str) -> None:
    """A line for the person at the terminal: on stderr, never mixed into the data."""
    print(message, file=sys.stderr)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{TABLE_DECIMALS}f}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def print_table(table: Table, title: str | None = None) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    drawn = RichTable(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    for name, numeric in zip(table.columns, table.numeric, strict=True):
        drawn.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in table.rows:
        drawn.add_row(*(_cell(v) for v in row))
    Console().print(drawn)


def emit(
    table: Table,
    fmt: Format | None,
    output: Path | None,
    title: str | None = None,
    force: bool = False,
    inputs: Sequence[Path] = (),
) -> None:
    """Send a result to stdout or -o FILE in the format asked for (or the natural one).

    -o never names one of `inputs` (files, or data directories), nor an existing file
    unless `force`; it appears whole or not at all. A failed write is a plain error.
    """
    chosen = choose_format(fmt, output, sys.stdout.isatty())
    if output is not None:
        with open_output(output, force, inputs) as handle:
            write_table(table, chosen, handle)
        return
    with open_stdout() as handle:
        if chosen is Format.TABLE:
            print_table(table, title)
        else:
            write_table(table, chosen, handle)


def describe_problem(problem: Problem) -> str:
    place = f"line {problem.line}" if problem.line is not None else "file"
    if problem.column:
        place += f", column {problem.column}"
    return f"  {place}: {problem.message} [{problem.type}]"


def report_problems(report: Report, problems: Sequence[Problem] | None = None) -> None:
    """The summary line and the first problems, for a person reading stderr."""
    shown = list(problems if problems is not None else report.problems)
    say(report.summary())
    for problem in shown[:PROBLEMS_SHOWN]:
        say(describe_problem(problem))
    if len(shown) > PROBLEMS_SHOWN:
        say(
            f"  ... and {len(shown) - PROBLEMS_SHOWN} more; "
            "`dices validate FILE --format csv` lists them all"
        )


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Progress]:
    """A progress callback: a bar on stderr when it is a terminal, silent otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield lambda _stage, _fraction: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), transient=True) as bar:
        task = bar.add_task("starting", total=1.0)

        def update(stage: str, fraction: float) -> None:
            bar.update(task, description=stage, completed=fraction)

        yield update
