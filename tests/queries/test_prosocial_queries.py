"""ProsocialDialog's canned queries: `dices query NAME -d prosocial`, and what cannot apply."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES
from dices_cli.queries.catalog import family_queries, parse_query
from dices_cli.queries.own_sql import packaged_sql_directory

REPO = Path(__file__).resolve().parents[2]
ANNOTATIONS = {"casual": 0, "needs caution": 1, "needs intervention": 2}


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def csv_rows(result: Result) -> list[list[str]]:
    assert result.exit_code == 0, result.output
    return list(csv.reader(io.StringIO(result.stdout)))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 synthetic train lines and 200 test lines, one label changed, ingested."""
    folder = tmp_path_factory.mktemp("prosocial")
    for split, rows in (("train", 600), ("test", 200)):
        subprocess.run(
            [
                *(sys.executable, str(REPO / "scripts" / "make_prosocial.py"), str(folder)),
                *("--split", split, "--rows", str(rows), "--seed", "5"),
            ],
            check=True,
        )
    train = folder / "train.json"
    lines = train.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["safety_label"] = (
        "__casual__" if first["safety_label"] != "__casual__" else "__needs_caution__"
    )
    lines[0] = json.dumps(first)
    train.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = run("ingest", train, folder / "test.json", "--data", folder / "data")
    assert result.exit_code == 0, result.output
    return folder


def annotations(folder: Path) -> np.ndarray:
    rows = [
        [ANNOTATIONS[a] for a in json.loads(line)["safety_annotations"]]
        for name in ("train.json", "test.json")
        for line in (folder / name).read_text(encoding="utf-8").splitlines()
    ]
    return np.array(rows)


@pytest.mark.parametrize("name", sorted(family_queries("prosocial")))
def test_every_query_has_the_columns_its_header_declares(name: str, generated: Path) -> None:
    canned = family_queries("prosocial")[name]
    rows = csv_rows(run("query", name, "-d", "prosocial", "--data", generated / "data"))
    assert rows[0] == canned.output_columns({})
    assert len(rows) > 1


def test_overview_counts_per_split(generated: Path) -> None:
    rows = csv_rows(run("query", "overview", "-d", "prosocial", "--data", generated / "data"))
    values = annotations(generated)
    train, test = values[:600], values[600:]
    assert [row[:5] for row in rows[1:]] == [
        ["prosocial", "train", rows[1][2], "600", "1800"],
        ["prosocial", "test", rows[2][2], "200", "600"],
    ]
    assert float(rows[1][5]) == pytest.approx((train == 0).mean())
    assert float(rows[2][7]) == pytest.approx((test == 2).mean())


def test_agreement_is_krippendorffs_alpha_and_fleiss_kappa(generated: Path) -> None:
    rows = csv_rows(run("query", "agreement", "-d", "prosocial", "--data", generated / "data"))
    record = dict(zip(rows[0], rows[1], strict=True))
    values = annotations(generated)
    by_rater = values.T.astype(float)  # krippendorff wants raters x units: slots as raters
    assert float(record["irr"]) == pytest.approx(
        krippendorff.alpha(by_rater, level_of_measurement="nominal"), abs=1e-12
    )
    assert float(record["irr_ordinal"]) == pytest.approx(
        krippendorff.alpha(by_rater, level_of_measurement="ordinal"), abs=1e-12
    )
    counts = np.stack([(values == c).sum(axis=1) for c in range(3)], axis=1)
    observed = ((counts * (counts - 1)).sum(axis=1) / 6).mean()
    expected = ((counts.sum(axis=0) / counts.sum()) ** 2).sum()
    assert float(record["fleiss_kappa"]) == pytest.approx(
        (observed - expected) / (1 - expected), abs=1e-12
    )
    assert (record["items"], record["ratings"]) == ("800", "2400")


def test_label_check_counts_the_changed_label(generated: Path) -> None:
    rows = csv_rows(run("query", "label-check", "--data", generated / "data"))  # -d all
    differing = [row for row in rows[1:] if row[3] == "false"]
    assert len(differing) == 1
    assert differing[0][4] == "1"
    assert sum(int(row[4]) for row in rows[1:]) == 800


def test_the_generators_labels_are_the_papers_rule(generated: Path, tmp_path: Path) -> None:
    """The generated test.json (unchanged) ingests without a label warning, and holds
    utterances with a single needs intervention vote, where a rule asking for two would
    differ."""
    test = generated / "test.json"
    rows = [json.loads(line) for line in test.read_text(encoding="utf-8").splitlines()]
    single = [row for row in rows if row["safety_annotations"].count("needs intervention") == 1]
    assert len(single) >= 10
    assert {row["safety_label"] for row in single} == {"__needs_intervention__"}
    data = tmp_path / "data"
    result = run("ingest", test, "--data", data)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "ProsocialDialog: 200 lines read = 200 written + 0 rejected; 200 utterances in "
        f"{len({row['dialogue_id'] for row in rows})} dialogues, 600 annotations -> "
        f"{data / 'prosocial'}\n"
    )
    checked = csv_rows(run("query", "label-check", "-d", "prosocial", "--data", data))
    assert {row[3] for row in checked[1:]} == {"true"}


