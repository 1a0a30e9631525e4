"""The judge-as-rater table and the persona null test of docs/evaluate.md, on DICES-350 against
a local server whose answers are planted (tests/drivers/planted_judge.py): `follows-group`
answers with its persona group's plurality (without a persona, with one fixed group's),
`random` at random.

    python scripts/planted_judges.py --data DIR [--column rater_race] [--plain-group Multiracial]
                                     [--permutations 1000] [--calibration RUNS]

With --calibration RUNS, instead: on the same raters, RUNS random judges (labels Yes or No at
random per conversation and persona) through the persona null test, and RUNS random judges
beside the groups with the raters' group labels shuffled (--permutations each; 199 reach
exactly 5%: p = 2 (k + 1) / 200): how often p <= 0.05, against the 99.9% binomial bounds.

DIR holds DICES-350 (`dices ingest`). The CI's version is
tests/evaluate/test_planted_judges.py.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.drivers.planted_judge import (
    MODELS,
    Planted,
    evaluated,
    judge_planted,
    planted_server,
)

SHOWN = ("persona_signal", "fit_persona", "fit_no_persona", "fit_gain")


def _cell(value: str) -> str:
    try:
        return f"{float(value):.4g}"
    except ValueError:
        return value or "-"


def main(data: Path, column: str, plain_group: str, permutations: int) -> None:
    planted = Planted(data, "350", column, plain_group)
    with tempfile.TemporaryDirectory() as folder, planted_server(planted) as server:
        files = judge_planted(data, server, Path(folder), column)
        settings = ["--permutations", str(permutations)]
        print(f"persona null test, personas of {column} ({permutations} persona shuffles):")
        print("model          figure          n     value    low      high     null     p")
        for model in MODELS:
            rows = evaluated(
                data, files[f"{model}-personas"], "--no-persona", files[model], *settings
            )
            for row in rows:
                if row["figure"] in SHOWN:
                    cells = [row[c] for c in ("n", "value", "low", "high", "null", "p_value")]
                    print(
                        f"{model:14} {row['figure']:15} " + " ".join(f"{_cell(c):8}" for c in cells)
                    )
        print(f"\njudges as raters by {column} ({permutations} relabellings):")
        print(
            f"{'model':14} {'other':7} {'group':42} {'figure':17} "
            + " ".join(f"{c:8}" for c in ("n", "value", "null_low", "null_high", "p", "p_bh"))
        )
        for row in evaluated(data, files["judges"], "--as-rater", "--by", column, *settings):
            cells = [
                row[c] for c in ("n", "value", "null_low", "null_high", "p_value", "p_adjusted")
            ]
            print(
                f"{row['model'] or '-':14} {row['other'] or '-':7} {row['group'] or '-':42} "
                f"{row['figure']:17} " + " ".join(f"{_cell(c):8}" for c in cells)
            )


def calibration(data: Path, column: str, runs: int, permutations: int) -> None:
    import numpy as np
    from scipy.stats import binom

    from dices_cli.evaluate.groups import members_of
    from dices_cli.evaluate.persona_signal import signal_test
    from dices_cli.evaluate.references import CATEGORIES, load_votes
    from dices_cli.metrics.judge_rater import judge_counts, judge_test
    from dices_cli.queries.engine import open_session
    from dices_cli.store.datasets import Store

    votes = load_votes(open_session(Store(data), "350", columns=[column]), [column])
    counts = votes.group_counts()
    raters = np.array(votes.group_raters(), dtype=np.float64)
    members = members_of(votes)
    rng = np.random.default_rng(0)
    signal = groups = tests = 0
    for run in range(runs):
        simulated = (rng.random(counts[:, 1].shape) < 0.5).astype(np.float64)
        signal += signal_test(simulated, counts, raters, permutations, run)[3] <= 0.05
        judge = judge_counts(rng.integers(0, 2, (1, votes.conversations)), CATEGORIES)
        shuffled = rng.permutation(members.group)
        test = judge_test(judge, members.answers, shuffled, members.groups, permutations, run)
        groups += int((test.p[0, :, 0] <= 0.05).sum())
        tests += members.groups
    for name, rejected, n in (("persona_signal", signal, runs), ("as-rater xrr", groups, tests)):
        low, high = binom.ppf([0.0005, 0.9995], n, 0.05) / n
        print(
            f"{name}: p <= 0.05 in {rejected} of {n} ({rejected / n:.2%}; 99.9% bounds "
            f"{low:.2%} to {high:.2%})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--column", default="rater_race")
    parser.add_argument("--plain-group", default="Multiracial")
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--calibration", type=int, default=0)
    arguments = parser.parse_args()
    if arguments.calibration:
        calibration(arguments.data, arguments.column, arguments.calibration, arguments.permutations)
    else:
        main(arguments.data, arguments.column, arguments.plain_group, arguments.permutations)
