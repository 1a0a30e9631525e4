"""The table for people (`--format table`): numbers, ids and enum values are never wrapped or cut.

Every canned query is drawn at the widths people use (60, 80, 120 and 200 columns) and checked
against its own CSV output: every number of the CSV, formatted as the table formats it, is a
whole word of its row in the table, or its column is named in the note about hidden columns.
Hand-made tables pin the rules one by one, and random tables at random widths check the same
promise where the canned queries do not reach.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import re
from functools import cache
from pathlib import Path

import pytest
from drivers.terminal_table import RULE, blocks, header_names, hidden_note, note_lines, table_number
from hypothesis import example, given
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner

from dices_cli.cli.commands import cli_docs
from dices_cli.cli.commands.evaluate import EVALUATE_ANSWER
from dices_cli.cli.commands.raters import QUALITY_ANSWER
from dices_cli.cli.focus import Focus
from dices_cli.cli.main import app
from dices_cli.cli.render import print_table
from dices_cli.output import Format, Table, write_table
from dices_cli.queries.catalog import catalog, parse_query
from tests.drivers.terminal import Screen, Terminal, terminal_fixture  # noqa: F401 (a fixture)

WIDTHS = (60, 80, 120, 200)
FILLER = {"columns": "rater_age"}  # a value for each type of required parameter
LONG_GROUPS = ["qoverall-by-demographic", "--by", "rater_raw_race"]  # labels of up to 99 chars


# ----------------------------------------------------------------------------- the checker


def hidden_columns(stderr: str, stdout: str, csv_text: str) -> list[str]:
    """The columns of the result (`csv_text`) with a value in some row that the drawn table
    (`stdout`) leaves out; the note (`stderr`) names some of them."""
    header, *rows = csv.reader(io.StringIO(csv_text))
    _count, listed = hidden_note(stderr)
    lines = stdout.splitlines()
    rules = [i for i, line in enumerate(lines) if RULE.match(line)]
    drawn = header_names(lines[1 : rules[0]]) if rules else header
    assert set(listed) <= set(header) - set(drawn)
    # Without a value anywhere, the table shows the names alone: any of them may lack room.
    filled = {name for i, name in enumerate(header) if any(row[i].strip() for row in rows)}
    filled = filled or set(header)
    return [name for name in header if name not in drawn and name in filled]


def whole_words(header_lines: list[str], names: list[str]) -> None:
    """Every piece of a column name in the drawn header is whole words of it: it starts at the
    name's start or after _, - or a space, and ends at its end or with one of them."""
    for piece in " ".join(header_lines).split():
        assert any(
            name[i : i + len(piece)] == piece
            and (i == 0 or name[i - 1] in "_- ")
            and (i + len(piece) == len(name) or piece[-1] in "_-")
            for name in names
            for i in range(len(name))
        ), f"{piece!r} splits a word of a name in {header_lines}"


def check_drawn(title: str, stdout: str, stderr: str, csv_text: str, width: int) -> str:
    """Every number of `csv_text` is whole in its row of the drawn table, or its column is
    hidden; returns how the table was laid out ("grid" or "blocks")."""
    header, *rows = csv.reader(io.StringIO(csv_text))
    hidden = hidden_columns(stderr, stdout, csv_text)
    count, _listed = hidden_note(stderr)
    assert count == len(hidden) or not rows
    assert note_lines(stderr) <= 2, stderr
    lines = stdout.splitlines()
    assert lines[0].strip() == title
    rules = [i for i, line in enumerate(lines) if RULE.match(line)]
    if rules:
        assert all(cell_len(line) <= width for line in lines), stdout
        whole_words(lines[1 : rules[0]], header)
        drawn_rows = lines[rules[0] + 1 :]
        if len(drawn_rows) == len(rows):  # a row per line: each number on its own row's
            for row, line in zip(rows, drawn_rows, strict=True):
                words = line.split()
                for name, value in zip(header, row, strict=True):
                    number = table_number(value)
                    if number is not None and name not in hidden:
                        assert number in words, f"{name}={value} not whole in {line!r}"
        else:  # wrapped texts take more lines: the numbers come whole, in their order
            assert len(drawn_rows) > len(rows)
            words = iter(" ".join(drawn_rows).split())
            for row in rows:
                for name, value in zip(header, row, strict=True):
                    number = table_number(value)
                    if number is not None and name not in hidden:
                        assert number in words, f"{name}={value} not whole in {stdout!r}"
        return "grid"
    assert count == 0  # one record per block shows every column
    records = blocks(stdout) if rows else []
    assert len(records) == len(rows)
    for row, fields in zip(rows, records, strict=True):
        for name, value in zip(header, row, strict=True):
            number = table_number(value)
            if number is not None:
                assert fields[name] == number, f"{name}={value} not whole in {fields!r}"
    return "blocks"