def test_item_distribution_and_source_breakdown_add_up(generated: Path) -> None:
    data = generated / "data"
    items = csv_rows(run("query", "item-distribution", "-d", "prosocial", "--data", data))
    assert len(items) == 801
    assert items[1][1] == "train-0-0"
    header = items[0]
    for row in items[1:]:
        counts = [int(row[header.index(c)]) for c in ("n_casual", "n_needs_caution")]
        counts.append(int(row[header.index("n_needs_intervention")]))
        assert sum(counts) == 3
        top = sorted(counts)
        assert (row[header.index("plurality")] == "tie") == (top[2] == top[1])
    sources = csv_rows(run("query", "source-breakdown", "--data", data, "-d", "prosocial"))
    assert sum(int(row[3]) for row in sources[1:]) == 800


def test_the_list_says_which_queries_prosocial_has() -> None:
    listed = {row[0]: row[1] for row in csv_rows(run("query", "--list", "-f", "csv"))[1:]}
    assert listed["label-check"] == "prosocial"
    assert listed["overview"] == "350 990 prosocial declared"
    assert listed["label-by-group"] == "declared"
    assert listed["gold-vs-crowd"] == "350"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["gold-vs-crowd", "-d", "prosocial"],
            "ProsocialDialog has no rater ids, demographics or expert gold labels; "
            "gold-vs-crowd needs them",
        ),
        (
            ["agreement", "-d", "prosocial", "--by", "rater_age"],
            "ProsocialDialog has no rater ids or demographics; `agreement --by` needs them",
        ),
        (
            ["agreement", "-d", "prosocial", "--permutations", "10"],
            "ProsocialDialog has no rater ids or demographics; "
            "`agreement --permutations` needs them",
        ),
        (
            ["overview", "-d", "prosocial", "--exclude-removed"],
            "ProsocialDialog has no rater ids; --exclude-removed, --raters and --min-quality "
            "choose raters",
        ),
        (
            ["label-check", "-d", "350"],
            "label-check applies to ProsocialDialog only: give --dataset prosocial",
        ),
    ],
)
def test_what_cannot_apply_says_so_in_one_line(
    arguments: list[str], message: str, generated: Path
) -> None:
    result = run("query", *arguments, "--data", generated / "data")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"Error: {message}", "Try 'dices query -h' for help."]


def test_prosocial_not_ingested_is_an_error(tmp_path: Path, generated: Path) -> None:
    empty = tmp_path / "empty"
    result = run("query", "overview", "-d", "prosocial", "--data", empty)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: nothing is ingested in {empty}; run `dices ingest FILE --data {empty}` first\n"
    )


def test_with_only_prosocial_ingested_a_query_runs_on_it(tmp_path: Path) -> None:
    shared = Path(os.environ.get("DICES_SHARED", REPO.parent / "shared"))
    samples = shared / "data" / "prosocial" / "samples.jsonl"
    if not samples.exists():
        pytest.skip(f"ProsocialDialog samples not found at {samples} (set DICES_SHARED)")
    train = tmp_path / "train.json"
    train.write_bytes(samples.read_bytes())
    data = tmp_path / "data"
    assert run("ingest", train, "--data", data).exit_code == 0
    assert csv_rows(run("query", "overview", "--data", data)) == [
        [
            *("dataset", "split", "dialogues", "items", "ratings"),
            *("share_casual", "share_needs_caution", "share_needs_intervention"),
        ],
        ["prosocial", "train", "2", "5", "15", "0.0", "1.0", "0.0"],
    ]


# The declared queries a dataset is offered only when it declares a reference label.
NEED_A_REFERENCE = {"gold-vs-crowd", "gold-vs-crowd-items"}


def test_each_family_declares_the_queries_its_sql_has() -> None:
    declared = {name: set(family.queries) for name, family in FAMILIES.items()}
    top = packaged_sql_directory()
    dices = {
        parse_query(path, path.read_text(encoding="utf-8")).name
        for path in top.glob("*.sql")
        if not path.name.startswith("_")
    }
    every_declared = {path.stem for path in (top / "declared").glob("*.sql")}
    assert declared == {
        "dices": dices,
        "prosocial": {path.stem for path in (top / "prosocial").glob("*.sql")},
        **{
            name: every_declared if f.has_gold else every_declared - NEED_A_REFERENCE
            for name, f in FAMILIES.items()
            if f.declared is not None
        },
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["filter-raters", "-d", "prosocial"],
            "ProsocialDialog has no rater ids; dices filter-raters needs them",
        ),
        (
            ["report", "-d", "prosocial", "-o", "never.html"],
            "ProsocialDialog has no rater ids; dices report needs them",
        ),
    ],
)
def test_commands_that_need_dices_say_so_in_one_line(
    arguments: list[str], message: str, generated: Path
) -> None:
    result = run(*arguments, "--data", generated / "data")
    command = arguments[0]
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        f"Error: {message}",
        f"Try 'dices {command} -h' for help.",
    ]
    assert not Path("never.html").exists()
