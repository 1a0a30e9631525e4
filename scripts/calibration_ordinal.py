"""The ordinal family's calibration table, per group size (docs/metrics.md, "Calibration of
the ordinal family per group size"): the coverage of label-by-group's intervals and the
level and power of the ordinal group tests, against the generator's known truth.

    python scripts/calibration_ordinal.py [--datasets 200] [--permutations 199]
                                          [--shift 0.75] [--quick]

Data: tests/drivers/ordinal.py (ratings 1-5 from a latent item effect N(0, 1) + rater
effect N(0, 0.5^2) + the group's shift + noise N(0, 1), cut at -1.5, -0.5, 0.5, 1.5),
groups of 5, 13, 20 and 50 raters, 60 items, 20 ratings per rater. Per group size:

- null (every shift 0), `--datasets` datasets: how often the 95% interval of the group's
  share in the positive class (>= 3) holds the truth, Phi(1/3) = 0.6306, and that of its
  mean rating holds 3 (by symmetry; clustered, conversations, wilson each), and how often
  the clustered intervals of their differences from the rest hold 0; how often each test
  rejects at 0.05: label-by-group's share test (p_value) and mean test (mean_p_value),
  two-sided, raters relabelled, and GRASP's permutation test of the group's IRR, XRR and
  GAI with the ordinal metric (`agreement --metric ordinal`); the omnibus p_groups_differ
  and mean_p_groups_differ once per dataset. Beside each: the binomial 99.9% range of a
  calibrated figure.
- power: `--datasets` datasets with that group's raters shifted by `--shift` on the latent
  scale (the others not): the same tests' rejection rates.

label-by-group's figures are its own SQL and compute step run over the generated ratings
(`tests.drivers.ordinal.label_by_group`). The results are appended to
bench/results/calibration_ordinal.jsonl.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _results import append  # noqa: E402
from scipy.stats import binom, norm  # noqa: E402

from dices_cli.metrics.distance import Distance  # noqa: E402
from dices_cli.metrics.groups import METRICS  # noqa: E402
from dices_cli.metrics.permutation import permutation_test  # noqa: E402
from tests.drivers.ordinal import OrdinalRatings, label_by_group, ordinal_ratings  # noqa: E402

SIZES = (5, 13, 20, 50)
ITEMS, PER_RATER = 60, 20
TRUTH = float(norm.cdf(0.5 / 1.5))  # P(latent > -0.5): the latent sd is 1.5
MEAN_TRUTH = 3.0  # the latent is symmetric about 0, as are the cuts, so the mean is the middle
METHODS = ("clustered", "conversations", "wilson")
GRASP = ("irr", "xrr", "gai")


def one_dataset(
    ratings: OrdinalRatings, permutations: int, seed: int, methods: tuple[str, ...] = METHODS
) -> dict[str, Any]:
    """Per group: each interval's ends of the share and the mean (of `methods`); with the
    clustered interval, the differences' ends, the share and mean tests' p and the
    omnibus p's; GRASP's p for IRR, XRR, GAI."""
    found: dict[str, Any] = {}
    for method in methods:
        tested = permutations if method == "clustered" else 0
        result = label_by_group(ratings, {"interval": method, "permutations": tested, "seed": seed})
        column = {name: i for i, name in enumerate(result.columns)}
        ends = partial(_ends, result.rows, column)
        found[method] = ends("share_positive")
        found[f"mean {method}"] = ends("mean")
        if method == "clustered":
            for prefix in ("", "mean_"):
                found[f"{prefix}difference"] = ends(f"{prefix}difference")
                p = column[f"{prefix}p_value"]
                found[f"{prefix}share_test" if not prefix else "mean_test"] = [
                    row[p] for row in result.rows
                ]
                omnibus = result.rows[0][column[f"{prefix}p_groups_differ"]]
                found[f"{prefix}groups_differ"] = omnibus
    test = permutation_test(
        ratings.answers(), ratings.group, len(SIZES), permutations, seed, Distance("ordinal")
    )
    found["grasp"] = {name: test.p[:, METRICS.index(name)].tolist() for name in GRASP}
    return found


def _ends(
    rows: list[tuple[Any, ...]], column: dict[str, int], prefix: str
) -> list[tuple[Any, Any]]:
    """Each row's interval of `prefix` (share_positive, mean, difference, ...)."""
    low, high = column[f"{prefix}_ci_low"], column[f"{prefix}_ci_high"]
    return [(row[low], row[high]) for row in rows]


