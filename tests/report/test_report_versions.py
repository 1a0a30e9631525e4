"""`dices report` while `ingest --force` replaces its dataset: every report is one version.

A report runs many queries (each section's, the models', the rater selection's), then reads
the provenance. Each used to resolve the dataset anew, so a replacement between two of them
gave tables from one version and provenance or models from another; after two replacements
the version it had started on was pruned under it. Now the report pins the version it
resolves first (`Store.pinned`) and a write prunes no version a reader holds.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from drivers.datadir import leftovers, subset, versions
from drivers.repeat import Repeating
from typer.testing import CliRunner

import dices_cli.report.sections as report_sections
import dices_cli.report.svg as report_svg
from dices_cli.cli.main import app
from dices_cli.report.context import Context
from dices_cli.store.datasets import Store


def coverage(conversations: int) -> str:
    """The predictions cover 20 conversations: the report says so on stderr, as evaluate."""
    return (
        f"warning: model 'judge' predicts 20 of the {conversations} conversations of "
        f"DICES-350 ({20 / conversations:.1%}); its metrics use those only\n"
    )


class SpecsDrawer:
    """In place of `Drawer`: each chart's "SVG" is its specification, as text. What a version
    puts on the page is in the specifications and the tables; drawing them (vl-convert, a
    process of its own and most of a small report's CPU) is tested in test_report.py."""

    not_drawn = None

    def __enter__(self) -> SpecsDrawer:
        return self

    def __exit__(self, *failure: object) -> None:
        return None

    def draw(self, spec: dict[str, Any]) -> Future[str | None]:
        drawn: Future[str | None] = Future()
        drawn.set_result(f"<svg><desc>{html.escape(json.dumps(spec, sort_keys=True))}</desc></svg>")
        return drawn


@pytest.fixture(scope="module", autouse=True)
def specs_drawn() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_svg, "Drawer", SpecsDrawer)
        yield


@pytest.fixture(scope="module")
def small_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("small") / "dices_350_small.csv", 30)


