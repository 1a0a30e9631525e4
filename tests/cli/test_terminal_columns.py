"""Under a real pseudo-terminal, every command with --columns shows the columns named, whole.

For each command, Hypothesis picks a terminal width (60, 80, 120, or any width between) and
some of the result's columns (and, at times, one more to --sort by); the screen must show
each named column (in the grid's header, or in every record of the one-record-per-block
layout), never name it in the note about columns without room, and show each of its values
whole: a number as the table rounds it, a text word by word. The values are the command's
own CSV output for the same arguments.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from drivers.terminal_table import blocks, grid, hidden_note, note_lines, table_number
from fixtures.dices_csv import header, rows, to_csv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.drivers.terminal import Screen, Terminal, terminal_fixture  # noqa: F401 (a fixture)

PREDICTIONS = str(Path(__file__).resolve().parents[2] / "dices_cli/data/demo-predictions.csv")
WIDTHS = st.one_of(st.sampled_from((60, 80, 120)), st.integers(50, 160))
ROWS = ["--limit", "4"]

# Every command with --columns; {data} is the data directory, {bad} a file with problems.
COMMANDS = {
    "query overview": ["query", "overview", "--data", "{data}"],
    "query by race and gender": [
        "query",
        "qoverall-by-demographic",
        "--by",
        "rater_race",
        "--by",
        "rater_gender",
        "--data",
        "{data}",
    ],
    "query group-disagreement": [
        "query",
        "group-disagreement",
        "--by",
        "rater_race",
        "--permutations",
        "20",
        "--data",
        "{data}",
    ],
    "query rater-quality": ["query", "rater-quality", "--data", "{data}"],
    "query --list": ["query", "--list"],
    "sql": ["sql", "SELECT * FROM items", "--data", "{data}"],
    "validate": ["validate", "{bad}"],
    "info": ["info", "--data", "{data}"],
    "filter-raters --explain": ["filter-raters", "-d", "350", "--explain", "--data", "{data}"],
    "evaluate --by": [
        "evaluate",
        PREDICTIONS,
        "--bootstrap",
        "20",
        "--permutations",
        "20",
        "--by",
        "rater_gender",
        "--data",
        "{data}",
    ],
    "download --dry-run": ["download", "all", "--dir", "{dir}", "--dry-run"],
}


@pytest.fixture(scope="module")
def places(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("columns")
    body = rows("350", 2, 3)
    body[3]["phase"] = "Phase9"
    bad = folder / "bad.csv"
    bad.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    # A short copy of the sample: `info`'s title names the directory, and a title wrapped
    # over two lines (pytest's paths are long) would be read as the grid's header.
    with tempfile.TemporaryDirectory(prefix="c", dir="/tmp") as short:
        data = Path(short) / "d"
        shutil.copytree(sample, data, symlinks=True)
        yield {"data": str(data), "bad": str(bad), "dir": str(folder / "downloads")}


def arguments_of(command: str, places: dict[str, str]) -> list[str]:
    return [argument.format(**places) for argument in COMMANDS[command]]


@cache
def as_csv(arguments: tuple[str, ...]) -> str:
    """The command's CSV output (in-process: the same values the screen must show)."""
    result = CliRunner().invoke(app, [*arguments, "-f", "csv"])
    assert result.exit_code in (0, 1), result.output  # validate exits 1 on problems
    assert result.stdout, result.output
    return result.stdout


def shown_words(value: str) -> list[str]:
    """A CSV value's words as the table for people shows them."""
    number = table_number(value)
    if number is not None:
        return [number]
    return {"true": "True", "false": "False"}.get(value, value).split()


def check_named_whole(screen: Screen, csv_text: str, named: list[str], width: int) -> None:
    """The columns `named` are all on the screen, each of their values whole."""
    assert screen.code in (0, 1), screen.stderr
    assert "Traceback" not in screen.stderr
    _count, listed = hidden_note(screen.stderr)
    assert not set(listed) & set(named), screen.stderr
    assert note_lines(screen.stderr) <= 2
    header_row, *values = csv.reader(io.StringIO(csv_text))
    drawn = grid(screen.stdout)
    if drawn is not None:
        names, body = drawn
        assert set(named) <= set(names), (named, names)
        assert all(cell_len(line) <= width for line in screen.stdout.splitlines())
        # A wrapped text takes more lines than its row's numbers: its words are counted.
        on_screen = Counter(" ".join(body).split())
        wanted = Counter(
            word
            for row in values
            for name, value in zip(header_row, row, strict=True)
            if name in named
            for word in shown_words(value)
        )
        assert not wanted - on_screen, f"not whole: {wanted - on_screen}\n{screen.stdout}"
        return
    assert all(cell_len(line) <= width for line in screen.stdout.splitlines()), screen.stdout
    records = blocks(screen.stdout)
    assert len(records) == len(values), screen.stdout
    for record, row in zip(records, values, strict=True):
        for name, value in zip(header_row, row, strict=True):
            if name in named and value:
                assert whole_in_block(record[name], value), (name, value, record)


def whole_in_block(shown: str, value: str) -> bool:
    """A block's value (its lines joined by a space) is the CSV value: a number on one
    line, as the table rounds it; a text word by word, a word wider than the line folded
    over lines."""
    words = shown_words(value)
    if table_number(value) is not None:
        return [shown] == words
    return shown.split() == words or "".join(shown.split()) == "".join(words)


@st.composite
def choices(draw: st.DrawFn, columns: list[str]) -> tuple[list[str] | None, str | None]:
    """Some of `columns` in any order for --columns, or one to --sort by, or both."""
    some = st.lists(st.sampled_from(columns), min_size=1, max_size=7, unique=True)
    named = draw(st.none() | some)
    sort = draw(st.sampled_from(columns) if named is None else st.none() | st.sampled_from(named))
    return named, sort


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_named_columns_are_all_shown_whole(
    command: str, places: dict[str, str], terminal: Terminal
) -> None:
    arguments = arguments_of(command, places)
    columns = next(csv.reader(io.StringIO(as_csv(tuple(arguments)))))

    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(width=WIDTHS, chosen=choices(columns))
    def property_holds(width: int, chosen: tuple[list[str] | None, str | None]) -> None:
        named, sort = chosen
        shaped = [*arguments, *ROWS]
        shaped += ["--columns", ",".join(named)] if named else []
        shaped += ["--sort", f"-{sort}"] if sort else []  # descending: a name with a -
        screen = terminal.run(width, *shaped)
        wanted = [*(named or []), *([sort] if sort and not named else [])]
        check_named_whole(screen, as_csv(tuple(shaped)), wanted, width)

    property_holds()
