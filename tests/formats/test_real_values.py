"""What the real DICES files may hold that the replica lacks (issue 10).

- Every value the TensorFlow Datasets builder (written from the official files) lists is
  accepted, in the schema's order.
- A rater demographic value the schema does not list is kept and reported once as a
  `new-value` warning; it reaches the Parquet Enum, the manifest and the query engine's
  ENUM types. Answers, safety_gold, degree_of_harm and phase stay strict.
- A valid file with fewer conversations, raters or ratings than the published dataset gets
  an `incomplete-dataset` warning for each short count.
- `dices export` writes both replica files back byte for byte.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fixtures.dices_csv import header, rows, to_csv
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families.schema import (
    AGE,
    DATASETS,
    DICES_990,
    EDUCATION,
    GENDER,
    LOCALE,
    PHASE,
    RACE,
)

RATER_0, RATER_1, RATER_2 = "296708581782793", "296708581783793", "296708581784793"
LINE_350 = {i: 2 + 3 * i for i in range(12)}  # DICES-350 contexts span 3 lines per record

# The label sets of the TensorFlow Datasets builder (shared/docs/dices-tfds-catalog.txt,
# shared/data/README.md "Values the real files may hold"), as it lists them.
TFDS_LABELS = {
    "rater_gender": {"Man", "Woman", "Nonbinary", "Self-describe (below)"},
    "rater_race": {
        "Asian/Asian subcontinent",
        "Black/African American",
        "LatinX, Latino, Hispanic or Spanish Origin",
        "Multiracial",
        "Other",
        "White",
    },
    "rater_age": {"millenial", "gen x+", "gen z"},
    "rater_education": {"College degree or higher", "High school or below", "Other"},
    "phase": {"Phase1", "Phase2", "Phase3"},
    "rater_locale": {"IN", "US"},
}


def write(path: Path, dataset: str, table: list[dict[str, str]]) -> Path:
    path.write_bytes(to_csv(header(dataset), [list(r.values()) for r in table]))
    return path


def ingest(runner: CliRunner, data: Path, *paths: Path) -> Result:
    return runner.invoke(app, ["ingest", *map(str, paths), "--data", str(data)])


def validate_records(runner: CliRunner, path: Path) -> list[dict[str, str]]:
    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def manifest(data: Path, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((data / name / "manifest.json").read_text())
    return loaded


def small_file_warnings(path: Path, title: str, raters: int = 3) -> list[dict[str, str]]:
    """The incomplete-dataset warnings of a 2-conversation x `raters` file."""
    published = DATASETS[title.removeprefix("DICES-")].published
    counts = [
        (2, "conversations", published.conversations),
        (raters, "raters", published.raters),
        (2 * raters, "ratings", published.ratings),
    ]
    return [
        {
            "file": str(path),
            "type": "incomplete-dataset",
            "severity": "warning",
            "line": "",
            "column": "",
            "value": f"{found} of {expected:,} {noun}",
            "message": f"the file holds {found} of the {expected:,} {noun} of {title}; "
            "it may be cut short",
        }
        for found, noun, expected in counts
    ]


# --- 1. every value the official builder lists ----------------------------------------------


def test_the_schema_lists_every_value_of_the_official_builder() -> None:
    ours = {
        "rater_gender": GENDER,
        "rater_race": RACE,
        "rater_age": AGE,
        "rater_education": EDUCATION,
        "phase": PHASE,
        "rater_locale": LOCALE,
    }
    assert {column: set(values) for column, values in ours.items()} == TFDS_LABELS
    for name in ("350", "990"):
        for column in DATASETS[name].columns:
            if column.name in ours:
                assert column.values == ours[column.name]
    # A sensible order, not the builder's alphabetical one: the groups the papers compare first.
    assert GENDER == ("Man", "Woman", "Nonbinary", "Self-describe (below)")
    assert RACE[-1] == "Other"


LISTED_VALUES = [
    (dataset, column, value)
    for dataset in ("350", "990")
    for column in ("rater_gender", "rater_race", "phase")
    for value in sorted(TFDS_LABELS[column])
]


@pytest.mark.parametrize(("dataset", "column", "value"), LISTED_VALUES)
def test_every_listed_value_is_ingested_without_a_new_value_warning(
    dataset: str, column: str, value: str, runner: CliRunner, tmp_path: Path
) -> None:
    table = rows(dataset, 2, 3)
    for row in table:
        if column == "phase" or row["rater_id"] == RATER_1:
            row[column] = value
    path, data = write(tmp_path / "listed.csv", dataset, table), tmp_path / "data"
    title = f"DICES-{dataset}"

    assert validate_records(runner, path) == small_file_warnings(path, title)
    result = ingest(runner, data, path)

    assert result.exit_code == 0, result.output
    which = "ratings" if column == "phase" else "raters"
    stored = pl.read_parquet(data / dataset / f"{which}.parquet")
    values = DATASETS[dataset].column(column).values
    assert stored.schema[column] == pl.Enum(list(values))
    assert value in stored[column].to_list()
    assert manifest(data, dataset)["new_values"] == {}


# --- 2. new demographic values are kept and reported ----------------------------------------


def _with_new_values() -> list[dict[str, str]]:
    """4 conversations x 3 raters: rater 1 'Genderqueer' and race 'Pacific Islander',
    rater 2 'Agender'; rater 0's gender 'Man' is listed."""
    table = rows("350", 4, 3)
    for row in table:
        if row["rater_id"] == RATER_1:
            row["rater_gender"] = "Genderqueer"
            row["rater_race"] = "Pacific Islander"
        elif row["rater_id"] == RATER_2:
            row["rater_gender"] = "Agender"
    return table


