"""Time `dices evaluate` against a pandas + scikit-learn script computing the same estimates.

Goal: 10 models on each dataset, `--by rater_race --by rater_gender`, with 1,000 bootstrap
resamples for every interval, takes no longer than the script computing the point
estimates only (no intervals): dices / script <= 1.0, median wall time of fresh processes.

    python bench/evaluate.py                 # build and ingest both replicas, 5 runs each
    python bench/evaluate.py --runs 9 --json
    python bench/evaluate.py --data DIR      # an existing data directory, nothing generated
    python bench/evaluate.py --bootstrap 100 # fewer resamples for dices (the goal is at 1000)
    python bench/evaluate.py --baseline main --skip-pandas   # this tree against main's
    python bench/evaluate.py --smoke --data DIR --baseline HEAD  # least work (CI smoke)

With --baseline REF, `dices evaluate --by rater_race` on DICES-990 with several kinds of
model (tests/drivers/mixed_models.py) is timed for this tree and for REF's (a directory,
e.g. `git worktree add --detach DIR COMMIT`, or a commit exported with git archive),
alternating, in the same run; and each tree's seed stability is measured on both
replicas: the same command with --seed 0 and --seed 1, how far each interval's endpoints
move, as a share of the interval's width (goal: at most STABILITY; time: at most SLOWER x
REF's).

--smoke does the least work that still runs every step: one run, 10 resamples, the pandas
comparison on DICES-350 only (gold and crowd), the seed stability on DICES-990 only, and the
time of each tree taken from its first seed's run.

The script is this file run as `python bench/evaluate.py --pandas DATASET DATA PREDICTIONS
OUT`: it reads the ingested Parquet files with pandas, scores every model with
scikit-learn and scipy, and writes one row per model x reference x group. Before timing,
its point estimates are checked against dices' output cell by cell.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _results import append
from drivers.mixed_models import write_predictions
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

GOAL = 1.0  # dices / script, median wall time
MODELS = 10
BY = ["rater_race", "rater_gender"]
CHECKED = ("n", "accuracy", "f1", "kappa", "mcc", "roc_auc", "brier", "ece", "xrr")
CHECKED_SHARE = ("cross_entropy", "jsd", "tvd", "pearson", "spearman")
TOLERANCE = 1e-9
REPO = Path(__file__).resolve().parents[1]
STABILITY = 0.03  # the most an endpoint may move between seeds, as a share of the width
SLOWER = 1.5  # the most this tree's `evaluate --by rater_race` may take, as REF's multiple
DATASETS = ("350", "990")

# ----------------------------------------------------------------------------------------
# The pandas + scikit-learn script. Standalone: pandas, numpy, scipy, scikit-learn.

ANSWERS = ["No", "Yes", "Unsure"]


def _label_metrics(actual: Any, predicted: Any) -> dict[str, float]:
    from sklearn import metrics

    return {
        "n": len(actual),
        "accuracy": metrics.accuracy_score(actual, predicted),
        "precision": metrics.precision_score(actual, predicted, zero_division=math.nan),
        "recall": metrics.recall_score(actual, predicted, zero_division=math.nan),
        "f1": metrics.f1_score(actual, predicted, zero_division=math.nan),
        "kappa": metrics.cohen_kappa_score(actual, predicted),
        "mcc": metrics.matthews_corrcoef(actual, predicted),
    }


def _score_metrics(actual: Any, score: Any) -> dict[str, float]:
    import numpy as np
    from sklearn import metrics

    bins = np.minimum((score * 10).astype(int), 9)
    ece = sum(
        (bins == b).mean() * abs(actual[bins == b].mean() - score[bins == b].mean())
        for b in range(10)
        if (bins == b).any()
    )
    two_classes = 0 < actual.sum() < len(actual)
    return {
        "roc_auc": metrics.roc_auc_score(actual, score) if two_classes else math.nan,
        "average_precision": metrics.average_precision_score(actual, score),
        "brier": metrics.brier_score_loss(actual, score),
        "ece": ece,
    }


def _xrr(label: Any, counts: Any) -> float:
    """Cross-replication reliability of the model (one answer per conversation) with raters."""
    import numpy as np

    m = counts.sum(axis=1)
    agree = counts[np.arange(len(label)), label]
    observed = ((1 + m) * (1 - agree / m)).sum() / (1 + m).sum()
    model_pooled = np.bincount(label, minlength=3)
    expected = 1 - (model_pooled * counts.sum(axis=0)).sum() / (len(label) * m.sum())
    return float(1 - observed / expected)


def _share_metrics(score: Any, share_yes: Any, headline_only: bool) -> dict[str, float]:
    import numpy as np
    from scipy import stats
    from scipy.spatial.distance import jensenshannon

    predicted = np.column_stack([1 - score, score])
    observed = np.column_stack([1 - share_yes, share_yes])
    result = {"jsd": float(np.mean(jensenshannon(predicted, observed, axis=1, base=2) ** 2))}
    if headline_only:
        return result
    clipped = np.clip(predicted, 1e-15, 1)
    result["cross_entropy"] = float(np.mean(-(observed * np.log(clipped)).sum(axis=1)))
    result["tvd"] = float(np.mean(np.abs(predicted - observed).sum(axis=1) / 2))
    result["pearson"] = stats.pearsonr(score, share_yes)[0]
    result["spearman"] = stats.spearmanr(score, share_yes)[0]
    return result


def _crowd(counts: Any) -> tuple[Any, Any]:
    """Which conversations the crowd's plurality decides (rated, and Yes not tied for the
    most: a No = Unsure tie is not unsafe), and whether it says unsafe on those."""
    top = counts.max(axis=1)
    yes_tied = (counts[:, 1] == top) & ((counts == top[:, None]).sum(axis=1) > 1)
    defined = ~yes_tied & (top > 0)
    return defined, counts[defined, 1] == top[defined]


def pandas_evaluate(dataset: str, data: str, predictions_path: str, out: str) -> None:
    import numpy as np
    import pandas as pd

    root = Path(data) / dataset
    ratings = pd.read_parquet(
        root / "ratings.parquet", columns=["rater_id", "item_id", "Q_overall"]
    )
    raters = pd.read_parquet(root / "raters.parquet", columns=["rater_id", *BY])
    items = pd.read_parquet(root / "items.parquet").sort_values("item_id")
    ratings = ratings.merge(raters, on="rater_id")
    ratings["answer"] = ratings["Q_overall"].astype(str).map({a: i for i, a in enumerate(ANSWERS)})
    item_ids = items["item_id"].to_numpy()
    position = {item: i for i, item in enumerate(item_ids)}
    ratings["position"] = ratings["item_id"].map(position)

    def counts_of(frame: Any) -> Any:
        table = np.zeros((len(item_ids), 3))
        np.add.at(table, (frame["position"].to_numpy(), frame["answer"].to_numpy()), 1)
        return table

    pool = counts_of(ratings)
    sets = [((None, None), pool, None)]
    for key, frame in ratings.groupby(BY, observed=True):
        group = counts_of(frame)
        sets.append((key, group, pool - group))
    predictions = pd.read_csv(predictions_path)
    rows = []
    for model, frame in predictions.groupby("model", sort=False):
        index = frame["item_id"].map(position).to_numpy()
        label = frame["label"].map({a: i for i, a in enumerate(ANSWERS)}).to_numpy()
        score = frame["score"].to_numpy()
        base = {"dataset": dataset, "model": model}
        if "safety_gold" in items:
            actual = (items["safety_gold"].astype(str).to_numpy() == "Yes")[index]
            row = {**base, "reference": "gold", **_label_metrics(actual, label == 1)}
            rows.append(row | _score_metrics(actual, score))
        for key, counts, rest in sets:
            chosen = counts[index]
            defined, actual = _crowd(chosen)
            group = dict(zip(BY, key, strict=True))
            row = {**base, "reference": "crowd", **group}
            row |= _label_metrics(actual, label[defined] == 1)
            row |= _score_metrics(actual, score[defined])
            rated = chosen.sum(axis=1) > 0
            row["xrr"] = _xrr(label[rated], chosen[rated])
            share = {**base, "reference": "crowd-share", **group}
            share_yes = chosen[rated, 1] / chosen[rated].sum(axis=1)
            share |= _share_metrics(score[rated], share_yes, headline_only=False)
            if rest is not None:
                other = rest[index]
                other_defined, other_actual = _crowd(other)
                kappa = _label_metrics(other_actual, label[other_defined] == 1)["kappa"]
                row["difference"] = row["kappa"] - kappa
                other_rated = other.sum(axis=1) > 0
                other_share = other[other_rated, 1] / other[other_rated].sum(axis=1)
                jsd = _share_metrics(score[other_rated], other_share, headline_only=True)["jsd"]
                share["difference"] = share["jsd"] - jsd
            rows += [row, share]
    pd.DataFrame(rows).to_csv(out, index=False)


# ----------------------------------------------------------------------------------------
# The benchmark.


def make_predictions(data: Path, dataset: str, path: Path) -> None:
    """MODELS models of varying quality: a noisy copy of the gold label (DICES-350) or of
    the crowd's share of Yes (DICES-990), with a score and the label it implies."""
    import numpy as np
    import pandas as pd

    items = pd.read_parquet(data / dataset / "items.parquet").sort_values("item_id")
    if "safety_gold" in items and items["safety_gold"].notna().all():
        truth = (items["safety_gold"].astype(str) == "Yes").to_numpy(float)
    else:
        ratings = pd.read_parquet(data / dataset / "ratings.parquet")
        share = (ratings["Q_overall"].astype(str) == "Yes").groupby(ratings["item_id"]).mean()
        truth = share.reindex(items["item_id"]).to_numpy()
    rng = np.random.default_rng(int(dataset))
    frames = []
    for model in range(MODELS):
        noise = 0.1 + 0.08 * model
        score = np.clip(truth * (1 - noise) + rng.random(len(truth)) * noise, 0, 1).round(6)
        frames.append(
            pd.DataFrame(
                {
                    "model": f"model-{model}",
                    "item_id": items["item_id"],
                    "label": np.where(score >= 0.5, "Yes", "No"),
                    "score": score,
                }
            )
        )
    pd.concat(frames).to_csv(path, index=False)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["model"], row["reference"], *(row.get(c) or None for c in BY))


