"""Reading a table for people back from the screen: its header, its rows, its note."""

from __future__ import annotations

import re

RULE = re.compile(r"^\s*─+\s*$")  # the line under a grid's header
VALUE_START = re.compile(r"^\S(?:.*?\S)? {2,}(?=\S)")  # a block's name, then its value's column
NOTE = re.compile(  # the two lines that say which columns had no room
    r"^\.\.\. no room for (?P<count>\d+) more columns?(?: \(\d+ empty\))? "
    r"\(--format csv shows all\): (?P<names>.*)\n"
    r"  to see one: --columns (?P<example>[\w,]+)$",
    re.M,
)


def table_number(value: str) -> str | None:
    """A CSV value as the table shows it when it is a number: ints as they are, floats with
    3 decimals; None for anything else."""
    if re.fullmatch(r"-?\d+", value):
        return value
    try:
        return f"{float(value):.3f}"
    except ValueError:
        return None


def hidden_note(stderr: str) -> tuple[int, list[str]]:
    """How many columns the note says were left out for want of room, and the names it lists
    (the first of them with the --columns that shows it: the key columns and it)."""
    notes = list(NOTE.finditer(stderr))
    if not notes:
        assert "no room" not in stderr, stderr
        return 0, []
    (note,) = notes
    names = re.sub(r" and \d+ more$", "", note["names"]).split(", ")
    assert note["example"].split(",")[-1] == names[0], stderr
    return int(note["count"]), names


def note_lines(stderr: str) -> int:
    """How many lines of `stderr` say which columns a table left out."""
    return len(re.findall(r"^(?:\.\.\. .*column|  to see one: --columns )", stderr, re.M))


def header_names(header_lines: list[str]) -> list[str]:
    """The column names of a drawn header, each on one line or two (its second line's piece
    under its first's); a name never takes more than two lines."""
    pieces = [
        [(m.start(), m.end(), m[0]) for m in re.finditer(r"\S+", line)] for line in header_lines
    ]
    assert len(pieces) <= 2, header_lines
    if len(pieces) < 2:
        return [text for _start, _end, text in (pieces[0] if pieces else [])]
    top, bottom = pieces
    names = []
    for start, end, text in bottom:
        above = [t for s, e, t in top if s < end and start < e]
        assert len(above) <= 1, header_lines
        names.append("".join(above) + text)
    assert all(any(s < e2 and s2 < e for s2, e2, _ in bottom) for s, e, _ in top), header_lines
    return names


def grid(stdout: str) -> tuple[list[str], list[str]] | None:
    """A drawn grid's column names and its body lines (after the title line); None when the
    result is laid out one record per block."""
    lines = stdout.splitlines()
    rules = [i for i, line in enumerate(lines) if RULE.match(line)]
    if not rules:
        return None
    return header_names(lines[1 : rules[0]]), lines[rules[0] + 1 :]


def blocks(stdout: str) -> list[dict[str, str]]:
    """The records of a result laid out one per block (after the title line): name -> value.
    A line that starts with a blank continues the field above: a further piece of its name
    (before the values' column) and a further line of its value (joined with a space)."""
    body = "\n".join(stdout.splitlines()[1:]).strip("\n")
    records = []
    for block in body.split("\n\n") if body else []:
        lines = block.splitlines()
        starts = [m.end() for line in lines if (m := VALUE_START.match(line))]
        column = min(starts, default=max(map(len, lines)))
        fields: list[list[str]] = []
        for line in lines:
            name, value = line[:column].strip(), line[column:].strip()
            if line[:1].strip():
                fields.append([name, value])
                continue
            fields[-1][0] += name
            fields[-1][1] = f"{fields[-1][1]} {value}".strip()
        records.append({name: value for name, value in fields})
    return records
