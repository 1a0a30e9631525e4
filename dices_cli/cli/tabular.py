"""How a result fits a terminal: which columns the table for people shows, how wide each is.

Only the layout lives here; `dices_cli.cli.render` draws it with Rich. Widths are measured with
the function the caller passes, so wide characters count as the terminal shows them.

The rules: a number, an id, a date or a short enum-like value is never wrapped or cut; a
column with no value in any row is left out; the columns a table must show are never left out
and never cut: the key columns (the ones that say which row this is), the answer columns (the
ones the command declares as its answer) and the ones a person named (--columns, --sort). A
long text among them wraps over lines at its words; any other long text is cut to one line
with an ellipsis. The other columns are added in order while they fit. When even the columns
a table must show (or, with no answer declared, the keys and one value column) do not fit
side by side, with their long texts wrapped as narrow as their words allow, the result is laid
out one record per block instead. A column name takes at most two lines, broken only after _,
- or a space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import TYPE_CHECKING

from dices_cli.cli.focus import Focus
from dices_cli.output import text_cell
from dices_cli.terminal_text import printable

if TYPE_CHECKING:
    from dices_cli.output import Table

TABLE_DECIMALS = 3
GAP = 2  # the space between two columns as render.py draws them
TEXT_WIDTH = 40  # the widest a column of long texts grows
TEXT_MIN_WIDTH = 12  # the narrowest it shrinks to when space is short
KEY_WIDTH = 20  # a wrapped key is this wide before other columns are given room
WHOLE_TEXT = 25  # a text this short is a label (an enum value, a date): never cut

Measure = Callable[[str], int]
NAME_BREAK = re.compile(r"(?<=[_\- ])")  # a column name breaks after _, - or a space
_LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def cell_text(value: object) -> str:
    """A value as the table for people shows it: floats rounded, lists as JSON, one line
    without blanks around it (so a cell of spaces is an empty one), any other control
    character shown escaped (`printable`)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{TABLE_DECIMALS}f}"
    if isinstance(value, list | tuple | dict):  # as JSON, the way CSV writes it
        return printable(text_cell(value))
    if isinstance(value, bytes):  # a BLOB, as DuckDB writes it: `\xAA` for a byte
        from dices_cli.output import blob_text

        return blob_text(value)
    return printable(str(value).translate(_LINE_BREAKS).strip())


@dataclass(eq=False)  # two columns may share a name: each is itself
class Column:
    name: str
    cells: list[str]
    numeric: bool  # drawn right-aligned
    whole: bool  # never cut, never wrapped: a number, an id, a date, a label or a code
    key: bool  # says which row this is: always shown
    answer: bool  # answers the command's question, or was named: always shown
    longest: int  # the widest cell
    width: int = 0  # as drawn: the least it needs at first, then grown
    named: bool = False  # named by the person (--columns, --sort): shown even where empty

    @property
    def wraps(self) -> bool:
        """A long text that must be shown: wrapped over lines at its words, never cut."""
        return (self.key or self.answer) and not self.whole

    def header(self, measure: Measure) -> list[str]:
        """The column name in lines of at most `width`, broken only after _, - or a space
        (`width` is never less than `header_width`: two lines at most)."""
        lines = [""]
        for part in NAME_BREAK.split(self.name):
            if lines[-1] and measure(lines[-1] + part.rstrip()) > self.width:
                lines.append("")
            lines[-1] += part
        return [line.rstrip() for line in lines]


@dataclass(frozen=True)
class Layout:
    columns: list[Column]  # the ones shown, in the result's order, with their widths
    rows: int
    hidden: list[str]  # left out for want of room
    keys: list[str]  # the key columns, which say which row is which
    empty: list[str]  # left out because no row has a value in them
    blocks: bool  # one record per block (name: value lines) rather than a grid


