"""The messages a newcomer meets on the way (issue 41): each with its exit code and wording."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.cli.main import app
from dices_cli.report import charts
from dices_cli.report import svg as report_svg

ITEMS_990 = "SELECT item_id FROM items WHERE dataset = '990' ORDER BY item_id"


def run(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(arguments))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def predictions_990(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A label for every DICES-990 conversation of the sample: most ids are no DICES-350's."""
    code, out, err = run("sql", ITEMS_990, "-f", "csv", "--data", str(sample))
    assert code == 0, err
    path = tmp_path_factory.mktemp("wrong") / "preds990.csv"
    path.write_text("item_id,label\n" + "".join(f"{i},Yes\n" for i in out.split()[1:]))
    return path


def test_predictions_of_the_other_dataset_name_the_one_scored_and_suggest_it(
    sample: Path, predictions_990: Path
) -> None:
    code, _out, err = run("evaluate", str(predictions_990), "--data", str(sample))
    assert code == 1
    first = err.splitlines()[0]
    assert first.startswith(f"Error: {predictions_990}: ")
    assert first.endswith(
        "rows name an item that is not a conversation of DICES-350, the dataset scored "
        "(-d 350, the default); predictions for DICES-990? add -d 990 (or -d all with a "
        "dataset column)"
    )
    assert "dices validate" not in err  # it reads dataset files, not predictions
    code, _out, err = run(
        "evaluate", str(predictions_990), "-d", "990", "--bootstrap", "0", "--data",
        str(sample), "-f", "csv",
    )  # fmt: skip
    assert code == 0, err


def test_the_rater_filter_says_what_its_score_could_not_see(sample: Path) -> None:
    arguments = ["filter-raters", "-d", "990", "--data", str(sample), "-f", "csv"]
    code, _out, err = run(*arguments, "--min-quality", "0")
    assert code == 0, err
    assert (
        "  signals scored: straightlining, consistency, agreement, comprehension; the score "
        "could not see speed (DICES-990 has no answer times)\n"
    ) in err
    assert "\n  no rater removed: the lowest score is 0." in err
    code, _out, err = run("filter-raters", "-d", "350", "--data", str(sample), "-f", "csv")
    assert code == 0, err
    assert "  signals scored: speed, straightlining, consistency, agreement, comprehension\n" in err


def test_export_long_without_a_dataset_writes_both_like_other_commands(
    sample: Path,
) -> None:
    code, out, err = run("export", "--layout", "long", "--data", str(sample))
    assert code == 0, err
    datasets = {row["dataset"] for row in csv.DictReader(io.StringIO(out))}
    assert datasets == {"350", "990"}
    code, out, err = run("export", "--data", str(sample))
    assert code == 2
    assert err.startswith(
        "Error: --layout wide writes one dataset: give --dataset 350, 990 or prosocial\n"
    )


def test_the_crowdkit_layout_has_crowdkits_names(sample: Path) -> None:
    code, out, err = run("export", "--layout", "crowdkit", "--data", str(sample))
    assert code == 0, err
    both = list(csv.reader(io.StringIO(out)))
    assert both[0] == ["task", "worker", "label"]
    code, out, err = run("export", "--layout", "long", "--data", str(sample))
    long = list(csv.DictReader(io.StringIO(out)))
    assert [tuple(row) for row in both[1:]] == [
        (f"{r['dataset']}/{r['item_id']}", r["rater_id"], r["label"]) for r in long
    ]
    code, out, err = run("export", "--layout", "crowdkit", "-d", "990", "--data", str(sample))
    assert code == 0, err
    one = list(csv.reader(io.StringIO(out)))
    assert one[1:] == [
        [r["item_id"], r["rater_id"], r["label"]] for r in long if r["dataset"] == "990"
    ]


@pytest.mark.parametrize("command", ["ingest", "evaluate", "validate"])
def test_a_missing_file_exits_2_from_every_command(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    code, _out, err = (
        run(command, str(missing), "--data", str(tmp_path))
        if command != ("validate")
        else run(command, str(missing))
    )
    assert code == 2
    assert err.startswith(f"Error: '{missing}' does not exist\n")


def test_version_is_answered_before_the_command_line_is_loaded() -> None:
    """`dices -V` as the console script runs it: without Typer, as the stored --help."""
    script = (
        "import sys; sys.argv = ['dices', '-V']\n"
        "import atexit, os\n"
        "from dices_cli.cli import launch\n"
        "real_exit = os._exit\n"
        "def leave(code):\n"
        "    loaded = [m for m in ('typer', 'click', 'rich') if m in sys.modules]\n"
        "    sys.stderr.write(' '.join(loaded))\n"
        "    sys.stderr.flush(); real_exit(code)\n"
        "os._exit = leave\n"
        "launch.run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"dices {__version__}\n", "")


def test_the_intersection_heatmap_shows_each_cells_raters() -> None:
    rows = [
        {"dataset": "DICES-350", "race": "White", "gender": "Man", "share_yes": 0.28, "raters": 14},
        {
            "dataset": "DICES-350",
            "race": "White",
            "gender": "Woman",
            "share_yes": 0.27,
            "raters": 3,
        },
    ]
    spec = charts.heatmap(
        "t", "d", rows, ("race", "race"), ("gender", "gender"), ("share_yes", "share of Yes"),
        ".0%", count=("raters", "raters"),
    )  # fmt: skip
    svg = report_svg.to_svg(spec)
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", svg)  # a cell's text: a line each
    assert lines == ["28%", "n=14", "27%", "n=3"]
