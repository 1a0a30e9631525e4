"""Time `dices query agreement --by COL` on DICES-350 with 1,000 permutations.

Goal: every metric of every group of one --by, with its permutation p-values, in under
10 s of wall time for the whole command (a fresh process: imports, SQL, metrics, output).

    python bench/agreement.py                         # each rater column, 3 runs each
    python bench/agreement.py --by rater_race --runs 5
    python bench/agreement.py --permutations 10000 --json
    python bench/agreement.py --data DIR              # an existing data directory

Besides the process, the SQL and the compute step are timed inside this process, so the
table shows where the time goes. Builds the replica with ../shared/data/make_replica.py
(--shared-dir or $DICES_SHARED to point elsewhere) into a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _results import append

# Scripts in bench/ share their helpers: `python bench/agreement.py` puts bench/ on the path.
from ingest import add_shared_dir_argument, dices_command, generate, measure

from dices_cli.metrics.compute import compute
from dices_cli.queries.catalog import get_query, render_sql
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store

GOAL_S = 10.0
COLUMNS_350 = ("rater_gender", "rater_race", "rater_raw_race", "rater_age", "rater_education")


@dataclass
class Result:
    by: str
    groups: int
    walls: list[float]
    peak_rss_mb: list[float]
    sql_s: float  # in-process, the query's SQL alone
    compute_s: float  # in-process, the metrics and permutations alone

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def to_json(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "groups": self.groups,
            "median_s": self.median,
            "min_s": min(self.walls),
            "wall_s": self.walls,
            "median_peak_rss_mb": statistics.median(self.peak_rss_mb),
            "sql_s": self.sql_s,
            "compute_s": self.compute_s,
            "goal_met": self.median < GOAL_S,
        }


def in_process(data: Path, by: list[str], permutations: int) -> tuple[float, float, int]:
    """Seconds for the SQL and for the compute step, and the number of groups."""
    query = get_query("agreement")
    session = open_session(Store(data), "350")
    parameters: dict[str, Any] = {"by": by, "question": "Q_overall", "unsure": "category"}
    parameters |= {"permutations": permutations, "seed": 0}
    start = time.perf_counter()
    sql = session.con.sql(render_sql(query), params={"by": by, "question": "Q_overall"})
    arrow = sql.to_arrow_table()  # what Session.run hands the compute step
    middle = time.perf_counter()
    result = compute(arrow, parameters)
    return middle - start, time.perf_counter() - middle, len(result.rows)


def bench(data: Path, by: str, permutations: int, runs: int) -> Result:
    columns = by.split("*")  # rater_race*rater_gender: their intersection
    command = [*dices_command(), "query", "agreement", "--data", str(data), "-d", "350"]
    command += [*(f"--by={c}" for c in columns), "--permutations", str(permutations)]
    walls, rss = [], []
    for number in range(1, runs + 1):
        print(f"--by {by}: run {number}/{runs}", file=sys.stderr)
        run = measure([*command, "-f", "csv"])
        walls.append(run.wall)
        rss.append(run.peak_rss_mb)
    sql_s, compute_s, groups = in_process(data, columns, permutations)
    return Result(by, groups, walls, rss, sql_s, compute_s)


def _aligned(cells: tuple[str, ...], widths: list[int]) -> str:
    """The --by column to the left, numbers to the right."""
    padded = zip(cells, widths, strict=True)
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(padded))


def table(results: list[Result], runs: int, permutations: int) -> str:
    header = ("--by", "groups", "median s", "min s", "peak RSS MB", "SQL s", "compute s")
    lines = [header] + [
        (
            r.by,
            str(r.groups),
            f"{r.median:.2f}",
            f"{min(r.walls):.2f}",
            f"{statistics.median(r.peak_rss_mb):.0f}",
            f"{r.sql_s:.2f}",
            f"{r.compute_s:.2f}",
        )
        for r in results
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [_aligned(line, widths) for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    slowest = max(r.median for r in results)
    verdict = "met" if slowest < GOAL_S else "NOT met"
    text += [
        "",
        f"DICES-350 replica, {permutations} permutations; wall time of a fresh `dices query "
        f"agreement` process, median and min of {runs} runs; SQL and compute timed in-process",
        f"slowest median {slowest:.2f} s (goal < {GOAL_S:.0f} s: {verdict}); {os.cpu_count()} CPUs",
    ]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--by",
        nargs="+",
        default=[*COLUMNS_350, "rater_race*rater_gender"],
        help="group columns to time, one run each; a*b is their intersection",
    )
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per --by")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        directory = Path(temp)
        data = args.data or directory / "data"
        if args.data is None:
            (path,) = generate(args.shared_dir, ["350"], 1, directory)
            print(f"ingesting {path.name} ...", file=sys.stderr)
            ingest = [*dices_command(), "ingest", str(path), "--data", str(data)]
            subprocess.run(ingest, check=True, capture_output=True)
        results = [bench(data, by, args.permutations, args.runs) for by in args.by]
    document = {
        "runs": args.runs,
        "permutations": args.permutations,
        "goal_s": GOAL_S,
        "cpus": os.cpu_count(),
        "results": [r.to_json() for r in results],
    }
    append("agreement", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(table(results, args.runs, args.permutations))


if __name__ == "__main__":
    main()
