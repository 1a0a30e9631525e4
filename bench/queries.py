"""Time every canned query from the shell against a pandas script that computes the same.

Goals (the project's standing goals): each query at most 0.33 of the pandas script's time,
i.e. at least 3x faster (both a fresh process, median wall time); cold start `dices --help`
under 0.10 s; and (this script's own) `dices query overview` under 0.35 s.
See bench/README.md.

    python bench/queries.py                  # replica files, 5 runs per query and tool
    python bench/queries.py --runs 9 --json
    python bench/queries.py --files a_350.csv b_990.csv
    python bench/queries.py --smoke --files a_350.csv b_990.csv   # least work (CI smoke)

--smoke: every query once per tool, the run checked being the one timed, the pandas script's
computation run in this process (not a fresh one); one cold start each.

The pandas side is this file run as `python bench/queries.py --pandas QUERY 350.csv 990.csv`:
it reads the CSVs with pandas.read_csv (only the columns it needs) and writes the query's
result as CSV. Before timing, its output is checked cell by cell against dices' output.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

# Scripts in bench/ share their helpers: `python bench/queries.py` puts bench/ on the path.
from _results import append
from ingest import add_shared_dir_argument

REPO = Path(__file__).resolve().parents[1]
SPEEDUP_GOAL = 3.0  # pandas median / dices median, each query (dices <= 0.33x pandas)
HELP_GOAL = 0.10  # s, median of `dices --help`
QUERY_GOAL = 0.35  # s, median of `dices query overview`
QUERIES: dict[str, list[str]] = {  # name: options
    "overview": [],
    # The share queries with --interval wilson, the interval the pandas script computes, and
    # no group test (--permutations 0), which the pandas script does not compute (their
    # defaults are measured by bench/calibration_shares.py).
    "qoverall-by-demographic": [
        *("--by", "rater_gender", "--interval", "wilson", "--permutations", "0")
    ],
    "gold-vs-crowd": [],
    "gold-vs-crowd-summary": [],
    "item-distribution": [],
    "harm-types": ["--interval", "wilson"],
    "degree-of-harm": ["--interval", "wilson", "--permutations", "0"],
    "rater-quality": [],
}

# ----------------------------------------------------------------------------------------
# The pandas baseline. Standalone: pandas and the standard library, nothing from dices.

ANSWERS = ["No", "Yes", "Unsure"]
LABELS = [*ANSWERS, "No=Unsure", "tie"]
GOLD = ["No", "Yes"]
GENDER = ["Man", "Woman", "Nonbinary", "Self-describe (below)"]  # the official label order
DEGREE = ["Benign", "Debatable", "Moderate", "Extreme"]
Q1_UNDERSTOOD = (
    "None of the above - it is in English, it makes sense, and I am familiar with the topic"
)
Z = 1.959963984540054
REMOVED = {  # the raters the DICES authors removed (dices_cli/families/schema.py PUBLISHED_REMOVED)
    "350": {
        296709543131761, 296709611112092, 297059995361243, 297060365288109,
        297514543980607, 297514565398139, 297515609163939, 297515617432733,
        297515629971478, 297515729806999, 297515750682315, 297540556928761,
        297540562350921, 297540983991638, 297541271027233, 297541321453321,
        297541515566649, 297541515769980, 297541522412126,
    },
    "990": {
        296768824962581, 296740172100277, 296729424498056, 296835612486158,
        297212198239077, 296740254381555, 296740049152799, 297212002905763,
        296740761150184, 296708974347177, 296770194464643, 296768399729683,
    },
}  # fmt: skip
DEMOGRAPHICS = [
    "rater_gender",
    "rater_race",
    "rater_raw_race",
    "rater_age",
    "rater_education",
    "rater_locale",
]


def _load(path: str, columns: set[str], questions: bool = False) -> Any:
    """The CSV's `columns` (and every Q column when `questions`); only those are parsed."""
    import pandas as pd

    wanted = columns | {"rater_race_raw"} if "rater_raw_race" in columns else columns
    frame = pd.read_csv(path, usecols=lambda c: c in wanted or (questions and c[:1] == "Q"))
    return frame.rename(columns={"rater_race_raw": "rater_raw_race"})


