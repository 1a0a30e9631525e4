"""Hostile text on the way out: control characters in a rater's value or a model's name.

Such values are accepted by `ingest` and `evaluate` (the DICES CSV refuses only NUL), so every
surface that draws them must hold: a terminal gets them escaped (`terminal_text.printable`:
tables, bar charts, messages), the report draws them escaped (vl-convert aborted the process
on a character XML cannot hold) and keeps its ids apart from its text, and the data formats
keep them exact: CSV and TSV quote a lone CR, as a reader (Python's csv module, pandas)
needs, and `--excel-safe` defuses formula-looking text in every CSV export.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import re
import shlex
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import regex
from fixtures.dices_csv import header, rows, to_csv
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.families.schema import GENDER
from dices_cli.report import charts
from dices_cli.report import svg as report_svg
from dices_cli.report.page import NOT_DRAWN, Provenance, _scoped, page
from dices_cli.terminal_text import printable
from tests.hostile.test_bounded_input import run_capped

pytestmark = pytest.mark.slow  # a hostile corpus

# Sequences a terminal obeys: colour, cursor moves, clearing, the window title, and the C1
# form of CSI (0x9b) that some terminals take for ESC [.
SEQUENCES = ["\x1b[31m", "\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x9b31m", "\x1b[1A\r"]
CONTROLS = [chr(c) for c in (*range(1, 32), *range(0x7F, 0xA0))] + ["\ufffe", "\uffff"]
# Characters that reorder text (the bidirectional controls: "Trojan Source") or hide it.
FORMATS = [*"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"]
FORMATS += [*"\u200b\u2060\ufeff\u00ad\U000e0041"]
# A value of the data: text with controls and sequences among ordinary (and wide) characters.
# NUL is left out: the DICES CSV refuses it (`nul-character`).
hostile_text = (
    st.lists(
        st.one_of(
            st.sampled_from(SEQUENCES),
            st.sampled_from(CONTROLS),
            st.sampled_from(FORMATS),
            st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=4),
        ),
        min_size=1,
        max_size=6,
    )
    .map("".join)
    .filter(str.strip)
)  # an empty or blank value is refused (`missing-value`)


def visible(text: str) -> str:
    """The reference for `printable`, from Unicode's own categories: a control (Cc), a
    surrogate (Cs) or a format character (Cf, but the joiners U+200C and U+200D), or
    U+FFFE/U+FFFF, as a \\x, \\u or \\U escape."""
    out = []
    for character in text:
        category = unicodedata.category(character)
        if (
            category in ("Cc", "Cs")
            or character in "\ufffe\uffff"
            or (category == "Cf" and character not in "\u200c\u200d")
        ):
            code = ord(character)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(character)
    return "".join(out)


def drawn(text: str) -> str:
    """A value as a table or bar label shows it: one line, blanks trimmed, escaped."""
    return printable(text.replace("\r", " ").replace("\n", " ").replace("\t", " ").strip())


def unprintable(output: str) -> list[str]:
    """The characters a terminal would obey, other than the line feeds of the output."""
    return sorted({c for c in output if c != "\n" and visible(c) != c})


@contextlib.contextmanager
def ingested_values(values: list[str]) -> Iterator[Path]:
    """A data directory whose DICES-350 raters have `values` as rater_gender, one each."""
    table = rows("350", 2, len(values))
    raters = list(dict.fromkeys(row["rater_id"] for row in table))
    for row in table:
        row["rater_gender"] = values[raters.index(row["rater_id"])]
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "dices_350.csv"
        source.write_bytes(to_csv(header("350"), [list(r.values()) for r in table]))
        result = CliRunner().invoke(app, ["ingest", str(source), "--data", f"{scratch}/data"])
        assert result.exit_code == 0, result.output
        assert unprintable(result.stderr) == []
        for value in values:
            if value not in GENDER:  # a new value: warned about, on one line
                assert f"'{printable(value[:60])}" in result.stderr
        yield Path(scratch) / "data"


def predictions_file(directory: Path, models: list[str]) -> Path:
    """Each model's label for the first two conversations of `rows`, as CSV."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # lines end in CRLF, so CR and LF in a name are quoted
    writer.writerow(["model", "item_id", "label"])
    for model in models:
        writer.writerows([[model, 173, "Yes"], [model, 32, "No"]])
    target = directory / "predictions.csv"
    target.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return target


