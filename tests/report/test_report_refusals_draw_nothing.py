"""A report refused for want of data starts no chart-drawing process.

The drawing process (`dices_cli.report.svg.Drawer`) starts vl-convert, about half a second of
CPU: a report checks what it is asked for before it starts one, and starts it beside the
queries of a report it will write.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import dices_cli.report.svg as svg
from dices_cli.cli.main import app


@pytest.fixture
def drawers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reports' drawing processes started, one entry each (none is started here)."""
    started: list[str] = []

    def enter(self: svg.Drawer) -> svg.Drawer:
        started.append("started")
        raise AssertionError("a drawing process was started")

    monkeypatch.setattr(svg.Drawer, "__enter__", enter)
    return started


def _report(data: Path, target: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["report", "--data", str(data), "-o", str(target), *options])
    return result.exit_code, result.stderr


def test_nothing_ingested_is_refused_before_drawing(drawers: list[str], tmp_path: Path) -> None:
    data = tmp_path / "empty"
    for options in ((), ("--min-quality", "0.5")):
        assert _report(data, tmp_path / "r.html", *options) == (
            1,
            f"Error: nothing is ingested in {data}; run `dices ingest FILE --data {data}` first\n",
        )
    assert drawers == []
    assert not (tmp_path / "r.html").exists()


def test_a_report_it_writes_starts_its_drawing_process(
    drawers: list[str], sample: Path, tmp_path: Path
) -> None:
    """The stand-in above is entered by a report that gets past its checks: the test before
    is not passing for want of a report reaching it."""
    code, _ = _report(sample, tmp_path / "r.html", "-d", "350")
    assert (code, drawers) == (1, ["started"])
    assert not (tmp_path / "r.html").exists()


def test_a_refused_predictions_file_is_refused_before_drawing(
    drawers: list[str], sample: Path, tmp_path: Path
) -> None:
    """The predictions are read and checked before the drawing process starts."""
    predictions = tmp_path / "p.csv"
    predictions.write_text("model,item_id,label\nm,no-such-conversation,unsafe\n")
    code, stderr = _report(
        sample, tmp_path / "r.html", "-d", "350", "--predictions", str(predictions)
    )
    assert (code, stderr) == (
        1,
        f"Error: {predictions} is not a valid predictions file; nothing was evaluated\n"
        f"{predictions}: 1 error; 1 rows read, 1 would be rejected [1 not-an-integer]\n"
        "  line 2, column item_id: 'no-such-conversation' is not an item id (a whole number)"
        " [not-an-integer]\n",
    )
    assert drawers == []
    assert not (tmp_path / "r.html").exists()