def _counts(frame: Any, keys: list[str]) -> Any:
    counts = (
        frame.groupby(keys, observed=True, dropna=False)["Q_overall"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=ANSWERS, fill_value=0)
    )
    counts.columns = ["n_no", "n_yes", "n_unsure"]
    return counts.reset_index()


def _plurality(counts: Any) -> Any:
    import numpy as np

    values = counts[["n_no", "n_yes", "n_unsure"]].to_numpy()
    top = values.max(axis=1)
    at_top = (values == top[:, None]).sum(axis=1)
    label = np.array(ANSWERS, dtype=object)[values.argmax(axis=1)]
    label[at_top > 1] = "tie"
    label[top == 0] = None
    return label


def _crowd_label(counts: Any) -> Any:
    """The plurality, where a tie counts only with Yes among the most: No and Unsure tied
    above Yes is 'No=Unsure'."""
    label = _plurality(counts)
    label[(counts["n_no"] == counts["n_unsure"]) & (counts["n_no"] > counts["n_yes"])] = "No=Unsure"
    return label


def _shares(counts: Any, prefix: str = "share") -> Any:
    total = counts["n_no"] + counts["n_yes"] + counts["n_unsure"]
    for answer in ANSWERS:
        counts[f"{prefix}_{answer.lower()}"] = counts[f"n_{answer.lower()}"] / total
    return counts


def pandas_overview(files: dict[str, str]) -> Any:
    import pandas as pd

    rows = []
    for name, path in files.items():
        frame = _load(path, {"item_id", "rater_id", "Q_overall"})
        n = len(frame)
        counts = frame["Q_overall"].value_counts()
        rows.append(
            {
                "dataset": name,
                "conversations": frame["item_id"].nunique(),
                "raters": frame["rater_id"].nunique(),
                "ratings": n,
                **{f"share_{a.lower()}": counts.get(a, 0) / n for a in ANSWERS},
            }
        )
    return pd.DataFrame(rows)


def _with_wilson(counts: Any) -> Any:
    """`counts` with the 95% Wilson interval of share_yes over its ratings, and the method."""
    n, p = counts["ratings"], counts["share_yes"]
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z / (1 + Z**2 / n) * (p * (1 - p) / n + Z**2 / (4 * n**2)) ** 0.5
    counts["share_yes_ci_low"] = centre - half
    counts["share_yes_ci_high"] = centre + half
    counts["interval"] = "wilson"
    return counts


def pandas_qoverall_by_demographic(files: dict[str, str]) -> Any:
    import pandas as pd

    parts = []
    for name, path in files.items():
        frame = _load(path, {"rater_id", "rater_gender", "Q_overall"})
        counts = _counts(frame, ["rater_gender"])
        raters = frame.groupby("rater_gender")["rater_id"].nunique().rename("raters")
        counts = counts.merge(raters, left_on="rater_gender", right_index=True)
        counts["ratings"] = counts["n_no"] + counts["n_yes"] + counts["n_unsure"]
        counts = _with_wilson(_shares(counts))
        counts.insert(0, "dataset", name)
        counts["order"] = counts["rater_gender"].map(GENDER.index)
        parts.append(counts.sort_values("order"))
    columns = ["dataset", "rater_gender", "raters", "ratings", "n_no", "n_yes", "n_unsure"]
    columns += ["share_no", "share_yes", "share_unsure", "share_yes_ci_low", "share_yes_ci_high"]
    return pd.concat(parts)[[*columns, "interval"]]


def _labelled(files: dict[str, str]) -> Any:
    frame = _load(files["350"], {"item_id", "safety_gold", "Q_overall"})
    counts = _counts(frame, ["item_id", "safety_gold"])
    counts["crowd_label"] = _crowd_label(counts)
    return counts