def read_csv(text: str, delimiter: str = ",") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))


def invoke(*arguments: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr, as written: Click's `Result.stdout` turns CRLF into LF."""
    result = CliRunner().invoke(app, list(arguments))
    return result.exit_code, result.stdout_bytes.decode(), result.stderr_bytes.decode()


def _drawn_in(text: str, stdout: str) -> bool:
    """Whether `text` (as drawn) is in `stdout`, read across the lines a table wraps a cell
    onto: it wraps at spaces, so the words stay whole and in order."""
    position = 0
    for word in text.split():
        found = stdout.find(word, position)
        if found < 0:
            return False
        position = found + len(word)
    return True


# An example runs ten commands (2.7 s): a quarter of the profile's examples (7 in `ci`, each
# of up to three values).
@settings(max_examples=max(settings.default.max_examples // 4, 1))
@given(values=st.lists(hostile_text, min_size=1, max_size=3, unique=True))
def test_every_terminal_surface_shows_control_characters_escaped(values: list[str]) -> None:
    """The values as rater groups (`query` and `sql` tables and bars) and as model names
    (`evaluate` tables and bars), and the ingest warning: nothing a terminal would obey is
    written, and each value is drawn as `printable` makes it; CSV and JSON keep the values
    exactly."""
    with ingested_values(values) as data:
        by_group = ["qoverall-by-demographic", "--by", "rater_gender", "--data", str(data)]
        for fmt in ("table", "chart"):
            code, stdout, stderr = invoke("query", *by_group, "-f", fmt)
            assert code == 0, stderr
            assert unprintable(stdout + stderr) == []
            for value in values:
                assert _drawn_in(drawn(value), stdout)
        sql = ["sql", "SELECT rater_gender FROM raters", "--data", str(data)]
        code, stdout, stderr = invoke(*sql, "-f", "table")
        assert code == 0, stderr
        assert unprintable(stdout + stderr) == []
        code, stdout, _ = invoke(*sql, "-f", "json")
        assert {r["rater_gender"] for r in json.loads(stdout)} >= set(values)
        code, stdout, _ = invoke("query", *by_group, "-f", "csv")
        assert {r["rater_gender"] for r in read_csv(stdout)} == set(values)

        # Framed: a predictions reader trims the blanks around a name.
        names = [f"<{value}>" for value in values]
        models = predictions_file(data.parent, names)
        scored = ["evaluate", str(models), "--data", str(data), "--bootstrap", "0"]
        for fmt in ("table", "chart"):
            code, stdout, stderr = invoke(*scored, "-f", fmt)
            assert code == 0, stderr
            assert unprintable(stdout + stderr) == []
            for name in names:
                assert _drawn_in(drawn(name), stdout)
        code, stdout, _ = invoke(*scored, "-f", "csv")
        assert {r["model"] for r in read_csv(stdout)} == set(names)


WORST = ["\x01one", "\x1b[31mred", "form\x0cfeed", "non\ufffechar", "\uffffend", "c1\x85\x9b"]
WORST += ["\u202eevil\u2066 fo\u200bo"]  # reorders, hides


def test_the_report_draws_control_characters_escaped_and_keeps_its_tables(
    tmp_path: Path,
) -> None:
    """Rater values and model names holding \\x01, ESC, \\x0c, U+FFFE, U+FFFF, C1 controls,
    bidirectional controls and U+200B: the report is written (vl-convert used to abort the
    whole process), its charts and tables show each value escaped, and no control or format
    character is in the page."""
    values = [*WORST, 'url(#clip1) id="x" href="#y"']
    with ingested_values(values) as data:
        models = predictions_file(tmp_path, values)
        target = tmp_path / "report.html"
        code, _, stderr = invoke(
            "report",
            *("-d", "350", "--by", "rater_gender", "--permutations", "20"),
            *("--predictions", str(models), "--bootstrap", "20"),
            *("--data", str(data), "-o", str(target)),
        )
    assert (code, stderr) == (0, f"wrote {target}\n")
    page = target.read_text(encoding="utf-8")
    assert unprintable(page) == []
    for value in WORST:
        assert f"<td>{printable(value)}</td>" in page  # the tables: the value, escaped
        assert f">{printable(value)}</text>" in page  # the charts' labels
    # Chart text that reads like an SVG reference is drawn as it is, not rewritten.
    assert ">url(#clip1) id=&quot;x&quot; href=&quot;#y&quot;</td>" in page
    assert '>url(#clip1) id="x" href="#y"</text>' in page
    assert "url(#figure-" not in page.replace('="url(#figure-', "")


@pytest.fixture(scope="module")
def drawer() -> Iterator[report_svg.Drawer]:
    with report_svg.Drawer() as drawing:
        yield drawing


# Beyond the BMP included: Vega cut an axis label longer than its labelLimit inside a UTF-16
# surrogate pair, and vl-convert then failed to measure it ("unexpected end of hex escape").
# Long runs of wide and astral characters put one at the cut.
any_text = st.lists(
    st.one_of(
        st.sampled_from(SEQUENCES),
        st.sampled_from(CONTROLS),
        st.sampled_from(FORMATS),
        st.sampled_from(["W" * 37, "😀" * 21, "\U00011375" * 40, "👩‍💻" * 9, "🇫🇷" * 11]),
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=4),
    ),
    min_size=1,
    max_size=6,
).map("".join)


@given(labels=st.lists(any_text, min_size=1, max_size=4, unique=True))
def test_any_text_is_drawn_by_the_chart_renderer(
    drawer: report_svg.Drawer, labels: list[str]
) -> None:
    """Any text as labels, titles and panel names: vl-convert draws it (in its own process,
    so that an abort is an error here, not the end of the test run), escaped."""
    data = [{"group": label, "n": i + 1, "panel": label} for i, label in enumerate(labels)]
    spec = charts.bars(labels[0], labels[-1], data, ("group", None), charts.count("n", "n"))
    svg = drawer.draw(spec).result()
    assert unprintable(svg) == []


# The value that failed (typed with real backslashes), an astral character at Vega's cut.
AT_THE_CUT = [
    r"\x1b[31m\x1b[31m\x1b[2J\x1b[H\x1b[2J\x1b[H0" + "\U00011375",
    "W" * 38 + "😀" * 10,
    "x" * 30 + "👩‍💻" * 10,
    "🇫🇷" * 25,
]


def test_labels_beyond_the_bmp_at_the_cut_are_drawn_cut_between_characters(
    drawer: report_svg.Drawer,
) -> None:
    """Each of these made vl-convert fail; each is now drawn, cut by dices (an ellipsis
    after whole characters: a flag, a joined emoji) before Vega sees it."""
    for value in AT_THE_CUT:
        data = [{"group": value, "n": 1, "panel": value}]
        spec = charts.bars("t", "d", data, ("group", None), charts.count("n", "n"))
        svg = drawer.draw(spec).result()
        assert svg is not None
        cut = charts.short(value, charts.LABEL_COLUMNS)
        assert cut != value and cut.endswith("…")
        assert f">{cut}</text>" in svg  # the axis label and the panel's header
        assert value not in svg


def test_the_report_draws_rater_values_and_model_names_beyond_the_bmp_at_the_cut(
    tmp_path: Path,
) -> None:
    """The values above as rater groups and model names: the report is written (it ended
    with exit 1), each chart label cut between characters, each table cell whole."""
    with ingested_values(AT_THE_CUT) as data:
        models = predictions_file(tmp_path, AT_THE_CUT)
        target = tmp_path / "report.html"
        code, _, stderr = invoke(
            "report",
            *("-d", "350", "--by", "rater_gender", "--permutations", "20"),
            *("--predictions", str(models), "--bootstrap", "20"),
            *("--data", str(data), "-o", str(target)),
        )
    assert (code, stderr) == (0, f"wrote {target}\n")
    page = target.read_text(encoding="utf-8")
    for value in AT_THE_CUT:
        assert f"<td>{html.escape(value)}</td>" in page
        assert f">{html.escape(charts.short(value, charts.LABEL_COLUMNS))}</text>" in page
        assert f">{html.escape(charts.short(value, 24))}</text>" in page  # a model's label


def test_texts_cut_alike_are_kept_apart(drawer: report_svg.Drawer) -> None:
    """Two groups whose names differ only past the cut stay two groups (bars), not one."""
    names = ["x" * 50 + "1", "x" * 50 + "2"]
    data = [{"group": name, "n": i + 1, "panel": "p"} for i, name in enumerate(names)]
    spec = charts.bars("t", "d", data, ("group", None), charts.count("n", "n"))
    svg = drawer.draw(spec).result()
    assert svg is not None
    cut = "x" * (charts.LABEL_COLUMNS - 1) + "…"
    assert [f">{cut}</text>" in svg, f">{cut} (2)</text>" in svg] == [True, True]
    assert svg.count('role="graphics-symbol" aria-roledescription="bar"') == 2


# Letters, combining marks (Mn, Mc), joiners, emoji with skin tones and emoji style, the
# halves of flags (regional indicators, tags), CJK: what labels are cut between.
CLUSTERED = [
    *"aeW 日é",
    *"\u0301\u0308\u093f\u200c\u200d\ufe0f",
    *"😀👩💻❤🏴",
    *"\U0001f3fd\U0001f1eb\U0001f1f7\U000e0067\U000e007f",
]


@given(st.text(st.sampled_from(CLUSTERED)))
def test_user_perceived_characters_are_unicodes_grapheme_clusters(text: str) -> None:
    """`_graphemes` against the `regex` module's \\X (Unicode's extended grapheme clusters)."""
    assert list(charts._graphemes(text)) == regex.findall(r"\X", text)


@given(st.text(st.characters(blacklist_categories=("Cs",))), st.integers(2, 60))
def test_a_cut_label_is_whole_characters_within_its_columns(text: str, limit: int) -> None:
    """`short`, against Unicode's own widths: the text itself when it fits, else whole
    user-perceived characters from its start and an ellipsis, within `limit` columns."""
    cut = charts.short(text, limit)
    clusters = list(charts._graphemes(text))
    assert "".join(clusters) == text

    def columns(part: str) -> int:
        """Wide: East Asian Wide or Fullwidth, a regional indicator (half a flag), U+FE0F."""
        return sum(
            2
            if unicodedata.east_asian_width(c[0]) in "WF"
            or 0x1F1E6 <= ord(c[0]) <= 0x1F1FF
            or "\ufe0f" in c
            else 1
            for c in charts._graphemes(part)
        )

    if columns(text) <= limit:
        assert cut == text
    else:
        kept = cut.removesuffix("…")
        assert cut.endswith("…") and columns(kept) + 1 <= limit
        assert kept == "".join(clusters[: len(list(charts._graphemes(kept)))])
        assert columns(kept) + 1 + columns(clusters[len(list(charts._graphemes(kept)))]) > limit


# Text that reads in another order than it is written: bidirectional controls among
# Hebrew and Arabic letters, digits, and the rest of a path or an argument.
reordering_text = st.text(
    st.one_of(
        st.sampled_from(FORMATS),
        st.characters(min_codepoint=0x5D0, max_codepoint=0x5EA),
        st.characters(min_codepoint=0x627, max_codepoint=0x64A),
        st.sampled_from("ab 01-_./'\"<>&;"),
    ),
    min_size=1,
)


@given(
    arguments=st.lists(reordering_text, min_size=1, max_size=3),
    source=reordering_text,
    stored=reordering_text,
    selection=reordering_text,
)
def test_text_from_outside_cannot_reorder_the_provenance(
    arguments: list[str], source: str, stored: str, selection: str
) -> None:
    """The command's arguments, the source and stored file names, the filter and the rater
    selection: each escaped (no bidirectional control or other format character is left on
    the page: `\\u202e`), and each in a <bdi> of its own, so that right-to-left letters in
    one cannot move the text around it."""
    manifest = {
        "title": "DICES-350",
        "source": {"name": source, "sha256": "0" * 64},
        "files": {stored: {"sha256": "1" * 64}},
        "counts": {"conversations": 1, "raters": 2, "ratings": 3},
        "created": "2026-01-01T00:00:00+00:00",
        "filter": {"description": selection},
    }
    command = shlex.join(["dices", "report", *arguments])
    made = Provenance(command, "1.0", "2026-01-01T00:00:00+00:00", selection, [manifest])
    document = page([], [], made)
    assert unprintable(document) == []

    def isolated(text: str) -> str:
        return f"<bdi>{html.escape(printable(text))}</bdi>"

    shown = " ".join(isolated(shlex.quote(part)) for part in ["dices", "report", *arguments])
    assert f"<code>{shown}</code>" in document
    assert f"<td>{isolated(source)}<br>" in document
    assert f"<td>{isolated(stored)}: <span class=hash>" in document
    assert f"<dt>Raters</dt><dd>{isolated(selection)}</dd>" in document
    assert f"<td>{isolated(selection)}</td>" in document  # the filter
    assert f"<p>Raters: {isolated(selection)}. " in document


def test_ids_are_scoped_in_attributes_only() -> None:
    """A chart's own ids and references get the figure's prefix; text that looks like one,
    in a label or an aria-label, is left as it is."""
    svg = (
        '<svg><defs><clipPath id="clip1"><rect/></clipPath>'
        '<linearGradient id="gradient_0"/></defs>'
        '<g clip-path="url(#clip1)" aria-label="url(#clip1) id=&quot;x&quot;">'
        '<path fill="url(#gradient_0)"/><use href="#clip1"/><use xlink:href="#clip1"/>'
        '<text fill="#000">url(#clip1) id="x" href="#y"</text></g></svg>'
    )
    assert _scoped(svg, "figure-2") == (
        '<svg><defs><clipPath id="figure-2-clip1"><rect/></clipPath>'
        '<linearGradient id="figure-2-gradient_0"/></defs>'
        '<g clip-path="url(#figure-2-clip1)" aria-label="url(#clip1) id=&quot;x&quot;">'
        '<path fill="url(#figure-2-gradient_0)"/><use href="#figure-2-clip1"/>'
        '<use xlink:href="#figure-2-clip1"/>'
        '<text fill="#000">url(#clip1) id="x" href="#y"</text></g></svg>'
    )


CR_VALUES = ["lone\rcr", "cr at end\r", "\rcr first", "crlf\r\ninside", "tab\tand,comma", 'q"q']


@pytest.mark.parametrize(
    "arguments",
    [
        # A canned query's rows, written from Python values (`output.Table`).
        ["query", "qoverall-by-demographic", "--by", "rater_gender"],
        # A statement's rows, written from Arrow batches (`arrow_text`).
        ["sql", "SELECT rater_id, rater_gender FROM raters ORDER BY rater_id"],
        # A layout, written from a stream.
        ["export", "-d", "350", "--layout", "long"],
        ["export", "-d", "350", "--layout", "soft-labels", "--by", "rater_gender"],
    ],
    ids=["query", "sql", "export-long", "export-soft-labels"],
)
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_every_delimited_writer_quotes_cr_lf_and_the_delimiter(
    arguments: list[str], fmt: str
) -> None:
    """Read back by Python's csv module and by pandas, each writer's output has exactly its
    rows, each value whole: a lone CR, a CR at either end, CRLF, a tab, a comma, a quote."""
    with ingested_values(CR_VALUES) as data:
        code, stdout, stderr = invoke(*arguments, "--data", str(data), "-f", fmt)
        json_code, json_out, _ = invoke(*arguments, "--data", str(data), "-f", "json")
    assert (code, json_code) == (0, 0), stderr
    expected = json.loads(json_out)
    delimiter = "," if fmt == "csv" else "\t"
    records = read_csv(stdout, delimiter)
    assert len(records) == len(expected)
    assert [r["rater_gender"] for r in records] == [e["rater_gender"] for e in expected]
    assert set(CR_VALUES) <= {r["rater_gender"] for r in records}
    frame = pd.read_csv(io.StringIO(stdout), sep=delimiter, dtype=str, keep_default_na=False)
    assert list(frame["rater_gender"]) == [e["rater_gender"] for e in expected]


FORMULAS = ["=1+1", "+1 555", "-x", "@SUM(A1)", "\tTab first", "\rCR first", "plain = b"]


@pytest.mark.parametrize(
    "layout", [["--layout", "long"], ["--layout", "soft-labels", "--by", "rater_gender"]]
)
def test_excel_safe_defuses_every_csv_layout(layout: list[str]) -> None:
    """Formula-looking rater values get a leading quote in the long and soft-labels CSVs,
    as in the wide one; numbers, ids and other text are written as without the flag."""
    with ingested_values(FORMULAS) as data:
        export = ["export", "-d", "350", *layout, "--data", str(data), "-f", "csv"]
        plain_code, plain, _ = invoke(*export)
        code, safe, stderr = invoke(*export, "--excel-safe")
    assert (plain_code, code, stderr) == (0, 0, "")
    plain_rows = list(csv.reader(io.StringIO(plain, newline="")))
    safe_rows = list(csv.reader(io.StringIO(safe, newline="")))
    assert len(plain_rows) == len(safe_rows)
    changed = 0
    for before, after in zip(plain_rows[1:], safe_rows[1:], strict=True):
        for old, new in zip(before, after, strict=True):
            if old[:1] in ("=", "+", "-", "@", "\t", "\r") and not _number(old):
                assert new == "'" + old
                changed += 1
            else:
                assert new == old
    assert changed >= 6  # each formula value, on each of its rows


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--layout", "judge-bench"], "--excel-safe is for CSV, which spreadsheets open"),
        (["--layout", "long", "-f", "tsv"], "--excel-safe is for CSV, which spreadsheets open"),
        (["--layout", "long", "-f", "json"], "--excel-safe is for CSV, which spreadsheets open"),
    ],
)
def test_excel_safe_outside_csv_is_a_usage_error(
    options: list[str], message: str, tmp_path: Path
) -> None:
    with ingested_values(["=1+1"]) as data:
        code, stdout, stderr = invoke(
            "export", "-d", "350", *options, "--excel-safe", "--data", str(data)
        )
    assert (code, stdout) == (2, "")
    assert stderr == f"Error: {message}; leave it out\nTry 'dices export -h' for help.\n"