@pytest.fixture(scope="module")
def predictions(small_350: Path) -> Path:
    """A model's labels for 20 of the conversations both versions hold."""
    with small_350.open(newline="", encoding="utf-8") as handle:
        items = list(dict.fromkeys(row["item_id"] for row in csv.DictReader(handle)))[:20]
    target = small_350.with_name("predictions.csv")
    lines = [f"judge,{item},{'Yes' if i % 3 else 'No'}" for i, item in enumerate(items)]
    target.write_text("model,item_id,label\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def large_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("large") / "dices_350_large.csv", 90)


def _ingest(file: Path, data: Path, *options: str) -> None:
    result = CliRunner().invoke(app, ["ingest", str(file), "--data", str(data), *options])
    assert result.exit_code == 0, result.output


def _report(data: Path, target: Path, predictions: Path) -> tuple[int, str]:
    arguments = ["report", "-d", "350", "--predictions", str(predictions), "--bootstrap", "20"]
    arguments += ["--data", str(data), "-o", str(target), "--force"]
    result = CliRunner().invoke(app, arguments)
    return result.exit_code, result.stderr


def normalised(page: str) -> str:
    """The report without what differs between two reports of one version: times, the
    output path, stored files' paths and checksums (a new ingest writes new files)."""
    page = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+(\+00:00|Z)?", "TIME", page)
    # Each argument and file name in a <bdi> of its own (`page._isolated`).
    page = re.sub(r"<bdi>-o</bdi> <bdi>\S+</bdi></code>", "<bdi>-o</bdi> FILE</code>", page)
    return re.sub(r"(\w+\.parquet)</bdi>: <span class=hash>[0-9a-f]{64}", r"\1</bdi>: HASH", page)


@pytest.fixture(scope="module")
def expected(
    small_350: Path, large_350: Path, predictions: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The report of each version alone, normalised: source file name -> page."""
    pages = {}
    for file in (small_350, large_350):
        scratch = tmp_path_factory.mktemp(file.stem)
        _ingest(file, scratch / "data")
        code, stderr = _report(scratch / "data", scratch / "report.html", predictions)
        assert code == 0, stderr
        pages[file.name] = normalised((scratch / "report.html").read_text(encoding="utf-8"))
    assert pages[small_350.name] != pages[large_350.name]
    return pages


def test_a_report_keeps_the_version_it_started_on_through_replacements(
    small_350: Path,
    large_350: Path,
    expected: dict[str, str],
    predictions: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three replacements between the report's first section and the rest (enough for a
    write to prune the version the report started on): the report is still the first
    version's, byte for byte, provenance and models included; the version it held is pruned
    by the next write after it."""
    data = tmp_path / "data"
    _ingest(small_350, data)

    def replace_three_times(context: Context) -> None:
        for file in (large_350, small_350, large_350):
            _ingest(file, data, "--force")
        return None

    monkeypatch.setattr(
        report_sections,
        "SECTIONS",
        [report_sections.SECTIONS[0], replace_three_times, *report_sections.SECTIONS[1:]],
    )
    code, stderr = _report(data, tmp_path / "report.html", predictions)
    assert (code, stderr) == (0, f"{coverage(30)}wrote {tmp_path / 'report.html'}\n")
    assert (
        normalised((tmp_path / "report.html").read_text(encoding="utf-8"))
        == (expected[small_350.name])
    )
    # The version the report held was kept past the prune of the writes meanwhile; the first
    # write after the report removes it.
    assert len(versions(data, "350")) == 3
    _ingest(small_350, data, "--force")
    assert len(versions(data, "350")) == 2
    assert leftovers(data) == []


def test_reports_during_repeated_replacements_are_each_one_version_whole(
    small_350: Path,
    large_350: Path,
    expected: dict[str, str],
    predictions: Path,
    tmp_path: Path,
) -> None:
    """`ingest --force` of one file then the other, ten times in another process, while
    reports are made one after the other until it is done: each report is one of the two
    versions' reports, whole."""
    data = tmp_path / "data"
    _ingest(small_350, data)
    churn = Repeating(
        10,
        *(["ingest", str(file), "--force", "--data", str(data)] for file in (large_350, small_350)),
    )
    seen, replaced = [], []
    try:
        while len(seen) < 5 or churn.running():  # until the replacements are over
            target = tmp_path / f"report-{len(seen)}.html"
            code, stderr = _report(data, target, predictions)
            assert code == 0
            # Each report is one version: the small (30 conversations) or the large (90).
            assert stderr in {f"{coverage(n)}wrote {target}\n" for n in (30, 90)}
            page = normalised(target.read_text(encoding="utf-8"))
            matching = [name for name, whole in expected.items() if page == whole]
            assert len(matching) == 1, f"report {len(seen)} is no one version's report"
            seen.append(matching[0])
            replaced.append(len(churn.runs))  # replacements done when this report ended
    finally:
        ingests = churn.stop()
    assert len(ingests) == 10
    assert all(run["code"] == 0 for run in ingests), ingests
    assert replaced[0] < 10, "the replacements did not overlap the reports"
    # Which version a report opens depends on the timing (the small file's ingest is quick,
    # so the large version is current only briefly): what matters is that replacements ran
    # while the reports were made, and every report is one version, whole.
    assert set(seen) <= set(expected), seen
    assert leftovers(data) == []


def test_a_pinned_open_gives_the_first_version_and_holds_it(
    small_350: Path, large_350: Path, tmp_path: Path
) -> None:
    """The store's own promise: inside `pinned()`, every open of a dataset gives the version
    opened first; outside, the current one. A held version survives any number of writes."""
    data = tmp_path / "data"
    _ingest(small_350, data)
    store = Store(data)
    with store.pinned():
        first = store.open("350")
        for file in (large_350, small_350, large_350):
            _ingest(file, data, "--force")
        with store.pinned():  # an inner block: the outer one holds
            assert store.open("350") == first
        assert store.open("350") == first
        assert first.path.is_dir()
        assert first.read("items").height == 30
        assert first.manifest["counts"]["conversations"] == 30
    assert store.open("350") != first
    assert store.open("350").manifest["counts"]["conversations"] == 90
