"""label-distribution counts each group's ratings per stored value and joins the scale to
the counts (`asked_ratings`, `asked_scale`): exact counts for a numeric and a named scale
against numpy, and both views as `DeclaredSession.ask` makes them."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.queries.declared import DeclaredSession
from dices_cli.runs.common import data_store
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "counted_toy"
COLOURS = ("red", "green", "blue")  # the colour label's scale, as tests/drivers/ordinal.py
pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def toy() -> OrdinalRatings:
    return ordinal_ratings((4, 6), items=15, per_rater=9, seed=11)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, toy: OrdinalRatings) -> Path:
    return ingest_dataset(toy, tmp_path_factory.mktemp("counted"), NAME)


def distribution(data: Path, *args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(
        app,
        ["query", "label-distribution", "-d", NAME, *args, "--data", str(data), "-f", "csv"],
    )
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def expected(
    toy: OrdinalRatings, values: np.ndarray, scale: list[str]
) -> list[tuple[str, str, int, int]]:
    """(half, value, ratings, group ratings), in the scale's order, from the ratings."""
    half = np.array(["ab"[r % 2] for r in toy.rater])
    rows = []
    for one in "ab":
        mine = values[half == one]
        for value in scale:
            count = int((mine == value).sum())
            if count:
                rows.append((one, value, count, len(mine)))
    return rows


def test_a_numeric_label_counts_every_value_per_group(data: Path, toy: OrdinalRatings) -> None:
    got = distribution(data, "--by", "half")
    want = expected(toy, toy.value.astype(str), [str(v) for v in range(1, 6)])
    assert [(r["half"], r["value"], int(r["ratings"]), int(r["group_ratings"])) for r in got] == (
        want
    )
    for row, (_, _, count, total) in zip(got, want, strict=True):
        assert float(row["share"]) == pytest.approx(count / total, abs=1e-15)


def test_a_named_label_counts_in_its_scale_order(data: Path, toy: OrdinalRatings) -> None:
    colour = np.array([COLOURS[(i + v) % 3] for i, v in zip(toy.item, toy.value, strict=True)])
    got = distribution(data, "--by", "half", "--label", "colour")
    assert [
        (r["half"], r["value"], int(r["ratings"]), int(r["group_ratings"])) for r in got
    ] == expected(toy, colour, list(COLOURS))


def test_asked_ratings_and_asked_scale_are_the_label_and_its_scale(
    data: Path, toy: OrdinalRatings
) -> None:
    session = DeclaredSession(data_store(data), NAME)
    session.ask("score")
    counts = dict(
        session.con.execute("SELECT value, count(*) FROM asked_ratings GROUP BY ALL").fetchall()
    )
    assert counts == {v: int((toy.value == v).sum()) for v in range(1, 6)}
    scale = session.con.execute("SELECT key, value, rank FROM asked_scale ORDER BY rank").fetchall()
    assert scale == [(v, str(v), v - 1) for v in range(1, 6)]
    joined = session.con.execute("SELECT count(*) FROM asked_label_values").fetchone()
    assert joined == (len(toy.value),)
