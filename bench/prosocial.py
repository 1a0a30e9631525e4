"""Time `dices ingest` of a full-size ProsocialDialog train.json, and its canned queries.

Goals (issue 14): the ingest of a generated train.json (120,236 lines) in under 3 s with a
peak RSS under 1 GB, and every query ProsocialDialog has under 1 s; all medians of fresh
processes. The baseline, run alternately in the same conditions: pandas.read_json of the
same file (lines=True), which only reads it.

    python bench/prosocial.py                   # generate train.json, 5 runs each
    python bench/prosocial.py --rows 2000 --runs 1
    python bench/prosocial.py --file train.json --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _results import append
from ingest import dices_command, measure

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / "scripts" / "make_prosocial.py"
INGEST_GOAL_S, INGEST_GOAL_MB, QUERY_GOAL_S = 3.0, 1024.0, 1.0
QUERIES = ("overview", "item-distribution", "agreement", "source-breakdown", "label-check")
PANDAS_SCRIPT = (
    "import sys, pandas; frame = pandas.read_json(sys.argv[1], lines=True); print(len(frame))"
)


def timings(command: list[str], runs: int) -> dict[str, Any]:
    measured = [measure(command) for _ in range(runs)]
    walls = [run.wall for run in measured]
    rss = [run.peak_rss_mb for run in measured]
    return {
        "median_s": statistics.median(walls),
        "min_s": min(walls),
        "median_peak_rss_mb": statistics.median(rss),
        "wall_s": walls,
    }


def bench(path: Path, data: Path, runs: int) -> dict[str, Any]:
    ingest = [*dices_command(), "ingest", str(path), "--data", str(data), "--force"]
    baseline = [sys.executable, "-c", PANDAS_SCRIPT, str(path)]
    # Alternated, so that drift in the machine hits both alike.
    dices_runs, pandas_runs = [], []
    for number in range(1, runs + 1):
        print(f"ingest: run {number}/{runs}", file=sys.stderr)
        dices_runs.append(timings(ingest, 1))
        pandas_runs.append(timings(baseline, 1))
    results: dict[str, Any] = {
        "file": str(path),
        "size_mb": path.stat().st_size / 1e6,
        "ingest": _merged(dices_runs),
        "pandas_read_json": _merged(pandas_runs),
        "queries": {},
    }
    for name in QUERIES:
        print(f"query {name}", file=sys.stderr)
        command = [*dices_command(), "query", name, "-d", "prosocial", "--data", str(data)]
        results["queries"][name] = timings([*command, "-f", "csv"], runs)
    return results


def _merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [wall for run in runs for wall in run["wall_s"]]
    rss = [run["median_peak_rss_mb"] for run in runs]
    return {
        "median_s": statistics.median(walls),
        "min_s": min(walls),
        "median_peak_rss_mb": statistics.median(rss),
        "wall_s": walls,
    }


def table(results: dict[str, Any], runs: int) -> str:
    ingest, pandas = results["ingest"], results["pandas_read_json"]
    rows = [
        ("dices ingest", ingest),
        ("pandas.read_json (baseline)", pandas),
        *((f"dices query {name} -d prosocial", t) for name, t in results["queries"].items()),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{'what':<{width}}  median s   min s  peak RSS MB"]
    for label, t in rows:
        rss = t["median_peak_rss_mb"]
        lines.append(f"{label:<{width}}  {t['median_s']:8.3f}  {t['min_s']:6.3f}  {rss:11.0f}")
    slowest = max(t["median_s"] for t in results["queries"].values())
    met = ingest["median_s"] < INGEST_GOAL_S and ingest["median_peak_rss_mb"] < INGEST_GOAL_MB
    lines += [
        "",
        f"{results['file']} ({results['size_mb']:.1f} MB); median and min of {runs} runs each",
        f"ingest: {ingest['median_s']:.2f} s, {ingest['median_peak_rss_mb']:.0f} MB "
        f"(goal < {INGEST_GOAL_S:.0f} s and < {INGEST_GOAL_MB:.0f} MB: "
        f"{'met' if met else 'NOT met'}); dices / pandas.read_json = "
        f"{ingest['median_s'] / pandas['median_s']:.2f}",
        f"slowest query: {slowest:.2f} s (goal < {QUERY_GOAL_S:.0f} s: "
        f"{'met' if slowest < QUERY_GOAL_S else 'NOT met'})",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh-process runs of each")
    parser.add_argument("--file", type=Path, help="a train.json to use (no generating)")
    parser.add_argument("--rows", type=int, help="lines to generate (default: 120,236)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        directory = Path(temp)
        path = args.file
        if path is None:
            print("generating train.json ...", file=sys.stderr)
            rows = [] if args.rows is None else ["--rows", str(args.rows)]
            command = [sys.executable, str(GENERATOR), temp, "--split", "train", *rows]
            subprocess.run(command, check=True)
            path = directory / "train.json"
        results = bench(path, directory / "data", args.runs)
    append("prosocial", {"runs": args.runs, "rows": args.rows, "results": results})
    print(json.dumps(results, indent=2) if args.json else table(results, args.runs))


if __name__ == "__main__":
    main()
