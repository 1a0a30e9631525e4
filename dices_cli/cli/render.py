"""Everything the CLI shows a person: tables, progress, problems and errors (Rich, stderr)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

# dices_cli.output is imported where a result is written (`emit`, `show`): `dices --help`
# says and sets quiet without it (its import is part of the start, bench/startup.py).
if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    from rich.console import Console
    from rich.text import Text

    from dices_cli.cli.focus import Focus
    from dices_cli.cli.tabular import Layout
    from dices_cli.formats.validate import Progress
    from dices_cli.output import Format, Output, Result, Table
    from dices_cli.problems import Problem, Report
    from dices_cli.queries.catalog import Chart

PROBLEMS_SHOWN = 20
TABLE_ROWS = 1_000  # rows of a streamed result drawn as a table; the rest is not read


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


class _Quiet:
    """Whether notes and progress are left out (-q); errors are shown all the same."""

    on = False


def set_quiet(on: bool) -> None:
    _Quiet.on = on


def is_quiet() -> bool:
    return _Quiet.on


def say(message: str) -> None:
    """A line for the person at the terminal: on stderr, never mixed into the data. Its
    lines are shown `printable`: a value from the data cannot send the terminal a control
    sequence."""
    from dices_cli.terminal_text import printable

    if not _Quiet.on:
        print("\n".join(map(printable, message.split("\n"))), file=sys.stderr)


def print_table(
    table: Table, title: str | None = None, width: int | None = None, focus: Focus | None = None
) -> None:
    """`table` for a person, on stdout, fitted to `width` (the console's width by default),
    keeping the key columns and the answer columns of `focus` (`dices_cli.cli.tabular`).

    Numbers, ids and enum-like values are never wrapped or cut; long texts are cut with an
    ellipsis, or wrapped when they answer. What is left out (empty columns, columns with no
    room) is said on stderr, each column left out for want of room with the --columns that
    shows it.
    """
    from rich.cells import cell_len
    from rich.console import Console

    from dices_cli.cli.focus import Focus
    from dices_cli.cli.tabular import layout
    from dices_cli.terminal_text import printable

    console = Console(width=width)
    fitted = layout(table, console.width, cell_len, focus or Focus())
    if title:
        console.print(printable(title), style="table.title", markup=False, highlight=False)
    if fitted.blocks:
        _print_blocks(console, fitted)
    else:
        _print_grid(console, fitted)
    sys.stdout.flush()  # the table before the notes, when both go to one place
    for line in left_out_note(fitted, console.width):
        say(line)


def left_out_note(fitted: Layout, width: int) -> list[str]:
    """What a table leaves out, in two lines at most: the columns without room (as many of
    their names as fit `width`) and how to see them, or the count of empty columns."""
    from rich.cells import cell_len

    if not fitted.hidden:
        empty_only = f"... {_count(len(fitted.empty), 'empty column')} not shown"
        return [empty_only] if fitted.empty else []
    empty = f" ({len(fitted.empty)} empty)" if fitted.empty else ""
    head = f"... no room for {_count(len(fitted.hidden), 'more column')}{empty} "
    head += "(--format csv shows all): "
    names = list(fitted.hidden)
    for shown in range(len(names), 0, -1):
        more = len(names) - shown
        listed = ", ".join(names[:shown]) + (f" and {more} more" if more else "")
        if cell_len(head + listed) <= width or shown == 1:
            break
    example = ",".join([*fitted.keys, names[0]])
    return [head + listed, f"  to see one: --columns {example}"]


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _print_grid(console: Console, fitted: Layout) -> None:
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table as RichTable
    from rich.text import Text

    from dices_cli.cli.tabular import GAP

    # One space of padding after each column and one of box between: GAP columns apart.
    drawn = RichTable(
        box=box.SIMPLE_HEAD,
        header_style="bold",
        show_edge=False,
        padding=(0, GAP - 1, 0, 0),
        pad_edge=False,
    )
    # Every header as tall as the tallest, its name at the bottom; the cells at the top, so a
    # wrapped answer reads from its row's first line.
    headers = [column.header(cell_len) for column in fitted.columns]
    height = max((len(lines) for lines in headers), default=1)
    for column, lines in zip(fitted.columns, headers, strict=True):
        drawn.add_column(
            Text("\n".join([""] * (height - len(lines)) + lines)),
            justify="right" if column.numeric else "left",
            vertical="top",
            width=column.width,
            no_wrap=not column.wraps,
            # Whole cells fit their width; a wrapped one folds only a word wider than it.
            overflow="fold" if column.whole or column.wraps else "ellipsis",
        )
    for i in range(fitted.rows):
        drawn.add_row(*(_text(console, c.cells[i]) for c in fitted.columns))
    console.print(drawn)


def _print_blocks(console: Console, fitted: Layout) -> None:
    """One record per block, `name  value` lines, for results too wide for a grid: each line
    fits the console's width (`dices_cli.cli.render_blocks`: texts wrapped, never a number)."""
    from rich.cells import cell_len
    from rich.text import Text

    from dices_cli.cli.render_blocks import block_lines, name_width
    from dices_cli.cli.tabular import GAP

    label = name_width(fitted.columns, console.width, cell_len) + GAP
    for index, block in enumerate(block_lines(fitted, console.width, cell_len)):
        if index:
            console.print()
        for name, value in block:
            line = Text(name + " " * (label - cell_len(name)) if value else name, style="bold")
            line.append_text(_text(console, value))
            console.print(line, soft_wrap=True)  # fitted already: Rich must not wrap it again


def _text(console: Console, cell: str) -> Text:
    """A cell as Rich shows it: highlighted like any value, but never read as markup."""
    return console.render_str(cell, markup=False, emoji=False)


def emit(
    result: Result,
    fmt: Format | None,
    output: Path | None,
    title: str | None = None,
    force: bool = False,
    inputs: Sequence[Path] = (),
    chart: Chart | None = None,
    focus: Focus | None = None,
) -> None:
    """Send a result to stdout or -o FILE in the format asked for (or the natural one);
    `chart`: how the result is drawn as bars, when it can be (`dices_cli.cli.bars`); `focus`:
    the columns a table always shows (`print_table`).

    -o never names one of `inputs` (files, or data directories), nor an existing file
    unless `force`; it appears whole or not at all. A failed write is a plain error.
    """
    from dices_cli.output import Output

    written = Output.build(fmt, output, force, inputs, chart=chart is not None)
    show(result, written, title, chart, focus)


def show(
    result: Result | pa.Table | duckdb.DuckDBPyRelation,
    output: Output,
    title: str | None = None,
    chart: Chart | None = None,
    focus: Focus | None = None,
) -> None:
    """`result` written to `output`, or drawn as a table (that always shows the columns of
    `focus`) or as `chart`'s bars when that is its format: a stream that is not `bounded`
    shows its first TABLE_ROWS rows in a table (the rest is not read), and all of them in a
    chart."""
    from dices_cli.output import Format, Stream, as_result, collect, open_stdout

    if output.format not in (Format.TABLE, Format.CHART):
        output.write(result)
        return
    shown = as_result(result)
    with open_stdout():
        if output.format is Format.CHART:
            from dices_cli.cli.bars import print_chart

            if chart is None:
                raise ValueError("a chart format without a chart")
            table = collect(shown)
            print_chart(table, chart, title)
            sys.stdout.flush()
            if not table.rows:
                say("... no rows to draw")
        elif isinstance(shown, Stream):
            limit = None if shown.bounded else TABLE_ROWS
            shown, more = shown.head(limit)
            print_table(shown, title, focus=focus)
            if more:
                say(f"... only the first {TABLE_ROWS:,} rows shown: use --format csv to see all")
        else:
            print_table(shown, title, focus=focus)


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
        from dices_cli.problems import PredictionProblemType

        # `dices validate` reads dataset files: a predictions file's problems are not its.
        predictions = any(isinstance(p.type, PredictionProblemType) for p in shown)
        how = "" if predictions else "; `dices validate FILE --format csv` lists them all"
        say(f"  ... and {len(shown) - PROBLEMS_SHOWN} more{how}")


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Progress]:
    """A progress callback: a bar on stderr when it is a terminal, silent otherwise."""
    if not enabled or _Quiet.on or not sys.stderr.isatty():
        yield lambda _stage, _fraction: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from dices_cli.terminal_text import printable

    # A stage names a file: shown escaped (`printable`) and never read as Rich markup.
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), transient=True) as bar:
        task = bar.add_task("starting", total=1.0)

        def update(stage: str, fraction: float) -> None:
            bar.update(task, description=printable(stage), completed=fraction)

        yield update
