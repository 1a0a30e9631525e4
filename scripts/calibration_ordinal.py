"""The ordinal family's calibration figures in docs/metrics.md ("Any family"): the group
tests' rejection rate under shuffled groups, and the coverage of label-by-group's share
interval against the generator's truth, per group size (tests/drivers/ordinal.py).

    python scripts/calibration_ordinal.py [--shuffles 200] [--permutations 199]
                                          [--datasets 300] [--resamples 500]

The CI tests (tests/queries/test_declared_queries.py) run smaller versions of both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.stats import binom, norm

from tests.queries.test_declared_queries import (
    GROUP_SIZES,
    calibration,
    group_share_table,
    ordinal_ratings,
    share_intervals,
)


def main(shuffles: int, permutations: int, datasets: int, resamples: int) -> None:
    print(f"group tests, ordinal metric: {shuffles} shuffles x {permutations} permutations")
    print("size  tests  p<0.05  rate   99.9% bound  min p")
    for size, p_values in calibration(shuffles, permutations).items():
        rejected = sum(p < 0.05 for p in p_values)
        bound = binom.ppf(0.999, len(p_values), 0.05)
        print(
            f"{size:4} {len(p_values):6} {rejected:7} {rejected / len(p_values):6.3f} "
            f"{bound:10.0f}  {min(p_values):.4f}"
        )
    truth = float(norm.cdf(0.5 / 1.5))
    print(f"\nshare interval coverage of {truth:.4f}: {datasets} datasets x {resamples} resamples")
    print("method        " + "  ".join(f"{size:5}" for size in GROUP_SIZES))
    for method in ("clustered", "conversations", "wilson"):
        covered = dict.fromkeys(GROUP_SIZES, 0)
        for seed in range(datasets):
            ratings = ordinal_ratings(GROUP_SIZES, items=60, per_rater=20, seed=1000 + seed)
            parameters = {"by": ["grp"], "interval": method, "bootstrap": resamples, "seed": seed}
            result = share_intervals(group_share_table(ratings), parameters)
            low = result.columns.index("share_positive_ci_low")
            for size, row in zip(GROUP_SIZES, result.rows, strict=True):
                covered[size] += row[low] <= truth <= row[low + 1]
        print(f"{method:13} " + "  ".join(f"{covered[s] / datasets:5.3f}" for s in GROUP_SIZES))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shuffles", type=int, default=200)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--datasets", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=500)
    arguments = parser.parse_args()
    main(arguments.shuffles, arguments.permutations, arguments.datasets, arguments.resamples)
