"""Time `dices report` on both replica datasets, and where the time goes.

Goal: the report of both replica datasets with `--by rater_race --by rater_gender` is built
in under 10 s (a fresh process, median), most of it the queries.

    python bench/report.py              # build both replicas, ingest, 3 runs
    python bench/report.py --runs 5 --json
    python bench/report.py --data DIR   # an existing data directory, nothing generated

In-process, per run: each section's queries (through the engine), drawing every chart
(vl-convert), and writing the page; then the whole command as a fresh process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

GOAL_S = 10.0  # the whole command, fresh process, median
BY = ["--by", "rater_race", "--by", "rater_gender"]


def in_process(data: Path, permutations: int | None) -> dict[str, float]:
    """One report built in this process: seconds per stage."""
    from dices_cli.queries.catalog import get_query
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.report.charts import to_svg
    from dices_cli.report.context import Context
    from dices_cli.report.page import Provenance, page
    from dices_cli.report.sections import SECTIONS
    from dices_cli.store import Store

    store = Store(data)
    stages: dict[str, float] = {}
    start = time.perf_counter()
    bound = get_query("agreement").parameter("permutations").convert(permutations)  # type: ignore[union-attr]
    context = Context(store, "all", RaterSelection(), BY[1::2], bound, 0)
    sections = []
    for build in SECTIONS:
        began = time.perf_counter()
        section = build(context)
        stages[f"queries: {build.__name__}"] = time.perf_counter() - began
        if section is not None:
            sections.append(section)
    began = time.perf_counter()
    drawn = [[to_svg(figure.spec) for figure in section.figures] for section in sections]
    stages["charts (vl-convert)"] = time.perf_counter() - began
    began = time.perf_counter()
    made = Provenance(
        "bench", "-", "-", "all raters", [store.open(d).manifest for d in context.datasets]
    )
    page(sections, drawn, made)
    stages["page"] = time.perf_counter() - began
    stages["total in-process"] = time.perf_counter() - start
    return stages


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument("--permutations", type=int, help="for the agreement section")
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        extra = ["--permutations", str(args.permutations)] if args.permutations else []
        runs = [in_process(data, args.permutations) for _ in range(args.runs)]
        command = [*dices_command(), "report", *BY, *extra, "--data", str(data)]
        command += ["-o", str(Path(temp) / "report.html"), "--force", "-q"]
        process = [measure(command).wall for _ in range(args.runs)]
    results = {name: [run[name] for run in runs] for name in runs[0]}
    results["dices report (process)"] = process
    median = statistics.median(process)
    verdict = "met" if median < GOAL_S else "NOT met"
    if args.json:
        summary = {
            n: {"median_s": statistics.median(w), "min_s": min(w)} for n, w in results.items()
        }
        print(json.dumps({"runs": args.runs, "goal_s": GOAL_S, "results": summary}, indent=2))
        return
    width = max(map(len, results))
    print(f"{'what'.ljust(width)}  median s  min s\n{'-' * width}  --------  -----")
    for name, walls in results.items():
        print(f"{name.ljust(width)}  {statistics.median(walls):8.3f}  {min(walls):5.3f}")
    print(f"\nmedian and min of {args.runs} runs; goal < {GOAL_S:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
