"""One record per block, fitted to the terminal: the layout of a result too wide for a grid.

A block is `name  value` lines, the values in one column that starts `GAP` after the
longest name. Every line fits the width: a name longer than the room for names breaks
after _, - or a space (its further lines indented by `GAP`); a text a table must show (a key,
an answer, a column a person named) wraps at its words under its first line, a word wider
than the room folded over lines; a value that is one word (an id, a hash, a path) is folded
the same way, never cut; any other long text is cut to one line with an ellipsis, as in a
grid. A number is never split nor cut: the room for names shrinks so that the widest number
fits beside it, down to `NAME_MIN`, and only a number wider than the terminal less that runs
past its edge.
"""

from __future__ import annotations

from itertools import zip_longest

from dices_cli.cli.tabular import (
    GAP,
    NAME_BREAK,
    Column,
    Layout,
    Measure,
    records,
    shorten,
    text_prefix,
)

NAME_MIN = 8  # the narrowest the names are given, however wide the numbers


def name_width(columns: list[Column], width: int, measure: Measure) -> int:
    """How wide the names are drawn: the longest name, but leaving the values at least half
    the width and room for the widest number (never less than `NAME_MIN`, or the longest
    name when it is shorter)."""
    longest = max((measure(c.name) for c in columns), default=0)
    numbers = max((measure(cell) for c in columns if c.numeric for cell in c.cells), default=0)
    room = width - GAP - max(numbers, width // 2)
    return max(min(longest, room), min(longest, NAME_MIN), 1)


def block_lines(fitted: Layout, width: int, measure: Measure) -> list[list[tuple[str, str]]]:
    """Each record of `fitted` as lines of (name piece, value piece), a name piece at most
    `name_width` wide and a value piece at most the rest of `width` less `GAP` (but for a
    number wider than that: see the module's note)."""
    names = name_width(fitted.columns, width, measure)
    room = max(width - names - GAP, 1)
    return [
        [
            pair
            for column, cell in block
            for pair in zip_longest(
                _name_lines(column.name, names, measure),
                _value_lines(column, cell, room, measure),
                fillvalue="",
            )
        ]
        for block in records(fitted)
    ]


def _name_lines(name: str, width: int, measure: Measure) -> list[str]:
    """`name` in lines of at most `width`: broken after _, - or a space, a piece wider than a
    line folded; each line after the first indented by GAP."""
    narrow = max(width - GAP, 1)  # a further line's room
    pieces = []
    for part in NAME_BREAK.split(name):
        while measure(part.rstrip()) > narrow and len(part) > 1:
            piece = text_prefix(part, narrow, measure)
            pieces.append(piece)
            part = part[len(piece) :]
        pieces.append(part)
    lines = [""]
    for piece in pieces:
        limit = width if len(lines) == 1 else narrow
        if lines[-1] and measure((lines[-1] + piece).rstrip()) > limit:
            lines.append("")
        lines[-1] += piece
    return [" " * GAP * (i > 0) + line.rstrip() for i, line in enumerate(lines)]


def _value_lines(column: Column, cell: str, room: int, measure: Measure) -> list[str]:
    """`cell` in lines of at most `room`: a number whole on one line; a text the table must
    show, or a single word, wrapped at its words (a word wider than `room` folded); any
    other text cut to one line."""
    if column.numeric or measure(cell) <= room:
        return [cell]
    if not (column.whole or column.wraps):
        return [shorten(cell, room, measure)]
    lines: list[str] = []
    for word in cell.split():
        while measure(word) > room and len(word) > 1:
            piece = text_prefix(word, room, measure)
            lines.append(piece)
            word = word[len(piece) :]
        if lines and measure(f"{lines[-1]} {word}") <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines
