"""The canned queries of every declared dataset (sql/declared/): exact results on a small
ordinal dataset, a clear usage error where a query does not fit, Krippendorff's alpha with
the nominal, ordinal and interval metrics against the `krippendorff` package, and the
group tests' calibration under shuffled demographics on ordinal ratings."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import krippendorff
import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binom, norm
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.any_family import share_intervals
from dices_cli.metrics.distance import Distance, alpha
from dices_cli.metrics.permutation import permutation_test
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "ordinal_toy"


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


@pytest.fixture(scope="module")
def toy() -> OrdinalRatings:
    return ordinal_ratings((3, 5), items=12, per_rater=8, seed=3)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, toy: OrdinalRatings) -> Path:
    folder = tmp_path_factory.mktemp("ordinal")
    return ingest_dataset(toy, folder, NAME)


def query(data: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["query", *args, "-d", NAME, "--data", str(data), "-f", "csv"])
    return result.exit_code, result.stdout, result.stderr


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_overview_counts_every_label(data: Path, toy: OrdinalRatings) -> None:
    code, out, err = query(data, "overview")
    assert code == 0, err
    score, colour = rows(out)
    assert (score["label"], score["scale"], colour["label"], colour["scale"]) == (
        "score", "ordinal", "colour", "nominal"
    )  # fmt: skip
    assert int(score["ratings"]) == len(toy.value) == int(colour["ratings"])
    assert int(score["raters"]) == 8
    assert float(score["mean"]) == pytest.approx(toy.value.mean(), abs=1e-12)
    assert float(score["share_positive"]) == pytest.approx((toy.value >= 3).mean(), abs=1e-12)
    assert colour["mean"] == "" and colour["share_positive"] == ""


def test_label_by_group_gives_the_mean_and_the_share_at_or_above_the_threshold(
    data: Path, toy: OrdinalRatings
) -> None:
    code, out, err = query(data, "label-by-group", "--by", "grp")
    assert code == 0, err
    got = rows(out)
    assert [row["grp"] for row in got] == ["g0", "g1"]
    for number, row in enumerate(got):
        mine = toy.group[toy.rater] == number
        assert int(row["raters"]) == int((toy.group == number).sum())
        assert int(row["ratings"]) == int(mine.sum())
        assert int(row["n_positive"]) == int((toy.value[mine] >= 3).sum())
        assert float(row["mean"]) == pytest.approx(toy.value[mine].mean(), abs=1e-12)
        assert row["positive"] == "3, 4, 5"


def test_label_distribution_and_item_distribution(data: Path, toy: OrdinalRatings) -> None:
    code, out, err = query(data, "label-distribution", "--by", "half")
    assert code == 0, err
    got = rows(out)
    for half in "ab":
        mine = [row for row in got if row["half"] == half]
        assert [row["value"] for row in mine] == sorted(row["value"] for row in mine)
        assert sum(float(row["share"]) for row in mine) == pytest.approx(1.0, abs=1e-12)
    code, out, err = query(data, "item-distribution", "--sort", "item_id")
    assert code == 0, err
    first = rows(out)[0]
    values = toy.value[toy.item == 0]
    counts = [int((values == v).sum()) for v in range(1, 6)]
    assert first["counts"] == " ".join(map(str, counts))
    shares = np.array([c for c in counts if c]) / len(values)
    assert float(first["entropy_bits"]) == pytest.approx(-(shares * np.log2(shares)).sum())
    top = [v for v, c in zip(range(1, 6), counts, strict=True) if c == max(counts)]
    assert first["plurality"] == (str(top[0]) if len(top) == 1 else "tie")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["label-by-group", "--label", "colour"],
         "label-by-group takes a label of a binary or ordinal scale; Ordinal toy's colour is "
         "nominal; its score fit"),
        (["label-by-group", "--by", "age"],
         "Ordinal toy has no rater attribute 'age' for --by; its raters' attributes are: grp, "
         "half"),
        (["overview", "--label", "x"], "overview does not take --label"),
        (["label-distribution", "--label", "nope"],
         "Ordinal toy has no label 'nope'; choose --label from: score, colour"),
        (["agreement", "--label", "colour", "--metric", "ordinal"],
         "Ordinal toy's colour is nominal: its values have no order for the ordinal metric"),
        (["harm-types"],
         "harm-types asks DICES's or ProsocialDialog's own questions; Ordinal toy's queries are: "
         "agreement, group-disagreement, item-distribution, label-by-group, "
         "label-distribution, overview"),
    ],
)  # fmt: skip
def test_a_query_that_does_not_fit_says_why(data: Path, args: list[str], message: str) -> None:
    code, out, err = query(data, *args)
    assert code == 2 and out == ""
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err and "Binder Error" not in err


def test_a_declared_only_query_without_a_declared_dataset_says_so(data: Path) -> None:
    result = CliRunner().invoke(app, ["query", "label-by-group", "--data", str(data)])
    assert result.exit_code == 2
    assert "label-by-group applies to declared datasets only" in result.stderr


def reliability_data(answers: np.ndarray) -> np.ndarray:
    """The krippendorff package's [rater, unit] values (1..k, NaN missing)."""
    given = answers.sum(axis=1) > 0
    values = answers.argmax(axis=1) + 1.0
    return np.where(given, values, np.nan)


