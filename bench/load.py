"""Load: `dices ingest` and every canned query on a large file (DICES-350 x 20).

Goals: the ingest of DICES-350 x 20 (861,000 rows, about 620 MB) peaks below 1.5 GB of
resident memory, and every canned query on that data finishes in under 2 s (median wall
time of a fresh process, start-up included). See bench/README.md.

    python bench/load.py                     # build the x20 replica, ingest, time queries
    python bench/load.py --scale 5 --runs 5  # smaller, more runs
    python bench/load.py --file big.csv      # your own file, nothing generated
    python bench/load.py --json
    python bench/load.py --query overview --query agreement   # only these queries
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _results import append
from ingest import add_shared_dir_argument, dices_command, generate, measure

RSS_GOAL_MB = 1500.0  # 1.5 GB, in MB of 10^6 bytes
QUERY_GOAL_S = 2.0
# Options a query needs (or is usually run with); every other query runs with its defaults.
OPTIONS = {
    "qoverall-by-demographic": ["--by", "rater_gender"],
    "agreement": ["--by", "rater_gender"],
    "group-disagreement": ["--by", "rater_gender"],
}


def query_names() -> list[str]:
    """Every canned query that applies to DICES-350, from `dices query --list`."""
    listing = subprocess.run(
        [*dices_command(), "query", "--list", "--format", "csv"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [row["name"] for row in csv.DictReader(io.StringIO(listing)) if "350" in row["datasets"]]


def bench(path: Path, data: Path, runs: int, only: list[str] | None = None) -> dict[str, Any]:
    ingest = measure([*dices_command(), "ingest", str(path), "--data", str(data), "--force"])
    rows = json.loads(
        subprocess.run(
            [*dices_command(), "info", "--data", str(data), "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )[0]["ratings"]
    queries: dict[str, Any] = {}
    names = query_names()
    if only and set(only) - set(names):
        sys.exit(f"no such query for DICES-350: {', '.join(sorted(set(only) - set(names)))}")
    for name in [name for name in names if not only or name in only]:
        options = OPTIONS.get(name, [])
        command = [*dices_command(), "query", name, *options, "--data", str(data), "-f", "csv"]
        walls, peaks, out_rows = [], [], 0
        for number in range(1, runs + 1):
            print(f"{name}: run {number}/{runs}", file=sys.stderr)
            run = measure(command)
            walls.append(run.wall)
            peaks.append(run.peak_rss_mb)
            out_rows = run.stdout.count("\n") - 1
        queries[name] = {
            "options": options,
            "result_rows": out_rows,
            "median_s": statistics.median(walls),
            "max_s": max(walls),
            "peak_rss_mb": max(peaks),
            "goal_met": statistics.median(walls) < QUERY_GOAL_S,
            "wall_s": walls,
        }
    return {
        "file": path.name,
        "size_mb": path.stat().st_size / 1e6,
        "rows": rows,
        "ingest": {
            "wall_s": ingest.wall,
            "peak_rss_mb": ingest.peak_rss_mb,
            "goal_met": ingest.peak_rss_mb < RSS_GOAL_MB,
        },
        "queries": queries,
        "runs": runs,
    }


def table(result: dict[str, Any]) -> str:
    ingest = result["ingest"]
    lines = [
        f"file: {result['file']}, {result['size_mb']:.1f} MB, {result['rows']:,} rows",
        "",
        f"dices ingest: {ingest['wall_s']:.2f} s wall, peak RSS {ingest['peak_rss_mb']:.0f} MB "
        f"(goal < {RSS_GOAL_MB:.0f} MB: {'met' if ingest['goal_met'] else 'NOT met'})",
        "",
    ]
    header = ("query", "options", "rows", "median s", "max s", "peak RSS MB", "< 2 s")
    cells = [header]
    for name, query in result["queries"].items():
        cells.append(
            (
                name,
                " ".join(query["options"]) or "-",
                f"{query['result_rows']:,}",
                f"{query['median_s']:.2f}",
                f"{query['max_s']:.2f}",
                f"{query['peak_rss_mb']:.0f}",
                "yes" if query["goal_met"] else "NO",
            )
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for index, row in enumerate(cells):
        lines.append(
            "  ".join(
                cell.ljust(width) if column < 2 else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    met = sum(query["goal_met"] for query in result["queries"].values())
    lines += [
        "",
        f"wall time of a fresh process, {result['runs']} runs per query; "
        f"queries under {QUERY_GOAL_S:g} s: {met} of {len(result['queries'])}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20, help="generator --scale (default 20)")
    parser.add_argument("--file", type=Path, help="a DICES-350 CSV file to use (no generating)")
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per query")
    parser.add_argument("--query", action="append", help="time only this query (repeatable)")
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-load-") as temp:
        directory = Path(temp)
        path = args.file or generate(args.shared_dir, ["350"], args.scale, directory)[0]
        result = bench(path, directory / "data", args.runs, args.query)
    result["dices_cli"] = version("dices-cli")
    result["goals"] = {"ingest_peak_rss_mb": RSS_GOAL_MB, "query_s": QUERY_GOAL_S}
    append("load", result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(table(result))


if __name__ == "__main__":
    main()
