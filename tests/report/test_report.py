"""`dices report`: one self-contained HTML file whose charts draw the canned queries' rows.

The report of both replica datasets is built once per module and opened in headless
Chromium (Debian's `chromium`): every chart must be drawn, with non-zero size, and the page
must ask for nothing but itself. Without Chromium that test is skipped with the reason,
unless DICES_REQUIRE_CHROMIUM=1 (set by .ci/run), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import csv
import html
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.cli.main import app
from dices_cli.evaluate.evaluation import Settings
from dices_cli.output import table_from_rows
from dices_cli.queries.engine import RaterSelection
from dices_cli.report import charts
from dices_cli.report.context import Context, Section
from dices_cli.report.models import ModelsRequest, score_models
from dices_cli.report.sections import NO_GROUPS, SECTIONS, TOP_CONVERSATIONS
from dices_cli.store.datasets import Store

REPO = Path(__file__).resolve().parents[2]
BY = ["--by", "rater_race", "--by", "rater_gender"]
PERMUTATIONS = "50"  # behind the agreement section's p-values: 200 by default
# Two toy models of the DICES-350 sample (their item ids are the replica's too), one flipped.
DEMO = REPO / "dices_cli" / "data" / "demo-predictions.csv"
BOOTSTRAP = "50"  # behind the models' intervals: 100 by default
# Figures of the report of both datasets with two --by columns and predictions: overview 2,
# models 2 (against gold and crowd, per group), shares 2 (the heatmap of the intersection),
# gold 1, disagreement 2, quality 2, agreement 1.
FIGURES_WITH_BY = 12
MODEL_FIGURES = (
    "Each model against the experts and the crowd (DICES-350)",
    "Each model's agreement with each group's crowd label",
)
FLIPPED = (
    "Warning: model 'five-raters-flipped' agrees with the experts' gold labels on DICES-350 "
    "less than chance: Cohen's kappa "
)


def _load_screenshot_script() -> Any:
    """scripts/report_screenshot.py, which holds the DevTools client (`Browser`)."""
    spec = importlib.util.spec_from_file_location(
        "report_screenshot", REPO / "scripts" / "report_screenshot.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def browser_profile(tmp_path: Path) -> Iterator[Path]:
    """A folder for Chromium's profile, in memory (/dev/shm) where the machine has one.
    Chromium syncs each profile file it writes to the disk (some two hundred fdatasync calls
    to start and close): on a disk busy with other writes each is a wait, and a screenshot
    test waited for them far longer than it ran."""
    memory = Path("/dev/shm")
    if not (memory.is_dir() and os.access(memory, os.W_OK)):
        yield tmp_path / "profile"
        return
    with tempfile.TemporaryDirectory(prefix="dices-chromium-", dir=memory) as folder:
        yield Path(folder) / "profile"


@contextlib.contextmanager
def charts_drawn_here() -> Iterator[None]:
    """Inside the block, a report's charts are drawn by a thread of this process, as when no
    drawing process can be started: vl-convert starts once in the test process, not once per
    report (a fresh Python, dices_cli and vl-convert for each). For tests of what a report
    shows; the drawing process has tests of its own (`Drawer`, below) and draws the report
    of both replica datasets (`report`)."""
    started = subprocess.Popen

    def no_drawing_process(arguments: Any, *others: Any, **options: Any) -> Any:
        if "from dices_cli.report.svg import serve" in str(arguments):
            raise BlockingIOError(11, "Resource temporarily unavailable")  # fork's EAGAIN
        return started(arguments, *others, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "Popen", no_drawing_process)
        yield


@pytest.fixture(scope="module")
def report(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of both replica datasets, by race and gender, with the demo predictions."""
    target = tmp_path_factory.mktemp("report") / "report.html"
    arguments = ["report", *BY, "--permutations", PERMUTATIONS, "--data", str(ingested)]
    arguments += ["--predictions", str(DEMO), "--bootstrap", BOOTSTRAP]
    result = CliRunner().invoke(app, [*arguments, "-o", str(target)])
    assert result.exit_code == 0, result.output
    # The flipped model's warning is said on stderr too, as dices evaluate says it.
    said = result.stderr.splitlines()
    assert said[-1] == f"wrote {target}"
    assert f"warning: {FLIPPED.removeprefix('Warning: ')}" in "\n".join(said)
    return target


