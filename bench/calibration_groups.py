"""Calibration of dices' group tests under shuffled demographics: evaluate, agreement, audit.

Each rater's demographics go to another rater (one random permutation of the raters per
shuffle, so group sizes are kept and groups carry no information), and every group test is
run again: the share of p-values below 0.05 should stay at or under 5% (within the 99.9%
binomial bound), and no p-value should be 0.

    python bench/calibration_groups.py                  # replicas built in a temp folder
    python bench/calibration_groups.py --data DIR --shuffles 100 --json

- evaluate: `dices evaluate --by rater_race` group rows (kappa against each group's crowd,
  jsd against its shares), 10 noisy judges (bench/evaluate.py's), --bootstrap 0;
- agreement: `dices query agreement --by rater_race`, every metric's p-value;
- audit: the filter audit's exact test of removal (the DICES authors' list) against race;
- personas: `dices evaluate` of a persona file simulating rater_race with random scores
  (dices_cli/evaluate/personas.py): each group's kappa difference (own - rest), the real
  spread, the difference correlations (Pearson, Spearman), and whether the Pearson
  correlation's clustered interval (--bootstrap 100) misses 0 (a "rejection" there).

The figures go in docs/metrics.md ("Calibration"). The CI's fast versions of these checks
are tests/evaluate/test_evaluate_groups.py and tests/calibration/test_calibration_groups.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _results import append

HERE = Path(__file__).resolve().parent
GENERATOR = HERE.parent.parent / "shared" / "data" / "make_replica.py"
LEVEL = 0.05


def _data_dir(folder: Path) -> Path:
    from typer.testing import CliRunner

    from dices_cli.cli.main import app

    files = []
    for name in ("350", "990"):
        target = folder / f"dices_{name}.csv"
        subprocess.run([sys.executable, str(GENERATOR), name, str(target)], check=True)
        files.append(str(target))
    data = folder / "data"
    result = CliRunner().invoke(app, ["ingest", *files, "--data", str(data), "-q"])
    assert result.exit_code == 0, result.output
    return data


def _bound(tests: int) -> int:
    from scipy.stats import binom

    return int(binom.ppf(0.999, tests, LEVEL)) if tests else 0


def _summary(name: str, dataset: str, p_values: list[float]) -> dict[str, Any]:
    defined = [p for p in p_values if not np.isnan(p)]
    rejected = sum(p < LEVEL for p in defined)
    return {
        "test": name,
        "dataset": dataset,
        "tests": len(defined),
        "rejected": rejected,
        "rate": rejected / len(defined) if defined else float("nan"),
        "bound_rate": _bound(len(defined)) / len(defined) if defined else float("nan"),
        "min_p": min(defined) if defined else float("nan"),
    }


def _shuffled(votes: Any, rng: np.random.Generator) -> Any:
    group_of_rater = np.zeros(int(votes.rater.max()) + 1, dtype=np.intp)
    group_of_rater[votes.rater] = votes.group
    return replace(votes, group=rng.permutation(group_of_rater)[votes.rater])


def evaluate_calibration(
    data: Path, dataset: str, shuffles: int, permutations: int, work: Path
) -> list[dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    from evaluate import make_predictions

    from dices_cli.evaluate.evaluation import Settings, evaluate
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.runs.evaluation import dices_votes
    from dices_cli.store.datasets import Store

    predictions = work / f"predictions_{dataset}.csv"
    make_predictions(data, dataset, predictions)
    by = ("rater_race",)
    votes, read = dices_votes(Store(data), [dataset], RaterSelection(), by, str(predictions), None)
    rng = np.random.default_rng(2026)
    found: dict[str, list[float]] = {"crowd": [], "crowd-share": []}
    for shuffle in range(shuffles):
        settings = Settings(by=by, bootstrap=0, permutations=permutations, seed=shuffle)
        table = evaluate(_shuffled(votes[0], rng), read, settings).table
        for row in table.records():
            if row["rater_race"] is not None and row["p_value"] is not None:
                found[row["reference"]].append(row["p_value"])
    return [
        _summary(f"evaluate {reference} ({'kappa' if reference == 'crowd' else 'jsd'})", dataset, p)
        for reference, p in found.items()
    ]


def persona_calibration(
    data: Path, dataset: str, shuffles: int, permutations: int, work: Path
) -> list[dict[str, Any]]:
    import polars as pl

    from dices_cli.evaluate.evaluation import Settings
    from dices_cli.evaluate.personas import CORRELATIONS, evaluate_personas
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.runs.evaluation import dices_votes
    from dices_cli.store.datasets import Store

    column = "rater_race"
    raters = pl.read_parquet(data / dataset / "raters.parquet").select("rater_id", column)
    cells = (
        pl.read_parquet(data / dataset / "ratings.parquet")
        .join(raters, on="rater_id")
        .select("item_id", pl.col(column).cast(pl.String))
        .unique()
        .sort("item_id", column)
    )
    rng = np.random.default_rng(24)
    path = work / f"personas_{dataset}.csv"
    cells.select(
        "item_id",
        pl.Series("score", rng.uniform(0, 1, cells.height)),
        (pl.lit(f"{column}=") + pl.col(column)).alias("persona"),
    ).write_csv(path)
    by = (column,)
    votes, read = dices_votes(Store(data), [dataset], RaterSelection(), by, str(path), None)
    found: dict[str, list[float]] = {
        name: [] for name in ("kappa_difference", "spread_real", *CORRELATIONS)
    }
    covered: list[bool] = []
    for shuffle in range(shuffles):
        settings = Settings(
            against=("crowd",), by=by, bootstrap=100, permutations=permutations, seed=shuffle
        )
        table = evaluate_personas(_shuffled(votes[0], rng), read, settings, column).table
        for row in table.records():
            if row["figure"] in found and row["p_value"] is not None:
                found[row["figure"]].append(row["p_value"])
            if row["figure"] == "difference_pearson":
                covered.append(row["low"] <= 0 <= row["high"])
    return [
        *(_summary(f"personas {name}", dataset, p) for name, p in found.items()),
        {  # an interval that misses 0 is the rejection here; there is no p-value
            "test": "personas pearson misses 0",
            "dataset": dataset,
            "tests": len(covered),
            "rejected": covered.count(False),
            "rate": covered.count(False) / len(covered),
            "bound_rate": _bound(len(covered)) / len(covered),
            "min_p": float("nan"),
        },
    ]


def agreement_calibration(
    data: Path, dataset: str, shuffles: int, permutations: int
) -> dict[str, Any]:
    import polars as pl

    from dices_cli.metrics.permutation import permutation_test

    ratings = pl.read_parquet(data / dataset / "ratings.parquet")
    raters = pl.read_parquet(data / dataset / "raters.parquet").sort("rater_id")
    rater = np.searchsorted(raters["rater_id"].to_numpy(), ratings["rater_id"].to_numpy())
    items = np.unique(ratings["item_id"].to_numpy())
    item = np.searchsorted(items, ratings["item_id"].to_numpy())
    answers = np.zeros((raters.height, 3, len(items)))
    answers[rater, ratings["Q_overall"].to_physical().to_numpy(), item] = 1
    _, groups = np.unique(raters["rater_race"].cast(pl.String).to_numpy(), return_inverse=True)
    rng = np.random.default_rng(2026)
    p_values: list[float] = []
    for shuffle in range(shuffles):
        labels = rng.permutation(groups).astype(np.intp)
        test = permutation_test(answers, labels, int(groups.max()) + 1, permutations, shuffle)
        p_values += test.p.ravel().tolist()
    return _summary("agreement (6 metrics)", dataset, p_values)


def audit_calibration(data: Path, shuffles: int) -> dict[str, Any]:
    import polars as pl

    from dices_cli.families.schema import PUBLISHED_REMOVED
    from dices_cli.raters.audit import exact_independence_p

    raters = pl.read_parquet(data / "350" / "raters.parquet")
    removed = raters["rater_id"].is_in(list(PUBLISHED_REMOVED["350"])).to_numpy()
    _, groups = np.unique(raters["rater_race"].cast(pl.String).to_numpy(), return_inverse=True)
    rng = np.random.default_rng(2026)
    p_values = []
    for _ in range(shuffles):
        labels = rng.permutation(groups)
        sizes = np.bincount(labels).tolist()
        p_values.append(exact_independence_p(sizes, np.bincount(labels, weights=removed).tolist()))
    return _summary("filter audit (removal vs race)", "350", p_values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument("--shuffles", type=int, default=40, help="shuffles of the demographics")
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--quick", action="store_true", help="2 shuffles, 19 permutations")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    shuffles, permutations = (2, 19) if args.quick else (args.shuffles, args.permutations)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = args.data or _data_dir(work)
        results = []
        for dataset in ("350", "990"):
            results += evaluate_calibration(data, dataset, shuffles, permutations, work)
            results.append(agreement_calibration(data, dataset, shuffles, permutations))
            results += persona_calibration(data, dataset, shuffles, permutations, work)
        results.append(audit_calibration(data, shuffles * 50))
    append(
        "calibration_groups", {"shuffles": shuffles, "permutations": permutations, "rows": results}
    )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    header = "test                            dataset  tests  p<0.05  rate   99.9% bound  min p"
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r['test']:<32}{r['dataset']:<9}{r['tests']:>5}  {r['rejected']:>6}  "
            f"{r['rate']:.3f}  {r['bound_rate']:>11.3f}  {r['min_p']:.4f}"
        )
    print(
        f"\n{shuffles} shuffles, {permutations} permutations each; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
