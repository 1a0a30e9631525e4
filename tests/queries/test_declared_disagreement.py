"""`dices query group-disagreement -d NAME` of a declared dataset: per item, the groups'
extremes and a permutation test that uses the scale's order for an ordinal label
(Kruskal-Wallis) and the groups x values table otherwise (chi-square). The statistics equal
scipy's to 1e-9, the p-values scipy's permutation test within Monte Carlo error, and the test
holds its level under shuffled groups (ordinal ratings with crossed effects) and finds a
shifted group."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binom, chi2_contingency, kruskal, permutation_test
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.declared_disagreement import group_disagreement
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "ordinal_toy"


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("declared-disagreement")
    toy = ordinal_ratings((6, 8), items=10, per_rater=8, seed=5)
    ingest_dataset(toy, folder, NAME)
    return folder


def query(folder: Path, *args: str) -> tuple[int, list[dict[str, str]], str]:
    result = CliRunner().invoke(
        app,
        ["query", "group-disagreement", "-d", NAME, "--data", str(folder / "data"), "-f",
         "csv", *args],
    )  # fmt: skip
    return result.exit_code, list(csv.DictReader(io.StringIO(result.stdout))), result.stderr


def by_item(folder: Path, label: str) -> dict[str, dict[str, list[str]]]:
    """Each item's ratings of `label` per group, from the raw file."""
    items: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    with open(folder / f"{NAME}.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            items[row["item_id"]][row["grp"]].append(row[label])
    return items


@pytest.mark.slow  # 2,000 relabellings: the nominal test below keeps the path in the inner loop
def test_ordinal_statistics_and_extremes_are_scipys(folder: Path) -> None:
    code, rows, err = query(folder, "--by", "grp", "--min-raters", "2", "--permutations", "2000")
    assert code == 0, err
    raw = by_item(folder, "score")
    assert {r["item_id"] for r in rows} == set(raw)
    for row in rows:
        groups = {g: [int(v) for v in vs] for g, vs in raw[row["item_id"]].items() if len(vs) >= 2}
        assert int(row["groups"]) == len(groups)
        if len(groups) < 2:
            assert row["test"] == "" and row["p_value"] == ""
            continue
        means = {g: np.mean(v) for g, v in groups.items()}
        assert row["highest_group"] == max(means, key=lambda g: means[g])
        assert float(row["gap"]) == pytest.approx(max(means.values()) - min(means.values()))
        samples = list(groups.values())
        if len({v for s in samples for v in s}) == 1:
            assert row["p_value"] == ""
            continue
        assert row["test"] == "kruskal-wallis"
        assert float(row["statistic"]) == pytest.approx(kruskal(*samples).statistic, abs=1e-9)
        reference = permutation_test(
            samples,
            lambda *s: kruskal(*s).statistic,
            permutation_type="independent",
            alternative="greater",
            n_resamples=2000,
            random_state=1,
        ).pvalue
        assert float(row["p_value"]) == pytest.approx(reference, abs=0.05)


def test_nominal_statistic_is_pearsons_chi_square(folder: Path) -> None:
    code, rows, err = query(folder, "--by", "grp", "--label", "colour", "--min-raters", "2")
    assert code == 0, err
    raw = by_item(folder, "colour")
    tested = 0
    for row in rows:
        groups = {g: v for g, v in raw[row["item_id"]].items() if len(v) >= 2}
        values = sorted({v for vs in groups.values() for v in vs})
        if len(groups) < 2 or len(values) < 2:
            continue
        table = [[vs.count(v) for v in values] for vs in groups.values()]
        expected = chi2_contingency(table, correction=False).statistic
        assert (row["test"], row["measure"]) == ("chi-square", "")
        assert float(row["statistic"]) == pytest.approx(expected, abs=1e-9)
        tested += 1
    assert tested >= 5


def test_an_attribute_is_required(folder: Path) -> None:
    code, rows, err = query(folder)
    assert (code, rows) == (2, [])
    assert "Missing option" in err and "--by" in err


def _table(ratings: OrdinalRatings) -> pa.Table:
    return pa.table(
        {
            "dataset": ["toy"] * len(ratings.value),
            "item_id": [f"i{i:03d}" for i in ratings.item],
            "grp": [f"g{ratings.group[r]}" for r in ratings.rater],
            "category": ratings.value - 1,
            "number": ratings.value.astype(float),
            "positive": ratings.value >= 3,
        }
    ).sort_by("item_id")


def _rejections(shifts: tuple[float, ...] | None, datasets: int) -> tuple[int, int]:
    parameters: dict[str, Any] = {
        "by": ["grp"], "kind": "ordinal", "positive_values": "3, 4, 5", "label": "score",
        "min_raters": 5, "permutations": 199, "seed": 0,
    }  # fmt: skip
    rejected = tested = 0
    for seed in range(datasets):
        ratings = ordinal_ratings((8, 12), items=30, per_rater=30, seed=seed, shifts=shifts)
        result = group_disagreement(_table(ratings), parameters)
        p = [r[result.columns.index("p_value")] for r in result.rows]
        tested += sum(v is not None for v in p)
        rejected += sum(v is not None and v <= 0.05 for v in p)
    return rejected, tested


@pytest.mark.calibration
def test_the_item_test_holds_its_level_under_the_null_and_finds_a_shift() -> None:
    rejected, tested = _rejections(None, datasets=12)
    assert tested == 12 * 30
    assert rejected <= binom.ppf(0.999, tested, 0.05), (rejected, tested)
    found, tested = _rejections((0.0, 1.0), datasets=3)
    assert found / tested > 0.3, (found, tested)  # six times the level