def pandas_gold_vs_crowd(files: dict[str, str]) -> Any:
    import pandas as pd

    labelled = _labelled(files)
    cells = labelled.groupby(["safety_gold", "crowd_label"]).size()
    index = pd.MultiIndex.from_product([GOLD, LABELS], names=["safety_gold", "crowd_label"])
    result = cells.reindex(index, fill_value=0).rename("conversations").reset_index()
    result.insert(0, "dataset", "350")
    return result


def pandas_gold_vs_crowd_summary(files: dict[str, str]) -> Any:
    import pandas as pd

    labelled = _labelled(files)
    truth = labelled["safety_gold"] == "Yes"
    said = labelled["crowd_label"] == "Yes"
    n = len(labelled)
    tp, fp = int((truth & said).sum()), int((~truth & said).sum())
    fn, tn = int((truth & ~said).sum()), int((~truth & ~said).sum())
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / n**2
    row = {
        "dataset": "350",
        "conversations": n,
        "ties": int((labelled["crowd_label"] == "tie").sum()),
        "accuracy": observed,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None,
        "kappa": (observed - expected) / (1 - expected) if expected != 1 else None,
    }
    return pd.DataFrame([row])


def pandas_item_distribution(files: dict[str, str]) -> Any:
    import numpy as np
    import pandas as pd

    parts = []
    for name, path in files.items():
        columns = {"item_id", "degree_of_harm", "harm_type", "safety_gold", "Q_overall"}
        frame = _load(path, columns)
        items = frame.groupby("item_id").first()
        counts = _counts(frame, ["item_id"])
        counts = counts.join(items, on="item_id")
        if "safety_gold" not in counts:
            counts["safety_gold"] = None
        total = counts["n_no"] + counts["n_yes"] + counts["n_unsure"]
        counts["ratings"] = total
        counts["share_yes"] = counts["n_yes"] / total
        counts["plurality"] = _plurality(counts)
        shares = counts[["n_no", "n_yes", "n_unsure"]].to_numpy() / total.to_numpy()[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(shares > 0, -shares * np.log2(shares), 0.0)
        counts["entropy_bits"] = terms.sum(axis=1)
        counts.insert(0, "dataset", name)
        parts.append(counts)
    columns = ["dataset", "item_id", "degree_of_harm", "harm_type", "safety_gold", "ratings"]
    columns += ["n_no", "n_yes", "n_unsure", "share_yes", "plurality", "entropy_bits"]
    return pd.concat(parts)[columns]


def pandas_harm_types(files: dict[str, str]) -> Any:
    import pandas as pd

    parts = []
    for name, path in files.items():
        frame = _load(path, {"item_id", "harm_type", "safety_gold", "Q_overall"})
        frame["yes"] = frame["Q_overall"] == "Yes"
        items = frame.groupby("item_id").agg(
            harm_type=("harm_type", "first"),
            ratings=("yes", "size"),
            n_yes=("yes", "sum"),
            **({"gold": ("safety_gold", "first")} if "safety_gold" in frame else {}),
        )
        tags = items["harm_type"].fillna("").str.split(",")
        items["harm_tag"] = tags.map(
            lambda ts: [t.strip().lower() for t in ts if t.strip()] or [None]
        )
        tagged = items.explode("harm_tag")
        has_gold = "gold" in tagged
        if has_gold:
            tagged["gold_yes"] = tagged["gold"] == "Yes"
        grouped = tagged.groupby("harm_tag", dropna=False)
        result = grouped.agg(
            conversations=("ratings", "size"), ratings=("ratings", "sum"), n_yes=("n_yes", "sum")
        )
        result["share_yes"] = result["n_yes"] / result["ratings"]
        result["share_gold_unsafe"] = grouped["gold_yes"].mean() if has_gold else None
        result = _with_wilson(result).reset_index()
        result.insert(0, "dataset", name)
        parts.append(
            result.sort_values(
                ["conversations", "harm_tag"], ascending=[False, True], na_position="last"
            )
        )
    columns = ["dataset", "harm_tag", "conversations", "ratings", "share_yes", "share_gold_unsafe"]
    return pd.concat(parts)[[*columns, "share_yes_ci_low", "share_yes_ci_high", "interval"]]


def pandas_degree_of_harm(files: dict[str, str]) -> Any:
    import pandas as pd

    parts = []
    for name, path in files.items():
        frame = _load(path, {"item_id", "degree_of_harm", "Q_overall"})
        counts = _shares(_counts(frame, ["degree_of_harm"]))
        conversations = frame.groupby("degree_of_harm", dropna=False)["item_id"].nunique()
        counts["conversations"] = counts["degree_of_harm"].map(conversations)
        counts.loc[counts["degree_of_harm"].isna(), "conversations"] = frame.loc[
            frame["degree_of_harm"].isna(), "item_id"
        ].nunique()
        counts["ratings"] = counts["n_no"] + counts["n_yes"] + counts["n_unsure"]
        counts = _with_wilson(counts)
        counts["order"] = counts["degree_of_harm"].map(
            lambda d: DEGREE.index(d) if isinstance(d, str) else len(DEGREE)
        )
        counts.insert(0, "dataset", name)
        parts.append(counts.sort_values("order"))
    columns = ["dataset", "degree_of_harm", "conversations", "ratings"]
    shares = ["share_no", "share_yes", "share_unsure", "share_yes_ci_low", "share_yes_ci_high"]
    return pd.concat(parts)[[*columns, *shares, "interval"]]


def pandas_rater_quality(files: dict[str, str]) -> Any:
    import numpy as np
    import pandas as pd

    parts = []
    for name, path in files.items():
        columns = {"rater_id", "item_id", "answer_time_ms", *DEMOGRAPHICS}
        frame = _load(path, columns, questions=True)
        answers = [c for c in frame.columns if c[:3] in ("Q2_", "Q3_", "Q4_", "Q5_", "Q6_")]
        granular = [c for c in answers if not c.endswith("_overall")]
        # leave-one-out agreement with the plurality of the other raters
        per_item = _counts(frame, ["item_id"]).set_index("item_id")
        totals = per_item.loc[frame["item_id"]].to_numpy()
        own = np.stack([(frame["Q_overall"] == a).to_numpy() for a in ANSWERS], axis=1)
        others = totals - own
        top = others.max(axis=1)
        tied = (others == top[:, None]).sum(axis=1)
        mine = (others * own).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            agreement = np.where(top == 0, np.nan, (mine == top) / tied)
        values = frame[granular].to_numpy()
        subs = frame[answers].to_numpy()
        implied = np.where(
            (subs == "Yes").any(axis=1),
            "Yes",
            np.where((subs == "Unsure").any(axis=1), "Unsure", "No"),
        )
        frame = frame.assign(
            agreement=agreement,
            straight=(values == values[:, :1]).all(axis=1),
            not_understood=frame["Q1_whole_conversation_evaluation"] != Q1_UNDERSTOOD,
            inconsistent=frame["Q_overall"].to_numpy() != implied,
        )
        if "answer_time_ms" not in frame:
            frame["answer_time_ms"] = np.nan
        for column in DEMOGRAPHICS:
            if column not in frame:
                frame[column] = None
        grouped = frame.groupby("rater_id")
        result = grouped[DEMOGRAPHICS].first()
        result["ratings"] = grouped.size()
        result["median_answer_ms"] = grouped["answer_time_ms"].median()
        modal = frame.groupby(["rater_id", "Q_overall"]).size().groupby("rater_id").max()
        result["modal_answer_share"] = modal / result["ratings"]
        result["straightline_share"] = grouped["straight"].mean()
        result["agreement_loo"] = grouped["agreement"].mean()
        result["q1_not_understood_share"] = grouped["not_understood"].mean()
        result["inconsistent_share"] = grouped["inconsistent"].mean()
        result = result.reset_index()
        result["published_removed"] = result["rater_id"].isin(REMOVED[name])
        result.insert(0, "dataset", name)
        parts.append(result)
    return pd.concat(parts)


def pandas_csv(query: str, path_350: str, path_990: str) -> str:
    """The pandas script's result of `query` as CSV text."""
    import io

    files = {"350": path_350, "990": path_990}
    compute = globals()["pandas_" + query.replace("-", "_")]
    result = compute(files)
    for column in result.columns:  # booleans as dices writes them
        if result[column].dtype == bool:
            result[column] = result[column].map({True: "true", False: "false"})
    text = io.StringIO()
    result.to_csv(text, index=False, lineterminator="\n")
    return text.getvalue()


def pandas_main(query: str, path_350: str, path_990: str) -> None:
    sys.stdout.write(pandas_csv(query, path_350, path_990))


# ----------------------------------------------------------------------------------------
# The benchmark.


def dices_command() -> list[str]:
    script = Path(sys.executable).parent / "dices"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dices_cli"]


def run(command: list[str], capture: bool = False) -> tuple[float, str]:
    """Wall time of a fresh process, from start to exit; stdout when `capture`."""
    import subprocess
    import time

    start = time.perf_counter()
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    return wall, done.stdout if capture else ""


def same_csv(dices: str, pandas: str) -> str | None:
    """None when the two CSV texts hold the same cells (numbers to 1e-9), else why not. Only
    the pandas script's columns are compared: dices may give more (a group test's)."""
    import csv
    import io

    left = list(csv.reader(io.StringIO(dices)))
    right = list(csv.reader(io.StringIO(pandas)))
    if set(right[0]) <= set(left[0]):
        kept = [left[0].index(name) for name in right[0]]
        left = [[row[i] for i in kept] for row in left]
    if left[0] != right[0]:
        return f"columns differ: {left[0]} vs {right[0]}"
    if len(left) != len(right):
        return f"{len(left) - 1} rows vs {len(right) - 1}"
    for number, (a_row, b_row) in enumerate(zip(left, right, strict=True)):
        for column, a, b in zip(left[0], a_row, b_row, strict=True):
            if a == b:
                continue
            try:
                if math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12):
                    continue
            except ValueError:
                pass
            return f"row {number}, {column}: {a!r} vs {b!r}"
    return None