@pytest.mark.parametrize("gib", [4, 2])
def test_the_report_under_an_address_space_cap_shows_its_tables_in_place_of_its_charts(
    gib: int, tmp_path: Path
) -> None:
    """`ulimit -v` below what vl-convert's JavaScript engine reserves at its start (measured:
    about 65 GiB; see `report_svg.RENDERER_ADDRESS_SPACE`), in a fresh process: the report is
    written whole (exit 0), each figure's table open in place of its chart, with one warning
    line naming the cap and the fix, on stderr and atop the page; no crash dump."""
    with ingested_values(["Man", "Woman"]) as data:
        models = predictions_file(tmp_path, ["model-a"])
        target = tmp_path / "report.html"
        code, stderr, _ = run_capped(
            [
                *("report", "-d", "350", "--by", "rater_gender", "--permutations", "20"),
                *("--predictions", str(models), "--bootstrap", "20"),
                *("--data", str(data), "-o", str(target)),
            ],
            cap=gib << 30,
        )
    why = (
        "the charts are not drawn, each figure shows its table instead: the chart renderer "
        "(vl-convert) reserves about 65 GiB of address space at its start, and this process "
        f"may use {gib}.0 GiB (ulimit -v {gib << 20}); to draw them, run under "
        "ulimit -v 68000000 or more, or ulimit -v unlimited"
    )
    assert (code, stderr) == (0, f"warning: {why}\nwrote {target}\n")
    page = target.read_text(encoding="utf-8")
    figures = re.findall(r"<figure id=.*?</figure>", page)
    assert len(figures) == 11  # every figure of this report
    for figure in figures:
        assert f'<p class="note">{NOT_DRAWN}</p>' in figure
        assert "<details open><summary>Numbers behind figure" in figure
    assert "<svg" not in page
    assert page.count(f'<p class="note">Note: {why}.</p>') == 1
    assert page.endswith("</section></main></body></html>\n")  # whole, provenance included


