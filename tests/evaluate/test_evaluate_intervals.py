"""Every interval `dices evaluate` prints holds its own estimate, and is built as
dices_cli/metrics/intervals.py says: conversations and raters jackknifed, a t quantile, jsd
on the reciprocal scale with the answers' own noise counted once, no interval for a group of
fewer than MIN_RATERS raters.

(Their coverage of a known truth, per group size: tests/calibration/test_calibration_groups.py.)
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from drivers.crossed import simulate
from drivers.evaluate_truth import judge, predictions_of, votes_of
from drivers.mixed_models import MODELS, write_predictions
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats
from scipy.spatial.distance import jensenshannon
from typer.testing import CliRunner

from dices_cli.cli.commands import evaluate as command
from dices_cli.cli.main import app
from dices_cli.evaluate.evaluation import Settings, evaluate
from dices_cli.evaluate.personas import evaluate_personas, persona_chart
from dices_cli.metrics.intervals import (
    MIN_RATERS,
    Jackknife,
    centred_interval,
    conversation_weights,
    curved_interval,
    difference_interval,
)
from dices_cli.metrics.student_t import t_quantile
from dices_cli.queries.engine import RaterSelection
from dices_cli.report.context import Context
from dices_cli.report.models import ModelsRequest, score_models
from dices_cli.report.sections import SECTIONS
from dices_cli.runs.evaluation import dices_votes
from dices_cli.store.datasets import Store

runner = CliRunner()
SUMMARY = re.compile(r"(-?\d+\.\d+)\s*\[(-?\d+\.\d+), (-?\d+\.\d+)\]")


def triplets(record: dict[str, object]) -> list[tuple[str, float, float, float]]:
    """Every (name, estimate, low, high) of a row: METRIC with METRIC_low/_high, difference
    with difference_low/_high, value with low/high."""
    found = []
    for name in record:
        for low, high in ((f"{name}_low", f"{name}_high"), ("low", "high")):
            if name in ("low", "high") or low not in record:
                continue
            if low == "low" and name != "value":
                continue
            values = [record[name], record[low], record[high]]
            if all(v not in (None, "") for v in values):
                found.append((name, *(float(v) for v in values)))  # type: ignore[arg-type]
    return found


def outside(records: list[dict[str, object]]) -> list[tuple[object, ...]]:
    bad = []
    for record in records:
        for name, value, low, high in triplets(record):
            if not low - 1e-12 <= value <= high + 1e-12:
                bad.append((record.get("model"), record.get("group"), name, value, low, high))
    return bad


@pytest.fixture(scope="module")
def predictions(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("mixed")
    return {
        dataset: write_predictions(ingested, dataset, folder / f"mixed_{dataset}.csv")
        for dataset in ("350", "990")
    }


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_no_estimate_lies_outside_its_own_interval(
    ingested: Path, predictions: dict[str, Path], dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the CSV and in the ranked summary on the screen, for labels, a score only, a
    distribution and a flipped judge, every group of rater_race (5 raters and up), with
    the default intervals; and every endpoint the same for another seed."""
    arguments = ["evaluate", str(predictions[dataset]), "-d", dataset, "--data", str(ingested)]
    arguments += ["--by", "rater_race", "--permutations", "0"]
    result = runner.invoke(app, [*arguments, "-f", "csv"])
    assert result.exit_code == 0, result.output
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["model"] for r in records} == set(MODELS)
    assert sum(len(triplets(r)) for r in records) > 300
    assert outside(records) == []  # type: ignore[arg-type]
    assert any(r["difference_low"] for r in records if r["rater_race"])
    # Another seed, on a terminal: the same rows, and the ranked summary a person sees.
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    shown = runner.invoke(app, [*arguments, "-f", "csv", "--seed", "1"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == result.stdout
    found = SUMMARY.findall(shown.output[len(result.output) :])
    assert len(found) >= 5
    for value, low, high in found:
        assert float(low) <= float(value) <= float(high), (value, low, high)


def persona_file(data: Path, dataset: str, path: Path) -> Path:
    ratings = pl.read_parquet(data / dataset / "ratings.parquet")
    raters = pl.read_parquet(data / dataset / "raters.parquet").select(
        "rater_id", pl.col("rater_race").cast(pl.String)
    )
    cells = (
        ratings.select("item_id", "rater_id")
        .join(raters, on="rater_id")
        .select("item_id", "rater_race")
        .unique()
        .sort("item_id", "rater_race")
    )
    rng = np.random.default_rng(3)
    pl.DataFrame(
        {
            "model": "sim",
            "item_id": cells["item_id"],
            "score": rng.uniform(0, 1, cells.height),
            "persona": [f"rater_race={g}" for g in cells["rater_race"]],
        }
    ).write_csv(path)
    return path


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_no_persona_figure_lies_outside_its_own_interval(
    ingested: Path, tmp_path: Path, dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows, the summary line on the screen, and the chart's rows."""
    path = persona_file(ingested, dataset, tmp_path / "personas.csv")
    arguments = ["evaluate", str(path), "-d", dataset, "--data", str(ingested)]
    arguments += ["--bootstrap", "200", "--permutations", "0"]
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    shown = runner.invoke(app, [*arguments, "-f", "csv"])
    assert shown.exit_code == 0, shown.output
    records = list(csv.DictReader(io.StringIO(shown.stdout)))
    assert sum(len(triplets(r)) for r in records) > 20
    assert outside(records) == []  # type: ignore[arg-type]
    found = SUMMARY.findall(shown.stderr)
    assert len(found) == 3  # pearson, the real spread, the simulated one
    for value, low, high in found:
        assert float(low) <= float(value) <= float(high), (value, low, high)


@pytest.mark.parametrize("dataset", ["350", "990"])
def test_no_report_figure_lies_outside_its_own_interval(
    ingested: Path, predictions: dict[str, Path], tmp_path: Path, dataset: str
) -> None:
    """The models section of `dices report --by rater_race` draws evaluate's rows: every
    drawn point within its drawn interval; and a persona chart's rows too."""
    store = Store(ingested)
    context = Context(store, dataset, RaterSelection(), ["rater_race"], 20, 0)
    settings = Settings(bootstrap=100, permutations=0)
    request = ModelsRequest(str(predictions[dataset]), dataset, settings)
    context.models = score_models(store, RaterSelection(), request, context.datasets, context.by)
    sections = {s.key: s for s in (build(context) for build in SECTIONS) if s is not None}
    drawn = 0
    for figure in sections["models"].figures:
        for record in figure.table.records():
            assert outside([record]) == [], record
            drawn += len(triplets(record))
        for values in figure.spec["data"]["values"]:
            assert outside([values]) == [], values
    assert drawn > 20
    path = persona_file(ingested, dataset, tmp_path / "personas.csv")
    votes, read = dices_votes(store, [dataset], RaterSelection(), ("rater_race",), str(path), None)
    grouped = Settings(by=("rater_race",), bootstrap=100, permutations=0)
    table, _ = persona_chart(evaluate_personas(votes[0], read, grouped, "rater_race").table)
    assert table.rows
    assert outside(table.records()) == []  # type: ignore[arg-type]


def test_a_group_of_fewer_than_5_raters_has_no_interval_and_says_so(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    data = simulate(rng, sizes=(MIN_RATERS - 1, MIN_RATERS, 30), conversations=120)
    votes, read = votes_of(data), predictions_of(judge(data, rng), tmp_path)
    evaluation = evaluate(votes, read, Settings(by=("group",), bootstrap=50, permutations=9))
    rows = {(r["group"], r["reference"]): r for r in evaluation.table.records() if r["group"]}
    for reference in ("crowd", "crowd-share"):
        few, enough = rows["g0", reference], rows["g1", reference]
        assert few["few_raters"] is True and enough["few_raters"] is False
        assert few["kappa" if reference == "crowd" else "jsd"] is not None
        metric = "kappa" if reference == "crowd" else "jsd"
        assert few[f"{metric}_low"] is None and few["difference_low"] is None
        assert few["p_value"] is not None
        assert enough[f"{metric}_low"] is not None and enough["difference_low"] is not None
    (note,) = [n for n in evaluation.warnings if "fewer than" in n]
    assert "group=g0 has 4 raters, fewer than 5" in note
    # A row says why it has no interval; a row with one needs no note (every interval
    # holds its level from 5 raters: docs/metrics.md), and the screen says nothing more.
    for reference in ("crowd", "crowd-share"):
        assert rows["g0", reference]["interval_note"] == "fewer than 5 raters"
        assert rows["g1", reference]["interval_note"] is None
    assert [n for n in evaluation.warnings if "interval_note" in n] == []
    # About this pool of raters (conversations only), a small group has its interval.
    pool = evaluate(
        votes, read, Settings(by=("group",), bootstrap=50, permutations=0, interval="conversations")
    )
    (row,) = [r for r in pool.table.records() if r["group"] == "g0" and r["reference"] == "crowd"]
    assert row["few_raters"] is False and row["kappa_low"] is not None


def _jackknife_by_hand(values: list[float]) -> float:
    """(G - 1) / G * sum of squared deviations: the delete-one jackknife's variance."""
    array = np.array(values)
    return (len(array) - 1) / len(array) * float(((array - array.mean()) ** 2).sum())


def _quadratic_scale_by_hand(data: Any, score: np.ndarray, own: np.ndarray) -> float:
    """s^2 = C2 sigma^2 / n of the raters `own`' jsd: sigma^2 the raters' shares of Yes over
    the mean w = pi (1 - pi) of the pool's shares pi, their variance within their groups
    less 1 / (conversations w); C2 half the mean over conversations of the second
    difference of scipy's divergence at the group's share (kept 1 / 2n from 0 and 1) times
    w^2."""
    pi = data.yes.mean(axis=0)
    w = pi * (1 - pi)
    effect = data.yes.mean(axis=1) / w.mean()
    groups = np.unique(data.group_of_rater)
    squares = sum(
        ((effect[data.group_of_rater == g] - effect[data.group_of_rater == g].mean()) ** 2).sum()
        for g in groups
    )
    sigma2 = squares / (len(effect) - len(groups)) - 1 / (data.yes.shape[1] * w.mean())
    n = len(own)
    share = np.clip(data.yes[own].mean(axis=0), 0.5 / n, 1 - 0.5 / n)
    h = 1e-4

    def divergence(s: np.ndarray) -> np.ndarray:
        p = np.column_stack([1 - score, score])
        return jensenshannon(p, np.column_stack([1 - s, s]), axis=1, base=2) ** 2

    second = (divergence(share + h) - 2 * divergence(share) + divergence(share - h)) / h**2
    return float(0.5 * (second * w**2).mean() * max(sigma2, 1e-6) / n)


def test_the_group_rows_intervals_are_both_jackknives_by_hand(tmp_path: Path) -> None:
    """A group's jsd interval: low jsd^2 / (jsd + t * sqrt(V)), the reciprocal scale's, with
    V = V_conversations + V_raters - 2 s^4 - V_answers: V_conversations the jackknife of
    scipy's jsd with each conversation left out, V_raters with each rater of the group left
    out, V_answers each conversation's jackknife with each of its answers left out, over the
    conversations squared, s^2 = C2 sigma^2 / n (C2 half the mean of the divergence's second
    difference in the share times w^2, sigma^2 the raters' effects' variance); t with
    Satterthwaite's degrees of freedom; high: scipy's noncentral chi^2_1 inverted at
    W = (V_raters - V_answers) / (4 s^4). Its kappa interval: kappa +- t(raters - 1) *
    sqrt(V_conversations) (scikit-learn's kappa). Both the same for every seed."""
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(6)
    data = simulate(rng, sizes=(6, 9), conversations=80)
    score = judge(data, rng)
    votes, read = votes_of(data), predictions_of(score, tmp_path)
    records = [
        evaluate(votes, read, Settings(by=("group",), permutations=0, seed=seed)).table.records()
        for seed in (0, 1)
    ]
    assert records[0] == records[1]
    own = np.flatnonzero(data.group_of_rater == 0)
    everything = np.arange(data.yes.shape[1])

    def jsd(raters: np.ndarray, kept: np.ndarray = everything) -> float:
        share = data.yes[raters][:, kept].mean(axis=0)
        p = np.column_stack([1 - score[kept], score[kept]])
        q = np.column_stack([1 - share, share])
        return float(np.mean(jensenshannon(p, q, axis=1, base=2) ** 2))

    def kappa(kept: np.ndarray) -> float:
        yes = data.yes[own][:, kept].sum(axis=0)
        decided = yes * 2 != len(own)  # ties left out
        return float(cohen_kappa_score(score[kept][decided] >= 0.5, (yes * 2 > len(own))[decided]))

    def one(p: float, share: float) -> float:
        return float(jensenshannon([1 - p, p], [1 - share, share], base=2) ** 2)

    without = [np.delete(everything, i) for i in everything]
    conversations = _jackknife_by_hand([jsd(own, kept) for kept in without])
    raters = _jackknife_by_hand([jsd(own[own != rater]) for rater in own])
    answers = (
        sum(
            _jackknife_by_hand(
                [one(score[i], np.delete(data.yes[own, i], j).mean()) for j in range(6)]
            )
            for i in everything
        )
        / len(everything) ** 2
    )
    assert answers > 0
    square = _quadratic_scale_by_hand(data, score, own)
    cut = max(raters - 2 * square**2, 0.0)
    assert 0 < cut < raters
    total = max(conversations + cut - answers, conversations, cut)
    df = total**2 / (conversations**2 / 79 + cut**2 / (len(own) - 1))
    half = stats.t.ppf(0.975, df) * math.sqrt(total)
    statistic = (raters - answers) / (4 * square**2)
    assert stats.chi2.cdf(statistic, 1) > 0.025  # the noncentrality's upper end above 0
    noncentrality = optimize.brentq(
        lambda x: stats.ncx2.cdf(statistic, 1, x) - 0.025, 1e-12, 10 * statistic + 100
    )
    estimate = jsd(own)
    top = estimate - square * statistic + square * (1 + noncentrality)
    high = estimate + math.sqrt(max(top - estimate, 0) ** 2 + 1.959964**2 * conversations)
    (row,) = [r for r in records[0] if r["group"] == "g0" and r["reference"] == "crowd-share"]
    assert math.isclose(row["jsd"], estimate, rel_tol=1e-9)
    assert math.isclose(row["jsd_low"], estimate**2 / (estimate + half), rel_tol=1e-6)
    assert math.isclose(row["jsd_high"], high, rel_tol=1e-6)
    # The difference from the rest (group 1): MOVER of the two sides, the rest's on the
    # reciprocal scale, the own side's as above; 2 s^4 off the difference's V_raters too.
    rest = np.flatnonzero(data.group_of_rater == 1)
    other = jsd(rest)
    rest_conversations = _jackknife_by_hand([jsd(rest, kept) for kept in without])
    apart = _jackknife_by_hand([jsd(own, kept) - jsd(rest, kept) for kept in without])
    rest_raters = _jackknife_by_hand([jsd(rest[rest != rater]) for rater in rest])
    rest_answers = (
        sum(
            _jackknife_by_hand(
                [one(score[i], np.delete(data.yes[rest, i], j).mean()) for j in range(9)]
            )
            for i in everything
        )
        / len(everything) ** 2
    )
    v1 = total
    v2 = max(rest_conversations + rest_raters - rest_answers, rest_conversations, rest_raters)
    both = max(raters + rest_raters - 2 * square**2, 0.0)
    vd = max(apart + both - answers - rest_answers, apart, both)
    correlation = (v1 + v2 - vd) / (2 * math.sqrt(v1 * v2))
    df2 = v2**2 / (rest_conversations**2 / 79 + rest_raters**2 / (len(rest) - 1))
    half2 = stats.t.ppf(0.975, df2) * math.sqrt(v2)
    l1, u1 = estimate**2 / (estimate + half), high
    l2, u2 = other**2 / (other + half2), other**2 / (other - half2)
    below = (estimate - l1) ** 2 + (u2 - other) ** 2
    below -= 2 * correlation * (estimate - l1) * (u2 - other)
    above = (u1 - estimate) ** 2 + (other - l2) ** 2
    above -= 2 * correlation * (u1 - estimate) * (other - l2)
    assert math.isclose(row["difference"], estimate - other, rel_tol=1e-9)
    assert math.isclose(row["difference_low"], estimate - other - math.sqrt(below), rel_tol=1e-6)
    assert math.isclose(row["difference_high"], estimate - other + math.sqrt(above), rel_tol=1e-6)
    (row,) = [r for r in records[0] if r["group"] == "g0" and r["reference"] == "crowd"]
    half = stats.t.ppf(0.975, len(own) - 1) * math.sqrt(
        _jackknife_by_hand([kappa(kept) for kept in without])
    )
    assert math.isclose(row["kappa"], kappa(everything), rel_tol=1e-9)
    assert math.isclose(row["kappa_low"], row["kappa"] - half, rel_tol=1e-6)
    assert math.isclose(row["kappa_high"], min(row["kappa"] + half, 1.0), rel_tol=1e-6)


def test_a_curved_interval_is_the_normal_one_when_the_quadratic_part_vanishes() -> None:
    """As s^2 -> 0 the noncentral chi^2_1's upper end is sqrt(lambda_U) = sqrt(W) + z: the
    upper end is estimate + z sqrt(V_raters - V_answers + V_conversations), and the lower
    end the reciprocal scale's with the whole V_raters (2 s^4 is nothing)."""
    values = np.array([0.05, 0.049, 0.052, 0.05, 0.047, 0.051])
    conversations = 4 / 5 * float(((values[1:] - values[1:].mean()) ** 2).sum())
    raters = (4e-5, 7.0)
    low, high = curved_interval(values, raters, (0.0, 1.0), 0.95, 1e-5, 1e-9)
    z = stats.norm.ppf(0.975)
    assert math.isclose(high, 0.05 + z * math.sqrt(3e-5 + conversations), rel_tol=1e-6)
    reciprocal = centred_interval(values, raters, (0.0, 1.0), True, 0.95, 1e-5)[0]
    assert math.isclose(low, reciprocal, rel_tol=1e-12)


def test_conversation_weights_leave_each_block_out_once() -> None:
    """One conversation per block up to as many blocks as conversations, then i mod G."""
    assert np.array_equal(
        conversation_weights(3, 1000), [[1, 1, 1], [0, 1, 1], [1, 0, 1], [1, 1, 0]]
    )
    weights = conversation_weights(7, 3)
    assert np.array_equal(weights[0], np.ones(7))
    assert np.array_equal((weights[1:] == 0).sum(axis=0), np.ones(7))  # each out once
    assert np.array_equal(np.flatnonzero(weights[1] == 0), [0, 3, 6])
    assert conversation_weights(5, 0).shape == (1, 5)


@given(st.floats(0.05, 1e6), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_t_quantiles_of_fractional_degrees_of_freedom_are_scipys(df: float, level: float) -> None:
    """The Satterthwaite degrees of freedom are fractional (the shares' test: integers)."""
    expected = stats.t.ppf(0.5 + level / 2, df)
    assert math.isclose(t_quantile(level, df), expected, rel_tol=1e-8)


@given(
    st.lists(st.floats(-1, 1), min_size=3, max_size=40),
    st.floats(0, 1),
    st.floats(1, 100),
    st.booleans(),
)
def test_a_centred_interval_holds_its_estimate_within_the_bounds(
    values: list[float], raters: float, df: float, reciprocal: bool
) -> None:
    low, high = centred_interval(np.array(values), (raters, df), (-1.0, 1.0), reciprocal)
    assert -1.0 <= low <= values[0] <= high <= 1.0


def test_the_jackknife_of_a_mean_is_its_variance_of_the_mean() -> None:
    """For a group mean, the stratified jackknife gives s^2 / n per group exactly."""
    rng = np.random.default_rng(6)
    values = rng.normal(size=12)
    stratum = np.repeat([0, 1], [5, 7])
    total = 0.0
    left_out = np.empty(12)
    for s in (0, 1):
        mine = np.flatnonzero(stratum == s)
        for i in mine:
            left_out[i] = values[mine[mine != i]].mean()  # the others' figures stay
        total += values[mine].var(ddof=1) / len(mine)
    variance, _ = Jackknife(stratum).variance(left_out)
    assert math.isclose(variance, total, rel_tol=1e-12)


def test_a_jsd_difference_interval_is_recovered_from_the_sides_reciprocal_intervals() -> None:
    """Zou & Donner's MOVER by hand: each side's interval on the reciprocal scale (scipy's t
    with blocks - 1 degrees of freedom), their correlation from the three jackknife
    variances."""
    rng = np.random.default_rng(8)
    blocks = 40
    own = np.concatenate([[0.06], 0.06 + rng.normal(0, 0.001, blocks)])
    rest = np.concatenate([[0.03], 0.03 + 0.5 * (own[1:] - 0.06) + rng.normal(0, 0.0005, blocks)])
    difference = own - rest
    v1, v2, vd = (_jackknife_by_hand(list(v[1:])) for v in (own, rest, difference))
    q = stats.t.ppf(0.975, blocks - 1)
    (l1, u1), (l2, u2) = (
        (e * e / (e + q * math.sqrt(v)), e * e / (e - q * math.sqrt(v)))
        for e, v in ((0.06, v1), (0.03, v2))
    )
    r = (v1 + v2 - vd) / (2 * math.sqrt(v1 * v2))
    low = 0.03 - math.sqrt((0.06 - l1) ** 2 + (u2 - 0.03) ** 2 - 2 * r * (0.06 - l1) * (u2 - 0.03))
    high = 0.03 + math.sqrt((u1 - 0.06) ** 2 + (0.03 - l2) ** 2 - 2 * r * (u1 - 0.06) * (0.03 - l2))
    none = (0.0, math.inf)
    got = difference_interval((own, none), (rest, none), (difference, none), (0.0, 1.0))
    assert got == pytest.approx((low, high), rel=1e-9)
    assert high - 0.03 > 0.03 - low  # the side a divergence grows on is the wider


@given(
    st.lists(st.floats(0.001, 0.2), min_size=3, max_size=30),
    st.lists(st.floats(0.001, 0.2), min_size=3, max_size=30),
    st.floats(0, 0.01),
)
def test_a_difference_interval_holds_its_estimate(
    own: list[float], rest: list[float], raters: float
) -> None:
    size = min(len(own), len(rest))
    a, b = np.array(own[:size]), np.array(rest[:size])
    variance = (raters, 10.0)
    low, high = difference_interval((a, variance), (b, variance), (a - b, variance), (0.0, 1.0))
    assert -1.0 <= low <= a[0] - b[0] <= high <= 1.0
