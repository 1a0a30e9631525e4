"""Calibration of the share intervals and the share test (qoverall-by-demographic,
degree-of-harm, the report's shares figure), per group size: the table of docs/metrics.md,
"Intervals and tests of group shares".

    python bench/calibration_shares.py            # 1000 datasets under the null, 1000 shifted
    python bench/calibration_shares.py --quick    # a smoke test: few datasets

Data: tests/drivers/crossed.py (rater sd 1, conversation sd 1.5 on the logit, 350
conversations, groups of 5, 13, 20, 35 and 50 raters, known true shares). Per group size:
how often the clustered 95% interval of the group's share holds its true share, and that of
its difference from the rest the true difference (both with all groups alike), beside the
binomial 99.9% range of a calibrated interval; how often the permutation p_value is below
0.05 with all groups alike (level) and with the 20-rater group's logit shifted by 0.6
(power); and the omnibus p_groups_differ's rejection rate in both. `--data` is accepted and
ignored (the smoke test passes it): the truth is simulated.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from drivers.crossed import calibration

SHIFT = 0.6
SHIFTED = 2  # the 20-rater group


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test: few datasets")
    parser.add_argument("--data", type=Path, help="ignored: the data are simulated")
    parser.add_argument("--datasets", type=int, default=1000)
    args = parser.parse_args(argv)
    datasets, permutations = (10, 50) if args.quick else (args.datasets, 500)
    started = time.perf_counter()
    null = calibration(datasets, seed=1, permutations=permutations)
    shifted = calibration(datasets, seed=2, shift=SHIFT, shifted=SHIFTED, permutations=permutations)
    seconds = time.perf_counter() - started
    low, high = (end / datasets for end in binom.interval(0.999, datasets, 0.95))
    most = binom.interval(0.999, datasets, 0.05)[1] / datasets
    print(
        f"{datasets} datasets per column, {permutations} permutations; a calibrated 95% "
        f"interval covers within [{low:.3f}, {high:.3f}], a 5% test rejects at most {most:.3f}"
    )
    print("raters  share_coverage  difference_coverage  level  power_at_0.6")
    rows = []
    for g, size in enumerate(null["sizes"]):
        power = shifted["rejections"][g] if g == SHIFTED else None
        row = {
            "raters": size,
            "share_coverage": null["share_coverage"][g],
            "difference_coverage": null["difference_coverage"][g],
            "level": null["rejections"][g],
            "power_at_0.6": power,
        }
        rows.append(row)
        shown = f"{power:12.3f}" if power is not None else f"{'':>12}"
        print(
            f"{size:6}  {row['share_coverage']:14.3f}  {row['difference_coverage']:19.3f}  "
            f"{row['level']:5.3f}  {shown}"
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
            "coverage_range": [low, high],
            "level_at_most": most,
            "groups": rows,
            "omnibus_level": null["omnibus_rejections"],
            "omnibus_power_at_0.6": shifted["omnibus_rejections"],
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    main()
