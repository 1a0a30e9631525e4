"""`dices evaluate` on a terminal, as a person reads it: a screen, not a scroll.

With --by, the terminal shows the whole pool's rows and, per reference, the group rows with
the largest differences from the rest of the pool (their interval and adjusted p); the full
table is left to --format/-o, and the screen says so. Without --by, the note about the
columns without room takes two lines.
"""

from __future__ import annotations

import csv
import io
import random
import re
from pathlib import Path

import pytest
from drivers.terminal_table import grid, note_lines
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.drivers.terminal import Screen, Terminal, terminal_fixture  # noqa: F401 (a fixture)

MODELS = ("alpha", "beta", "gamma", "delta", "epsilon")
ITEMS_990 = "SELECT item_id FROM items WHERE dataset = '990'"
FAST = ["--bootstrap", "20", "--permutations", "20"]


@pytest.fixture(scope="module")
def five_models(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five models' labels and scores for every DICES-990 conversation of the sample."""
    listed = CliRunner().invoke(
        app,
        ["sql", ITEMS_990, "-f", "csv", "--data", str(sample)],
    )
    assert listed.exit_code == 0, listed.output
    items = listed.stdout.split()[1:]
    chance = random.Random(41)
    lines = ["model,item_id,label,score"]
    for noise, model in enumerate(MODELS):
        for item in items:
            score = min(max(chance.random() * (1 + noise) / 5 + chance.random() / 2, 0), 1)
            lines.append(f"{model},{item},{'Yes' if score >= 0.5 else 'No'},{score:.3f}")
    path = tmp_path_factory.mktemp("five") / "five-models.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def screen_lines(screen: Screen) -> list[str]:
    return screen.stdout.splitlines() + screen.stderr.splitlines()


@pytest.mark.slow
def test_evaluate_by_on_a_terminal_is_a_ranked_summary_that_fits(
    sample: Path, five_models: Path, terminal: Terminal
) -> None:
    arguments = ["evaluate", str(five_models), "-d", "990", "--by", "rater_race", *FAST]
    arguments += ["--data", str(sample)]
    screen = terminal.run(80, *arguments)
    assert screen.code == 0, screen.stderr
    lines = screen_lines(screen)
    assert len(lines) <= 60, "\n".join(lines)
    assert all(len(line) <= 80 for line in screen.stdout.splitlines()), screen.stdout
    assert screen.stdout.startswith("evaluate: the whole pool\n")
    assert "... the full table (60 rows x 69 columns): --format csv, or -o FILE.csv\n" in (
        screen.stderr
    )
    full = CliRunner().invoke(app, [*arguments, "-f", "csv"])
    assert full.exit_code == 0, full.output
    rows = list(csv.DictReader(io.StringIO(full.stdout)))
    for reference, metric in (("crowd", "kappa"), ("crowd-share", "jsd")):
        groups = [r for r in rows if r["reference"] == reference and r["rater_race"]]
        assert len(groups) == 25  # five models x five groups
        heading = f"{metric} against {reference}: group minus rest of the pool, the largest 5 of 25"
        assert heading in screen.stdout
        section = screen.stdout.split(heading + "\n", 1)[1].split("\n\n", 1)[0]
        drawn = grid("title\n" + section)
        assert drawn is not None, section
        names, body = drawn
        interval = ["95%", "interval"]  # a name with a space: two words
        assert names == ["model", "rater_race", "raters", "difference", *interval, "p_adjusted"]
        firsts = [line.split() for line in body if line[:1].strip()]  # each row's first line
        largest = sorted(groups, key=lambda r: -abs(float(r["difference"])))[:5]
        assert len(firsts) == len(largest)
        for words, row in zip(firsts, largest, strict=True):
            low, high, difference, p = (
                f"{float(row[name]):.3f}"
                for name in ("difference_low", "difference_high", "difference", "p_adjusted")
            )
            assert words[0] == row["model"]
            assert words[-5:] == [row["raters"], difference, f"[{low},", f"{high}]", p]


@pytest.mark.slow
def test_evaluate_by_keeps_the_full_table_for_the_formats_asked_for(
    sample: Path, five_models: Path, terminal: Terminal
) -> None:
    """-f table, --columns or -o: the full result, as asked."""
    arguments = ["evaluate", str(five_models), "-d", "990", "--by", "rater_race", *FAST]
    arguments += ["--data", str(sample), "--columns", "model,rater_race,raters,kappa"]
    screen = terminal.run(80, *arguments)
    assert screen.code == 0, screen.stderr
    assert "the largest" not in screen.stdout
    drawn = grid(screen.stdout)
    assert drawn is not None
    assert drawn[0] == ["model", "rater_race", "raters", "kappa"]


def test_evaluate_of_one_model_shows_its_table_and_two_lines_of_note(
    sample: Path, tmp_path: Path, terminal: Terminal
) -> None:
    predictions = Path(__file__).resolve().parents[2] / "dices_cli/data/demo-predictions.csv"
    lines = predictions.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "one-model.csv"
    path.write_text("\n".join(x for x in lines if not x.startswith("five-raters-flipped")) + "\n")
    screen = terminal.run(80, "evaluate", str(path), "--bootstrap", "20", "--data", str(sample))
    assert screen.code == 0, screen.stderr
    assert note_lines(screen.stderr) == 2, screen.stderr
    assert re.search(r"^\.\.\. no room for \d+ more columns", screen.stderr, re.M)
    assert len(screen_lines(screen)) <= 24, screen.stdout + screen.stderr