def test_the_report_opens_in_chromium_draws_every_chart_and_fetches_nothing(
    report: Path, tmp_path: Path
) -> None:
    screenshot = _load_screenshot_script()
    executable = screenshot.chromium()
    if executable is None:
        reason = "chromium not found (apt-get install chromium, or set CHROMIUM)"
        if os.environ.get("DICES_REQUIRE_CHROMIUM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with browser_profile(tmp_path) as profile:
        browser = screenshot.Browser(executable, profile)
        try:
            session = browser.open(report.as_uri())
            charts = browser.evaluate(
                session,
                """[...document.querySelectorAll('figure .chart')].map(chart => {
                    const svg = chart.querySelector('svg');
                    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
                    const marks = svg ? [...svg.querySelectorAll('path, rect, line, text')]
                        .filter(e => { const b = e.getBoundingClientRect();
                                       return b.width > 0 || b.height > 0; }).length : 0;
                    return {label: chart.getAttribute('aria-label'), width: box.width,
                            height: box.height, marks: marks};
                })""",
            )
            png = browser.screenshot(session, 1600)
            # The log sees what a page fetches: a page that asks for an image (which the proxy
            # Chromium is given refuses) shows in it.
            probe = tmp_path / "probe.html"
            probe.write_text('<img src="http://127.0.0.1:9/probe.png">', encoding="utf-8")
            probe_session = browser.open(probe.as_uri())
        finally:
            browser.close()
    assert browser.requests(probe_session) == [probe.as_uri(), "http://127.0.0.1:9/probe.png"]
    assert len(charts) == FIGURES_WITH_BY
    drawn = [chart["label"].split(": ")[0] for chart in charts]
    assert drawn[2:4] == list(MODEL_FIGURES)  # right after the overview
    for chart in charts:
        assert chart["label"], chart
        assert chart["width"] > 100 and chart["height"] > 50, chart
        assert chart["marks"] > 10, chart
    assert browser.requests(session) == [report.as_uri()]  # the page itself, nothing else
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 50_000


def test_the_page_is_self_contained(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in page
    for loads_something in ("<script", "<link", "<img", "<iframe", "@import", "src="):
        assert loads_something not in page
    assert re.findall(r"url\((?!#figure-\d+-)", page) == []  # only a chart's own gradients
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    # The only links are the page's own anchors.
    assert set(re.findall(r'href="([^"#][^"]*)"', page)) == set()
    assert page.count("<svg") == FIGURES_WITH_BY


def test_the_report_records_how_it_was_made(report: Path, ingested: Path) -> None:
    page = html.unescape(report.read_text(encoding="utf-8"))
    options = f"{' '.join(BY)} --permutations {PERMUTATIONS} --seed 0 --predictions {DEMO}"
    options += f" --bootstrap {BOOTSTRAP} --baseline raters:1 --ties exclude --threshold 0.5"
    command = f"dices report --dataset all {options} -o {report}"
    # Each argument in a bidirectional run of its own (`page._isolated`).
    isolated = " ".join(f"<bdi>{part}</bdi>" for part in command.split(" "))
    assert f"<code>{isolated}</code>" in page
    assert f"<dt>dices version</dt><dd>{__version__}</dd>" in page
    assert "<dt>Raters</dt><dd><bdi>all raters</bdi></dd>" in page
    for name in ("350", "990"):
        manifest = json.loads((ingested / name / "manifest.json").read_text())
        assert f"sha256 {manifest['source']['sha256']}" in page
        for record in manifest["files"].values():
            assert record["sha256"] in page
    assert re.search(r"<dt>Created</dt><dd>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00</dd>", page)


def _query_csv(ingested: Path, *arguments: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(app, ["query", *arguments, "--data", str(ingested), "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.fixture(scope="module")
def sections(ingested: Path) -> dict[str, Section]:
    """The sections of both datasets by gender, as `dices report --by rater_gender
    --predictions DEMO --bootstrap 100` draws."""
    store = Store(ingested)
    context = Context(store, "all", RaterSelection(), ["rater_gender"], 20, 0)
    settings = Settings(bootstrap=int(BOOTSTRAP), baselines=(1,))
    request = ModelsRequest(str(DEMO), None, settings)
    context.models = score_models(store, RaterSelection(), request, context.datasets, context.by)
    built = (build(context) for build in SECTIONS)
    return {section.key: section for section in built if section is not None}


def test_every_chart_draws_the_rows_of_its_table(sections: dict[str, Section]) -> None:
    assert list(sections) == [
        "overview",
        "models",
        "shares",
        "gold",
        "disagreement",
        "quality",
        "agreement",
    ]
    for section in sections.values():
        for figure in section.figures:
            drawn = figure.spec["data"]["values"]
            shared = [c for c in drawn[0] if c in figure.table.columns]
            assert len(shared) >= 2, figure.spec["title"]
            index = [figure.table.columns.index(c) for c in shared]
            rows = {tuple(row[i] for i in index) for row in figure.table.rows}
            for values in drawn:
                if values.get("group") == NO_GROUPS:  # a cell saying its dataset lacks a column
                    assert values["counted"] == f"{values['dataset']} has no {values['column']}"
                    continue
                assert tuple(values[c] for c in shared) in rows, values


def test_counts_show_as_whole_numbers_as_the_query_gives_them(
    sections: dict[str, Section], ingested: Path
) -> None:
    # DuckDB sums integers into a HUGEINT, which reaches Python as a Decimal with no
    # fraction: the page showed the gold-vs-crowd summary's 350 conversations as 350.000.
    from dices_cli.report.page import table_html

    [(_, summary)] = sections["gold"].tables
    [query] = _query_csv(ingested, "gold-vs-crowd-summary", "-d", "350")
    shown = re.findall(r"<td[^>]*>([^<]*)</td>", table_html(summary))
    cells = dict(zip(summary.columns, shown, strict=True))
    assert (cells["conversations"], cells["ties"]) == (query["conversations"], query["ties"])
    assert cells["kappa"] == f"{float(query['kappa']):.3f}"


def test_the_shares_and_the_gaps_are_the_queries_numbers(
    ingested: Path, sections: dict[str, Section]
) -> None:
    shares = sections["shares"].figures[0].table
    expected = _query_csv(ingested, "qoverall-by-demographic", "--by", "rater_gender")
    assert [(r[0], r[2], r[5], r[6], r[7]) for r in shares.rows] == [
        (
            f"DICES-{r['dataset']}",
            r["rater_gender"],
            float(r["share_yes"]),
            float(r["share_yes_ci_low"]),
            float(r["share_yes_ci_high"]),
        )
        for r in expected
    ]
    gaps = sections["disagreement"].figures[1].table.records()
    ranked = _query_csv(ingested, "group-disagreement", "--by", "rater_gender")
    for dataset in ("350", "990"):  # the query's top rows by its own ranking
        compared = [r for r in ranked if r["dataset"] == dataset and int(r["groups"]) >= 2]
        top = compared[:TOP_CONVERSATIONS]
        assert [
            (g["item_id"], g["gap"], g["lowest_raters"], g["highest_raters"], g["p_adjusted"])
            for g in gaps
            if g["dataset"] == f"DICES-{dataset}"
        ] == [
            (
                int(r["item_id"]),
                float(r["gap"]),
                int(r["lowest_raters"]),
                int(r["highest_raters"]),
                float(r["p_adjusted"]),
            )
            for r in top
        ]


def _evaluate_csv(ingested: Path, *arguments: str) -> list[dict[str, str]]:
    given = ["--bootstrap", BOOTSTRAP, *arguments, "-f", "csv", "--data", str(ingested)]
    result = CliRunner().invoke(app, ["evaluate", str(DEMO), *given])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _number(text: str) -> float | None:
    return float(text) if text else None


def test_the_models_are_dices_evaluates_numbers(
    ingested: Path, sections: dict[str, Section]
) -> None:
    overall, per_group = sections["models"].figures
    expected = {
        (r["model"], r["reference"]): r for r in _evaluate_csv(ingested, "--baseline", "raters:1")
    }
    drawn = overall.table.records()
    assert {(r["model"], r["kind"]) for r in drawn} == {
        ("five-raters", "model"),
        ("five-raters-flipped", "polarity suspect"),
        ("raters:1", "human baseline (raters drawn at random)"),
    }
    assert {r["reference"] for r in drawn} == {"gold", "crowd", "crowd-share"}
    for r in drawn:
        row = expected[r["model"], r["reference"]]
        metric = r["metric"]
        assert (r["value"], r["low"], r["high"], r["n"]) == (
            _number(row[metric]),
            _number(row[f"{metric}_low"]),
            _number(row[f"{metric}_high"]),
            int(row["n"]),
        )
    groups = [
        r
        for r in _evaluate_csv(ingested, "--by", "rater_gender", "--against", "crowd")
        if r["rater_gender"]
    ]
    assert [
        (r["model"], r["group"], r["kappa"], r["kappa_low"], r["kappa_high"], r["p_adjusted"])
        for r in per_group.table.records()
    ] == [
        (
            r["model"],
            r["rater_gender"],
            _number(r["kappa"]),
            _number(r["kappa_low"]),
            _number(r["kappa_high"]),
            _number(r["p_adjusted"]),
        )
        for r in groups
    ]


def test_agreement_draws_each_value_over_its_null_range_from_the_query(
    ingested: Path, sections: dict[str, Section]
) -> None:
    (figure,) = sections["agreement"].figures
    options = ("--by", "rater_gender", "--permutations", "20", "--seed", "0")
    expected = [
        (f"DICES-{r['dataset']}", r["rater_gender"], metric, *(float(r[c]) for c in columns))
        for r in _query_csv(ingested, "agreement", *options)
        for metric, columns in {
            "IRR (alpha within)": ("irr", "irr_null_low", "irr_null_high", "irr_p"),
            "XRR (with the rest)": ("xrr", "xrr_null_low", "xrr_null_high", "xrr_p"),
            "GAI": ("gai", "gai_null_low", "gai_null_high", "gai_p"),
        }.items()
    ]
    shown = ["dataset", "group", "metric", "value", "null_low", "null_high", "p_value"]
    assert [tuple(r[c] for c in shown) for r in figure.table.records()] == expected
    bar, point = figure.spec["spec"]["layer"]
    assert (bar["mark"]["type"], bar["encoding"]["x"]["field"]) == ("rule", "null_low")
    assert bar["encoding"]["x2"] == {"field": "null_high"}
    assert (point["mark"]["type"], point["encoding"]["x"]["field"]) == ("point", "value")
    assert "not intervals" not in " ".join([figure.how_to_read, *sections["agreement"].notes])


def test_a_flipped_model_is_warned_about_atop_the_page_and_in_its_section(
    report: Path, sections: dict[str, Section]
) -> None:
    (warning,) = sections["models"].warnings  # five-raters, not flipped, is no suspect
    assert f"Warning: {warning}".startswith(FLIPPED)
    page = html.unescape(report.read_text(encoding="utf-8"))
    header, models = page.split("<nav")[0], page.split('<section id="models">')[1]
    assert re.search(
        f'<p class="warning" role="alert">{re.escape(FLIPPED)}[^<]*<a href="#models">', header
    )
    assert models.split("</h2>")[1].startswith(f'<p class="warning" role="alert">{FLIPPED}')


def test_one_dataset_without_by_leaves_out_what_does_not_apply(
    sample: Path, tmp_path: Path
) -> None:
    target = tmp_path / "990.html"
    arguments = ["report", "-d", "990", "--exclude-removed", "--data", str(sample)]
    with charts_drawn_here():
        result = CliRunner().invoke(app, [*arguments, "-o", str(target)])
    assert result.exit_code == 0, result.output
    page = html.unescape(target.read_text(encoding="utf-8"))
    keys = re.findall(r'<section id="([a-z]+)">', page)
    assert keys == ["overview", "shares", "disagreement", "quality", "provenance"]  # no gold
    assert "Share of Yes (unsafe) per rater_race x rater_gender" in page  # the default groups
    assert "<dt>Raters</dt><dd><bdi>without the raters the DICES authors removed</bdi></dd>" in page
    assert page.count("<svg") == 7  # no group gaps, no agreement without --by


def test_a_dataset_without_a_by_column_is_left_out_with_a_note(
    sample: Path, tmp_path: Path
) -> None:
    target = tmp_path / "locale.html"
    arguments = ["report", "--by", "rater_locale", "--permutations", "0", "--data", str(sample)]
    with charts_drawn_here():
        result = CliRunner().invoke(app, [*arguments, "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: rater_locale is a DICES-990 column; DICES-350 has no rater_locale, "
        f"so it is left out\nwrote {target}\n"
    )
    page = target.read_text(encoding="utf-8")
    assert "<h1>DICES safety ratings: DICES-990</h1>" in page


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (
            ["-d", "350", "--by", "rater_locale"],
            2,
            "Error: rater_locale is a DICES-990 column; DICES-350 has no rater_locale\n",
        ),
        (
            ["--by", "rater_shoe_size"],
            2,
            "Error: --by names an unknown column 'rater_shoe_size'; choose from: ",
        ),
        (["--permutations", "-1"], 2, "Error: --permutations must be a whole number between 0 and"),
        (["--ties", "safe"], 2, "Error: --ties scores predictions: give --predictions FILE too\n"),
        (
            ["--predictions", "-", "--raters", "-"],
            2,
            "Error: only one of --predictions and --raters can be - (stdin)\n",
        ),
        (
            ["-d", "990", "--predictions", str(DEMO), "--predictions-dataset", "350"],
            2,
            "Error: the predictions are for DICES-350, but the report shows DICES-990 only\n",
        ),
        (
            ["--predictions", str(DEMO), "--baseline", "raters:0"],
            2,
            "Error: a baseline is raters:K with K a whole number from 1, not 'raters:0'\n",
        ),
    ],
)
def test_a_bad_option_is_a_usage_error(
    ingested: Path, tmp_path: Path, arguments: list[str], code: int, message: str
) -> None:
    target = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", *arguments, "--data", str(ingested), "-o", str(target)]
    )
    assert result.exit_code == code
    assert result.stderr.startswith(message)
    assert not target.exists()


def test_a_bad_predictions_file_or_bootstrap_is_refused_before_any_query(
    ingested: Path, tmp_path: Path
) -> None:
    target = tmp_path / "r.html"
    bad = tmp_path / "judge.csv"
    bad.write_text("item_id,label\n13,1\n")
    arguments = ["report", "--predictions", str(bad), "--data", str(ingested), "-o", str(target)]
    result = CliRunner().invoke(app, arguments)
    assert (result.exit_code, result.stderr.splitlines()[:2]) == (
        1,
        [
            "hint: numeric or boolean labels need --one-means unsafe or --one-means safe",
            f"Error: {bad} is not a valid predictions file; nothing was evaluated",
        ],
    )
    result = CliRunner().invoke(app, [*arguments, "--bootstrap", "-1"])
    assert result.exit_code == 2
    assert "Error: --bootstrap must be between 0 and 100000 (got -1)" in result.stderr
    assert not target.exists()


def test_an_existing_file_needs_force_and_the_data_directory_is_never_written(
    ingested: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "report.html"
    existing.write_text("mine")
    result = CliRunner().invoke(app, ["report", "--data", str(ingested), "-o", str(existing)])
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: {existing} exists; use --force to overwrite it\n",
    )
    assert existing.read_text() == "mine"
    inside = ingested / "report.html"
    result = CliRunner().invoke(app, ["report", "--data", str(ingested), "-o", str(inside)])
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: -o {inside} is inside the data directory {ingested}; choose another file\n",
    )
    assert not inside.exists()


def test_nothing_ingested_is_a_plain_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["report", "--data", str(tmp_path / "none"), "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: nothing is ingested in {tmp_path / 'none'}")


def test_without_the_charting_library_the_report_says_how_to_install_it(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # as if not installed
    target = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", "--data", str(ingested), "-o", str(target)])
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: charts need vl-convert-python, a dependency of dices: "
        "pip install vl-convert-python\n",
    )
    assert not target.exists()


def test_only_dices_report_imports_the_charting_library() -> None:
    program = (
        "import sys\n"
        "from dices_cli.cli.main import app\n"
        "for arguments in (['--help'], ['report', '--help'], ['query', '--list', '-f', 'csv']):\n"
        "    try:\n"
        "        app(arguments)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('vl_convert' in sys.modules, 'dices_cli.report.charts' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.splitlines()[-1] == "False False"


def _heatmap(title: str) -> dict[str, Any]:
    """A chart whose colour legend is a gradient, which vl-convert numbers per process."""
    from dices_cli.report.charts import heatmap

    rows = [{"x": "a", "y": "b", "share": 0.25}, {"x": "c", "y": "b", "share": 0.75}]
    return heatmap(title, "-", rows, ("x", "x"), ("y", "y"), ("share", "share"), ".0%", None)


def test_charts_are_drawn_by_one_process_in_the_order_given() -> None:
    # Their gradients are numbered from 0 as they come: the first chart vl-convert draws
    # (its start) defines none, and no chart went to another process.
    from dices_cli.report.svg import Drawer

    with Drawer() as drawer:
        charts = [drawer.draw(_heatmap(title)) for title in ("first", "second")]
        svgs = [chart.result() for chart in charts]
    assert [re.findall(r'<linearGradient id="([^"]+)"', svg) for svg in svgs] == [
        ["gradient_0"],
        ["gradient_1"],
    ]
    assert ["first" in svgs[0], "second" in svgs[1]] == [True, True]


def test_a_chart_the_drawing_process_cannot_draw_is_a_plain_error() -> None:
    from dices_cli.errors import DicesError
    from dices_cli.report.svg import Drawer

    broken = {"title": "broken", "data": {"values": []}, "mark": "no-such-mark"}
    with Drawer() as drawer, pytest.raises(DicesError) as raised:
        drawer.draw(broken).result()
    # vl-convert's own words follow, from the drawing process.
    assert str(raised.value).startswith(
        "cannot draw the chart 'broken': Vega-Lite to SVG conversion failed:"
    )


def test_a_drawing_process_that_stopped_is_a_plain_error() -> None:
    from dices_cli.errors import DicesError
    from dices_cli.report.svg import Drawer

    with Drawer() as drawer:
        assert drawer._process is not None
        drawer._process.kill()  # as the kernel's out-of-memory killer would
        with pytest.raises(DicesError) as raised:
            drawer.draw(_heatmap("never")).result()
    assert str(raised.value) == "the process drawing the charts stopped (exit code -9)"


def test_without_a_process_to_be_had_a_thread_draws_the_charts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dices_cli.report.svg import Drawer, to_svg

    def refused(*arguments: Any, **options: Any) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")  # fork's EAGAIN

    monkeypatch.setattr(subprocess, "Popen", refused)
    spec = _heatmap("in a thread")
    spec["layer"] = spec["layer"][1:]  # its text alone: no gradient, so the same SVG anywhere
    with Drawer() as drawer:
        svg = drawer.draw(spec).result()
    assert svg == to_svg(spec)


# Monospace fonts a Debian machine may have (Chromium's package brings fonts-liberation,
# fontconfig fonts-dejavu-core).
SYSTEM_MONOSPACE = {
    "LiberationMono-Regular.ttf": "Liberation Mono",
    "DejaVuSansMono.ttf": "DejaVu Sans Mono",
}
# Each chart drawn with the font given ("": the report's own font list, CONFIG's).
DRAW_IN_EACH_FONT = """
import json, sys
from dices_cli.report.svg import to_svg
spec = json.loads(sys.argv[1])
fonts = sys.argv[2:]
print(json.dumps([to_svg({**spec, "config": {"font": f}} if f else spec) for f in fonts]))
"""


def test_charts_are_measured_with_vl_converts_own_font_never_a_system_one() -> None:
    # A system font is a file that vl-convert mapped anew for every glyph it measured: the
    # report's charts took 1.77 s, 0.64 s with only the Liberation Sans it carries. So a
    # system font is as unknown to it as a made-up one, and the report's font list is laid
    # out in Liberation Sans, which has the letter widths of Arial and Helvetica.
    fonts = Path("/usr/share/fonts")
    installed = [family for file, family in SYSTEM_MONOSPACE.items() if any(fonts.rglob(file))]
    if not installed:
        reason = f"no system monospace font ({', '.join(SYSTEM_MONOSPACE)}) to tell apart"
        if os.environ.get("DICES_REQUIRE_CHROMIUM") == "1":  # CI installs Chromium's fonts
            pytest.fail(reason)
        pytest.skip(reason)
    label = "a label long enough to be measured"
    spec = {
        "data": {"values": [{"label": label, "n": 1}]},
        "mark": "bar",
        "encoding": {
            "y": {"field": "label", "type": "nominal"},
            "x": {"field": "n", "type": "quantitative"},
        },
    }
    drawn_in = [installed[0], "No Such Font", "", "Liberation Sans"]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(  # a fresh process: vl-convert reads its fonts once in each
        [sys.executable, "-c", DRAW_IN_EACH_FONT, json.dumps(spec), *drawn_in],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, "")
    system, made_up, own, liberation = (
        re.sub(r'font-family="[^"]*"', "", svg) for svg in json.loads(done.stdout)
    )
    assert label in own
    assert system == made_up
    assert own == liberation != made_up


def test_a_script_that_calls_the_app_without_a_main_guard_gets_its_report(
    ingested: Path, tmp_path: Path
) -> None:
    # A child started by multiprocessing (spawn) would run this script again, and fail; and
    # the drawing process imports the script's dices_cli, not one in the working directory.
    target = tmp_path / "r.html"
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from dices_cli.cli.main import app\n"
        f"app(['report', '-d', '350', '--data', {str(ingested)!r}, '-o', {str(target)!r}])\n",
        encoding="utf-8",
    )
    decoy = tmp_path / "elsewhere" / "dices_cli"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('not this one')\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=decoy.parent
    )
    assert (done.returncode, done.stderr) == (0, f"wrote {target}\n")
    assert target.read_text(encoding="utf-8").count("<svg") > 0


# ----------------------------------------------------------------------------- the layout


def _all_specs(spec: Any) -> list[dict[str, Any]]:
    """`spec` and every specification nested in it."""
    found = []
    if isinstance(spec, dict):
        found.append(spec)
        for value in spec.values():
            found += _all_specs(value)
    elif isinstance(spec, list):
        for value in spec:
            found += _all_specs(value)
    return found


def test_the_removal_grid_puts_each_dataset_in_its_own_column(
    sections: dict[str, Section],
) -> None:
    """A column per dataset and a row per demographic column, every cell with rows (a missing
    cell put DICES-990's rater_locale panel in the DICES-350 column), each bar labelled with
    its count, so that a dataset with no removals shows "0 of N", not empty frames."""
    (removal,) = [f for f in sections["quality"].figures if "removes" in f.spec["title"]]
    spec = removal.spec
    assert (spec["facet"]["row"]["field"], spec["facet"]["column"]["field"]) == (
        "column",
        "dataset",
    )
    drawn = spec["data"]["values"]
    cells = {(r["column"], r["dataset"]) for r in drawn}
    columns, datasets = {c for c, _ in cells}, {d for _, d in cells}
    assert cells == {(c, d) for c in columns for d in datasets}
    assert ("rater_locale", "DICES-350") in cells
    assert all(r["counted"] == f"{r['removed']} of {r['raters']}" for r in drawn if "raters" in r)
    assert spec["align"] == {"row": "each", "column": "all"}  # no gap under a short row


def test_agreement_labels_are_whole_and_its_rows_have_no_gap(
    sections: dict[str, Section],
) -> None:
    (figure,) = sections["agreement"].figures
    labels = {r["label"].replace(charts.LINE_BREAK, " ") for r in figure.spec["data"]["values"]}
    assert labels == {str(r["group"]) for r in figure.table.records()}
    assert figure.spec["align"] == {"row": "each", "column": "all"}


def test_no_axis_fixes_fewer_decimals_than_its_ticks_need(
    sections: dict[str, Section],
) -> None:
    """A fixed ".2~f" or ".0%" printed a narrow panel's ticks as "0.29 0.29 0.3 0.3": an
    axis either leaves the decimals to Vega (which follows the ticks' step) or trims them."""
    for section in sections.values():
        for figure in section.figures:
            for spec in _all_specs(figure.spec):
                axis = spec.get("axis")
                if isinstance(axis, dict) and "format" in axis:
                    assert axis["format"] in ("~%", ".4~f"), (figure.spec["title"], axis)


def test_the_audit_summary_is_a_column_per_dataset_and_headers_break_after_underscores(
    sections: dict[str, Section],
) -> None:
    from dices_cli.report.page import table_html

    ((_, summary),) = sections["quality"].tables
    assert summary.columns == ["figure", "DICES-350", "DICES-990"]
    assert [r[0] for r in summary.rows][:3] == ["raters", "raters_kept", "raters_removed"]
    wide = table_from_rows(["conversations_without_ratings"], [(1,)])
    assert "<th scope=col>conversations_<wbr>without_<wbr>ratings</th>" in table_html(wide)


def test_a_p_value_just_under_the_legends_threshold_reads_under_it() -> None:
    """50 of 1,001 relabellings give p = 0.04995, drawn as significant under "p < 0.05": its
    table cell must not read 0.050 (the report once showed 0.050 where the CLI gave 0.120,
    from 200 relabellings; both now use 1,000)."""
    from dices_cli.report.page import table_html

    table = table_from_rows(["p_value", "share"], [(50 / 1001, 0.611), (2 / 1001, 0.0626)])
    cells = re.findall(r"<td class=number>([^<]*)</td>", table_html(table))
    assert cells == ["0.04995", "0.611", "0.001998", "0.0626"]
    assert float(cells[0]) < 0.05


def test_models_whose_names_cut_alike_keep_a_label_each(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two model names alike in their first 30 characters (labels are cut to 24): each model
    keeps its own label, so that each gets its own dots, in the section's two figures."""
    from dices_cli.report import sections as report_sections

    alike = "a-model-name-alike-in-30-chars"
    names = {"five-raters": f"{alike}-one", "five-raters-flipped": f"{alike}-two"}
    text = DEMO.read_text()
    for given, name in names.items():
        text = re.sub(rf"^{given},", f"{name},", text, flags=re.MULTILINE)
    predictions = tmp_path / "alike.csv"
    predictions.write_text(text)
    store = Store(ingested)
    context = Context(store, "350", RaterSelection(), ["rater_gender"], 20, 0)
    request = ModelsRequest(str(predictions), None, Settings(bootstrap=20, baselines=()))
    context.models = score_models(
        store, RaterSelection(), request, context.datasets, ["rater_gender"]
    )
    section = report_sections.models(context)
    assert section is not None
    overall, per_group = section.figures
    labels = {(r["model"], r["label"]) for r in overall.spec["data"]["values"]}
    assert labels == {
        (f"{alike}-one", "a-model-name-alike-in-3…"),
        (f"{alike}-two", "a-model-name-alike-in-3… (2)"),
    }
    panels = {(r["model"], r["panel"]) for r in per_group.spec["data"]["values"]}
    assert panels == {
        (f"{alike}-one", "a-model-name-alike-in-3… · rater_gender"),
        (f"{alike}-two", "a-model-name-alike-in-3… (2) · rater_gender"),
    }