def layout(table: Table, width: int, measure: Measure = len, focus: Focus = Focus()) -> Layout:
    """Which columns of `table` a `width`-wide table shows, and how wide each is drawn."""
    columns = _columns(table, measure, focus)
    shown = _shown(columns, focus)
    empty = _names(c for c in columns if c not in shown)
    keys = _names(c for c in shown if c.key)
    chosen = _chosen(shown, width, measure)
    if chosen is None:
        return Layout(shown, len(table.rows), [], keys, empty, blocks=True)
    drawn = [c for c in shown if c in chosen]  # back in the result's order
    _grow(drawn, width - _total(drawn), measure)
    hidden = _names(c for c in shown if c not in chosen)
    return Layout(drawn, len(table.rows), hidden, keys, empty, blocks=False)


def _chosen(shown: list[Column], width: int, measure: Measure) -> list[Column] | None:
    """The columns a `width`-wide grid shows, each given its first width: the ones it must
    show, their wrapped texts narrowed as needed, then the others in order while they fit.
    None when the ones it must show do not fit side by side."""
    for column in shown:
        column.width = _first_width(column, measure)
    chosen = _must_show(shown)
    _narrow([c for c in chosen if c.wraps], _total(chosen) - width, measure)
    if _total(chosen) > width:
        return None
    for column in shown:
        if column not in chosen and _total([*chosen, column]) <= width:
            chosen.append(column)
    return chosen


def _names(columns: Iterable[Column]) -> list[str]:
    return [column.name for column in columns]


def _shown(columns: list[Column], focus: Focus) -> list[Column]:
    """The columns with a value in some row, or named with --columns or --sort (shown even
    when empty); all of them when no row has a value (no rows, say): the names alone show
    the result's shape."""
    return [c for c in columns if any(c.cells) or c.name in focus.named] or columns


def _must_show(shown: list[Column]) -> list[Column]:
    """The columns a table must show: the keys and the answers (with no answer declared,
    the keys and the first other column)."""
    keys = [c for c in shown if c.key]
    answers = [c for c in shown if c.answer and not c.key]
    others = [c for c in shown if not c.key and not c.answer]
    return [*keys, *(answers or others[:1])]


def _columns(table: Table, measure: Measure, focus: Focus) -> list[Column]:
    leading = _leading(table)
    columns = []
    for index, (name, numeric) in enumerate(zip(table.columns, table.numeric, strict=True)):
        values = [row[index] for row in table.rows]
        cells = [cell_text(v) for v in values]
        key = index < leading or _is_id(name) or name in focus.keys
        longest = max((measure(cell) for cell in cells), default=0)
        whole = numeric or _whole(values, cells)
        # A name can come from the data too (the header of a --table file).
        columns.append(
            Column(
                printable(name),
                cells,
                numeric,
                whole,
                key,
                focus.keeps(name),
                longest,
                named=name in focus.named,
            )
        )
    return columns


def _leading(table: Table) -> int:
    """How many leading columns are keys: up to the first number or through the first id
    (just the first column when there is neither). With any id and the focus's keys, they
    are never cut: a shortened key can make two rows look alike."""
    ends = [table.numeric.index(True)] if any(table.numeric) else []
    ends += [i + 1 for i, name in enumerate(table.columns) if name.endswith("_id")][:1]
    return min(ends, default=1)


def _whole(values: list[object], cells: list[str]) -> bool:
    """A column of dates, times or booleans, or of short texts and single words, is never
    cut or wrapped."""
    timed = all(isinstance(v, date | datetime | time | bool) for v in values if v is not None)
    return timed or all(len(cell) <= WHOLE_TEXT or _is_token(cell) for cell in cells)


def _is_token(cell: str) -> bool:
    """A value without spaces (a code, a hash, a path) reads as one word: cutting it loses it."""
    return not any(character.isspace() for character in cell)


def _is_id(name: str) -> bool:
    return name == "dataset" or name.endswith("_id")


