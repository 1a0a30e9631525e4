"""Calibration of the intervals of group shares: over many datasets simulated from a known
two-way random-effects model (tests/drivers/two_way.py), how often each method's 95% interval
of a group's share of Yes holds the true share, against binomial bounds around 95%.

Two estimands (docs/metrics.md, "Intervals of group shares"):
- raters and conversations like these: both drawn afresh in every dataset; the clustered
  (two-way) interval is made for it;
- this rater pool: the same raters in every dataset, conversations drawn afresh; the
  conversations-only interval is made for it.
The Wilson interval, ratings as independent, is far below 95% for both. And under shuffled
demographics on the replica, the query's clustered interval holds the pool's share about as
often as it should, Wilson's seldom. `python bench/calibration_shares.py` gives the figures
with more datasets.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from drivers.shuffled import shuffled_store
from drivers.two_way import RATER_SD, pool_share, population_share, simulated_ratings
from scipy.stats import binom
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.metrics.shares import share_intervals

pytestmark = pytest.mark.slow  # calibration: many simulated data sets per check

DATASETS = 300  # simulated datasets per check (about 1 s each)
RESAMPLES = 200
GROUPS, RATERS_PER_GROUP, CONVERSATIONS = 2, 12, 30
NOMINAL = 0.95


def coverage_bounds(datasets: int = DATASETS) -> tuple[float, float]:
    """Where 99.9% of coverages of a calibrated 95% interval fall, over `datasets` trials."""
    low, high = binom.interval(0.999, datasets, NOMINAL)
    return low / datasets, high / datasets


def coverages(fixed_pool: bool, seed: int) -> dict[str, float]:
    """Each method's share of datasets whose interval of group 0's share holds the truth
    (one group per dataset, so the trials are independent)."""
    rng = np.random.default_rng(seed)
    pool = rng.normal(0, RATER_SD, GROUPS * RATERS_PER_GROUP) if fixed_pool else None
    truth = pool_share(pool[:RATERS_PER_GROUP]) if pool is not None else population_share()
    held = dict.fromkeys(("clustered", "conversations", "wilson"), 0)
    for dataset in range(DATASETS):
        ratings = simulated_ratings(rng, GROUPS, RATERS_PER_GROUP, CONVERSATIONS, pool)
        for method in held:
            low, high = share_intervals(ratings, method, RESAMPLES, dataset)
            held[method] += bool(low[0] <= truth <= high[0])
    return {method: count / DATASETS for method, count in held.items()}


def test_the_clustered_interval_covers_raters_and_conversations_like_these() -> None:
    covered = coverages(fixed_pool=False, seed=1)
    low, high = coverage_bounds()
    assert low <= covered["clustered"] <= high, covered
    assert covered["conversations"] < low, covered  # blind to the raters' spread
    assert covered["wilson"] < 0.75, covered


def test_the_conversations_interval_covers_this_rater_pool() -> None:
    covered = coverages(fixed_pool=True, seed=2)
    low, high = coverage_bounds()
    assert low <= covered["conversations"] <= high, covered
    assert covered["clustered"] >= low, covered  # wider: it also draws other raters
    assert covered["wilson"] < 0.9, covered


def test_the_simulated_truth_is_the_mean_of_many_datasets() -> None:
    """The truth the coverages are measured against is what the simulated shares average
    to (within 4 standard errors)."""
    rng = np.random.default_rng(3)
    shares = []
    for _ in range(400):
        ratings = simulated_ratings(rng, 1, RATERS_PER_GROUP, CONVERSATIONS)
        shares.append(ratings.yes.mean())
    error = np.std(shares) / np.sqrt(len(shares))
    assert abs(np.mean(shares) - population_share()) < 4 * error


def test_under_shuffled_demographics_the_clustered_interval_holds_the_pool_share(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    """Shuffled across raters, race says nothing: a group's expected share is the pool's.
    Over two shuffles of DICES-350 (10 group intervals from the query itself), the clustered
    interval holds it at least 8 times (its rate over 200 shuffles is 0.96: docs/metrics.md),
    the Wilson interval, 6-10 times narrower, at most 5 times (0.21)."""
    query = ["query", "qoverall-by-demographic", "--by", "rater_race", "-d", "350"]
    held: dict[str, list[bool]] = {"clustered": [], "wilson": []}
    for seed in (11, 12):
        shuffled = shuffled_store(ingested, tmp_path / str(seed), seed)
        for method, holds in held.items():
            result = runner.invoke(
                app, [*query, "--interval", method, "--data", str(shuffled), "-f", "csv"]
            )
            assert result.exit_code == 0, result.output
            rows = list(csv.DictReader(io.StringIO(result.stdout)))
            pool = sum(int(r["n_yes"]) for r in rows) / sum(int(r["ratings"]) for r in rows)
            holds += [
                float(r["share_yes_ci_low"]) <= pool <= float(r["share_yes_ci_high"]) for r in rows
            ]
    assert len(held["clustered"]) == len(held["wilson"]) == 10
    assert sum(held["clustered"]) >= 8, held
    assert sum(held["wilson"]) <= 5, held
