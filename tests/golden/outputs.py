"""DICES's outputs, each to a file: every canned DICES query (CSV), `dices evaluate` of a fixed
predictions file, and the report's numbers (JSON: each section's tables and notes, every
float as Python writes it, exactly).

    python tests/golden/outputs.py DATA PREDICTIONS OUT [--tree TREE]

runs them over the data directory DATA into the folder OUT, with the `dices_cli` of TREE
(default: this repository's), in this process. tests/golden/test_golden.py compares them
with tests/golden/files/ byte for byte; scripts/compare_dices_outputs.py runs them with two
trees. The file is self-contained (no import of this repository's test code) so that an
older tree's `dices_cli` can run it.

A command that fails gives NAME.error (its exit code and message) in place of its output.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

# Each output: its file name (without .csv) and the `dices` arguments that make it. Only
# options every tree since issue 38 began takes, so that two trees can be compared.
QUERIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("overview", ("query", "overview")),
    (
        "qoverall-by-demographic.gender",
        ("query", "qoverall-by-demographic", "--by", "rater_gender"),
    ),
    (
        "qoverall-by-demographic.race-x-gender",
        ("query", "qoverall-by-demographic", "--by", "rater_race", "--by", "rater_gender"),
    ),
    (
        "qoverall-by-demographic.age-wilson",
        ("query", "qoverall-by-demographic", "--by", "rater_age", "--interval", "wilson"),
    ),
    ("degree-of-harm", ("query", "degree-of-harm")),
    ("degree-of-harm.age", ("query", "degree-of-harm", "--by", "rater_age")),
    ("gold-vs-crowd", ("query", "gold-vs-crowd", "-d", "350")),
    (
        "gold-vs-crowd.threshold",
        ("query", "gold-vs-crowd", "-d", "350", "--rule", "threshold", "--threshold", "0.4"),
    ),
    ("gold-vs-crowd-summary", ("query", "gold-vs-crowd-summary", "-d", "350")),
    (
        "gold-vs-crowd-summary.gender",
        ("query", "gold-vs-crowd-summary", "-d", "350", "--by", "rater_gender"),
    ),
    ("group-disagreement.gender", ("query", "group-disagreement", "--by", "rater_gender")),
    ("harm-types", ("query", "harm-types")),
    ("item-distribution", ("query", "item-distribution")),
    ("item-distribution.gender", ("query", "item-distribution", "--by", "rater_gender")),
    ("agreement.gender", ("query", "agreement", "--by", "rater_gender")),
    ("agreement.race", ("query", "agreement", "--by", "rater_race", "--permutations", "200")),
    ("rater-quality", ("query", "rater-quality")),
)
EVALUATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("evaluate", ("-d", "350")),
    ("evaluate.gender", ("-d", "350", "--by", "rater_gender", "--permutations", "200")),
)
REPORT = "report-numbers.jsonl"
REPORT_BY = ["rater_gender"]
REPORT_PERMUTATIONS = 200
PANEL = 5  # raters whose answers make the predictions' stand-in judge


def predictions(dices_350: Path, out: Path) -> Path:
    """A predictions file for the DICES-350 file `dices_350` (CSV, or .gz): `five-raters`,
    each conversation's share of Yes among its first five raters' (by id) Q_overall answers
    as its score, Yes above one half; and `five-raters-flipped`, the same judge inverted.
    The same file gives the same bytes."""
    opener = gzip.open if dices_350.suffix == ".gz" else open
    with opener(dices_350, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    panel = sorted({int(row["rater_id"]) for row in rows})[:PANEL]
    answers: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        if int(row["rater_id"]) in panel and row["Q_overall"] in ("Yes", "No"):
            answers[int(row["item_id"])].append(row["Q_overall"])
    lines = io.StringIO()
    writer = csv.writer(lines, lineterminator="\n")
    writer.writerow(["model", "item_id", "label", "score"])
    for model in ("five-raters", "five-raters-flipped"):
        for item in sorted(answers):
            share = answers[item].count("Yes") / len(answers[item])
            score = 1 - share if model.endswith("flipped") else share
            writer.writerow([model, item, "Yes" if score > 0.5 else "No", round(score, 6)])
    out.write_text(lines.getvalue(), encoding="utf-8")
    return out


def produce(data: Path, predictions_file: Path, out: Path) -> list[str]:
    """Every output over `data` into `out`; their file names, in order."""
    from typer.testing import CliRunner

    from dices_cli.cli.main import app

    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    runs = [(f"{name}.csv", list(args)) for name, args in QUERIES]
    runs += [
        (f"{name}.csv", ["evaluate", str(predictions_file), *args]) for name, args in EVALUATIONS
    ]
    written = []
    for file, args in runs:
        result = runner.invoke(app, [*args, "--data", str(data), "-f", "csv", "-q"])
        written.append(_write(out, file, result.exit_code, result.stdout_bytes, result.stderr))
    try:
        numbers = "".join(json.dumps(line, default=str) + "\n" for line in report_numbers(data))
    except Exception as error:  # an older tree's report may read otherwise: say so, go on
        written.append(_write(out, REPORT, 1, b"", f"{type(error).__name__}: {error}"))
    else:
        written.append(_write(out, REPORT, 0, numbers.encode(), ""))
    return written


def _write(out: Path, file: str, code: int, stdout: bytes, stderr: str) -> str:
    if code == 0:
        (out / file).write_bytes(stdout)
        return file
    name = f"{file}.error"
    (out / name).write_text(f"exit {code}\n{stderr}", encoding="utf-8")
    return name


def report_numbers(data: Path) -> list[list[Any]]:
    """The numbers of `dices report --by rater_gender` over `data`, a line each: per
    section, its title, its figures' tables and its own tables (their columns, then a line
    per row), its notes and warnings. The page's charts are drawn from these; its date and
    checksums are left out."""
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.raters.selection import resolve
    from dices_cli.report.context import Context
    from dices_cli.report.sections import SECTIONS
    from dices_cli.store.datasets import Store

    store = Store(data)
    with store.pinned():
        selection = resolve(store, "all", RaterSelection())
        context = Context(store, "all", selection, list(REPORT_BY), REPORT_PERMUTATIONS, 0)
        numbers: list[list[Any]] = []
        for build in SECTIONS:
            section = build(context)
            if section is None:
                continue
            numbers.append([section.key, "title", section.title])
            tables = [(f"figure {i}", f.table) for i, f in enumerate(section.figures, 1)]
            tables += [(f"table: {caption}", table) for caption, table in section.tables]
            for where, table in tables:
                numbers.append([section.key, where, "columns", list(table.columns)])
                numbers += [[section.key, where, "row", list(row)] for row in table.rows]
            numbers += [[section.key, "note", note] for note in section.notes]
            numbers += [[section.key, "warning", warning] for warning in section.warnings]
    return numbers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("predictions", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--tree", type=Path, help="the tree whose dices_cli runs")
    arguments = parser.parse_args()
    if arguments.tree is not None:
        sys.path.insert(0, str(arguments.tree.resolve()))
    for name in produce(arguments.data, arguments.predictions, arguments.out):
        print(name)


if __name__ == "__main__":
    main()
