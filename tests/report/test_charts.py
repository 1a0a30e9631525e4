"""Charts in the terminal (`--format chart`): horizontal bars, one per row, fitted to the width.

Each query that declares a chart, and `dices evaluate`, is drawn at 60, 80 and 120 columns
(Rich takes the width from COLUMNS) and read back: every bar's printed value and interval is
the query's CSV value rounded as the table for people rounds it (3 decimals: Python's
`f"{x:.3f}"` of the CSV's exact number), or, where the row has no interval, its
interval_note, with the row's label, in the row's panel and order, and no line is wider than
the terminal. Hand-made charts pin the drawing, random ones the
width and the numbers, and the error paths say what to do.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from functools import cache
from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner, Result

from dices_cli.cli.bars import panels, print_chart
from dices_cli.cli.main import app
from dices_cli.output import Table
from dices_cli.queries.catalog import Chart, parse_query

DATA = files("dices_cli") / "data"
PREDICTIONS = str(DATA / "demo-predictions.csv")
WIDTHS = (60, 80, 120)
BAR = re.compile(
    r"^(?P<lead>.*?) ?(?P<value>-?\d+\.\d{3}|nan|no value)"
    r"(?: \[(?P<low>-?\d+\.\d{3}), (?P<high>-?\d+\.\d{3})\]| \((?P<note>[^()]+)\))?$"
)
TRACK = re.compile(r"[█▒─├┤ ]+$")
HEADLINE = {"gold": "kappa", "crowd": "kappa", "crowd-share": "jsd"}  # docs/evaluate.md


def run(data: Path, *args: str, width: int = 80) -> Result:
    return CliRunner().invoke(app, [*args, "--data", str(data)], env={"COLUMNS": str(width)})


@cache
def csv_rows(data: Path, *args: str) -> list[dict[str, str]]:
    """The result of `dices ARGS -f csv`, read once for every width."""
    result = run(data, *args, "-f", "csv")
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


# ----------------------------------------------------------------------------- the reader


def rounded(value: str) -> str:
    """A CSV number as the chart prints it."""
    return "no value" if value == "" else f"{float(value):.3f}"


def read_chart(stdout: str, titles: set[str]) -> list[tuple[str, str, str]]:
    """The bars of a drawn chart: (panel title, label, printed numbers) each. The heading
    runs to the first blank line; a label above its bar (wrapped when it is long) is the
    lines since the last bar."""
    lines = stdout.splitlines()
    body = lines[lines.index("") :]
    bars, panel, label_lines = [], "", []
    for line in body:
        match = BAR.match(line)
        if line == "":
            continue
        if line in titles:
            panel = line
        elif match:
            beside = TRACK.sub("", match["lead"])
            label = beside or " ".join(label_lines)
            numbers = match["value"] + (
                f" [{match['low']}, {match['high']}]" if match["low"] else ""
            )
            numbers += f" ({match['note']})" if match["note"] else ""
            bars.append((panel, label, numbers))
            label_lines = []
        else:
            label_lines.append(line.strip())
    return bars


def expected_bars(
    rows: list[dict[str, str]], value: str, interval: tuple[str, str] | None, labels: list[str]
) -> list[tuple[str, str, str]]:
    """What the chart of CSV `rows` prints: a panel per dataset, in order of appearance;
    a row without its interval shows its interval_note, if any, instead."""
    by_panel: dict[str, list[tuple[str, str, str]]] = {}
    for row in rows:
        panel = f"dataset {row['dataset']}"
        label = " · ".join(row[name] or "(empty)" for name in labels) or "all"
        numbers = rounded(row[value])
        if interval and row[interval[0]] != "":
            numbers += f" [{rounded(row[interval[0]])}, {rounded(row[interval[1]])}]"
        elif row.get("interval_note"):
            numbers += f" ({row['interval_note']})"
        by_panel.setdefault(panel, []).append((panel, label, numbers))
    return [bar for bars in by_panel.values() for bar in bars]


def assert_fits(stdout: str, width: int) -> None:
    too_wide = [line for line in stdout.splitlines() if cell_len(line) > width]
    assert not too_wide, stdout


# ----------------------------------------------------------------------------- the queries

WILSON = ("share_yes_ci_low", "share_yes_ci_high")
NULL_RANGE = ("irr_null_low", "irr_null_high")  # what as many raters drawn at random score
QUERY_CASES = [
    # arguments, value, interval, label columns
    (
        ["qoverall-by-demographic", "--by", "rater_age"],
        "share_yes",
        ("share_yes_ci_low", "share_yes_ci_high"),
        ["rater_age"],
    ),
    (
        ["qoverall-by-demographic", "--by", "rater_gender", "--by", "rater_race"],
        "share_yes",
        ("share_yes_ci_low", "share_yes_ci_high"),
        ["rater_gender", "rater_race"],
    ),
    (  # labels of up to 99 characters: above their bars, wrapped at 60
        ["qoverall-by-demographic", "--by", "rater_raw_race", "-d", "350"],
        "share_yes",
        ("share_yes_ci_low", "share_yes_ci_high"),
        ["rater_raw_race"],
    ),
    (["degree-of-harm"], "share_yes", WILSON, ["degree_of_harm"]),
    (
        ["degree-of-harm", "--by", "rater_age"],
        "share_yes",
        WILSON,
        ["rater_age", "degree_of_harm"],
    ),
    (["harm-types"], "share_yes", WILSON, ["harm_tag"]),
    (["agreement", "--permutations", "5"], "irr", NULL_RANGE, []),  # the pool: no range
    (
        ["agreement", "--by", "rater_gender", "--permutations", "20"],
        "irr",
        NULL_RANGE,
        ["rater_gender"],
    ),
    (
        ["agreement", "--by", "rater_age", "--permutations", "20", "--seed", "3"],
        "irr",
        NULL_RANGE,
        ["rater_age"],
    ),
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    ("arguments", "value", "interval", "labels"),
    QUERY_CASES,
    ids=[" ".join(c[0]) for c in QUERY_CASES],
)
def test_every_bar_prints_its_csv_value(
    sample: Path,
    arguments: list[str],
    value: str,
    interval: tuple[str, str] | None,
    labels: list[str],
    width: int,
) -> None:
    drawn = run(sample, "query", *arguments, "-f", "chart", width=width)
    assert (drawn.exit_code, drawn.stderr) == (0, ""), drawn.output
    rows = csv_rows(sample, "query", *arguments)
    expected = expected_bars(rows, value, interval, labels)
    assert len(expected) == len(rows) > 1
    if interval and "--by" in arguments:  # every group has its interval, or says why not
        assert all((row[interval[0]] != "") != bool(row.get("interval_note")) for row in rows)
        assert any(row[interval[0]] != "" for row in rows)
    assert read_chart(drawn.stdout, {panel for panel, _, _ in expected}) == expected
    assert_fits(drawn.stdout, width)
    heading = f"{arguments[0]}: {value}" + (f" [{interval[0]}, {interval[1]}]" if interval else "")
    assert " ".join(drawn.stdout.split("\n\n")[0].split()) == heading


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("by", [[], ["--by", "rater_gender"]], ids=["pool", "by gender"])
def test_evaluate_draws_each_models_headline_metric(
    sample: Path, by: list[str], width: int
) -> None:
    arguments = ["evaluate", PREDICTIONS, "--bootstrap", "30", *by]
    drawn = run(sample, *arguments, "-f", "chart", width=width)
    assert drawn.exit_code == 0, drawn.output
    rows = csv_rows(sample, *arguments)
    by_panel: dict[str, list[tuple[str, str, str]]] = {}
    for row in rows:
        metric = HEADLINE[row["reference"]]
        panel = f"dataset {row['dataset']}, reference {row['reference']}, metric {metric}"
        groups = [row["rater_gender"] or "all"] if by else []
        label = " · ".join([row["model"], *groups])
        numbers = f"{rounded(row[metric])} [{rounded(row[metric + '_low'])}, "
        numbers += f"{rounded(row[metric + '_high'])}]"
        by_panel.setdefault(panel, []).append((panel, label, numbers))
    expected = [bar for bars in by_panel.values() for bar in bars]
    assert len(expected) == len(rows) >= 6  # two models x three references (x groups)
    assert read_chart(drawn.stdout, set(by_panel)) == expected
    assert_fits(drawn.stdout, width)
    assert drawn.stdout.startswith("evaluate: headline [headline_low, headline_high]\n")


def test_sort_and_limit_choose_the_bars(sample: Path) -> None:
    arguments = ["query", "harm-types", "-d", "350", "--sort", "-share_yes", "--limit", "3"]
    drawn = run(sample, *arguments, "-f", "chart")
    rows = csv_rows(sample, *arguments)
    assert drawn.exit_code == 0, drawn.output
    assert read_chart(drawn.stdout, {"dataset 350"}) == expected_bars(
        rows, "share_yes", WILSON, ["harm_tag"]
    )
    assert len(rows) == 3


def test_no_rows_draws_the_heading_and_says_so(sample: Path) -> None:
    drawn = run(sample, "query", "harm-types", "--limit", "0", "-f", "chart")
    assert (drawn.exit_code, drawn.stdout, drawn.stderr) == (
        0,
        "harm-types: share_yes [share_yes_ci_low, share_yes_ci_high]\n",
        "... no rows to draw\n",
    )


# ----------------------------------------------------------------------------- the errors


def usage_error(result: Result, command: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    first, hint = result.stderr.splitlines()
    assert hint == f"Try 'dices {command} -h' for help."
    return first


def test_a_query_without_a_chart_names_the_ones_with_one(tmp_path: Path) -> None:
    # Before the work: the data directory does not exist.
    result = run(tmp_path / "none", "query", "overview", "-f", "chart")
    assert usage_error(result, "query") == (
        "Error: --format chart: overview has no chart; the queries agreement, degree-of-harm, "
        "harm-types, qoverall-by-demographic and dices evaluate draw one"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["query", "qoverall-by-demographic", "--by", "rater_age"],
        ["evaluate", PREDICTIONS],
    ],
)
def test_a_chart_into_a_file_is_a_usage_error_before_the_work(
    tmp_path: Path, arguments: list[str]
) -> None:
    target = tmp_path / "chart.txt"
    result = run(tmp_path / "none", *arguments, "-f", "chart", "-o", str(target))
    assert usage_error(result, arguments[0]) == (
        "Error: --format chart is for the terminal; with -o pick csv, tsv, json, jsonl or parquet"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("arguments", "command"),
    [(["info"], "info"), (["sql", "SELECT 1"], "sql"), (["export", "-d", "350"], "export")],
)
def test_a_command_without_a_chart_refuses_it(
    sample: Path, arguments: list[str], command: str
) -> None:
    result = run(sample, *arguments, "-f", "chart")
    assert usage_error(result, command) == (
        "Error: --format chart: this command draws no chart (the distribution queries and "
        "evaluate do); pick table, csv, tsv, json, jsonl or parquet"
    )


def test_a_chart_needs_its_columns(sample: Path) -> None:
    result = run(sample, "query", "harm-types", "--columns", "dataset,harm_tag", "-f", "chart")
    assert usage_error(result, "query") == (
        "Error: --format chart needs the column share_yes; keep it in --columns or leave "
        "--columns out"
    )


def test_the_help_says_what_the_chart_draws(sample: Path) -> None:
    result = run(sample, "query", "degree-of-harm", "--help", width=200)
    assert result.exit_code == 0, result.output
    assert (
        "Chart (--format chart): one bar per row of share_yes, its interval from "
        "share_yes_ci_low to share_yes_ci_high, labelled by the --by columns, degree_of_harm, "
        "a panel per dataset."
    ) in result.stdout


# ----------------------------------------------------------------------------- the header


HEADER = """-- name: q
-- summary: s
-- param by: columns = []: Groups.
-- column dataset: d
-- column {by}: g
-- column share: s
-- column low: l
-- column high: h
"""


def test_the_chart_line_is_parsed_and_resolved() -> None:
    query = parse_query(
        Path("q.sql"), HEADER + "-- chart: share [low, high] by {by} per dataset\nSELECT 1"
    )
    assert query.chart == Chart("share", "low", "high", ("{by}",), ("dataset",))
    resolved = query.chart.resolved({"by": ["rater_gender", "phase"]})
    assert resolved.labels == ("phase", "rater_gender")  # the data's order, as the columns


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("-- chart: share by nothing", "q.sql: chart: nothing is not a declared column"),
        ("-- chart: share [low] by {by}", "q.sql: malformed chart line"),
        ("-- chart: missing", "q.sql: chart: missing is not a declared column"),
    ],
)
def test_a_bad_chart_line_is_refused(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_query(Path("q.sql"), HEADER + line + "\nSELECT 1")


# ----------------------------------------------------------------------------- the drawing


def drawn(table: Table, chart: Chart, width: int) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_chart(table, chart, "t", width=width)
    return out.getvalue()


def test_bars_value_and_interval_are_drawn_on_one_scale() -> None:
    table = Table(
        ["group", "v", "lo", "hi"],
        [False, True, True, True],
        [
            ("a", 0.5, 0.25, 0.75),
            ("b", -0.25, -0.5, 0.0),
            ("c", None, None, None),
            ("d", 1.0, None, None),
        ],
    )
    assert drawn(table, Chart("v", "lo", "hi", ("group",)), 40) == (
        "t: v [lo, hi]\n"
        "\n"
        # 15 cells for -0.5 to 1: 0 at the 6th, 0.25 and 0.75 rounded to cells 8 and 12
        "a      ███▒▒─┤ 0.500 [0.250, 0.750]\n"
        "b ├─▒▒▒ -0.250 [-0.500, 0.000]\n"
        "c no value\n"
        "d      ██████████ 1.000\n"
    )


def test_a_row_without_its_interval_says_why() -> None:
    table = Table(
        ["group", "v", "lo", "hi", "interval_note"],
        [False, True, True, True, False],
        [
            ("a", 0.5, 0.25, 0.75, None),
            ("b", 0.25, None, None, "fewer than 5 raters"),
            ("c", None, None, None, "no ratings"),
            ("d", 1.0, None, None, None),
        ],
    )
    assert drawn(table, Chart("v", "lo", "hi", ("group",)), 50) == (
        "t: v [lo, hi]\n"
        "\n"
        # 20 cells for 0 to 1: 50 less the label (2) and the widest numbers (1 + 27)
        "a █████▒▒▒▒▒────┤ 0.500 [0.250, 0.750]\n"
        "b █████ 0.250 (fewer than 5 raters)\n"
        "c no value (no ratings)\n"
        "d ████████████████████ 1.000\n"
    )


def test_labels_too_long_to_sit_beside_go_above_whole() -> None:
    label = "Indian subcontinent (including Bangladesh, Bhutan and India)"
    table = Table(["group", "v"], [False, True], [(label, 0.5), ("x", 1.0)])
    assert drawn(table, Chart("v", labels=("group",)), 30) == (
        "t: v\n"
        "\n"
        "Indian subcontinent (including\n"
        "Bangladesh, Bhutan and India)\n"
        "  ███████████ 0.500\n"
        "x\n"
        "  ██████████████████████ 1.000\n"
    )


@given(
    values=st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.none(),
        min_size=1,
        max_size=8,
    ),
    labels=st.lists(
        st.text(st.characters(codec="utf-8", categories=["L", "N"]), max_size=50),
        min_size=8,
        max_size=8,
    ),
    width=st.integers(30, 200),
)
def test_random_charts_fit_and_print_every_value(
    values: list[float | None], labels: list[str], width: int
) -> None:
    rows = [(label, value) for label, value in zip(labels, values, strict=False)]
    table = Table(["group", "v"], [False, True], rows)
    chart = Chart("v", labels=("group",))
    text = drawn(table, chart, width)
    printed = [BAR.match(line)["value"] for line in text.splitlines()[2:] if BAR.match(line)]
    assert printed == ["no value" if v is None else f"{v:.3f}" for v in values]
    assert [bar.label for panel in panels(table, chart) for bar in panel.bars] == [
        label or "(empty)" for label in labels[: len(values)]
    ]
    assert_fits(text, width)
