"""`label-by-group`'s mean of an ordinal label (dices_cli.metrics.mean_sums): its interval,
its difference from the rest with that interval, and the difference's tests, each equal to
an independent numpy/scipy construction from the ratings themselves to 1e-9 (the p-values:
a plain rater-level permutation test within Monte Carlo error, BH exactly). The data have
a group below the 5 raters an interval needs and repeated (item, rater) pairs, so that
every sum counts; a second dataset has values of halves (the codes' unit 2) and a binary
label, whose output has no mean columns."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats
from typer.testing import CliRunner

from dices_cli.families import FAMILIES, register_directory
from dices_cli.metrics.mean_sums import COLUMNS
from dices_cli.output import Table
from dices_cli.queries.catalog import declared_queries
from dices_cli.queries.declared import DeclaredSession, mean_codes
from dices_cli.store.datasets import Store
from tests.drivers.ordinal import OrdinalRatings, label_by_group, ordinal_ratings

pytestmark = pytest.mark.usefixtures("registry_as_it_was")

HALVES = (-1.0, -0.5, 0.0, 0.5, 1.0)  # the second dataset's scale
DECLARATION = """[[dataset]]
name = "{name}"
title = "Mean toy"

[[dataset.file]]
role = "ratings"
item = "item_id"
rater = "rater_id"
labels = ["score", "flag"]
rater_attributes = ["grp"]

[dataset.scales.score]
kind = "ordinal"
values = [{values}]
positive = [{positive}]

[dataset.scales.flag]
kind = "binary"
values = [0, 1]
positive = [1]
"""


class Rated:
    """The ratings as the reference reads them: value, rater, item, the rater's group."""

    def __init__(self, ratings: OrdinalRatings, scale: tuple[float, ...]) -> None:
        self.value = np.asarray(scale, dtype=float)[ratings.value - 1]
        self.rater = ratings.rater
        self.item = ratings.item
        self.group = ratings.group[ratings.rater]
        self.scale = scale


def toy(seed: int = 11) -> OrdinalRatings:
    """Groups of 3, 6 and 9 raters; every seventh rating again, with another value."""
    base = ordinal_ratings((3, 6, 9), items=14, per_rater=9, seed=seed, shifts=(0, 1.5, 0))
    again = np.arange(0, len(base.value), 7)
    return OrdinalRatings(
        np.concatenate([base.rater, base.rater[again]]),
        np.concatenate([base.item, base.item[again]]),
        np.concatenate([base.value, base.levels + 1 - base.value[again]]),
        base.group,
        base.levels,
    )


def ingested(ratings: OrdinalRatings, folder: Path, name: str, scale: tuple[float, ...]) -> Path:
    """`ratings` (values mapped onto `scale`) as a long CSV with a binary `flag`, ingested
    by `dices ingest --declaration`; the data directory."""
    from dices_cli.cli.main import app

    lines = ["item_id,rater_id,score,flag,grp"]
    for rater, item, value in zip(ratings.rater, ratings.item, ratings.value, strict=True):
        lines.append(
            f"i{item:03d},r{rater:03d},{scale[value - 1]:g},{int(value >= 4)},"
            f"g{ratings.group[rater]}"
        )
    (folder / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    declaration = folder / f"{name}.toml"
    declaration.write_text(
        DECLARATION.format(
            name=name,
            values=", ".join(f"{v:g}" for v in scale),
            positive=", ".join(f"{v:g}" for v in scale[2:]),
        ),
        encoding="utf-8",
    )
    data = folder / "data"
    args = ["ingest", str(folder / f"{name}.csv"), "--declaration", str(declaration)]
    result = CliRunner().invoke(app, [*args, "--data", str(data)])
    assert result.exit_code == 0, result.output
    FAMILIES.pop(name)
    return data


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Rated]:
    ratings = toy()
    scale = (1.0, 2.0, 3.0, 4.0, 5.0)
    return ingested(ratings, tmp_path_factory.mktemp("whole"), "mean_whole", scale), Rated(
        ratings, scale
    )


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Rated]:
    ratings = toy(seed=12)
    return ingested(ratings, tmp_path_factory.mktemp("halves"), "mean_halves", HALVES), Rated(
        ratings, HALVES
    )


def run(data: Path, name: str, **given: Any) -> Table:
    register_directory(data)
    parameters = {"by": ["grp"], "label": "score", "interval": "clustered",
                  "permutations": 2000, "seed": 3, "alternative": "two-sided", **given}  # fmt: skip
    query = declared_queries()["label-by-group"]
    result = DeclaredSession(Store(data), name).run(query, parameters)
    assert isinstance(result, Table)
    return result


def column(result: Table, name: str) -> list[Any]:
    at = result.columns.index(name)
    return [row[at] for row in result.rows]


# --- the reference: numpy and scipy over the ratings -------------------------------------------


def squared_sums(residual: NDArray[np.float64], *keys: NDArray[np.intp]) -> tuple[float, int]:
    """Sum over the clusters `keys` define of their residuals' squared sum; the clusters."""
    _, cluster = np.unique(np.stack(keys), axis=1, return_inverse=True)
    sums = np.bincount(cluster.ravel(), weights=residual)
    return float((sums**2).sum()), len(sums)