@pytest.mark.parametrize("kind", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(4))
def test_alpha_equals_the_krippendorff_package(kind: str, seed: int) -> None:
    ratings = ordinal_ratings((4, 6), items=30, per_rater=12, seed=seed, levels=5)
    answers = ratings.answers()
    distance = Distance(kind, (1.0, 2.0, 3.0, 4.0, 5.0))
    ours = float(alpha(answers.sum(axis=0), distance))
    theirs = krippendorff.alpha(
        reliability_data(answers), level_of_measurement=kind, value_domain=[1, 2, 3, 4, 5]
    )
    assert ours == pytest.approx(theirs, abs=1e-9)
    # Per group, as `agreement --by` measures each group's raters.
    for group in range(2):
        mine = answers[ratings.group == group]
        ours = float(alpha(mine.sum(axis=0), distance))
        theirs = krippendorff.alpha(
            reliability_data(mine), level_of_measurement=kind, value_domain=[1, 2, 3, 4, 5]
        )
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_interval_alpha_reads_the_values_not_their_ranks() -> None:
    ratings = ordinal_ratings((5,), items=20, per_rater=10, seed=9, levels=3)
    answers = ratings.answers()
    domain = [0.0, 1.0, 10.0]
    ours = float(alpha(answers.sum(axis=0), Distance("interval", tuple(domain))))
    data = reliability_data(answers)
    theirs = krippendorff.alpha(
        np.where(np.isnan(data), np.nan, np.take(domain, np.nan_to_num(data).astype(int) - 1)),
        level_of_measurement="interval",
    )
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_agreement_per_group_equals_the_package_and_takes_the_ordinal_metric(
    data: Path, toy: OrdinalRatings
) -> None:
    code, out, err = query(data, "agreement", "--by", "grp", "--permutations", "99")
    assert code == 0, err
    got = rows(out)
    assert [(row["grp"], row["metric"], row["label"]) for row in got] == [
        ("g0", "ordinal", "score"),
        ("g1", "ordinal", "score"),
    ]
    answers = toy.answers()
    for number, row in enumerate(got):
        theirs = krippendorff.alpha(
            reliability_data(answers[toy.group == number]),
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3, 4, 5],
        )
        assert float(row["irr"]) == pytest.approx(theirs, abs=1e-9)
        assert 0 < float(row["gai_p"]) <= 1
    gais = [float(row["gai"]) for row in got if row["gai"]]
    assert {row["dsi"] for row in got} == {repr(max(gais)) if gais else ""} or float(
        got[0]["dsi"]
    ) == pytest.approx(max(gais))
    code, out, err = query(data, "agreement")
    assert code == 0, err
    (pool,) = rows(out)
    theirs = krippendorff.alpha(
        reliability_data(answers), level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert float(pool["irr"]) == pytest.approx(theirs, abs=1e-9)


def test_the_nominal_metric_on_groups_is_dices_agreement_itself() -> None:
    ratings = ordinal_ratings((4, 6, 8), items=25, per_rater=10, seed=5)
    answers = ratings.answers()
    nominal = permutation_test(answers, ratings.group, 3, 19, 1, Distance("nominal"))
    dices = permutation_test(answers, ratings.group, 3, 19, 1)
    np.testing.assert_array_equal(nominal.observed, dices.observed)
    np.testing.assert_array_equal(nominal.p, dices.p)


GROUP_SIZES = (3, 6, 12, 24)


def calibration(shuffles: int, permutations: int) -> dict[int, list[float]]:
    """The p-values of every metric per group size over `shuffles` shufflings of the
    groups of ordinal ratings whose groups carry no information."""
    ratings = ordinal_ratings(GROUP_SIZES, items=60, per_rater=20, seed=17)
    answers = ratings.answers()
    distance = Distance("ordinal")
    rng = np.random.default_rng(23)
    p_values: dict[int, list[float]] = {size: [] for size in GROUP_SIZES}
    for shuffle in range(shuffles):
        labels = rng.permutation(ratings.group)
        test = permutation_test(answers, labels, len(GROUP_SIZES), permutations, shuffle, distance)
        for group, size in enumerate(GROUP_SIZES):
            p_values[size] += [p for p in test.p[group] if not np.isnan(p)]
    return p_values


def test_ordinal_group_tests_hold_their_level_per_group_size() -> None:
    for size, p_values in calibration(shuffles=30, permutations=99).items():
        tests = len(p_values)
        rejected = sum(p < 0.05 for p in p_values)
        bound = binom.ppf(0.999, tests, 0.05)
        assert tests >= 100, (size, tests)
        assert rejected <= bound, (size, rejected, tests, bound)


def test_ordinal_group_tests_find_a_shifted_group() -> None:
    ratings = ordinal_ratings(
        GROUP_SIZES, items=60, per_rater=20, seed=17, shifts=(0.0, 0.0, 0.0, 1.5)
    )
    test = permutation_test(
        ratings.answers(), ratings.group, len(GROUP_SIZES), 99, 0, Distance("ordinal")
    )
    assert test.p[3, 1] < 0.05  # xrr of the shifted group with the rest


def group_share_table(ratings: OrdinalRatings) -> pa.Table:
    """label-by-group's SQL rows for `ratings` by group: each group's rating lists."""
    rows = []
    for group in range(int(ratings.group.max()) + 1):
        mine = ratings.group[ratings.rater] == group
        rows.append(
            {
                "dataset": "toy",
                "grp": f"g{group}",
                "share_positive": float((ratings.value[mine] >= 3).mean()),
                "rating_rater": ratings.rater[mine].tolist(),
                "rating_item": ratings.item[mine].tolist(),
                "rating_yes": (ratings.value[mine] >= 3).astype(np.uint8).tolist(),
            }
        )
    return pa.Table.from_pylist(rows)


def test_the_share_interval_covers_the_true_share_per_group_size() -> None:
    """Coverage of share_positive's clustered interval against the generator's truth: the
    latent score is N(0, 1 + 0.5^2 + 1), and 3 or more is a latent above -0.5."""
    truth = float(norm.cdf(0.5 / 1.5))
    covered = dict.fromkeys(GROUP_SIZES, 0)
    simulations = 60
    for seed in range(simulations):
        ratings = ordinal_ratings(GROUP_SIZES, items=60, per_rater=20, seed=1000 + seed)
        parameters = {"by": ["grp"], "interval": "clustered", "seed": seed}
        result = share_intervals(group_share_table(ratings), parameters)
        low = result.columns.index("share_positive_ci_low")
        note = result.columns.index("interval_note")
        for size, row in zip(GROUP_SIZES, result.rows, strict=True):
            if size < 5:  # no interval holds its level for so few raters: none is given
                assert row[low] is None and row[note] == "fewer than 5 raters", row
                continue
            covered[size] += row[low] <= truth <= row[low + 1]
    least = binom.ppf(0.001, simulations, 0.95)
    assert all(hits >= least for size, hits in covered.items() if size >= 5), (covered, least)


NAMED = """[[dataset]]
name = "named_toy"
title = "Named toy"
[[dataset.file]]
item = "item"
rater = "rater"
labels = ["level"]
rater_attributes = ["value", "side"]
[dataset.scales.level]
kind = "ordinal"
values = ["low", "mid", "high"]
positive = ["high"]
"""


def test_a_scale_of_named_values_counts_them_in_order(tmp_path: Path) -> None:
    cells = [("a", "r1", "low"), ("a", "r2", "high"), ("b", "r1", "mid"), ("b", "r2", "high")]
    sides = {"r1": ("x", "left"), "r2": ("y", "right")}
    lines = ["item,rater,level,value,side"]
    lines += [f"{i},{r},{v},{','.join(sides[r])}" for i, r, v in cells]
    (tmp_path / "named.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "named.toml").write_text(NAMED, encoding="utf-8")
    data = tmp_path / "data"
    runner = CliRunner()
    ingested = runner.invoke(
        app,
        ["ingest", str(tmp_path / "named.csv"), "--declaration", str(tmp_path / "named.toml"),
         "--data", str(data)],
    )  # fmt: skip
    assert ingested.exit_code == 0, ingested.output

    def named(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(
            app, ["query", *args, "-d", "named_toy", "--data", str(data), "-f", "csv"]
        )
        return result.exit_code, result.stdout, result.stderr

    code, out, err = named("label-by-group", "--by", "side", "--interval", "wilson")
    assert code == 0, err
    assert [(r["side"], r["mean"], r["share_positive"]) for r in rows(out)] == [
        ("left", "1.5", "0.0"),  # low = 1, mid = 2
        ("right", "3.0", "1.0"),
    ]
    code, out, err = named("label-distribution")
    assert [r["value"] for r in rows(out)] == ["low", "mid", "high"]  # the scale's order
    code, out, err = named("item-distribution")
    assert [(r["counts"], r["plurality"]) for r in rows(out)] == [
        ("1 0 1", "tie"),
        ("0 1 1", "tie"),
    ]
    code, out, err = named("agreement", "--metric", "interval")
    assert code == 2
    assert "Named toy's level has named values: the interval metric needs numbers" in err
    code, out, err = named("label-by-group", "--by", "value")
    assert code == 2
    assert "Named toy's rater attribute 'value' has the name of a column of label_values" in err
