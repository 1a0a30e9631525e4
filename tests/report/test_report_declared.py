"""`dices report -d NAME` of a declared dataset: the sections its labels and rater attributes
allow, each naming its label and scale, with the numbers of the canned queries it draws; what
only DICES has (predictions scored against its references, rater selection) refused."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES
from dices_cli.report.declared import DeclaredContext, declared_sections
from dices_cli.store.datasets import Store
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings
from tests.report.test_report import charts_drawn_here

NAME = "ordinal_toy"
PERMUTATIONS = "40"
HELP = "Try 'dices report -h' for help.\n"


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def toy() -> OrdinalRatings:
    return ordinal_ratings((3, 5), items=12, per_rater=8, seed=3)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, toy: OrdinalRatings) -> Path:
    folder = tmp_path_factory.mktemp("declared-report")
    return ingest_dataset(toy, folder, NAME)


def report(data: Path, target: Path, *args: str) -> tuple[int, str]:
    with charts_drawn_here():
        result = CliRunner().invoke(
            app, ["report", "-d", NAME, "--data", str(data), "-o", str(target), *args]
        )
    return result.exit_code, result.stderr


def query(data: Path, *args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(app, ["query", *args, "-d", NAME, "--data", str(data), "-f", "csv"])
    assert result.exit_code == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_the_report_shows_each_label_with_its_scale(data: Path, tmp_path: Path) -> None:
    target = tmp_path / "toy.html"
    code, err = report(data, target, "--permutations", PERMUTATIONS)
    assert (code, err) == (0, f"wrote {target}\n")
    page = target.read_text(encoding="utf-8")
    assert "<h1>Disaggregated ratings: Ordinal toy</h1>" in page
    sections = re.findall(r'<section id="([^"]+)"><h2>([^<]+)</h2>', page)
    assert sections == [
        ("overview", "Labels and raters"),
        ("shares-score", "score: share in the positive class per group"),
        ("agreement-score", "score: agreement within and across groups"),
        ("agreement-colour", "colour: agreement within and across groups"),
        ("provenance", "How this report was made"),
    ]
    assert page.count("Label shown: score (ordinal: 1, 2, 3, 4, 5; positive: 3, 4, 5).") == 3
    assert page.count("Label shown: colour (nominal: red, green, blue).") == 2
    # The command as resolved: the declared attributes compared by default, the agreement's
    # permutations and seed.
    assert (
        f"dices report --dataset {NAME} --permutations {PERMUTATIONS} --seed 0 -o {target}"
        in re.sub(r"<[^>]+>", "", page)
    )
    assert page.count("<svg") == 4


def test_each_figure_holds_the_canned_querys_numbers(data: Path) -> None:
    store = Store(data)
    context = DeclaredContext(store, FAMILIES[NAME], ["grp"], 40, 0)
    sections = {section.key: section for section in declared_sections(context)}
    assert list(sections) == ["overview", "shares-score", "agreement-score", "agreement-colour"]
    shown = sections["shares-score"].figures[0].table.records()
    asked = query(data, "label-by-group", "--by", "grp", "--label", "score")
    assert [(r["group"], r["raters"], r["ratings"], r["share_positive"]) for r in shown] == [
        (r["grp"], int(r["raters"]), int(r["ratings"]), float(r["share_positive"])) for r in asked
    ]
    lows = [r["share_positive_ci_low"] for r in shown]
    assert lows == [float(r["share_positive_ci_low"]) if r["share_positive_ci_low"] else None
                    for r in asked]  # fmt: skip
    agreed = sections["agreement-colour"].figures[0].table.records()
    asked = query(data, "agreement", "--by", "grp", "--label", "colour", "--permutations", "40")
    assert [(r["group"], r["irr"], r["gai"], r["gai_p_bh"]) for r in agreed] == [
        (r["grp"], float(r["irr"]), float(r["gai"]), float(r["gai_p_bh"])) for r in asked
    ]
    split = sections["overview"].figures[0].table.records()
    assert [(r["label"], r["value"], r["ratings"]) for r in split[:5]] == [
        ("score", r["value"], int(r["ratings"]))
        for r in query(data, "label-distribution", "--label", "score")
    ]


def test_an_attribute_the_dataset_lacks_is_a_usage_error(data: Path, tmp_path: Path) -> None:
    code, err = report(data, tmp_path / "x.html", "--by", "rater_race")
    assert code == 2
    assert "rater_race" in err and "grp" in err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--predictions", "p.csv"],
            "Error: --predictions is scored against DICES's references, not Ordinal toy's\n" + HELP,
        ),
        (
            ["--min-quality", "0.5"],
            "Error: Ordinal toy's report shows all its raters: --exclude-removed, --raters "
            "and --min-quality choose DICES's\n" + HELP,
        ),
    ],
)
def test_what_only_dices_has_is_refused(
    data: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    code, err = report(data, tmp_path / "x.html", *args)
    assert (code, err) == (2, message)
    assert not (tmp_path / "x.html").exists()