def cr1(squares: float, clusters: int) -> tuple[float, float]:
    return clusters / (clusters - 1) * squares, clusters - 1.0


def two_way(parts: list[tuple[float, float]], cells: float) -> tuple[float, float]:
    """The two-way variance (never below a one-way part) and its Satterthwaite df."""
    total = max(sum(v for v, _ in parts) - cells, max(v for v, _ in parts))
    return total, total**2 / sum(v * v / df for v, df in parts)


def reference_interval(x: NDArray[np.float64], rater: Any, item: Any, lo: float, hi: float,
                       method: str) -> tuple[float | None, float | None]:  # fmt: skip
    n, mean = len(x), float(x.mean())
    if method == "wilson":
        half = stats.norm.ppf(0.975) * x.std(ddof=1) / math.sqrt(n)
        return mean - half, mean + half
    if len(np.unique(item)) < 5 or (method == "clustered" and len(np.unique(rater)) < 5):
        return None, None
    residual = (x - mean) / n
    items = cr1(*squared_sums(residual, item))
    if method == "conversations":
        variance, df = items[0], items[1]
    else:
        raters = cr1(*squared_sums(residual, rater))
        variance, df = two_way([raters, items], squared_sums(residual, rater, item)[0])
    place = (mean - lo) / (hi - lo)
    half = stats.t.ppf(0.975, df) * math.sqrt(variance) / (hi - lo) / (place * (1 - place))
    logit = math.log(place / (1 - place))
    return tuple(lo + (hi - lo) * float(stats.logistic.cdf(logit + s * half)) for s in (-1, 1))  # type: ignore[return-value]


def reference_difference(rated: Rated, group: int, method: str) -> tuple[float | None, ...]:
    inside = rated.group == group
    x = rated.value
    m_in, m_out = x[inside].mean(), x[~inside].mean()
    difference = float(m_in - m_out)
    if method == "wilson":
        half = stats.norm.ppf(0.975) * math.sqrt(
            x[inside].var(ddof=1) / inside.sum() + x[~inside].var(ddof=1) / (~inside).sum()
        )
        return difference, difference - half, difference + half
    raters_in = len(np.unique(rated.rater[inside]))
    if method == "clustered" and min(raters_in, len(np.unique(rated.rater[~inside]))) < 5:
        return difference, None, None
    residual = np.where(inside, (x - m_in) / inside.sum(), -(x - m_out) / (~inside).sum())
    items = cr1(*squared_sums(residual, rated.item))
    if method == "conversations":
        variance, df = items
    else:
        sides = [cr1(*squared_sums(residual[s], rated.rater[s])) for s in (inside, ~inside)]
        cells = squared_sums(residual, rated.rater, rated.item)[0]
        variance, df = two_way([*sides, items], cells)
    half = stats.t.ppf(0.975, df) * math.sqrt(variance)
    return difference, difference - half, difference + half


def plain_permutation(rated: Rated, draws: int, seed: int) -> tuple[list[float], float]:
    """Each group's two-sided p of its mean minus the rest's, and the p of the groups'
    ratings-weighted spread of means, the raters' groups shuffled."""
    rng = np.random.default_rng(seed)
    raters = int(rated.rater.max()) + 1
    total = np.bincount(rated.rater, weights=rated.value, minlength=raters)
    counted = np.bincount(rated.rater, minlength=raters).astype(float)
    label = np.zeros(raters, dtype=int)
    label[rated.rater] = rated.group
    groups = int(label.max()) + 1

    def figures(labels: NDArray[np.intp]) -> tuple[NDArray[np.float64], float]:
        t = np.bincount(labels, weights=total, minlength=groups)
        n = np.bincount(labels, weights=counted, minlength=groups)
        means = t / n
        rest = (total.sum() - t) / (counted.sum() - n)
        spread = float((n * (means - total.sum() / counted.sum()) ** 2).sum())
        return means - rest, spread

    observed, spread = figures(label)
    null = [figures(rng.permutation(label)) for _ in range(draws)]
    differences = np.array([d for d, _ in null])
    upper = (1 + (differences >= observed - 1e-12).sum(axis=0)) / (1 + draws)
    lower = (1 + (differences <= observed + 1e-12).sum(axis=0)) / (1 + draws)
    p = np.minimum(1.0, 2 * np.minimum(upper, lower))
    p_spread = (1 + sum(s >= spread - 1e-12 for _, s in null)) / (1 + draws)
    return p.tolist(), float(p_spread)


