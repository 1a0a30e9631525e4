"""Time `dices sql "SELECT * FROM ratings_wide"` to CSV, to Parquet and into `| head -c 100`,
against DuckDB's own COPY of the same relation, in the same run.

Goals: CSV and Parquet within 1.5x of DuckDB's COPY (median wall time of fresh processes);
the first bytes of the result reach a pipe less than 0.5 s after the command is launched
(median of fresh processes, start-up included). DuckDB's COPY into the same pipe is timed
beside it for reference.

    python bench/output.py              # build both replicas, ingest, 5 runs each
    python bench/output.py --runs 9 --json
    python bench/output.py --data DIR   # an existing data directory, nothing generated

The baseline is a Python process that opens the same session as `dices sql` (the views
over the stored Parquet files, which DuckDB reads as the statement runs) and has DuckDB
`COPY (SELECT * FROM ratings_wide) TO FILE`: the same relation, written by DuckDB instead
of by dices. (Until session 13 it loaded the stored files into memory first, which made
the baseline slower by the time that took.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

GOAL_RATIO = 1.5  # dices / DuckDB COPY, CSV and Parquet
GOAL_FIRST_BYTES_S = 0.5  # from launch to the first bytes in a pipe
STATEMENT = "SELECT * FROM ratings_wide"
PIPE_BYTES = 100

COPY_SCRIPT = """
import sys
from pathlib import Path
import duckdb
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store
data, statement, target, fmt = sys.argv[1:]
session = open_session(Store(Path(data)), "all")
try:
    session.con.execute(f"COPY ({statement}) TO '{target}' (FORMAT {fmt})")
except duckdb.IOException:  # a closed pipe, when the reader has had enough
    if target != "/dev/stdout":
        raise
"""


def duckdb_copy(data: Path, target: str, fmt: str) -> list[str]:
    return [sys.executable, "-c", COPY_SCRIPT, str(data), STATEMENT, target, fmt]


def into_pipe(command: list[str]) -> tuple[float, float]:
    """Run `command` into a pipe whose reader takes PIPE_BYTES and leaves: the seconds until
    those bytes arrived, and until the command exited (it must exit 0)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    got = b""
    while len(got) < PIPE_BYTES:
        chunk = process.stdout.read1(PIPE_BYTES - len(got))
        if not chunk:
            break
        got += chunk
    first = time.perf_counter() - start
    process.stdout.close()  # `head` leaves
    _, errors = process.communicate()
    done = time.perf_counter() - start
    if process.returncode != 0 or len(got) < PIPE_BYTES:
        sys.exit(f"failed ({process.returncode}): {' '.join(command)}\n{errors.decode()}")
    return first, done


def bench(data: Path, runs: int, directory: Path) -> dict[str, list[float]]:
    dices = [*dices_command(), "sql", STATEMENT, "--data", str(data)]
    parquet = directory / "result.parquet"
    copied = {fmt: str(directory / f"copy.{fmt}") for fmt in ("csv", "parquet")}
    results: dict[str, list[float]] = {
        name: []
        for name in (
            "dices sql -f csv > FILE",
            "DuckDB COPY TO csv",
            "dices sql -o FILE.parquet",
            "DuckDB COPY TO parquet",
            "dices sql -f csv | head -c 100: first bytes",
            "dices sql -f csv | head -c 100: exit",
            "DuckDB COPY TO /dev/stdout | head -c 100: first bytes",
            "DuckDB COPY TO /dev/stdout | head -c 100: exit",
        )
    }
    for _ in range(runs):  # alternating, so that drift in the machine hits both alike
        results["dices sql -f csv > FILE"].append(measure([*dices, "-f", "csv"]).wall)
        results["DuckDB COPY TO csv"].append(measure(duckdb_copy(data, copied["csv"], "csv")).wall)
        results["dices sql -o FILE.parquet"].append(
            measure([*dices, "-o", str(parquet), "--force"]).wall
        )
        results["DuckDB COPY TO parquet"].append(
            measure(duckdb_copy(data, copied["parquet"], "parquet")).wall
        )
        first, done = into_pipe([*dices, "-f", "csv"])
        results["dices sql -f csv | head -c 100: first bytes"].append(first)
        results["dices sql -f csv | head -c 100: exit"].append(done)
        first, done = into_pipe(duckdb_copy(data, "/dev/stdout", "csv"))
        results["DuckDB COPY TO /dev/stdout | head -c 100: first bytes"].append(first)
        results["DuckDB COPY TO /dev/stdout | head -c 100: exit"].append(done)
        for path in (parquet, *map(Path, copied.values())):
            path.unlink(missing_ok=True)
    return results


def ratios(results: dict[str, list[float]]) -> dict[str, float]:
    median = {name: statistics.median(walls) for name, walls in results.items()}
    return {
        "csv": median["dices sql -f csv > FILE"] / median["DuckDB COPY TO csv"],
        "parquet": median["dices sql -o FILE.parquet"] / median["DuckDB COPY TO parquet"],
        "first bytes": median["dices sql -f csv | head -c 100: first bytes"],
        "first bytes after DuckDB's": median["dices sql -f csv | head -c 100: first bytes"]
        - median["DuckDB COPY TO /dev/stdout | head -c 100: first bytes"],
    }


def report(results: dict[str, list[float]], runs: int) -> str:
    width = max(len(name) for name in results)
    lines = [f"{'what'.ljust(width)}  median s  min s", f"{'-' * width}  --------  -----"]
    for name, walls in results.items():
        lines.append(f"{name.ljust(width)}  {statistics.median(walls):8.3f}  {min(walls):5.3f}")
    found = ratios(results)
    lines.append(f"\nmedian and min of {runs} runs, each a fresh process")
    for fmt in ("csv", "parquet"):
        verdict = "met" if found[fmt] <= GOAL_RATIO else "NOT met"
        lines.append(
            f"{fmt}: dices / DuckDB COPY = {found[fmt]:.2f} (goal <= {GOAL_RATIO}: {verdict})"
        )
    first, after_copy = found["first bytes"], found["first bytes after DuckDB's"]
    verdict = "met" if first < GOAL_FIRST_BYTES_S else "NOT met"
    lines.append(
        f"first bytes in a pipe, from launch: {first:.3f} s (goal < {GOAL_FIRST_BYTES_S} s: "
        f"{verdict}); {after_copy:+.3f} s against DuckDB's COPY into the same pipe"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        results = bench(data, args.runs, Path(temp))
    summary = {
        name: {"median_s": statistics.median(w), "min_s": min(w), "wall_s": w}
        for name, w in results.items()
    }
    document = {"runs": args.runs, "ratios": ratios(results), "results": summary}
    append("output", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(report(results, args.runs))


if __name__ == "__main__":
    main()
