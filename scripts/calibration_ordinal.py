"""The ordinal family's calibration table, per group size (docs/metrics.md, "Calibration of
the ordinal family per group size"): the coverage of label-by-group's intervals and the
level and power of the ordinal group tests, against the generator's known truth.

    python scripts/calibration_ordinal.py [--datasets 200] [--permutations 199]
                                          [--shift 0.75] [--quick]

Data: tests/drivers/ordinal.py (ratings 1-5 from a latent item effect N(0, 1) + rater
effect N(0, 0.5^2) + the group's shift + noise N(0, 1), cut at -1.5, -0.5, 0.5, 1.5),
groups of 5, 13, 20 and 50 raters, 60 items, 20 ratings per rater. Per group size:

- null (every shift 0), `--datasets` datasets: how often the 95% interval of the group's
  share in the positive class (>= 3) holds the truth, Phi(1/3) = 0.6306 (clustered,
  conversations, wilson), and how often the clustered interval of its difference from
  the rest holds 0; how often each test rejects at 0.05: label-by-group's share test
  (p_value, two-sided, raters relabelled) and GRASP's permutation test of the group's
  IRR, XRR and GAI with the ordinal metric (`agreement --metric ordinal`); the omnibus
  p_groups_differ once per dataset. Beside each: the binomial 99.9% range of a
  calibrated figure.
- power: `--datasets` datasets with that group's raters shifted by `--shift` on the latent
  scale (the others not): the same tests' rejection rates.

label-by-group gives the group's mean rating without an interval, so there is no mean
interval to calibrate. The results are appended to bench/results/calibration_ordinal.jsonl.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from _results import append  # noqa: E402
from scipy.stats import binom, norm  # noqa: E402

from dices_cli.metrics.any_family import share_intervals  # noqa: E402
from dices_cli.metrics.distance import Distance  # noqa: E402
from dices_cli.metrics.groups import METRICS  # noqa: E402
from dices_cli.metrics.permutation import permutation_test  # noqa: E402
from tests.drivers.ordinal import OrdinalRatings, ordinal_ratings  # noqa: E402

SIZES = (5, 13, 20, 50)
ITEMS, PER_RATER = 60, 20
TRUTH = float(norm.cdf(0.5 / 1.5))  # P(latent > -0.5): the latent sd is 1.5
METHODS = ("clustered", "conversations", "wilson")
GRASP = ("irr", "xrr", "gai")


def share_table(ratings: OrdinalRatings) -> pa.Table:
    """label-by-group's SQL rows by group: each group's ratings of the positive class."""
    rows = []
    for group in range(len(SIZES)):
        mine = ratings.group[ratings.rater] == group
        yes = ratings.value[mine] >= 3
        rows.append(
            {
                "dataset": "ordinal",
                "grp": f"g{group}",
                "share_positive": float(yes.mean()),
                "rating_rater": ratings.rater[mine].tolist(),
                "rating_item": ratings.item[mine].tolist(),
                "rating_yes": yes.astype(np.uint8).tolist(),
            }
        )
    return pa.Table.from_pylist(rows)


def one_dataset(
    ratings: OrdinalRatings, permutations: int, seed: int, methods: tuple[str, ...] = METHODS
) -> dict[str, Any]:
    """Per group: each interval's ends (of `methods`), the share test's p (with the
    clustered interval), GRASP's p for IRR, XRR, GAI."""
    table = share_table(ratings)
    found: dict[str, Any] = {}
    for method in methods:
        tested = permutations if method == "clustered" else 0
        parameters = {"by": ["grp"], "interval": method, "permutations": tested}
        result = share_intervals(table, {**parameters, "seed": seed})
        column = {name: i for i, name in enumerate(result.columns)}
        found[method] = [
            (row[column["share_positive_ci_low"]], row[column["share_positive_ci_high"]])
            for row in result.rows
        ]
        if method == "clustered":
            found["difference"] = [
                (row[column["difference_ci_low"]], row[column["difference_ci_high"]])
                for row in result.rows
            ]
            found["share_test"] = [row[column["p_value"]] for row in result.rows]
            found["groups_differ"] = result.rows[0][column["p_groups_differ"]]
    test = permutation_test(
        ratings.answers(), ratings.group, len(SIZES), permutations, seed, Distance("ordinal")
    )
    found["grasp"] = {name: test.p[:, METRICS.index(name)].tolist() for name in GRASP}
    return found


def _holds(ends: tuple[float | None, float | None], value: float) -> bool:
    low, high = ends
    return low is not None and high is not None and low <= value <= high


