"""The race x gender heatmap shows each cell's raters beside its share, and docs/report.md
shows it: a screenshot of that one figure (scripts/report_screenshot.py --figure)."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.report.test_report import (
    _load_screenshot_script,
    browser_profile,
    charts_drawn_here,
)

REPO = Path(__file__).resolve().parents[2]
HEATMAP = "per rater_race x rater_gender"


@pytest.fixture(scope="module")
def page(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("heatmap") / "report.html"
    arguments = ["report", "--by", "rater_race", "--by", "rater_gender", "--data", str(sample)]
    arguments += ["--permutations", "20", "-o", str(target)]
    with charts_drawn_here():
        result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    return target


@pytest.mark.slow  # a report of two group columns; tests/report's sample reports stay fast
def test_each_heatmap_cell_shows_its_share_and_its_raters(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    figure = next(f for f in html.split("<figure ")[1:] if HEATMAP in f.split("<figcaption>")[1])
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", figure)
    shares = [line for line in lines if re.fullmatch(r"\d+%", line)]
    counts = [line for line in lines if re.fullmatch(r"n=\d+", line)]
    assert shares and len(shares) == len(counts)
    # Each share is followed by its count, on the next line of the same cell.
    after = [lines[i + 1] for i, line in enumerate(lines) if re.fullmatch(r"\d+%", line)]
    assert after == counts


@pytest.mark.slow  # Chromium
def test_the_screenshot_is_of_the_heatmap_alone(page: Path, tmp_path: Path) -> None:
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
            session = browser.open(page.as_uri(), height=screenshot.TOP_HEIGHT)
            box = screenshot.figure_box(browser, session, HEATMAP)
            png = browser.screenshot(session, screenshot.TOP_HEIGHT, box)
        finally:
            browser.close()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (round(box["width"]), round(box["height"]))
    assert box["y"] > 0 and 100 < height < screenshot.TOP_HEIGHT


def test_docs_report_md_shows_the_heatmap() -> None:
    text = (REPO / "docs" / "report.md").read_text(encoding="utf-8")
    assert "](img/heatmap.png)" in text
    picture = (REPO / "docs" / "img" / "heatmap.png").read_bytes()
    assert picture.startswith(b"\x89PNG\r\n\x1a\n")