# --- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("interval", ["clustered", "conversations", "wilson"])
@pytest.mark.parametrize("dataset", ["whole", "halves"])
def test_the_mean_interval_and_difference_are_the_references(
    dataset: str, interval: str, request: pytest.FixtureRequest
) -> None:
    data, rated = request.getfixturevalue(dataset)
    result = run(data, f"mean_{dataset}", interval=interval, permutations=0)
    assert result.columns[-len(COLUMNS) :] == list(COLUMNS)
    lo, hi = min(rated.scale), max(rated.scale)
    for g, row in enumerate(result.rows):
        found = dict(zip(result.columns, row, strict=True))
        mine = rated.group == g
        x = rated.value[mine]
        assert found["mean"] == pytest.approx(x.mean(), abs=1e-12)
        expected = reference_interval(x, rated.rater[mine], rated.item[mine], lo, hi, interval)
        difference = reference_difference(rated, g, interval)
        got = [found[n] for n in ("mean_ci_low", "mean_ci_high")]
        got += [found[n] for n in ("mean_difference", "mean_difference_ci_low")]
        got.append(found["mean_difference_ci_high"])
        for a, b in zip(got, [*expected, *difference], strict=True):
            assert (a is None and b is None) or math.isclose(a, b, abs_tol=1e-9), (got, b)
        assert found["mean_p_value"] is None  # no permutations: no test
    lows = column(result, "mean_ci_low")
    assert (lows[0] is None) == (interval == "clustered")  # 3 raters: no clustered interval


def test_the_mean_tests_are_a_plain_permutation_tests(whole: tuple[Path, Rated]) -> None:
    data, rated = whole
    result = run(data, "mean_whole", permutations=4000)
    p, p_spread = plain_permutation(rated, 4000, 9)
    for mine, plain in zip(column(result, "mean_p_value"), p, strict=True):
        # two Monte Carlo estimates of 2 x a tail t, each with sd 2 sqrt(t (1 - t) / 4000)
        tail = min(plain, 1.0) / 2
        assert mine == pytest.approx(plain, abs=4 * math.sqrt(2) * 2 * math.sqrt(
            tail * (1 - tail) / 4000) + 1e-3)  # fmt: skip
    adjusted = stats.false_discovery_control(column(result, "mean_p_value"))
    assert column(result, "mean_p_adjusted") == pytest.approx(adjusted.tolist(), abs=1e-12)
    (spread,) = set(column(result, "mean_p_groups_differ"))
    assert spread == pytest.approx(p_spread, abs=0.03)
    # the shifted group's mean differs, and the test finds it
    assert column(result, "mean_p_value")[1] < 0.05 < column(result, "mean_p_value")[0]


def test_one_sided_mean_p_values_split_the_two_sided(whole: tuple[Path, Rated]) -> None:
    data, _ = whole
    sided = [
        column(run(data, "mean_whole", alternative=a, permutations=999), "mean_p_value")
        for a in ("two-sided", "greater", "less")
    ]
    for two, greater, less in zip(*sided, strict=True):
        assert two == pytest.approx(min(1.0, 2 * min(greater, less)), abs=1e-12)


def test_without_groups_the_mean_has_its_interval_and_no_test(whole: tuple[Path, Rated]) -> None:
    data, rated = whole
    result = run(data, "mean_whole", by=[], permutations=99)
    assert len(result.rows) == 1
    found = dict(zip(result.columns, result.rows[0], strict=True))
    expected = reference_interval(rated.value, rated.rater, rated.item, 1.0, 5.0, "clustered")
    assert [found["mean_ci_low"], found["mean_ci_high"]] == pytest.approx(expected, abs=1e-9)
    assert found["mean_difference"] is None and found["mean_p_value"] is None


def test_a_binary_label_has_no_mean_columns(halves: tuple[Path, Rated]) -> None:
    data, _ = halves
    result = run(data, "mean_halves", label="flag", permutations=99)
    assert [c for c in result.columns if c.startswith("mean")] == ["mean"]  # empty
    assert column(result, "mean") == [None, None, None]
    assert result.columns[-1] == "p_groups_differ"


def test_the_codes_are_whole_numbers_from_the_lowest_value() -> None:
    assert mean_codes((1.0, 2.0, 3.0, 4.0, 5.0)) == (1.0, 1)
    assert mean_codes(HALVES) == (-1.0, 2)
    assert mean_codes((0.0, 0.25, 1.0, 2.5)) == (0.0, 4)


@pytest.mark.slow
@pytest.mark.calibration
def test_the_mean_interval_covers_the_true_mean_per_group_size() -> None:
    """The clustered interval of the mean and of its difference from the rest, against
    the generator's truth: its latent score and cuts are symmetric about 0, so the mean
    rating is 3 for every group, and every difference 0 (tests/drivers/ordinal.py)."""
    sizes, simulations = (5, 13, 20), 40
    covered = {"mean": [0] * len(sizes), "mean_difference": [0] * len(sizes)}
    for seed in range(simulations):
        ratings = ordinal_ratings(sizes, items=60, per_rater=20, seed=3000 + seed)
        result = label_by_group(ratings, {"permutations": 0})
        for prefix, truth in (("mean", 3.0), ("mean_difference", 0.0)):
            lows, highs = column(result, f"{prefix}_ci_low"), column(result, f"{prefix}_ci_high")
            for g, (low, high) in enumerate(zip(lows, highs, strict=True)):
                covered[prefix][g] += low <= truth <= high
    lowest = stats.binom.ppf(0.001, simulations, 0.95)
    assert all(count >= lowest for counts in covered.values() for count in counts), covered