def generate(shared: Path, directory: Path) -> list[Path]:
    import subprocess

    generator = shared / "data" / "make_replica.py"
    if not generator.exists():
        sys.exit(f"replica generator not found at {generator}; use --shared-dir or --files")
    paths = []
    for name in ("350", "990"):
        path = directory / f"dices_{name}.csv"
        print(f"generating {path.name} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(generator), name, str(path)], check=True)
        paths.append(path)
    return paths


def median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def bench(
    files: list[Path], data: Path, runs: int, cold_runs: int, smoke: bool = False
) -> dict[str, Any]:
    import time

    dices = dices_command()
    results: dict[str, Any] = {"queries": {}, "cold_start": {}}
    for name, options in QUERIES.items():
        dices_run = [*dices, "query", name, *options, "--data", str(data), "--format", "csv"]
        pandas_run = [sys.executable, __file__, "--pandas", name, *map(str, files)]
        dices_wall, dices_out = run(dices_run, capture=True)
        if smoke:
            start = time.perf_counter()
            pandas_out = pandas_csv(name, *map(str, files))
            pandas_wall = time.perf_counter() - start
        else:
            pandas_wall, pandas_out = run(pandas_run, capture=True)
        difference = same_csv(dices_out, pandas_out)
        if difference is not None:
            sys.exit(f"{name}: pandas and dices disagree: {difference}")
        walls: dict[str, list[float]] = {"dices": [], "pandas": []}
        if smoke:  # the run checked is the one timed (a warm-up otherwise)
            walls = {"dices": [dices_wall], "pandas": [pandas_wall]}
        for number in range(1, 0 if smoke else runs + 1):
            print(f"{name}: run {number}/{runs}", file=sys.stderr)
            walls["dices"].append(run(dices_run)[0])  # alternate: drift hits both alike
            walls["pandas"].append(run(pandas_run)[0])
        speedup = median(walls["pandas"]) / median(walls["dices"])
        results["queries"][name] = {
            "options": options,
            "rows": dices_out.count("\n") - 1,
            "dices_median_s": median(walls["dices"]),
            "pandas_median_s": median(walls["pandas"]),
            "speedup": speedup,
            "goal_met": speedup >= SPEEDUP_GOAL,
            "dices_s": walls["dices"],
            "pandas_s": walls["pandas"],
        }
    for label, command, goal in (
        ("dices --help", [*dices, "--help"], HELP_GOAL),
        ("dices query overview", [*dices, "query", "overview", "--data", str(data)], QUERY_GOAL),
    ):
        print(f"{label}: {cold_runs} runs", file=sys.stderr)
        walls = [run(command)[0] for _ in range(cold_runs)]
        results["cold_start"][label] = {
            "median_s": median(walls),
            "min_s": min(walls),
            "goal_s": goal,
            "goal_met": median(walls) < goal,
            "wall_s": walls,
        }
    return results


def table(results: dict[str, Any], runs: int, cold_runs: int) -> str:
    lines = [("query", "rows", "dices median s", "pandas median s", "speedup", "goal >= 3x")]
    for name, result in results["queries"].items():
        label = " ".join([name, *result["options"]])
        lines.append(
            (
                label,
                str(result["rows"]),
                f"{result['dices_median_s']:.3f}",
                f"{result['pandas_median_s']:.3f}",
                f"{result['speedup']:.2f}x",
                "met" if result["goal_met"] else "NOT met",
            )
        )
    text = _aligned(lines)
    text.append("")
    text.append(
        f"median of {runs} fresh-process runs each, alternating; "
        "dices and pandas outputs checked equal first"
    )
    text.append("")
    cold = [("cold start", "median s", "min s", "goal")]
    for label, result in results["cold_start"].items():
        verdict = "met" if result["goal_met"] else "NOT met"
        cold.append(
            (
                label,
                f"{result['median_s']:.3f}",
                f"{result['min_s']:.3f}",
                f"< {result['goal_s']:.2f} s: {verdict}",
            )
        )
    text += _aligned(cold)
    text.append("")
    text.append(f"median of {cold_runs} runs each")
    return "\n".join(text)


def _aligned(lines: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = [
        "  ".join(
            cell.ljust(width) if index in (0, len(line) - 1) else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    return text


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json
    import subprocess
    import tempfile

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh-process runs per query/tool")
    parser.add_argument("--cold-runs", type=int, default=10, help="runs of each cold start")
    parser.add_argument(
        "--files", type=Path, nargs=2, metavar=("CSV_350", "CSV_990"), help="no generating"
    )
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--smoke", action="store_true", help="the least work: does it run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.cold_runs = 1, 1
    with tempfile.TemporaryDirectory(prefix="dices-bench-queries-") as temp:
        directory = Path(temp)
        files = args.files or generate(args.shared_dir, directory)
        data = directory / "data"
        print("ingesting ...", file=sys.stderr)
        ingest = [*dices_command(), "ingest", *map(str, files), "--data", str(data)]
        subprocess.run(ingest, check=True, stdout=subprocess.DEVNULL)
        results = bench(files, data, args.runs, args.cold_runs, args.smoke)
    document = {"runs": args.runs, "cold_runs": args.cold_runs, "smoke": args.smoke, **results}
    append("queries", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(table(results, args.runs, args.cold_runs))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pandas"]:
        pandas_main(*sys.argv[2:5])
    else:
        main()
