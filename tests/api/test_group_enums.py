"""The API's group columns are the enums the README names: a rater demographic (and every
other categorical column of the DICES schema) comes back from `query`, `sql` and `evaluate`
as a Polars `Enum` of the stored values in their published order, a value a file brought
appended after them; text of one's own SQL stays `str`, as do a declared dataset's groups."""

from __future__ import annotations

import csv
import gzip
import io
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import polars as pl
import pytest

import dices_cli as dices
from dices_cli.families.schema import DATASETS
from dices_cli.runs.demo import demo_predictions_path, sample_paths
from tests.drivers.ordinal import ingest_dataset, ordinal_ratings

pytestmark = pytest.mark.usefixtures("registry_as_it_was")
T = TypeVar("T")

# The published values in order, written out: the test does not read them from the code.
GENDER = ["Man", "Woman", "Nonbinary", "Self-describe (below)"]
RACE = [
    "White",
    "Black/African American",
    "LatinX, Latino, Hispanic or Spanish Origin",
    "Asian/Asian subcontinent",
    "Multiracial",
    "Other",
]
AGE = ["gen z", "millenial", "gen x+"]
EDUCATION = ["High school or below", "College degree or higher", "Other"]
DEMOGRAPHICS = {
    "rater_gender": GENDER,
    "rater_race": RACE,
    "rater_age": AGE,
    "rater_education": EDUCATION,
}


def quietly(call: Callable[[], T]) -> T:
    """`call`'s result, its `DicesNote`s left out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dices.DicesNote)
        return call()


def test_the_expected_values_are_the_schemas() -> None:
    """The lists above are the schema's (so a change to either is seen here)."""
    for dataset in DATASETS.values():
        columns = {c.name: list(c.values) for c in dataset.columns}
        assert {name: columns[name] for name in DEMOGRAPHICS} == DEMOGRAPHICS


@pytest.mark.parametrize("column", list(DEMOGRAPHICS))
@pytest.mark.parametrize(
    "name", ["qoverall-by-demographic", "agreement", "item-distribution", "gold-vs-crowd"]
)
def test_query_groups_are_enums(sample: Path, name: str, column: str) -> None:
    """A table query (values as Python text) and a streamed one (DuckDB ENUMs) alike."""
    given = {"permutations": 0} if name in ("qoverall-by-demographic", "agreement") else {}
    result = quietly(lambda: dices.open(sample).query(name, by=[column], **given))
    assert result.schema[column] == pl.Enum(DEMOGRAPHICS[column])
    assert result.height > 0
    shown = set(result[column].drop_nulls().to_list())
    assert shown and shown <= set(DEMOGRAPHICS[column])


def test_enums_compare_with_text_and_sort_in_their_order(sample: Path) -> None:
    shares = quietly(
        lambda: dices.open(sample).query(
            "qoverall-by-demographic", dataset="990", by=["rater_age"], permutations=0
        )
    )
    assert shares.filter(pl.col("rater_age") == "gen z").height == 1
    assert shares.sort("rater_age")["rater_age"].to_list() == AGE  # the published order
    assert sorted(shares["rater_age"].to_list()) == ["gen x+", "gen z", "millenial"]


def test_sql_enums_and_text_of_ones_own(sample: Path) -> None:
    d = dices.open(sample)
    typed = d.sql(
        "SELECT rater_race, rater_locale, Q_overall, rater_race::VARCHAR || '!' AS rater_age, "
        "'nobody' AS rater_gender FROM ratings_wide LIMIT 3",
        dataset="990",
    )
    assert typed.schema == pl.Schema(
        {
            "rater_race": pl.Enum(RACE),
            "rater_locale": pl.Enum(["IN", "US"]),
            "Q_overall": pl.Enum(["No", "Yes", "Unsure"]),
            "rater_age": pl.String,  # text that is not of the enum's values
            "rater_gender": pl.String,
        }
    )
    empty = d.sql("SELECT rater_age FROM raters WHERE false")
    assert empty.schema == pl.Schema({"rater_age": pl.Enum(AGE)})  # no rows: typed by name


@pytest.mark.parametrize("against", ["crowd", "gold"])
def test_evaluate_groups_are_enums(sample: Path, against: str) -> None:
    """A group row's column is the enum; the pooled row's is null (and, against the
    experts, whose labels have no groups, every row's)."""
    scored = quietly(
        lambda: dices.open(sample).evaluate(
            demo_predictions_path(), against=[against], by="rater_race", bootstrap=0
        )
    )
    assert scored.schema["rater_race"] == pl.Enum(RACE)
    groups = scored.filter(pl.col("rater_race").is_not_null())
    if against == "crowd":
        assert set(groups["rater_race"].to_list()) == set(RACE) - {"Other"}
        assert groups.filter(pl.col("rater_race") == "White").height == 2  # two models
    else:
        assert groups.height == 0


def test_a_value_a_file_brought_comes_after_the_published_ones(tmp_path: Path) -> None:
    """One rater's gender outside the published list is kept (a `new-value` warning) and
    appended to the enum: in the table and the streamed results alike."""
    text = gzip.decompress(sample_paths()[0].read_bytes()).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    gender, rater = rows[0].index("rater_gender"), rows[0].index("rater_id")
    for row in rows[1:]:
        if row[rater] == rows[1][rater]:
            row[gender] = "Agender"
    path = tmp_path / "new_value.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    dices.ingest([path], tmp_path / "data")
    d = dices.open(tmp_path / "data")
    wanted = pl.Enum([*GENDER, "Agender"])
    shares = quietly(lambda: d.query("qoverall-by-demographic", by="rater_gender"))
    assert shares.schema["rater_gender"] == wanted
    assert shares.filter(pl.col("rater_gender") == "Agender")["raters"].to_list() == [1]
    assert d.query("rater-quality").schema["rater_gender"] == wanted
    assert d.sql("SELECT rater_gender FROM raters").schema["rater_gender"] == wanted


def test_a_declared_datasets_groups_are_text(tmp_path: Path) -> None:
    """A declared dataset fixes no values in advance: its group column (`group`, "all
    raters" for the pooled row) is `str`."""
    data = ingest_dataset(ordinal_ratings((3, 5), items=12, per_rater=8, seed=3), tmp_path)
    predictions = tmp_path / "predictions.csv"  # CSV: the declared reader takes no Parquet
    predictions.write_text("item_id,label\n" + "".join(f"i{i:03d},3\n" for i in range(12)))
    scored = quietly(lambda: dices.open(data).evaluate(predictions, "ordinal_toy", by="grp"))
    assert scored.schema["group"] == pl.String
    assert scored["group"].to_list() == ["all raters", "g0", "g1"]
