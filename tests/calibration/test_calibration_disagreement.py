"""Calibration of `dices query group-disagreement` under the null (issue 21).

The rater demographics are shuffled across raters (tests/drivers/shuffled.py, seeded; group
sizes kept), so a group says nothing about its raters' answers. Every per-conversation test
must then reject at no more than its level: the share of p-values <= 0.05 stays under the
99.9% one-sided binomial bound of 5%, no conversation reaches p_adjusted <= 0.05, and no
p-value is 0. Few draws (200) and one shuffle keep it fast. The binomial bound treats the
shuffle's conversations as independent, which they are not (they share raters, so one
shuffle moves many of them together); the shuffle's seed is fixed, so the verdict is too.
The calibration figures, with the shuffles as the repeated unit, come from
bench/calibration_disagreement.py (docs/metrics.md).

The same check flags the rule the query had before (Pearson's chi-square on every table,
every group compared): on the same shuffled data it puts conversations at p_adjusted <= 0.05.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from drivers.shuffled import shuffled_store
from scipy import stats
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.independence import chi_square_statistics, chi_square_survival

pytestmark = pytest.mark.slow  # calibration: many simulated data sets per check

LEVEL = 0.05
BOUND = 0.999  # one-sided binomial bound on the share of p-values <= LEVEL
DRAWS = 200
SHUFFLE_SEED = 0


@pytest.fixture(scope="module")
def shuffled(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both replicas with the rater demographics shuffled across raters."""
    return shuffled_store(ingested, tmp_path_factory.mktemp("shuffled") / "data", SHUFFLE_SEED)


def query(data: Path, name: str, by: list[str], *options: str) -> list[dict[str, Any]]:
    arguments = ["query", name, *(o for c in by for o in ("--by", c)), *options]
    result = CliRunner().invoke(app, [*arguments, "--data", str(data), "-f", "json"])
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def miscalibration(rows: list[dict[str, Any]]) -> list[str]:
    """What a set of per-conversation tests under the null does wrong, per dataset: too
    many p-values <= LEVEL for tests at that level, conversations at p_adjusted <= LEVEL,
    p-values of 0. Empty when calibrated."""
    wrong = []
    for dataset in sorted({r["dataset"] for r in rows}):
        p_values = np.array([r["p_value"] for r in rows if r["dataset"] == dataset and r["test"]])
        share = float((p_values <= LEVEL).mean())
        bound = float(stats.binom(len(p_values), LEVEL).ppf(BOUND)) / len(p_values)
        if share > bound:
            wrong.append(f"{dataset}: {share:.4f} of p-values <= {LEVEL} (bound {bound:.4f})")
        adjusted = [
            r["item_id"]
            for r in rows
            if r["dataset"] == dataset and r["p_adjusted"] is not None and r["p_adjusted"] <= LEVEL
        ]
        if adjusted:
            wrong.append(f"{dataset}: conversations {adjusted} at p_adjusted <= {LEVEL}")
        if (p_values == 0).any():
            wrong.append(f"{dataset}: {int((p_values == 0).sum())} p-values of 0")
    return wrong


@pytest.mark.parametrize(
    "by",
    [["rater_race"], ["rater_education"], ["rater_gender", "rater_age"]],
    ids="*".join,
)
def test_group_disagreement_holds_its_level_under_shuffled_demographics(
    by: list[str], shuffled: Path
) -> None:
    rows = query(shuffled, "group-disagreement", by, "--permutations", str(DRAWS))
    assert {r["dataset"] for r in rows} == {"350", "990"}
    assert "monte-carlo" in {r["test"] for r in rows}
    assert miscalibration(rows) == []
    # a Monte Carlo p-value is at least 1 / (draws + 1)
    assert min(r["p_value"] for r in rows if r["test"] == "monte-carlo") >= 1 / (DRAWS + 1)


def test_the_check_flags_chi_square_on_every_table(shuffled: Path) -> None:
    """The rule before issue 21, on the same shuffled data: Pearson's chi-square for every
    table, groups of any size compared. Its small expected counts (a group of one rater
    with the one Unsure) make p-values the check catches."""
    by = ["rater_education"]
    cells = query(shuffled, "item-distribution", by)
    rows = []
    for dataset in ("350", "990"):
        mine = [r for r in cells if r["dataset"] == dataset]
        counts = np.array([[r["n_no"], r["n_yes"], r["n_unsure"]] for r in mine], dtype=np.int64)
        items = np.array([r["item_id"] for r in mine])
        starts = np.flatnonzero(np.concatenate([[True], items[1:] != items[:-1]]))
        groups = np.diff(np.append(starts, len(items)))
        answers = (np.add.reduceat(counts, starts, axis=0) > 0).sum(axis=1)
        dof = (groups - 1) * (answers - 1)
        tested = dof > 0
        p_values = np.full(len(starts), np.nan)
        statistics = chi_square_statistics(counts, starts)[tested]
        p_values[tested] = chi_square_survival(statistics, dof[tested])
        adjusted = stats.false_discovery_control(p_values[tested], method="bh")
        rows += [
            {
                "dataset": dataset,
                "item_id": int(item),
                "test": "chi-square",
                "p_value": p,
                "p_adjusted": q,
            }
            for item, p, q in zip(items[starts][tested], p_values[tested], adjusted, strict=True)
        ]
    wrong = miscalibration(rows)
    assert len(wrong) == 1 and wrong[0].startswith("990: conversations [")