def drawn(table: Table, width: int, title: str = "t") -> tuple[str, str]:
    """`print_table` at `width`: what it writes to stdout and to stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        print_table(table, title, width=width)
    return out.getvalue(), err.getvalue()


def as_csv(table: Table) -> str:
    buffer = io.BytesIO()
    write_table(table, Format.CSV, buffer)
    return buffer.getvalue().decode()


# ----------------------------------------------------------------------------- canned queries


def canned_cases() -> list[list[str]]:
    """Each query with what it needs (agreement kept fast), plus the widest shapes: agreement
    per group, and a group whose labels are long."""
    cases = []
    for name, query in catalog().items():
        arguments = [name]
        for parameter in query.parameters:
            if parameter.required:
                arguments += [f"--{parameter.name.replace('_', '-')}", FILLER[parameter.type]]
        if query.parameter("permutations"):
            arguments += ["--permutations", "20"]
        cases.append(arguments)
    cases.append(["agreement", "--by", "rater_age", "--permutations", "20"])
    cases.append(LONG_GROUPS)
    return cases


@cache
def query_csv(data: Path, arguments: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, ["query", *arguments, "--data", str(data), "-f", "csv"])
    assert result.exit_code == 0, result.output
    return result.stdout


# Every query at every width: the full suite's; the hand-made and random tables, the inner loop's.
@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("arguments", canned_cases(), ids=" ".join)
def test_canned_query_tables_keep_every_number_whole(
    sample: Path, arguments: list[str], width: int
) -> None:
    result = CliRunner().invoke(
        app,
        ["query", *arguments, "--data", str(sample), "-f", "table"],
        env={"COLUMNS": str(width)},
    )
    assert result.exit_code == 0, result.output
    expected = query_csv(sample, tuple(arguments))
    shape = check_drawn(arguments[0], result.stdout, result.stderr, expected, width)
    assert catalog()[arguments[0]].answer
    hidden = hidden_columns(result.stderr, result.stdout, expected)
    assert not set(hidden) & set(catalog()[arguments[0]].answer)
    # A group label is a key, never cut: wrapped at its words beside the answer from 80 up; at
    # 60, the answers (their names in two lines at most) and the keys are wider than the line
    # (gold-vs-crowd-summary's seven: five metrics and kappa's interval).
    too_wide = width == 60 and arguments in (
        LONG_GROUPS,
        ["rater-quality"],
        ["gold-vs-crowd-summary"],
        ["agreement", "--by", "rater_age", "--permutations", "20"],
    )
    assert shape == ("blocks" if too_wide else "grid")


def test_console_width_comes_from_columns(ingested: Path) -> None:
    """Rich takes the width from COLUMNS, so the widths above are the ones drawn: at 60 no
    name breaks inside a word, so a column is left out, named with the --columns that shows
    it; at 200 they all have room."""
    drawn_at = {}
    for width in (60, 200):
        result = CliRunner().invoke(
            app,
            ["query", "overview", "--data", str(ingested), "-f", "table"],
            env={"COLUMNS": str(width)},
        )
        assert result.exit_code == 0, result.output
        drawn_at[width] = result.stdout, result.stderr
    assert drawn_at[60] == (
        "overview\n"
        "dataset  conversations  raters  ratings  share_no  share_yes\n"
        "────────────────────────────────────────────────────────────\n"
        "350                350     123    43050     0.611      0.327\n"
        "990                990     173    72103     0.680      0.268\n",
        "... no room for 1 more column (--format csv shows all): "
        "share_unsure\n"
        "  to see one: --columns dataset,share_unsure\n",
    )
    assert drawn_at[200] == (
        "overview\n"
        "dataset  conversations  raters  ratings  share_no  share_yes  share_unsure\n"
        "──────────────────────────────────────────────────────────────────────────\n"
        "350                350     123    43050     0.611      0.327         0.063\n"
        "990                990     173    72103     0.680      0.268         0.052\n",
        "",
    )


def test_agreement_without_groups_leaves_out_its_empty_columns(ingested: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["query", "agreement", "--permutations", "20", "--data", str(ingested), "-f", "table"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split() == [
        "dataset",
        "raters",
        "irr",
        "negentropy",
        "plurality_size",
    ]
    assert result.stderr == "... 27 empty columns not shown\n"


# ----------------------------------------------------------------------------- the rules


def test_five_digit_id_is_never_split_at_width_60() -> None:
    columns = ["dataset", "item_id", *(f"measure_{n}" for n in range(8))]
    table = Table(columns, [False] + [True] * 9, [("350", 21350, *range(100_000, 100_008))])
    assert drawn(table, 60) == (
        "t\n"
        "dataset  item_id  measure_0  measure_1  measure_2  measure_3\n"
        "────────────────────────────────────────────────────────────\n"
        "350        21350     100000     100001     100002     100003\n",
        "... no room for 4 more columns (--format csv shows all): "
        "measure_4 and 3 more\n"
        "  to see one: --columns dataset,item_id,measure_4\n",
    )


def test_floats_have_three_decimals_and_are_never_split() -> None:
    columns = ["group", *(f"share_{answer}" for answer in ("no", "yes", "unsure"))]
    rows = [("gen z", 0.6213, 0.31234, 0.06636), ("millenial", 2 / 3, 1 / 3, 0.0)]
    table = Table(
        [*columns, "entropy_bits"],
        [False, True, True, True, True],
        [(*row, 1.2309906610316759) for row in rows],
    )
    assert drawn(table, 40) == (
        "t\n"
        "                                share_\n"
        "group      share_no  share_yes  unsure\n"
        "──────────────────────────────────────\n"
        "gen z         0.621      0.312   0.066\n"
        "millenial     0.667      0.333   0.000\n",
        "... no room for 1 more column (--format csv shows all): "
        "entropy_bits\n"
        "  to see one: --columns group,entropy_bits\n",
    )


def test_empty_columns_are_left_out_and_counted() -> None:
    table = Table(
        ["rater_id", "xrr", "irr", "note"],
        [True, True, True, False],
        [
            (7, None, 0.16, ""),
            (8, None, 0.14, None),
        ],
    )
    assert drawn(table, 60) == (
        "t\nrater_id    irr\n───────────────\n       7  0.160\n       8  0.140\n",
        "... 2 empty columns not shown\n",
    )


def test_long_text_is_cut_to_one_line_with_an_ellipsis() -> None:
    response = "I can't help with that.\nBut here is a long and winding answer " * 3
    table = Table(
        ["item_id", "response", "ratings"],
        [True, False, True],
        [
            (1, response, 123),
            (2, "Sure.", 45),
        ],
    )
    assert drawn(table, 60) == (
        "t\n"
        "item_id  response                                  ratings\n"
        "──────────────────────────────────────────────────────────\n"
        "      1  I can't help with that. But here is a l…      123\n"
        "      2  Sure.                                          45\n",
        "",
    )


def test_a_key_too_wide_for_one_line_wraps_at_its_words() -> None:
    label = "Indian subcontinent (including Bangladesh, Bhutan, India, Maldives, Nepal)"
    table = Table(
        ["dataset", "rater_raw_race", "raters", "share_yes"],
        [False, False, True, True],
        [
            ("350", label, 15, 0.3298),
            ("990", "White", 31, 0.2761),
        ],
    )
    assert drawn(table, 60) == (
        "t\n"
        "dataset  rater_raw_race                    raters  share_yes\n"
        "────────────────────────────────────────────────────────────\n"
        "350      Indian subcontinent (including        15      0.330\n"
        "         Bangladesh, Bhutan, India,                         \n"
        "         Maldives, Nepal)                                   \n"
        "990      White                                 31      0.276\n",
        "",
    )


def test_a_key_too_wide_for_a_grid_gives_one_record_per_block() -> None:
    label = "Indian_subcontinent_(including_Bangladesh,_Bhutan,_India,_Maldives,_Nepal)"
    table = Table(
        ["dataset", "rater_raw_race", "raters", "share_yes"],
        [False, False, True, True],
        [
            ("350", label, 15, 0.3298),
            ("990", "White", 31, 0.2761),
        ],
    )
    assert (
        drawn(table, 60)
        == (
            "t\n"
            "dataset         350\n"
            f"rater_raw_race  {label[:44]}\n"  # a word wider than the line: folded, never cut
            f"                {label[44:]}\n"
            "raters          15\n"
            "share_yes       0.330\n"
            "\n"
            "dataset         990\n"
            "rater_raw_race  White\n"
            "raters          31\n"
            "share_yes       0.276\n",
            "",
        )
    )


def test_cells_are_shown_as_they_are() -> None:
    """Rich reads "[...]" as markup and ":name:" as an emoji in strings; never in a cell."""
    table = Table(["id", "text"], [True, False], [(1, "[bold]not bold[/bold] :smile:")])
    assert drawn(table, 60) == (
        "t\nid  text" + " " * 25 + "\n" + "─" * 33 + "\n 1  [bold]not bold[/bold] :smile:\n",
        "",
    )


def test_a_result_without_rows_shows_its_column_names() -> None:
    table = Table(["dataset", "raters", "share_yes"], [False, True, True], [])
    assert drawn(table, 60) == ("t\ndataset  raters  share_yes\n" + "─" * 26 + "\n", "")


# ----------------------------------------------------------------------------- any table

# [a-z]{1,8}(_[a-z]{1,8}){0,2}, drawn a piece at a time (a regex is drawn a character at a
# time, far slower, and first computes what its default alphabet can encode).
PIECES = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
NAMES = st.lists(PIECES, min_size=1, max_size=3).map("_".join)
INTS = st.integers(-(10**15), 10**15)
FLOATS = st.floats(-1e6, 1e6, allow_nan=False)
WORDS = st.text(st.sampled_from("abcdefghij 漢字é"), min_size=0, max_size=90)
KINDS = {"int": INTS, "float": FLOATS, "text": WORDS, "empty": st.none()}


@st.composite
def tables(draw: st.DrawFn) -> Table:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=12))
    names = draw(st.lists(NAMES, min_size=len(kinds), max_size=len(kinds), unique=True))
    rows = draw(st.lists(st.tuples(*(KINDS[kind] for kind in kinds)), min_size=0, max_size=4))
    return Table(names, [kind in ("int", "float") for kind in kinds], rows)


@given(table=tables(), width=st.integers(20, 200))
@example(  # a row with no value, too wide for a grid: its block shows the names
    table=Table(["a_aaaaaaaa_a", "aaaaaaaa_a"], [False, False], [(None, None)]), width=20
)
def test_any_table_keeps_every_number_whole(table: Table, width: int) -> None:
    stdout, stderr = drawn(table, width)
    check_drawn("t", stdout, stderr, as_csv(table), width)


QUERY_COLUMNS = sorted(
    {
        column
        for query in catalog().values()
        for column in query.output_columns({p.name: ["rater_age"] for p in query.parameters})
    }
)


@given(
    names=st.lists(st.sampled_from(QUERY_COLUMNS), min_size=1, max_size=14, unique=True),
    width=st.integers(60, 200),
)
def test_no_query_column_name_is_split_inside_a_word(names: list[str], width: int) -> None:
    """The canned queries' column names, any of them side by side at any width from 60 to
    200: a header breaks only after _ (check_drawn's `whole_words`), never inside a word."""
    table = Table(["dataset", *names], [False] + [True] * len(names), [("350", *range(len(names)))])
    stdout, stderr = drawn(table, width)
    assert check_drawn("t", stdout, stderr, as_csv(table), width) == "grid"


# ----------------------------------------------------------------------------- the answer line

ANSWERED = """-- name: q
-- summary: s
-- param by: columns = []: g
-- column dataset: d
-- column {by}: g
-- column share: s
-- column low: l
"""


def test_the_answer_line_says_what_a_table_keeps() -> None:
    query = parse_query(Path("q.sql"), ANSWERED + "-- answer: share, low\nSELECT 1")
    assert query.answer == ("share", "low")
    assert query.expanded_answer({"by": ["rater_gender"]}) == ["share", "low"]


def test_an_answer_line_naming_an_undeclared_column_is_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("q.sql: answer: nope is not a declared column")):
        parse_query(Path("q.sql"), ANSWERED + "-- answer: share, nope\nSELECT 1")