def test_new_demographic_values_are_one_warning_each(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "new.csv", "350", _with_new_values())

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 0, result.output
    new = [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["type"] == "new-value"]
    assert new == [
        {
            "file": str(path),
            "type": "new-value",
            "severity": "warning",
            "line": str(LINE_350[line]),
            "column": column,
            "value": value,
            "message": f"'{value}' is not a listed {column} value; kept as a new one "
            "(1 rater, 4 rows)",
        }
        for line, column, value in [
            (1, "rater_gender", "Genderqueer"),
            (1, "rater_race", "Pacific Islander"),
            (2, "rater_gender", "Agender"),
        ]
    ]
    assert result.stderr == (
        f"{path}: valid (DICES-350); 12 rows read, 0 would be rejected "
        "[3 incomplete-dataset, 3 new-value]\n"
    )


def test_new_demographic_values_are_stored_after_the_listed_ones(
    runner: CliRunner, tmp_path: Path
) -> None:
    path, data = write(tmp_path / "new.csv", "350", _with_new_values()), tmp_path / "data"

    result = ingest(runner, data, path)

    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"DICES-350: 12 rows read = 12 written + 0 rejected; 4 conversations, 3 raters "
        f"-> {data / '350'}\n"
        "  warning: rater values the schema does not list, kept as new ones: "
        "rater_gender 'Genderqueer', rater_race 'Pacific Islander', rater_gender 'Agender' "
        "[new-value]\n"
        "  warning: the file holds fewer than the published DICES-350: 4 of 350 conversations, "
        "3 of 123 raters, 12 of 43,050 ratings; it may be cut short [incomplete-dataset]\n"
    )
    raters = pl.read_parquet(data / "350" / "raters.parquet")
    assert raters.schema["rater_gender"] == pl.Enum([*GENDER, "Genderqueer", "Agender"])
    assert raters.schema["rater_race"] == pl.Enum([*RACE, "Pacific Islander"])
    assert raters["rater_gender"].to_list() == ["Man", "Genderqueer", "Agender"]
    found = manifest(data, "350")
    assert found["new_values"] == {
        "rater_gender": ["Genderqueer", "Agender"],
        "rater_race": ["Pacific Islander"],
    }
    assert found["warnings"] == {"incomplete-dataset": 3, "new-value": 3}


def test_a_value_only_in_rejected_rows_is_not_kept(runner: CliRunner, tmp_path: Path) -> None:
    """Row 4 gives rater 1 another gender than its row 1 did: it is rejected, and its value
    is neither reported as kept nor stored."""
    table = rows("350", 2, 3)
    table[4]["rater_gender"] = "Genderqueer"
    path, data = write(tmp_path / "new.csv", "350", table), tmp_path / "data"

    result = runner.invoke(
        app, ["ingest", str(path), "--data", str(data), "--rejects", str(tmp_path / "r.csv")]
    )

    assert result.exit_code == 0, result.output
    assert "new-value" not in result.stderr
    assert manifest(data, "350")["new_values"] == {}
    raters = pl.read_parquet(data / "350" / "raters.parquet")
    assert raters.schema["rater_gender"] == pl.Enum(list(GENDER))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("Q_overall", "Maybe"),
        ("Q2_harmful_content_other", "Perhaps"),
        ("safety_gold", "Unsure"),
        ("degree_of_harm", "Severe"),
        ("phase", "Phase4"),
    ],
)
def test_answers_gold_harm_and_phase_stay_strict(
    column: str, value: str, runner: CliRunner, tmp_path: Path
) -> None:
    table = rows("350", 2, 3)
    for row in table[:3]:  # one conversation: degree_of_harm and safety_gold are per conversation
        row[column] = value
    path = write(tmp_path / "strict.csv", "350", table)

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    found = {
        (r["type"], r["column"], r["value"]) for r in csv.DictReader(io.StringIO(result.stdout))
    }
    assert found == {("not-in-enum", column, value)}


