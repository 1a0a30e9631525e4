"""Time rater scoring and `dices filter-raters` on the replica files.

Goal: scoring both datasets (opening the session, the rater-quality query, the answer
shares, the components) takes under 1 s in-process, median of the runs.

    python bench/filter.py              # build both replicas, ingest, 9 runs each
    python bench/filter.py --runs 15 --json
    python bench/filter.py --data DIR   # an existing data directory, nothing generated

Also timed: the audit in-process, and end to end as fresh processes `dices filter-raters`
(score, audit, the rater table as CSV) and `dices query overview --min-quality 0.45`
(scoring, then the query over the kept raters).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

GOAL_S = 1.0  # scoring both datasets, in-process median


def timed(action: Callable[[], Any], runs: int) -> list[float]:
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        walls.append(time.perf_counter() - start)
    return walls


def bench(data: Path, runs: int) -> dict[str, list[float]]:
    from dices_cli.queries.engine import open_session
    from dices_cli.raters.audit import audit
    from dices_cli.raters.quality import RaterFilter, kept_raters, score_raters
    from dices_cli.store.datasets import Store

    store = Store(data)

    def score() -> None:
        score_raters(open_session(store, "all"))

    session = open_session(store, "all")
    raters = score_raters(session)
    kept = kept_raters(raters, RaterFilter())

    def audit_once() -> None:
        audit(session, raters, kept)

    score()  # warm the imports and the page cache before timing
    dices = dices_command()
    env_data = ["--data", str(data)]
    return {
        "score both datasets (in-process)": timed(score, runs),
        "audit both datasets (in-process)": timed(audit_once, runs),
        "dices filter-raters -f csv (process)": [
            measure([*dices, "filter-raters", *env_data, "-f", "csv"]).wall for _ in range(runs)
        ],
        "dices query overview --min-quality 0.45 (process)": [
            measure([*dices, "query", "overview", "--min-quality", "0.45", *env_data]).wall
            for _ in range(runs)
        ],
    }


def report(results: dict[str, list[float]], runs: int) -> str:
    width = max(len(name) for name in results)
    lines = [f"{'what'.ljust(width)}  median s  min s", f"{'-' * width}  --------  -----"]
    for name, walls in results.items():
        lines.append(f"{name.ljust(width)}  {statistics.median(walls):8.3f}  {min(walls):5.3f}")
    scoring = statistics.median(results["score both datasets (in-process)"])
    verdict = "met" if scoring < GOAL_S else "NOT met"
    lines += ["", f"median and min of {runs} runs; scoring goal < {GOAL_S:.0f} s: {verdict}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per measurement")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        results = bench(data, args.runs)
    summary = {
        name: {"median_s": statistics.median(w), "min_s": min(w), "wall_s": w}
        for name, w in results.items()
    }
    document = {"runs": args.runs, "goal_s": GOAL_S, "results": summary}
    append("filter", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(report(results, args.runs))


if __name__ == "__main__":
    main()