def check(ours_csv: Path, theirs_csv: Path) -> int:
    """Compare every checked point estimate; the number of cells compared."""
    import pandas as pd

    ours = {
        _key(r): r
        for r in pd.read_csv(ours_csv)
        .astype(object)
        .where(lambda f: f.notna(), None)
        .to_dict("records")
    }
    theirs = pd.read_csv(theirs_csv).astype(object).where(lambda f: f.notna(), None)
    compared = 0
    for row in theirs.to_dict("records"):
        mine = ours[_key(row)]
        names = CHECKED_SHARE if row["reference"] == "crowd-share" else CHECKED
        for name in [*names, "difference"]:
            if name not in row or row[name] is None or mine.get(name) is None:
                continue
            if not math.isclose(float(mine[name]), float(row[name]), abs_tol=TOLERANCE):
                sys.exit(f"mismatch in {_key(row)} {name}: dices {mine[name]}, pandas {row[name]}")
            compared += 1
    if len(ours) != len(theirs):
        sys.exit(f"dices wrote {len(ours)} rows, the script {len(theirs)}")
    return compared


def bench(
    data: Path, runs: int, work: Path, bootstrap: int, datasets: tuple[str, ...] = DATASETS
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for dataset in datasets:
        predictions = work / f"predictions_{dataset}.csv"
        make_predictions(data, dataset, predictions)
        ours_out, theirs_out = work / f"dices_{dataset}.csv", work / f"pandas_{dataset}.csv"
        ours = [
            *dices_command(),
            "evaluate",
            str(predictions),
            "-d",
            dataset,
            "--data",
            str(data),
            *[option for column in BY for option in ("--by", column)],
            "--bootstrap",
            str(bootstrap),
            "-q",
            "-o",
            str(ours_out),
            "--force",
        ]
        theirs = [
            sys.executable,
            __file__,
            "--pandas",
            dataset,
            str(data),
            str(predictions),
            str(theirs_out),
        ]
        walls: dict[str, list[float]] = {"dices": [], "pandas": []}
        for _ in range(runs):  # alternating, so that drift hits both alike
            walls["dices"].append(measure(ours).wall)
            walls["pandas"].append(measure(theirs).wall)
        compared = check(ours_out, theirs_out)
        results[dataset] = {
            "rows": sum(1 for _ in ours_out.open()) - 1,
            "cells_checked": compared,
            "dices_median_s": statistics.median(walls["dices"]),
            "pandas_median_s": statistics.median(walls["pandas"]),
            "wall_s": walls,
        }
        results[dataset]["ratio"] = (
            results[dataset]["dices_median_s"] / results[dataset]["pandas_median_s"]
        )
    return results


def report(results: dict[str, Any], runs: int, bootstrap: int) -> str:
    ours = f"dices ({bootstrap} resamples) s"
    rule = "-" * max(24, len(ours))
    lines = [
        f"dataset  rows  cells checked  {ours:>24}  pandas+sklearn (points) s  ratio",
        f"-------  ----  -------------  {rule}  -------------------------  -----",
    ]
    for dataset, r in results.items():
        lines.append(
            f"{dataset:<7}  {r['rows']:4}  {r['cells_checked']:13}"
            f"  {r['dices_median_s']:{len(rule)}.3f}"
            f"  {r['pandas_median_s']:25.3f}  {r['ratio']:5.2f}"
        )
    worst = max(r["ratio"] for r in results.values())
    verdict = "met" if worst <= GOAL else "NOT met"
    lines += ["", f"median of {runs} runs; goal dices / pandas <= {GOAL:.1f}: {verdict}"]
    return "\n".join(lines)


def _tree_command(tree: Path) -> list[str]:
    """`dices` from the source tree `tree` (not the installed one): the same start-up for
    this tree and the baseline's, the working directory kept off the path (-P)."""
    return ["env", f"PYTHONPATH={tree}", sys.executable, "-P", "-m", "dices_cli"]


def _export(ref: str, folder: Path) -> Path:
    """REF's tree, exported with git archive into `folder`."""
    import subprocess

    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def endpoint_moves(first: Path, second: Path) -> list[float]:
    """Per interval of two runs' CSVs (rows in the same order), how far each endpoint moved
    between them, as a share of the first run's width (intervals of width 0 left out)."""
    import csv

    moves = []
    with first.open() as a, second.open() as b:
        for one, other in zip(csv.DictReader(a), csv.DictReader(b), strict=True):
            for column in one:
                if not column.endswith("_low") or f"{column[:-4]}_high" not in one:
                    continue
                high = f"{column[:-4]}_high"
                if not (one[column] and one[high] and other[column] and other[high]):
                    continue
                width = float(one[high]) - float(one[column])
                if width > 0:
                    moves += [
                        abs(float(one[end]) - float(other[end])) / width for end in (column, high)
                    ]
    return moves


def _tree(ref: str, work: Path) -> Path:
    """REF's tree: REF itself when it is a directory (a `git worktree add` of a commit),
    else REF exported with git archive."""
    return Path(ref) if Path(ref).is_dir() else _export(ref, work / "baseline")


def versus(
    data: Path, ref: str, runs: int, work: Path, datasets: tuple[str, ...] = DATASETS
) -> dict[str, Any]:
    """This tree against REF's: `evaluate --by rater_race` on DICES-990, time; and on each of
    `datasets`, each tree's seed stability (every endpoint of every row). With `runs` 0
    (--smoke), a tree's time is that of its first seed's run on DICES-990."""
    trees = {"this tree": REPO, ref: _tree(ref, work)}
    commands = {
        dataset: [
            "evaluate",
            str(write_predictions(data, dataset, work / f"mixed_{dataset}.csv")),
            *("-d", dataset, "--data", str(data), "--by", "rater_race"),
            *("-q", "-f", "csv", "--force"),
        ]
        for dataset in {*datasets, "990"}
    }
    walls: dict[str, list[float]] = {name: [] for name in trees}
    for number in range(runs):  # alternating, so that drift hits both alike
        for name, tree in trees.items():
            out = work / f"timed_{number}.csv"
            timed = [*_tree_command(tree), *commands["990"], "-o", str(out)]
            walls[name].append(measure(timed).wall)
    result: dict[str, Any] = {}
    for name, tree in trees.items():
        result[name] = {}
        for dataset in datasets:
            command, seeds = commands[dataset], []
            for seed in (0, 1):
                out = work / f"{name.replace(' ', '_').replace('/', '_')}_{dataset}_{seed}.csv"
                run = measure([*_tree_command(tree), *command, "--seed", str(seed), "-o", str(out)])
                if runs == 0 and dataset == "990" and seed == 0:  # --smoke: this run is timed
                    walls[name].append(run.wall)
                seeds.append(out)
            moves = sorted(endpoint_moves(*seeds)) or [math.nan]  # none: no interval given
            result[name][dataset] = {
                "endpoints": len(moves),
                "move_median": statistics.median(moves),
                "move_p95": moves[int(0.95 * (len(moves) - 1))],
                "move_max": moves[-1],
            }
        result[name] |= {"median_s": statistics.median(walls[name]), "wall_s": walls[name]}
    result["ratio"] = result["this tree"]["median_s"] / result[ref]["median_s"]
    return result


def versus_report(result: dict[str, Any], ref: str, runs: int) -> str:
    lines = [
        f"dices evaluate --by rater_race, 5 models; time: DICES-990, median of {runs} runs",
        "tree          median s  dataset  endpoints  move between seeds (share of width): "
        "median  p95  max",
    ]
    datasets = [dataset for dataset in DATASETS if dataset in result["this tree"]]
    for name in ("this tree", ref):
        r = result[name]
        for dataset in datasets:
            moves = r[dataset]
            lines.append(
                f"{name[:12]:<12}  {r['median_s']:8.2f}  {dataset:>7}  {moves['endpoints']:9}"
                f"  {moves['move_median']:44.3f}  {moves['move_p95']:.3f}  {moves['move_max']:.3f}"
            )
    largest = max(result["this tree"][dataset]["move_max"] for dataset in datasets)
    lines += [
        f"time ratio {result['ratio']:.2f} (goal <= {SLOWER}: "
        f"{'met' if result['ratio'] <= SLOWER else 'NOT met'}); largest move "
        f"{largest:.3f} (goal <= {STABILITY}: {'met' if largest <= STABILITY else 'NOT met'})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per tool and dataset")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--bootstrap", type=int, default=1000, help="dices' resamples")
    parser.add_argument("--pandas", nargs=4, metavar=("DATASET", "DATA", "PREDICTIONS", "OUT"))
    parser.add_argument(
        "--baseline",
        metavar="REF",
        help="also time this tree against REF's (a commit, or a directory holding its tree)",
    )
    parser.add_argument("--skip-pandas", action="store_true", help="no pandas comparison")
    parser.add_argument("--smoke", action="store_true", help="the least work: does it run")
    add_shared_dir_argument(parser)
    args = parser.parse_args(argv)
    if args.pandas:
        pandas_evaluate(*args.pandas)
        return
    if args.smoke:
        args.runs, args.bootstrap = 1, 10
    results: dict[str, Any] = {}
    compared: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        if not args.skip_pandas:
            pandas_on = ("350",) if args.smoke else DATASETS
            results = bench(data, args.runs, Path(temp), args.bootstrap, pandas_on)
        if args.baseline:
            seeds_on = ("990",) if args.smoke else DATASETS
            timed_runs = 0 if args.smoke else args.runs
            compared = versus(data, args.baseline, timed_runs, Path(temp), seeds_on)
    summary = {"runs": args.runs, "bootstrap": args.bootstrap, "goal": GOAL, "smoke": args.smoke}
    document: dict[str, Any] = {**summary, "results": results}
    if compared is not None:
        document["versus"] = {"baseline": args.baseline, "goal_ratio": SLOWER, **compared}
    append("evaluate", document)
    if args.json:
        print(json.dumps(document, indent=2))
        return
    if results:
        print(report(results, args.runs, args.bootstrap))
    if compared is not None:
        print(versus_report(compared, args.baseline, args.runs))


if __name__ == "__main__":
    main()