def test_answer_columns_are_kept_before_the_others() -> None:
    """Without the answer, the columns come in order while they fit; with it, the answer is
    kept and the columns before it are the ones left out, each named with its --columns."""
    columns = ["group", *(f"count_{n}" for n in range(6)), "share_yes"]
    table = Table(columns, [False] + [True] * 7, [("a", *range(100_000, 100_006), 0.25)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
        print_table(table, "t", width=40, focus=Focus(answer=("share_yes",)))
    assert (out.getvalue(), err.getvalue()) == (
        "t\n"
        "                                  share_\n"
        "group  count_0  count_1  count_2     yes\n"
        "────────────────────────────────────────\n"
        "a       100000   100001   100002   0.250\n",
        "... no room for 3 more columns (--format csv shows all): "
        "count_3 and 2 more\n"
        "  to see one: --columns group,count_3\n",
    )


# ----------------------------------------------------------------------------- a real terminal

SCREEN_WIDTHS = (60, 80, 120)
SHOWN_ROWS = ["--limit", "5"]
PREDICTIONS = str(
    Path(__file__).resolve().parents[2] / "dices_cli" / "data" / "demo-predictions.csv"
)
COMMANDS = {  # the other commands whose answer a person looks for, with what they declare
    "evaluate": (["evaluate", PREDICTIONS, "--bootstrap", "20"], EVALUATE_ANSWER),
    "filter-raters": (["filter-raters", "-d", "350"], QUALITY_ANSWER),
}


def check_answer_whole(screen: Screen, csv_text: str, answer: tuple[str, ...], width: int) -> None:
    """Every value of the `answer` columns in `csv_text` is on the screen whole (a number as
    the table rounds it, a text word by word), and none of those columns is left out."""
    assert screen.code == 0, screen.stderr
    header, *rows = csv.reader(io.StringIO(csv_text))
    assert rows and set(answer) <= set(header)
    assert not set(hidden_columns(screen.stderr, screen.stdout, csv_text)) & set(answer), screen
    lines = screen.stdout.splitlines()
    if any(RULE.match(line) for line in lines):  # a grid fits the terminal; blocks run on
        assert all(cell_len(line) <= width for line in lines), screen.stdout
    words = screen.stdout.split()
    for row in rows:
        for name, value in zip(header, row, strict=True):
            if name in answer and value:
                shown = table_number(value) or {"true": "True", "false": "False"}.get(value, value)
                for word in shown.split():
                    assert word in words, f"{name}={value} not whole on the screen"


@pytest.mark.slow
@pytest.mark.parametrize("width", SCREEN_WIDTHS)
@pytest.mark.parametrize("arguments", canned_cases(), ids=" ".join)
def test_each_query_shows_its_answer_whole_on_a_terminal(
    sample: Path, terminal: Terminal, arguments: list[str], width: int
) -> None:
    shaped = (*arguments, *SHOWN_ROWS)
    screen = terminal.run(width, "query", *shaped, "--data", str(sample))
    answer = catalog()[arguments[0]].answer
    check_answer_whole(screen, query_csv(sample, shaped), answer, width)


@pytest.mark.slow
@pytest.mark.parametrize("width", SCREEN_WIDTHS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_evaluate_and_filter_raters_show_their_answer_whole_on_a_terminal(
    sample: Path, terminal: Terminal, command: str, width: int
) -> None:
    arguments, answer = COMMANDS[command]
    shaped = [*arguments, *SHOWN_ROWS, "--data", str(sample)]
    screen = terminal.run(width, *shaped)
    expected = CliRunner().invoke(app, [*shaped, "-f", "csv"])
    assert expected.exit_code == 0, expected.output
    check_answer_whole(screen, expected.stdout, answer, width)


# ----------------------------------------------------------------------------- help text

PROSE = re.compile(r"^ \S")  # a line of a help's prose: one space in, outside the panels


@pytest.mark.parametrize("width", (60, 80))
def test_every_help_wraps_its_prose_once_at_the_terminals_width(width: int) -> None:
    """A line of prose ends only where the next word would not fit: a docstring's own line
    breaks are gone (before, `download --help` at 80 broke "at a pinned" / "commit,")."""
    for words, _command in cli_docs.commands():
        result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": str(width)})
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert all(cell_len(line) <= width for line in lines), result.stdout
        for line, following in itertools.pairwise(lines):
            if PROSE.match(line) and PROSE.match(following):
                room = width - 1 - cell_len(line.rstrip())  # one space of margin on the right
                word = following.split()[0]
                assert cell_len(word) + 1 > room, (
                    f"dices {' '.join(words)} --help at {width}: {word!r} fits after "
                    f"{line.rstrip()!r}"
                )


def test_a_long_answer_text_wraps_between_words_and_is_never_cut() -> None:
    table = Table(
        ["item_id", "lowest_group", "gap"],
        [True, False, True],
        [(1, "Black/African American and Asian/Asian subcontinent", 0.5)],
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
        print_table(table, "t", width=30, focus=Focus(answer=("lowest_group", "gap")))
    assert (out.getvalue(), err.getvalue()) == (
        "t\n"
        "item_                         \n"
        "   id  lowest_group        gap\n"
        "──────────────────────────────\n"
        "    1  Black/African     0.500\n"
        "       American and           \n"
        "       Asian/Asian            \n"
        "       subcontinent           \n",
        "",
    )
