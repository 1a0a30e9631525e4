"""Calibration of the intervals of group shares (`--interval` of qoverall-by-demographic,
degree-of-harm and harm-types): the figures of docs/metrics.md, "Intervals of group shares".

    python bench/calibration_shares.py                 # builds both replicas (a few minutes)
    python bench/calibration_shares.py --data DIR      # an ingested data directory
    python bench/calibration_shares.py --quick --data DIR   # a smoke test: few of everything

Three parts, each for the methods clustered, conversations and wilson:

1. Simulation (tests/drivers/two_way.py: a two-way random-effects logistic model with a
   known truth): the share of simulated datasets whose 95% interval of a group's share
   holds it, for raters and conversations drawn afresh ("raters and conversations like
   these") and for a fixed rater pool ("this rater pool"), beside the binomial 99.9% range
   of a calibrated interval's coverage.
2. Shuffled demographics on the replica: rater_race permuted across raters, many times; the
   share of group intervals holding the pool's share, which is what a group of raters drawn
   at random from this pool is expected to give.
3. Widths on the replica, `--by rater_race`, from the query itself: each method's interval
   width, the clustered one over Wilson's, and over the two-way cluster-robust variance
   (Cameron, Gelbach & Miller 2011), an independent formula.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# One BLAS thread, as `dices query` runs the step (dices_cli/cli/commands/canned.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

# Scripts in bench/ share their helpers: `python bench/calibration_shares.py` puts bench/ on
# the path; the simulated model is the calibration test's own (tests/drivers/two_way.py).
from ingest import add_shared_dir_argument, dices_command, generate
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from drivers.two_way import (
    RATER_SD,
    pool_share,
    population_share,
    simulated_ratings,
)

from dices_cli.metrics.shares import Ratings, compute, share_intervals
from dices_cli.queries.catalog import get_query, render_sql
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store

METHODS = ("clustered", "conversations", "wilson")
Z = 1.959963984540054
GROUPS, RATERS_PER_GROUP, CONVERSATIONS = 2, 12, 30


def simulated_coverage(datasets: int, resamples: int, fixed_pool: bool) -> dict[str, float]:
    """Each method's coverage of group 0's true share over `datasets` simulated datasets."""
    rng = np.random.default_rng(1 if not fixed_pool else 2)
    pool = rng.normal(0, RATER_SD, GROUPS * RATERS_PER_GROUP) if fixed_pool else None
    truth = pool_share(pool[:RATERS_PER_GROUP]) if pool is not None else population_share()
    held = dict.fromkeys(METHODS, 0)
    for dataset in range(datasets):
        ratings = simulated_ratings(rng, GROUPS, RATERS_PER_GROUP, CONVERSATIONS, pool)
        for method in METHODS:
            low, high = share_intervals(ratings, method, resamples, dataset)
            held[method] += bool(low[0] <= truth <= high[0])
    return {method: count / datasets for method, count in held.items()}


def _ratings_by_rater(data: Path, dataset: str) -> tuple[Any, ...]:
    """Each rating's rater and conversation (numbered) and Yes, and each rater's race code."""
    session = open_session(Store(data), dataset)
    rows = session.con.sql(
        "SELECT rater_id, item_id, (Q_overall IS NOT DISTINCT FROM 'Yes')::DOUBLE AS yes, "
        "rater_race::VARCHAR AS race FROM ratings_wide"
    ).fetchnumpy()
    raters, rater = np.unique(rows["rater_id"], return_inverse=True)
    conversations, conversation = np.unique(rows["item_id"], return_inverse=True)
    race_of_rater = np.empty(len(raters), dtype=object)
    race_of_rater[rater] = rows["race"]
    race = np.unique(race_of_rater.astype(str), return_inverse=True)[1]
    return rater, conversation, np.asarray(rows["yes"]), race, len(conversations)


def grouped(
    rater: np.ndarray, conversation: np.ndarray, yes: np.ndarray, group: np.ndarray, count: int
) -> Ratings:
    """The Ratings with one row per group of raters (`group`: each rater's)."""
    of_rating = group[rater]
    order = np.argsort(of_rating, kind="stable")
    starts = np.searchsorted(of_rating[order], np.arange(group.max() + 2))
    return Ratings(
        starts.astype(np.intp),
        rater[order].astype(np.intp),
        conversation[order].astype(np.intp),
        yes[order],
        group.astype(np.intp),
        count,
    )


def shuffled_coverage(
    data: Path, dataset: str, shuffles: int, resamples: int
) -> tuple[dict[str, float], int]:
    """Each method's share of group intervals holding the pool's share, rater_race
    permuted across raters `shuffles` times; and the number of intervals per method."""
    rater, conversation, yes, race, count = _ratings_by_rater(data, dataset)
    pool = float(yes.mean())
    rng = np.random.default_rng(0)
    held = dict.fromkeys(METHODS, 0)
    intervals = 0
    for shuffle in range(shuffles):
        ratings = grouped(rater, conversation, yes, rng.permutation(race), count)
        for method in METHODS:
            low, high = share_intervals(ratings, method, resamples, shuffle)
            held[method] += int(((low <= pool) & (pool <= high)).sum())
        intervals += ratings.rows
    return {method: n / intervals for method, n in held.items()}, intervals


def replica_widths(data: Path, dataset: str, resamples: int) -> list[dict[str, Any]]:
    """Per race group: each method's width (from the query's own SQL and compute step),
    and the two-way cluster-robust width, computed here from the ratings."""
    query = get_query("qoverall-by-demographic")
    session = open_session(Store(data), dataset)
    arrow = session.con.sql(render_sql(query), params={"by": ["rater_race"]}).to_arrow_table()
    widths: dict[str, dict[str, float]] = {}
    for method in METHODS:
        parameters = {"by": ["rater_race"], "interval": method}
        parameters |= {"bootstrap": resamples, "seed": 0}
        started = time.perf_counter()
        for row in compute(arrow, parameters).records():
            group = widths.setdefault(row["rater_race"], {"raters": row["raters"]})
            group[method] = row["share_yes_ci_high"] - row["share_yes_ci_low"]
        widths.setdefault("_seconds", {})[method] = time.perf_counter() - started
    rater, conversation, yes, race, _ = _ratings_by_rater(data, dataset)
    names = sorted(name for name in widths if name != "_seconds")
    for code, name in enumerate(names):  # both sorted by the race's text
        mine = race[rater] == code
        residual = yes[mine] - yes[mine].mean()
        sums = [
            _squared_sums(residual, keys)
            for keys in (rater[mine], conversation[mine], rater[mine] * 10_000 + conversation[mine])
        ]
        variance = (sums[0] + sums[1] - sums[2]) / mine.sum() ** 2
        widths[name]["two_way"] = 2 * Z * math.sqrt(variance)
    seconds = widths.pop("_seconds")
    return [
        {"dataset": dataset, "group": name, **widths[name], "seconds": seconds} for name in names
    ]


def _squared_sums(residual: np.ndarray, keys: np.ndarray) -> float:
    """The sum over the values of `keys` of the squared sum of their residuals."""
    codes = np.unique(keys, return_inverse=True)[1]
    return float((np.bincount(codes, weights=residual) ** 2).sum())


def _ratio(width: float, other: float) -> float:
    """width / other; NaN for a group whose answers are all alike (no width)."""
    return width / other if other > 0 else math.nan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="an ingested data directory (else: replicas)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: few of everything")
    add_shared_dir_argument(parser)
    args = parser.parse_args(argv)
    datasets, shuffles, resamples = (40, 2, 50) if args.quick else (1000, 200, 1000)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data
        if data is None:
            data = Path(temp) / "data"
            paths = generate(args.shared_dir, ["350", "990"], 1, Path(temp))
            ingest = [*dices_command(), "ingest", *map(str, paths), "--data", str(data)]
            subprocess.run(ingest, check=True, capture_output=True)
        report(data, datasets, shuffles, resamples)


