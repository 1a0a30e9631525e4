"""Every interval `dices evaluate` prints holds its own estimate, and is built as
dices_cli/metrics/intervals.py says: conversations bootstrapped, raters jackknifed, a t
quantile, no interval for a group of fewer than MIN_RATERS raters.

(Their coverage of a known truth, per group size: tests/calibration/test_calibration_groups.py.)
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from drivers.crossed import simulate
from drivers.evaluate_truth import judge, predictions_of, votes_of
from drivers.mixed_models import MODELS, write_predictions
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
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
    normal_quantile,
    t_quantile,
)
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
    distribution and a flipped judge, every group of rater_race (5 raters and up)."""
    arguments = ["evaluate", str(predictions[dataset]), "-d", dataset, "--data", str(ingested)]
    arguments += ["--by", "rater_race", "--bootstrap", "200", "--permutations", "0"]
    result = runner.invoke(app, [*arguments, "-f", "csv"])
    assert result.exit_code == 0, result.output
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["model"] for r in records} == set(MODELS)
    assert sum(len(triplets(r)) for r in records) > 300
    assert outside(records) == []  # type: ignore[arg-type]
    assert any(r["difference_low"] for r in records if r["rater_race"])
    # The ranked summary a person sees on a terminal.
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    shown = runner.invoke(app, [*arguments, "-f", "csv"])
    assert shown.exit_code == 0, shown.output
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
    result = runner.invoke(app, [*arguments, "-f", "csv"])
    assert result.exit_code == 0, result.output
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert sum(len(triplets(r)) for r in records) > 20
    assert outside(records) == []  # type: ignore[arg-type]
    monkeypatch.setattr(command, "stderr_is_terminal", lambda: True)
    shown = runner.invoke(app, [*arguments, "-f", "csv"])
    assert shown.exit_code == 0, shown.output
    found = SUMMARY.findall(shown.output[len(result.output) :])
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
    # About this pool of raters (conversations only), a small group has its interval.
    pool = evaluate(
        votes, read, Settings(by=("group",), bootstrap=50, permutations=0, interval="conversations")
    )
    (row,) = [r for r in pool.table.records() if r["group"] == "g0" and r["reference"] == "crowd"]
    assert row["few_raters"] is False and row["kappa_low"] is not None


def test_the_group_rows_jackknife_is_jsd_left_one_rater_out_by_hand(tmp_path: Path) -> None:
    """A group's jsd interval: its half-width is t * sqrt(V_conversations + V_raters), V_raters
    the stratified jackknife of the jsd (scipy's) with each rater left out in turn."""
    rng = np.random.default_rng(5)
    data = simulate(rng, sizes=(6, 9), conversations=80)
    score = judge(data, rng)
    votes, read = votes_of(data), predictions_of(score, tmp_path)
    bootstrap = Settings(by=("group",), bootstrap=300, permutations=0, seed=2)
    clustered = evaluate(votes, read, bootstrap).table.records()
    conversations = evaluate(
        votes,
        read,
        Settings(by=("group",), bootstrap=300, permutations=0, seed=2, interval="conversations"),
    ).table.records()

    def jsd(raters: np.ndarray) -> float:
        share = data.yes[raters].mean(axis=0)
        p = np.column_stack([1 - score, score])
        q = np.column_stack([1 - share, share])
        return float(np.mean(jensenshannon(p, q, axis=1, base=2) ** 2))

    group = 0
    members = [np.flatnonzero(data.group_of_rater == g) for g in range(data.groups)]
    own = members[group]
    variance, denominator = 0.0, 0.0
    for stratum in members:
        # Leaving out a rater of another group leaves this group's jsd as it is.
        values = np.array(
            [jsd(own[own != rater]) for rater in stratum] if stratum is own else [0.0]
        )
        n = len(stratum)
        part = (n - 1) / n * float(((values - values.mean()) ** 2).sum()) if len(values) > 1 else 0
        variance += part
        denominator += part**2 / (n - 1)
    (row,) = [r for r in clustered if r["group"] == "g0" and r["reference"] == "crowd-share"]
    (alone,) = [r for r in conversations if r["group"] == "g0" and r["reference"] == "crowd-share"]
    assert math.isclose(row["jsd"], jsd(own), rel_tol=1e-9)
    conversation_sd = (alone["jsd_high"] - alone["jsd_low"]) / (2 * stats.norm.ppf(0.975))
    total = conversation_sd**2 + variance
    df = total**2 / denominator  # Satterthwaite, the conversations' variance known
    expected = stats.t.ppf(0.975, df) * math.sqrt(total)
    assert math.isclose((row["jsd_high"] - row["jsd_low"]) / 2, expected, rel_tol=1e-6)
    # A figure against the plurality: the conversations' spread, a t quantile of 6 - 1.
    (kappa,) = [r for r in clustered if r["group"] == "g0" and r["reference"] == "crowd"]
    (kappa_alone,) = [r for r in conversations if r["group"] == "g0" and r["reference"] == "crowd"]
    # (Below the estimate: above it the interval is clipped at 1.)
    ratio = (kappa["kappa"] - kappa["kappa_low"]) / (
        kappa_alone["kappa"] - kappa_alone["kappa_low"]
    )
    assert math.isclose(ratio, stats.t.ppf(0.975, 5) / stats.norm.ppf(0.975), rel_tol=1e-6)


@given(st.floats(0.05, 1e6), st.sampled_from([0.9, 0.95, 0.975, 0.995]))
def test_t_quantiles_are_scipys(df: float, probability: float) -> None:
    assert math.isclose(t_quantile(probability, df), stats.t.ppf(probability, df), rel_tol=1e-8)
    assert math.isclose(normal_quantile(probability), stats.norm.ppf(probability), rel_tol=1e-12)


@given(
    st.lists(st.floats(-1, 1), min_size=3, max_size=40),
    st.floats(0, 1),
    st.floats(1, 100),
)
def test_a_centred_interval_holds_its_estimate_within_the_bounds(
    values: list[float], raters: float, df: float
) -> None:
    low, high = centred_interval(np.array(values), (raters, df), (-1.0, 1.0))
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