def calibrate(datasets: int, permutations: int, shift: float) -> dict[str, Any]:
    null: dict[str, list[int]] = {}
    rejected_omnibus = 0
    for d in range(datasets):
        ratings = ordinal_ratings(SIZES, ITEMS, PER_RATER, seed=1000 + d)
        found = one_dataset(ratings, permutations, seed=d)
        for method in METHODS:
            null.setdefault(method, [0] * len(SIZES))
            for g in range(len(SIZES)):
                null[method][g] += _holds(found[method][g], TRUTH)
        null.setdefault("difference", [0] * len(SIZES))
        null.setdefault("share_test", [0] * len(SIZES))
        for g in range(len(SIZES)):
            null["difference"][g] += _holds(found["difference"][g], 0.0)
            null["share_test"][g] += found["share_test"][g] < 0.05
            for name in GRASP:
                null.setdefault(name, [0] * len(SIZES))
                null[name][g] += found["grasp"][name][g] < 0.05
        rejected_omnibus += found["groups_differ"] < 0.05
    power: dict[str, list[int]] = {name: [0] * len(SIZES) for name in ("share_test", *GRASP)}
    for g in range(len(SIZES)):
        shifts = tuple(shift if k == g else 0.0 for k in range(len(SIZES)))
        for d in range(datasets):
            ratings = ordinal_ratings(SIZES, ITEMS, PER_RATER, seed=5000 + d, shifts=shifts)
            found = one_dataset(ratings, permutations, seed=d, methods=("clustered",))
            power["share_test"][g] += found["share_test"][g] < 0.05
            for name in GRASP:
                power[name][g] += found["grasp"][name][g] < 0.05
    return {"null": null, "omnibus": rejected_omnibus, "power": power}


def main(datasets: int, permutations: int, shift: float) -> None:
    started = time.perf_counter()
    counts = calibrate(datasets, permutations, shift)
    seconds = time.perf_counter() - started
    low, high = (binom.ppf(q, datasets, 0.95) / datasets for q in (0.0005, 0.9995))
    level_high = binom.ppf(0.9995, datasets, 0.05) / datasets
    rates = {
        part: {name: [c / datasets for c in values] for name, values in counts[part].items()}
        for part in ("null", "power")
    }
    omnibus = counts["omnibus"] / datasets
    header = "".join(f"{size:>8}" for size in SIZES)
    print(f"{datasets} datasets per column, {permutations} permutations, shift {shift}")
    print(f"\ncoverage (99.9% range of a calibrated 95% interval: {low:.3f}-{high:.3f})")
    print(f"{'interval':34}{header}")
    for name, label in [
        ("clustered", "share, clustered"),
        ("conversations", "share, conversations"),
        ("wilson", "share, wilson"),
        ("difference", "difference from the rest, clust."),
    ]:
        print(f"{label:34}" + "".join(f"{r:8.3f}" for r in rates["null"][name]))
    print("mean                              no interval (label-by-group gives none)")
    print(f"\nlevel: share of p < 0.05 under the null (99.9% bound: {level_high:.3f})")
    print(f"{'test':34}{header}")
    tests = [("share_test", "share test (p_value)")]
    tests += [(name, f"GRASP {name}, ordinal") for name in GRASP]
    for name, label in tests:
        print(f"{label:34}" + "".join(f"{r:8.3f}" for r in rates["null"][name]))
    print(f"{'p_groups_differ':34}{omnibus:8.3f} (one per dataset)")
    print(f"\npower: share of p < 0.05, the group's raters shifted by {shift}")
    print(f"{'test':34}{header}")
    for name, label in tests:
        print(f"{label:34}" + "".join(f"{r:8.3f}" for r in rates["power"][name]))
    print(f"\n{seconds:.0f} s")
    append(
        "calibration_ordinal",
        {
            "settings": {
                "datasets": datasets,
                "permutations": permutations,
                "shift": shift,
                "sizes": list(SIZES),
                "items": ITEMS,
                "per_rater": PER_RATER,
                "truth": TRUTH,
            },
            "coverage": {k: rates["null"][k] for k in (*METHODS, "difference")},
            "coverage_range": [low, high],
            "level": {k: rates["null"][k] for k in ("share_test", *GRASP)},
            "level_bound": level_high,
            "p_groups_differ_level": omnibus,
            "power": rates["power"],
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--shift", type=float, default=0.75)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 4 datasets")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.datasets, arguments.permutations = 4, 49
    main(arguments.datasets, arguments.permutations, arguments.shift)