def _holds(ends: tuple[float | None, float | None], value: float) -> bool:
    low, high = ends
    return low is not None and high is not None and low <= value <= high


COVERED = (
    *((method, TRUTH) for method in METHODS),
    ("difference", 0.0),
    *((f"mean {method}", MEAN_TRUTH) for method in METHODS),
    ("mean_difference", 0.0),
)
TESTS = ("share_test", "mean_test", *GRASP)


def calibrate(datasets: int, permutations: int, shift: float) -> dict[str, Any]:
    null: dict[str, list[int]] = {name: [0] * len(SIZES) for name, _ in COVERED}
    null |= {name: [0] * len(SIZES) for name in TESTS}
    omnibus = {"groups_differ": 0, "mean_groups_differ": 0}
    for d in range(datasets):
        ratings = ordinal_ratings(SIZES, ITEMS, PER_RATER, seed=1000 + d)
        found = one_dataset(ratings, permutations, seed=d)
        for g in range(len(SIZES)):
            for name, truth in COVERED:
                null[name][g] += _holds(found[name][g], truth)
            for name in TESTS:
                p = found["grasp"][name][g] if name in GRASP else found[name][g]
                null[name][g] += p < 0.05
        for name in omnibus:
            omnibus[name] += found[name] < 0.05
    power: dict[str, list[int]] = {name: [0] * len(SIZES) for name in TESTS}
    for g in range(len(SIZES)):
        shifts = tuple(shift if k == g else 0.0 for k in range(len(SIZES)))
        for d in range(datasets):
            ratings = ordinal_ratings(SIZES, ITEMS, PER_RATER, seed=5000 + d, shifts=shifts)
            found = one_dataset(ratings, permutations, seed=d, methods=("clustered",))
            for name in TESTS:
                p = found["grasp"][name][g] if name in GRASP else found[name][g]
                power[name][g] += p < 0.05
    return {"null": null, "omnibus": omnibus, "power": power}


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
    omnibus = {name: count / datasets for name, count in counts["omnibus"].items()}
    header = "".join(f"{size:>8}" for size in SIZES)
    print(f"{datasets} datasets per column, {permutations} permutations, shift {shift}")
    print(f"\ncoverage (99.9% range of a calibrated 95% interval: {low:.3f}-{high:.3f})")
    print(f"{'interval':34}{header}")
    for name, label in [
        *((method, f"share, {method}") for method in METHODS),
        ("difference", "share difference, clustered"),
        *((f"mean {method}", f"mean, {method}") for method in METHODS),
        ("mean_difference", "mean difference, clustered"),
    ]:
        print(f"{label:34}" + "".join(f"{r:8.3f}" for r in rates["null"][name]))
    print(f"\nlevel: share of p < 0.05 under the null (99.9% bound: {level_high:.3f})")
    print(f"{'test':34}{header}")
    tests = [("share_test", "share test (p_value)"), ("mean_test", "mean test (mean_p_value)")]
    tests += [(name, f"GRASP {name}, ordinal") for name in GRASP]
    for name, label in tests:
        print(f"{label:34}" + "".join(f"{r:8.3f}" for r in rates["null"][name]))
    for name in omnibus:
        label = name.replace("groups_differ", "p_groups_differ")
        print(f"{label:34}{omnibus[name]:8.3f} (one per dataset)")
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
            "mean_truth": MEAN_TRUTH,
            "coverage": {k: rates["null"][k] for k, _ in COVERED},
            "coverage_range": [low, high],
            "level": {k: rates["null"][k] for k in TESTS},
            "level_bound": level_high,
            "p_groups_differ_level": omnibus["groups_differ"],
            "mean_p_groups_differ_level": omnibus["mean_groups_differ"],
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