# --- where a file is written (issue 36): never into a data directory, never through a link ---


@pytest.fixture
def sample_copy(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


@pytest.mark.parametrize("inside", ["350", ".store", "350/sub", ".store/x"])
def test_filter_raters_never_writes_inside_a_data_directory(
    inside: str, sample_copy: Path, runner: CliRunner
) -> None:
    """`filter-raters --write DIR/350` was accepted; it said "use --data DIR/350", which is
    refused, and the next `ingest --force` deleted what it wrote without a word."""
    before = sorted(str(p.relative_to(sample_copy)) for p in sample_copy.rglob("*"))
    target = sample_copy / inside
    args = ["filter-raters", "--min-quality", "0.5", "--write", str(target)]
    result = runner.invoke(app, [*args, "--data", str(sample_copy)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: --write {target} is inside the data directory {sample_copy}; give a directory "
        f"of its own, outside it (such as data-filtered next to it)\n"
        "Try 'dices filter-raters -h' for help.\n"
    )
    assert sorted(str(p.relative_to(sample_copy)) for p in sample_copy.rglob("*")) == before


def test_filter_raters_writes_a_directory_of_its_own(
    sample_copy: Path, tmp_path: Path, runner: CliRunner
) -> None:
    target = tmp_path / "data-filtered"
    args = ["filter-raters", "--min-quality", "0.5", "--write", str(target), "-q"]
    result = runner.invoke(app, [*args, "--data", str(sample_copy)])
    assert result.exit_code == 0, result.output
    assert (target / "350" / "manifest.json").is_file()


@pytest.mark.parametrize("inside", ["350/out.csv", ".store/out.csv"])
def test_no_output_file_is_written_inside_a_data_directory(
    inside: str, sample_copy: Path, sample: Path, runner: CliRunner
) -> None:
    """Another data directory than the one read: its dataset folder or `.store`."""
    target = sample_copy / inside
    args = ["sql", "SELECT 1 AS n", "--data", str(sample), "-o", str(target), "--force"]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: -o {target} is inside the data directory {sample_copy}; choose another file\n"
    )
    assert not (sample_copy / ".store" / "out.csv").exists()


def test_an_output_file_that_is_a_link_is_never_followed(
    sample: Path, tmp_path: Path, runner: CliRunner
) -> None:
    """A link at -o FILE: refused as an existing file; with --force the link itself is
    replaced, and the file it pointed to is left as it was."""
    victim = tmp_path / "victim.txt"
    victim.write_text("canary\n", encoding="utf-8")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "nowhere.csv")
    for path in (link, dangling):
        args = ["sql", "SELECT 1 AS n", "--data", str(sample), "-o", str(path)]
        result = runner.invoke(app, args)
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr == f"Error: {path} exists; use --force to overwrite it\n"
        result = runner.invoke(app, [*args, "--force"])
        assert result.exit_code == 0, result.output
        assert not path.is_symlink()
        assert path.read_text(encoding="utf-8") == "n\n1\n"
    assert victim.read_text(encoding="utf-8") == "canary\n"
    assert not (tmp_path / "nowhere.csv").exists()