def _least_width(column: Column, measure: Measure) -> int:
    """The narrowest the column is drawn: its values whole (or a short start of long texts,
    or long texts wrapped between words), and its name in at most two lines."""
    data = column.longest if column.whole else min(column.longest, TEXT_MIN_WIDTH)
    if column.wraps:  # wrapped between words, never inside one
        data = max([data, *(measure(word) for cell in column.cells for word in cell.split())])
    return max(data, header_width(column.name, measure), 1)


def _first_width(column: Column, measure: Measure) -> int:
    """The width a column is first given: the least, but a wrapped text as wide as its
    longest value up to TEXT_WIDTH for an answer, KEY_WIDTH for a key (narrowed again only if
    the table must show more; widened with the room left once the columns are chosen)."""
    least = _least_width(column, measure)
    if not column.wraps:
        return least
    return max(least, min(column.longest, KEY_WIDTH if column.key else TEXT_WIDTH))


def header_width(name: str, measure: Measure) -> int:
    """The narrowest a column name is drawn: on one line, or on two broken after _, - or a
    space, whichever is narrower."""
    parts = NAME_BREAK.split(name)
    widths = [measure(name)]
    for cut in range(1, len(parts)):
        first, second = "".join(parts[:cut]), "".join(parts[cut:])
        widths.append(max(measure(first.rstrip()), measure(second.rstrip())))
    return min(widths)


def _narrow(columns: list[Column], excess: int, measure: Measure) -> None:
    """Wrapped texts narrowed, the widest first, by up to `excess` in all (each down to its
    least width)."""
    least = {column: _least_width(column, measure) for column in columns}
    while excess > 0:
        widest = max(
            (c for c in columns if c.width > least[c]), key=lambda c: c.width, default=None
        )
        if widest is None:
            return
        widest.width -= 1
        excess -= 1


def _total(columns: list[Column]) -> int:
    return sum(c.width for c in columns) + GAP * max(len(columns) - 1, 0)


def _grow(columns: list[Column], room: int, measure: Measure) -> None:
    """Spend the spare `room`: so that names fit on one line; then on wrapped texts (shared
    out evenly) up to their longest value, so that they take fewer lines; then on the other
    long texts up to TEXT_WIDTH."""
    room = _widen(columns, room, lambda c: measure(c.name))
    room = _share_out([c for c in columns if c.wraps], room, lambda c: c.longest)
    _share_out([c for c in columns if not c.whole], room, lambda c: TEXT_WIDTH)


def _share_out(columns: list[Column], room: int, most: Callable[[Column], int]) -> int:
    """`room` shared out evenly among `columns`, each up to min(its longest value, `most`);
    the room left."""
    while room > 0:
        short = [c for c in columns if c.width < min(c.longest, most(c))]
        if not short:
            break
        for column in short[:room]:
            column.width += 1
        room -= len(short[:room])
    return room


def _widen(columns: list[Column], room: int, wanted: Callable[[Column], int]) -> int:
    """Each column in turn widened to `wanted` when the room left allows all of it."""
    for column in columns:
        extra = max(wanted(column) - column.width, 0)
        if extra <= room:
            column.width += extra
            room -= extra
    return room


def text_prefix(text: str, width: int, measure: Measure) -> str:
    """The longest start of `text` that measures at most `width` (at least one character)."""
    end = 1
    while end < len(text) and measure(text[: end + 1]) <= width:
        end += 1
    return text[:end]


def shorten(text: str, width: int, measure: Measure = len) -> str:
    """`text` cut to `width` with an ellipsis, when it is longer."""
    if measure(text) <= width:
        return text
    return text_prefix(text, max(width - 1, 1), measure) + "…"


def records(fitted: Layout) -> list[list[tuple[Column, str]]]:
    """One block per row: each shown column that has a value in it, or that a person named
    (its name alone where the row has no value), with that value; a row with no such column
    shows every name alone, so that no row vanishes."""
    blocks = []
    for i in range(fitted.rows):
        block = [(c, c.cells[i]) for c in fitted.columns if c.cells[i] or c.named]
        blocks.append(block or [(c, "") for c in fitted.columns])
    return blocks