def report(data: Path, datasets: int, shuffles: int, resamples: int) -> None:
    low, high = (end / datasets for end in binom.interval(0.999, datasets, 0.95))
    print(
        f"1. Simulated two-way model ({GROUPS} groups x {RATERS_PER_GROUP} raters, "
        f"{CONVERSATIONS} conversations), {datasets} datasets, {resamples} resamples; "
        f"a calibrated 95% interval covers within [{low:.3f}, {high:.3f}]"
    )
    for fixed_pool, estimand in (
        (False, "raters and conversations like these"),
        (True, "this rater pool"),
    ):
        covered = simulated_coverage(datasets, resamples, fixed_pool)
        print(f"   {estimand:36}" + "".join(f"  {m} {covered[m]:.3f}" for m in METHODS))
    print(
        f"2. Shuffled rater_race, {shuffles} shuffles, {resamples} resamples: "
        "coverage of the pool share"
    )
    available = Store(data).available()
    for dataset in available:
        covered, intervals = shuffled_coverage(data, dataset, shuffles, resamples)
        print(
            f"   DICES-{dataset} ({intervals} intervals)"
            + "".join(f"  {m} {covered[m]:.3f}" for m in METHODS)
        )
    print(f"3. Widths, qoverall-by-demographic --by rater_race, {resamples} resamples")
    print(
        "   dataset  group                     raters  clustered  conversations  wilson  "
        "clustered/wilson  clustered/two-way"
    )
    for dataset in available:
        rows = replica_widths(data, dataset, resamples)
        for row in rows:
            print(
                f"   {row['dataset']:7}  {row['group'][:24]:24}  {row['raters']:6}  "
                f"{row['clustered']:9.4f}  {row['conversations']:13.4f}  {row['wilson']:6.4f}  "
                f"{_ratio(row['clustered'], row['wilson']):16.1f}  "
                f"{_ratio(row['clustered'], row['two_way']):17.2f}"
            )
        seconds = rows[0]["seconds"]
        print(
            "   compute step, in-process: " + ", ".join(f"{m} {seconds[m]:.3f} s" for m in METHODS)
        )
    print(f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
