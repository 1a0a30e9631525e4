"""Calibration of `dices evaluate`'s group intervals against a known truth, per group size.

Datasets are drawn from the crossed random-effects model of tests/drivers/crossed.py (350
conversations x 123 raters in groups of 5, 13, 20, 35 and 50; rater sd 1, conversation sd
1.5 on the logit), a judge scores them (tests/drivers/evaluate_truth.py), and `evaluate
--by` gives each group's kappa and jsd and its difference from the rest, with intervals.
The truth is each figure's expectation for a group of that size (the mean over many
datasets drawn afresh, computed apart with numpy). The share of datasets whose interval
holds it should be within the 99.9% binomial range of 95%, for every group size: never
pooled. Two scenarios: no group differs (the truth of a difference is the small-group
effect alone), and the 20-rater group's logit shifted by 0.6.

    python bench/calibration_evaluate.py                    # 200 datasets per scenario
    python bench/calibration_evaluate.py --simulations 50 --bootstrap 200 --json

The table and its figures are appended to bench/results/calibration_evaluate.jsonl. The
CI's fast version is tests/calibration/test_calibration_groups.py. The table goes in
docs/metrics.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from _results import append  # noqa: E402
from drivers.crossed import GROUP_SIZES  # noqa: E402
from drivers.evaluate_truth import FIGURES, coverage, true_figures  # noqa: E402

SCENARIOS: dict[str, tuple[int, float] | None] = {"null": None, "shift 0.6 of 20": (2, 0.6)}
LEVEL = 0.95


def binomial_range(simulations: int) -> tuple[float, float]:
    """The 99.9% binomial range of the coverage of `simulations` 95% intervals."""
    from scipy.stats import binom

    low = binom.ppf(0.0005, simulations, LEVEL) / simulations
    high = binom.ppf(0.9995, simulations, LEVEL) / simulations
    return float(low), float(high)


def run(simulations: int, bootstrap: int, replicates: int, seed: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dices-calibration-") as folder:
        for name, shift in SCENARIOS.items():
            start = time.perf_counter()
            truth = true_figures(replicates, seed + 1000, shift=shift)
            covered = coverage(simulations, bootstrap, seed, folder, truth, shift=shift)
            results[name] = {
                "seconds": round(time.perf_counter() - start, 1),
                "groups": [
                    {
                        "raters": size,
                        **{
                            figure: {
                                "truth": float(truth[g, f]),
                                "coverage": float(covered[g, f]),
                            }
                            for f, figure in enumerate(FIGURES)
                        },
                    }
                    for g, size in enumerate(GROUP_SIZES)
                ],
            }
    return results


def table(results: dict[str, Any], simulations: int) -> str:
    low, high = binomial_range(simulations)
    lines = []
    for name, scenario in results.items():
        lines += [
            f"{name}: coverage of the truth by 95% intervals, {simulations} datasets",
            "raters  " + "  ".join(f"{figure:>16}" for figure in FIGURES),
        ]
        for group in scenario["groups"]:
            cells = [
                f"{group[figure]['coverage']:7.3f} ({group[figure]['truth']:+.3f})"
                for figure in FIGURES
            ]
            lines.append(f"{group['raters']:6}  " + "  ".join(f"{c:>16}" for c in cells))
        lines.append("")
    worst = [
        group[figure]["coverage"]
        for scenario in results.values()
        for group in scenario["groups"]
        for figure in FIGURES
    ]
    inside = all(low <= c <= high for c in worst)
    lines.append(
        f"(truth in brackets) 99.9% binomial range of 95% at {simulations} datasets: "
        f"{low:.3f}-{high:.3f}; every cell inside: {inside}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=200, help="datasets per scenario")
    parser.add_argument(
        "--bootstrap", type=int, default=1000, help="evaluate's conversation blocks (jackknife)"
    )
    parser.add_argument("--replicates", type=int, default=4000, help="datasets of the truth")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = run(args.simulations, args.bootstrap, args.replicates, args.seed)
    document = {
        "simulations": args.simulations,
        "bootstrap": args.bootstrap,
        "replicates": args.replicates,
        "seed": args.seed,
        "binomial_range": binomial_range(args.simulations),
        "results": results,
        "table": table(results, args.simulations),
    }
    append("calibration_evaluate", document)  # the per-size table with its figures
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(document["table"])


if __name__ == "__main__":
    main()
