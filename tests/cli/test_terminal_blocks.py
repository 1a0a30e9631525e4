"""A table for people fits the terminal in the one-record-per-block layout too: every line at
most the width (60, 80, 120 columns, or any between), every named column shown whole.

Hypothesis draws a result of long values (texts of many words, words wider than a line,
numbers, long column names) and the columns a person names; drawn in-process
(`print_table`) for many draws, and under a real pseudo-terminal (`dices sql --table`) for a
few. A text must be shown word by word (a word wider than the line folded over lines), a
number on one line as the table rounds it, never split.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner

from dices_cli.cli.focus import Focus
from dices_cli.cli.main import app
from dices_cli.cli.render import print_table
from dices_cli.cli.render_blocks import NAME_MIN
from dices_cli.cli.tabular import GAP, cell_text
from dices_cli.output import table_from_rows
from tests.drivers.terminal import Terminal, terminal_fixture  # noqa: F401 (a fixture)
from tests.drivers.terminal_table import blocks, grid, hidden_note

WIDTHS = st.one_of(st.sampled_from((60, 80, 120)), st.integers(40, 160))
# Letters without i, n and t: no word reads as a number ("nan", "inf") or a boolean ("true").
LETTERS = "abcdefghjkmopqrsuvwxyzé漢字"
WORDS = st.text(LETTERS, min_size=1, max_size=12)
LONG_WORD = st.text(LETTERS, min_size=30, max_size=150)  # a hash, a path: wider than a line
TEXTS = st.lists(st.one_of(WORDS, LONG_WORD), min_size=1, max_size=40).map(" ".join)
NUMBERS = st.one_of(
    st.integers(-(10**15), 10**15), st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False)
)
# [a-z][a-z0-9]{0,11}(_[a-z0-9]{1,12}){0,5}, drawn a piece at a time (a regex is drawn a
# character at a time, far slower).
LOWER, ALNUM = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789"
NAMES = st.builds(
    lambda first, rest, parts: "_".join([first + rest, *parts]),
    st.sampled_from(LOWER),
    st.text(ALNUM, max_size=11),
    st.lists(st.text(ALNUM, min_size=1, max_size=12), max_size=5),
).filter(lambda name: name != "dataset" and not name.endswith("_id"))


@st.composite
def results(draw: st.DrawFn) -> tuple[list[str], list[tuple[object, ...]], list[str]]:
    """Column names, rows (1 to 3) of texts and numbers (a value missing at times), and the
    columns named (--columns)."""
    names = draw(st.lists(NAMES, min_size=2, max_size=8, unique=True))
    kinds = [draw(st.sampled_from((TEXTS, NUMBERS, WORDS))) for _ in names]
    height = draw(st.integers(1, 3))
    rows = [tuple(draw(st.none() | kind) for kind in kinds) for _ in range(height)]
    named = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    return names, rows, named


def shown(value: object) -> str:
    return cell_text(value)


def check(stdout: str, stderr: str, columns: list[str], rows: list[tuple[object, ...]],
          named: list[str], width: int) -> None:  # fmt: skip
    """Every line fits `width`; the `named` columns are not in the note about columns
    without room, and each of their values is on the screen whole."""
    assert all(cell_len(line) <= width for line in stdout.splitlines()), stdout
    assert not set(hidden_note(stderr)[1]) & set(named), stderr
    drawn = grid(stdout)
    wanted = {n: [shown(row[columns.index(n)]) for row in rows] for n in named}
    if drawn is not None:
        names, body = drawn
        assert set(named) <= set(names), (named, names)
        words = " ".join(body).split()
        for values in wanted.values():
            for value in values:
                assert all(word in words for word in value.split()), (value, stdout)
        return
    records = blocks(stdout)
    assert len(records) == len(rows), stdout
    for name, values in wanted.items():
        for record, value in zip(records, values, strict=True):
            if not value:
                assert record[name] == "", (name, record)
            elif re.fullmatch(r"-?\d+(\.\d+)?", value):
                assert record[name] == value, (name, value, stdout)  # a number on one line
            else:  # word by word; a word wider than the line folded over lines
                joined = "".join(record[name].split())
                assert joined == "".join(value.split()), (name, value, stdout)


@pytest.mark.slow  # 200 results drawn; tests/cli/test_tables.py's properties stay fast
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(result=results(), width=WIDTHS)
def test_every_line_fits_and_named_columns_are_whole(
    result: tuple[list[str], list[tuple[object, ...]], list[str]],
    width: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    columns, rows, named = result
    capsys.readouterr()
    print_table(table_from_rows(columns, rows), "t", width, Focus(named=tuple(named)))
    out, err = capsys.readouterr()
    check(out, err, columns, rows, named, width)


def test_a_block_at_60_columns() -> None:
    """Texts wrap under their first line, a long word folds, a long name breaks after _ (its
    further lines indented), a number stays whole."""
    columns = [
        "long_text",
        "token",
        "num",
        "Q2_harmful_content_medical_legal_financial_or_relationship_advice",
    ]
    table = table_from_rows(columns, [("abcdef " * 12, "z" * 70, 123456789.123, "short")])
    screen = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", screen)
        print_table(table, "t", 60, Focus(named=tuple(columns)))
    pad = " " * 30
    assert screen.getvalue().splitlines() == [
        "t",
        "long_text                     abcdef abcdef abcdef abcdef",
        f"{pad}abcdef abcdef abcdef abcdef",
        f"{pad}abcdef abcdef abcdef abcdef",
        "token                         " + "z" * 30,
        pad + "z" * 30,
        pad + "z" * 10,
        "num                           123456789.123",
        "Q2_harmful_content_medical_   short",
        "  legal_financial_or_",
        "  relationship_advice",
    ]


def test_the_names_give_way_to_a_wide_number() -> None:
    """A number wider than half the line is never split: the names narrow for it."""
    big = 10**25  # 26 digits
    table = table_from_rows(["a_rather_long_column_name", "words"], [(big, "x " * 20 + "y" * 30)])
    screen = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", screen)
        print_table(table, "t", 40, Focus(named=("a_rather_long_column_name", "words")))
    lines = screen.getvalue().splitlines()
    assert all(cell_len(line) <= 40 for line in lines), lines
    names = 40 - GAP - len(str(big))  # 12: the rest of the line is the number's
    assert names >= NAME_MIN
    assert lines[1:5] == [
        "a_rather_".ljust(names + GAP) + str(big),
        "  long_",
        "  column_",
        "  name",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("width", [60, 80, 120])
def test_under_a_pseudo_terminal(width: int, sample: Path, terminal: Terminal) -> None:
    """`dices sql` of a Parquet file of long values, on a terminal `width` wide, with the
    columns named by --columns (and one by --sort)."""

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
    @given(result=results(), sort=st.booleans())
    def holds(result: tuple[list[str], list[tuple[object, ...]], list[str]], sort: bool) -> None:
        columns, rows, named = result
        with tempfile.TemporaryDirectory(prefix="blocks-") as folder:
            path = Path(folder) / "t.parquet"
            values = {n: [row[i] for row in rows] for i, n in enumerate(columns)}
            pq.write_table(pa.table(values), path)
            arguments = ["sql", "SELECT * FROM t", "--table", f"t={path}", "--data", str(sample)]
            arguments += ["--columns", ",".join(named)]
            arguments += ["--sort", named[0]] if sort else []
            screen = terminal.run(width, *arguments)
            assert screen.code == 0, screen.stderr
            written = CliRunner().invoke(app, [*arguments, "-f", "csv"])
            assert written.exit_code == 0, written.output
        header, *lines = csv.reader(io.StringIO(written.stdout))
        drawn = [tuple(_typed(cell, values[n]) for n, cell in zip(header, line, strict=True))
                 for line in lines]  # fmt: skip
        check(screen.stdout, screen.stderr, header, drawn, named, width)

    holds()


def _typed(cell: str, column: list[object]) -> object:
    """A CSV cell as the value it was: a number where the column is of numbers."""
    if cell == "":
        return None
    if any(isinstance(v, float) for v in column):
        return float(cell)
    if any(isinstance(v, int) for v in column):
        return int(cell)
    return cell
