"""Calibration of the share intervals and the share test (qoverall-by-demographic,
degree-of-harm, the report's shares figure), per group size: the tables of docs/metrics.md,
"Calibration of share intervals and tests".

    python bench/calibration_shares.py            # 1000 datasets under the null, 1000 shifted
    python bench/calibration_shares.py --quick    # a smoke test: few datasets

Data: tests/drivers/crossed.py (rater sd 1, conversation sd 1.5 on the logit, 350
conversations, groups of 5, 13, 20, 35 and 50 raters, known true shares; `--rated 0.5`
keeps each rating with that chance, as where a conversation has a subset of the raters,
and the ratings-weighted share then differs from the raters' mean share). Per group size,
with all groups alike: how often the clustered 95% interval of the group's share holds its
true share, and that of its difference from the rest the true difference, beside the
binomial 99.9% range of a calibrated interval; how often p_value < 0.05 (level) for each
alternative (two-sided, greater, less), ours and the reference's (the plain rater-level
permutation test of tests/drivers/rater_permutation.py, on the same datasets). With the
20-rater group's logit shifted by 0.6: the power of each alternative, ours, the reference's,
the oracle's (the reference on the true logits) and the ceiling of any test (the z test of
known rater sd), and ours minus the reference's paired by dataset with its standard error.
The omnibus p_groups_differ's rejection rate in both. `--data` is accepted and ignored (the
smoke test passes it): the truth is simulated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from _results import append
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.drivers.crossed import GROUP_SIZES, calibration
from tests.drivers.rater_permutation import ALTERNATIVES, ceiling

SHIFT = 0.6
SHIFTED = 2  # the 20-rater group
POWER_GOAL = 0.70


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test: few datasets")
    parser.add_argument("--data", type=Path, help="ignored: the data are simulated")
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument(
        "--rated", type=float, default=1.0, help="each rating's chance of being kept (1: all)"
    )
    args = parser.parse_args(argv)
    datasets, permutations = (10, 50) if args.quick else (args.datasets, args.permutations)
    started = time.perf_counter()
    null = calibration(datasets, seed=1, permutations=permutations, rated=args.rated)
    shifted = calibration(
        datasets, 2, shift=SHIFT, shifted=SHIFTED, permutations=permutations, rated=args.rated
    )
    seconds = time.perf_counter() - started
    low, high = (end / datasets for end in binom.interval(0.999, datasets, 0.95))
    fewest, most = (end / datasets for end in binom.interval(0.999, datasets, 0.05))
    print(
        f"{datasets} datasets per column, {permutations} permutations, each rating kept "
        f"with probability {args.rated:g}; a calibrated 95% "
        f"interval covers within [{low:.3f}, {high:.3f}], a 5% test rejects within "
        f"[{fewest:.3f}, {most:.3f}]"
    )
    levels = [f"{source[:3]}_{alt}" for alt in ALTERNATIVES for source in ("ours", "reference")]
    print("raters  share_cov  diff_cov  " + "  ".join(f"{name:>13}" for name in levels))
    rows = []
    for g, size in enumerate(null["sizes"]):
        row = {
            "raters": size,
            "share_coverage": null["share_coverage"][g],
            "difference_coverage": null["difference_coverage"][g],
            "level": {
                source: {alt: null["rejections"][source][alt][g] for alt in ALTERNATIVES}
                for source in ("ours", "reference")
            },
            "level_paired": {
                alt: [null["paired"][alt]["difference"][g], null["paired"][alt]["se"][g]]
                for alt in ALTERNATIVES
            },
        }
        rows.append(row)
        cells = [row["level"][s][a] for a in ALTERNATIVES for s in ("ours", "reference")]
        print(
            f"{size:6}  {row['share_coverage']:9.3f}  {row['difference_coverage']:8.3f}  "
            + "  ".join(f"{cell:13.3f}" for cell in cells)
        )
    rest = sum(GROUP_SIZES) - GROUP_SIZES[SHIFTED]
    power = {
        alt: {
            **{s: shifted["rejections"][s][alt][SHIFTED] for s in ("ours", "reference", "oracle")},
            "ceiling": ceiling(SHIFT, GROUP_SIZES[SHIFTED], rest, alt),
            "paired_difference": shifted["paired"][alt]["difference"][SHIFTED],
            "paired_se": shifted["paired"][alt]["se"][SHIFTED],
        }
        for alt in ALTERNATIVES
    }
    print(
        f"power at a {SHIFT} logit shift of the {GROUP_SIZES[SHIFTED]}-rater group "
        f"(goal {POWER_GOAL:.2f}):"
    )
    print("alternative   ours  reference  oracle  ceiling  ours-reference (se)")
    for alt, figures in power.items():
        print(
            f"{alt:<11}  {figures['ours']:5.3f}  {figures['reference']:9.3f}  "
            f"{figures['oracle']:6.3f}  {figures['ceiling']:7.3f}  "
            f"{figures['paired_difference']:+.4f} ({figures['paired_se']:.4f})"
        )
    print(
        f"omnibus p_groups_differ < 0.05: {null['omnibus_rejections']:.3f} with no shift, "
        f"{shifted['omnibus_rejections']:.3f} with the 20-rater group shifted; "
        f"{seconds:.0f} s, {os.cpu_count()} CPUs"
    )
    append(
        "calibration_shares",
        {
            "datasets": datasets,
            "permutations": permutations,
            "rated": args.rated,
            "coverage_range": [low, high],
            "level_range": [fewest, most],
            "groups": rows,
            "shift": SHIFT,
            "shifted_raters": GROUP_SIZES[SHIFTED],
            "power": power,
            "power_goal": POWER_GOAL,
            "omnibus_level": null["omnibus_rejections"],
            "omnibus_power_at_0.6": shifted["omnibus_rejections"],
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    main()