def _demographic_records(runner: CliRunner, data: Path, dataset: str) -> list[tuple[str, str, int]]:
    result = runner.invoke(
        app,
        [
            "query",
            "qoverall-by-demographic",
            "--by",
            "rater_gender",
            "-d",
            dataset,
            "--data",
            str(data),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    return [(r["dataset"], r["rater_gender"], r["raters"]) for r in json.loads(result.stdout)]


def test_queries_see_new_values_of_one_and_of_both_datasets(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Each dataset brings its own new values; with --dataset all the ENUM holds both."""
    table_990 = rows("990", 2, 3)
    for row in table_990:
        if row["rater_id"] == RATER_0:
            row["rater_gender"] = "Two-spirit"
        elif row["rater_id"] == RATER_1:
            row["rater_gender"] = "Genderqueer"
    data = tmp_path / "data"
    path_350 = write(tmp_path / "350.csv", "350", _with_new_values())
    path_990 = write(tmp_path / "990.csv", "990", table_990)
    assert ingest(runner, data, path_350, path_990).exit_code == 0

    assert _demographic_records(runner, data, "350") == [
        ("350", "Man", 1),
        ("350", "Genderqueer", 1),
        ("350", "Agender", 1),
    ]
    # The enum's order: the listed values, then DICES-350's new ones, then DICES-990's.
    assert _demographic_records(runner, data, "all") == [
        ("350", "Man", 1),
        ("350", "Genderqueer", 1),
        ("350", "Agender", 1),
        ("990", "Nonbinary", 1),
        ("990", "Genderqueer", 1),
        ("990", "Two-spirit", 1),
    ]


# --- 3. incomplete files ----------------------------------------------------------------------


def _first_records(path: Path, count: int) -> bytes:
    """The header and the first `count` records of a CSV, cut at a record boundary."""
    data = path.read_bytes()
    reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
    for _ in range(count + 1):
        next(reader)
    return b"".join(data.splitlines(keepends=True)[: reader.line_num])


def test_a_file_cut_at_a_record_boundary_is_incomplete(
    replica_350: Path, runner: CliRunner, tmp_path: Path
) -> None:
    path, data = tmp_path / "cut.csv", tmp_path / "data"
    path.write_bytes(_first_records(replica_350, 20_000))

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 0, result.output
    # Each conversation has its 123 ratings in a row: the first 20,000 rows hold every rater.
    warning = {
        "file": str(path),
        "type": "incomplete-dataset",
        "severity": "warning",
        "line": "",
        "column": "",
    }
    assert list(csv.DictReader(io.StringIO(result.stdout))) == [
        warning
        | {
            "value": "163 of 350 conversations",
            "message": "the file holds 163 of the 350 conversations of DICES-350; "
            "it may be cut short",
        },
        warning
        | {
            "value": "20,000 of 43,050 ratings",
            "message": "the file holds 20,000 of the 43,050 ratings of DICES-350; "
            "it may be cut short",
        },
    ]

    result = ingest(runner, data, path)

    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[1:] == [
        "  warning: the file holds fewer than the published DICES-350: "
        "163 of 350 conversations, 20,000 of 43,050 ratings; it may be cut short "
        "[incomplete-dataset]"
    ]
    assert manifest(data, "350")["warnings"] == {"incomplete-dataset": 2}


def _frame(conversations: int, raters: int, ratings: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [str(i) for i in range(ratings)],
            "item_id": [str(i % conversations) for i in range(ratings)],
            "rater_id": [str(i % raters) for i in range(ratings)],
        }
    )


def test_dices_990_counts_172_raters_as_complete() -> None:
    """Its README says 173 raters and 172: 172 is the threshold, 171 is short."""
    from dices_cli.formats.dices.checks import incomplete_warnings  # here: the old code has none

    assert incomplete_warnings(DICES_990, _frame(990, 172, 72_103)) == []
    (short,) = incomplete_warnings(DICES_990, _frame(990, 171, 72_103))
    assert (short.line, short.column, short.value, short.message) == (
        None,
        None,
        "171 of 172 raters",
        "the file holds 171 of the 172 raters of DICES-990; it may be cut short",
    )


def test_a_file_with_errors_gets_no_incomplete_warning(runner: CliRunner, tmp_path: Path) -> None:
    table = rows("350", 2, 3)
    table[1]["phase"] = "Phase4"
    path = write(tmp_path / "bad.csv", "350", table)

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    assert [r["type"] for r in csv.DictReader(io.StringIO(result.stdout))] == ["not-in-enum"]


# --- 4. exact export --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["350", "990"])
def test_export_of_a_replica_is_byte_identical(
    name: str, replica_350: Path, replica_990: Path, ingested: Path, runner: CliRunner
) -> None:
    source = {"350": replica_350, "990": replica_990}[name]

    result = runner.invoke(app, ["export", "-d", name, "--data", str(ingested)])

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == source.read_bytes()


@pytest.mark.parametrize("name", ["350", "990"])
def test_empty_cells_are_exported_as_nothing(name: str, runner: CliRunner, tmp_path: Path) -> None:
    """Empty harm_type and degree_of_harm (null when stored) and an empty raw race (a text
    cell, stored as '') come back bare, as they were, not as ""."""
    table = rows(name, 3, 3)
    table[0]["rater_raw_race"] = ""
    table[3]["rater_raw_race"] = ""
    table[6]["rater_raw_race"] = ""
    path, data = write(tmp_path / "empty.csv", name, table), tmp_path / "data"
    assert b",," in path.read_bytes()
    assert ingest(runner, data, path).exit_code == 0

    result = runner.invoke(app, ["export", "-d", name, "--data", str(data)])

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == path.read_bytes()
