"""Bar charts in the terminal (`--format chart`): one horizontal bar per row of a result.

A `Chart` (declared by a query's header, or by the command) says which column is a bar's
length, which two columns its interval, which columns label it and which split the rows into
panels. Each panel has its own scale, from the lower of 0 and its smallest value or interval
end to the higher of 0 and its largest, spread over the width the labels and numbers leave.

A bar runs from 0 to its value: solid, shaded where the interval overlaps it, then a thin
line out to the interval's other end; so the bar's tip is the value and the shaded part and
the line around the tip are the interval. Right after what is drawn comes the value, rounded
as the table for people rounds it (`tabular.cell_text`: floats with 3 decimals), and the
interval, `[low, high]`, rounded alike; a row without its interval gets, in its place, the
row's `interval_note` (why there is none, e.g. "fewer than 5 raters") where the result has
one, so no bar looks more precise than it is. A label is never cut: when the labels leave too
little room for the bars, each goes on a line of its own above its bar.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from dices_cli.cli.tabular import cell_text
from dices_cli.errors import UsageError
from dices_cli.terminal_text import printable

if TYPE_CHECKING:
    from rich.text import Text

    from dices_cli.output import Table
    from dices_cli.queries.catalog import Chart

SOLID, SHADE, LINE, LOW_END, HIGH_END = "█", "▒", "─", "├", "┤"
BAR_STYLE, INTERVAL_STYLE = "cyan", "bright_black"
MIN_TRACK = 10  # the fewest cells a bar may have beside its label before labels go above
LABEL_SHARE = 0.4  # labels beside their bars take at most this share of the width
INDENT = 2  # a bar under its label starts this far in
NO_LABEL = "all"  # a bar's label when the chart has no label columns (a whole pool)
EMPTY_LABEL = "(empty)"  # a label column without a value
NO_VALUE = "no value"
NOTE = "interval_note"  # a result's column saying why a row has no interval

Measure = Callable[[str], int]


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # None: no finite value, so no bar
    low: float | None  # the interval, None when there is none
    high: float | None
    text: str  # the value and the interval, as printed


@dataclass(frozen=True)
class Panel:
    title: str  # the panel columns' names and values; empty without panel columns
    bars: list[Bar]


def _number(value: Any) -> float | None:
    """A cell as a finite number, or None (missing, NaN, not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def panels(table: Table, chart: Chart) -> list[Panel]:
    """The bars of `table`'s rows, in their order, grouped by `chart`'s panel columns (in
    the order each panel first appears)."""
    missing = [name for name in chart.names if name not in table.columns]
    if missing:
        raise UsageError(
            f"--format chart needs the column {missing[0]}; keep it in --columns or leave "
            "--columns out"
        )
    found: dict[str, list[Bar]] = {}
    for record in table.records():
        title = ", ".join(f"{name} {cell_text(record[name])}" for name in chart.panels)
        found.setdefault(title, []).append(_bar(record, chart))
    return [Panel(title, bars) for title, bars in found.items()]


def _bar(record: dict[str, Any], chart: Chart) -> Bar:
    """One row's bar: its label, its value and its interval, with the text printed beside."""
    label = " · ".join(cell_text(record[name]) or EMPTY_LABEL for name in chart.labels)
    value = record[chart.value]
    text = NO_VALUE if value is None else cell_text(value)
    low, high, said = _interval(record, chart)
    return Bar(label or NO_LABEL, _number(value), low, high, text + said)


def _interval(record: dict[str, Any], chart: Chart) -> tuple[float | None, float | None, str]:
    """The row's interval, and what is printed of it after the value: its ends, or, when it
    lacks one (an interval without both ends is not drawn), the row's note saying why."""
    if chart.low is None or chart.high is None:
        return None, None, ""
    low, high = _number(record[chart.low]), _number(record[chart.high])
    if low is not None and high is not None:
        return low, high, f" [{cell_text(record[chart.low])}, {cell_text(record[chart.high])}]"
    note = cell_text(record.get(NOTE))
    return None, None, f" ({note})" if note else ""


def _scale(bars: list[Bar]) -> tuple[float, float]:
    """The panel's axis: from the lower of 0 and its smallest number to the higher of 0 and
    its largest (0 to 1 when every number is 0)."""
    numbers = [n for bar in bars for n in (bar.value, bar.low, bar.high) if n is not None]
    low, high = min([0.0, *numbers]), max([0.0, *numbers])
    return (low, high) if high > low else (low, low + 1.0)


def _cells(bar: Bar, axis: tuple[float, float], track: int) -> list[tuple[str, str]]:
    """The bar drawn on `track` cells: (character, style) each, trailing blanks left out."""
    low, high = axis

    def cell(x: float) -> int:
        return round((x - low) / (high - low) * track)

    drawn = [(" ", "")] * track
    if bar.value is not None:
        zero, tip = cell(0.0), cell(bar.value)
        for i in range(min(zero, tip), max(zero, tip)):
            drawn[i] = (SOLID, BAR_STYLE)
    if bar.low is not None and bar.high is not None:
        _draw_interval(drawn, cell(bar.low), max(cell(bar.high), cell(bar.low) + 1))
    while drawn and drawn[-1][0] == " ":
        drawn.pop()
    return drawn


def _draw_interval(drawn: list[tuple[str, str]], start: int, end: int) -> None:
    """The interval over cells `start` to `end` (exclusive): shaded over the bar, a line
    with its ends marked beyond it."""
    for i in range(start, min(end, len(drawn))):
        if drawn[i][0] == SOLID:
            drawn[i] = (SHADE, BAR_STYLE)
        else:
            mark = LOW_END if i == start else HIGH_END if i == end - 1 else LINE
            drawn[i] = (mark, INTERVAL_STYLE)


def panel_lines(panel: Panel, width: int, measure: Measure = len) -> list[Text]:
    """The panel's bars in lines of at most `width` cells (wider only when even a bar of one
    cell and its numbers do not fit)."""
    from rich.text import Text

    label_width = max(measure(bar.label) for bar in panel.bars)
    text_width = max(measure(bar.text) for bar in panel.bars)
    beside = (
        label_width <= width * LABEL_SHARE and width - label_width - text_width - 2 >= MIN_TRACK
    )
    indent = label_width + 1 if beside else INDENT
    track = max(width - indent - 1 - text_width, 1)
    axis = _scale(panel.bars)
    lines = []
    for bar in panel.bars:
        line = Text(bar.label + " " * (indent - measure(bar.label)) if beside else " " * indent)
        if not beside:  # printed with wrapping: a label longer than the width is not cut
            lines.append(Text(bar.label, style="bold"))
        cells = _cells(bar, axis, track)
        for character, style in cells:
            line.append(character, style)
        line.append(f" {bar.text}" if cells else bar.text)
        lines.append(line)
    return lines


def print_chart(
    table: Table, chart: Chart, title: str | None = None, width: int | None = None
) -> None:
    """`table` as `chart`'s bars on stdout, fitted to `width` (the console's by default)."""
    from rich.cells import cell_len
    from rich.console import Console

    drawn = panels(table, chart)  # a missing column is an error before anything is printed
    console = Console(width=width, highlight=False)
    interval = f" [{chart.low}, {chart.high}]" if chart.low and chart.high else ""
    heading = f"{chart.value}{interval}"
    heading = f"{title}: {heading}" if title else heading
    console.print(printable(heading), style="table.title", markup=False)
    for panel in drawn:
        console.print()
        if panel.title:
            console.print(panel.title, style="bold", markup=False)
        for line in panel_lines(panel, console.width, cell_len):
            console.print(line)
