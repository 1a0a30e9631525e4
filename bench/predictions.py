"""Time how `dices evaluate` reads a big predictions file against pandas reading it.

A predictions file may have millions of rows (1,000 models x 990 conversations is a million).
The file built here has `--rows` rows (models x the 350 conversations of DICES-350, a label
and a score each) and a problem on its last row: `dices evaluate` reads and validates all of
it, then refuses it (exit 1), so what is timed is the reading and the validation, not the
metrics. The problems (`--problems`):

    duplicate   the last row repeats the first ("already has a prediction"): a check over
                several rows
    label       the last row's label is "maybe" and its score 2.0: checks of one row, whose
                JSON line is read again for Python's spelling of 2.0
    json        (JSON Lines only) the last line is not JSON: PyArrow's reader gives up at the
                end, and the record reader reads the file

The baseline is pandas reading the file (`read_csv`, or `read_json(lines=True)`), in a fresh
process too (without the last row for `json`, which pandas refuses).

    python bench/predictions.py                     # 10M rows, CSV and JSON Lines, 3 runs
    python bench/predictions.py --rows 1000000 --formats csv --runs 5
    python bench/predictions.py --formats jsonl --problems json label
    python bench/predictions.py --data DIR          # an existing data directory
    python bench/predictions.py --smoke             # 2,000 rows, one run, two cases (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

PANDAS = {  # the file, and its rows before the last (pandas refuses a last line not JSON)
    "csv": "import pandas, sys; pandas.read_csv(sys.argv[1])",
    "jsonl": "import pandas, sys; "
    "pandas.read_json(sys.argv[1], lines=True, nrows=int(sys.argv[2]))",
}


PROBLEMS = ("duplicate", "label", "json")
# --smoke: one case per format, which between them write every kind of last row.
SMOKE_CASES = [("csv", "label"), ("jsonl", "json")]


def make_predictions(data: Path, rows: int, layout: str, path: Path, problem: str) -> None:
    """`rows` predictions of DICES-350's conversations, the last one's `problem` (PROBLEMS)."""
    import numpy as np
    import polars as pl

    items = pl.read_parquet(data / "350" / "items.parquet")["item_id"].sort().to_numpy()
    row = np.arange(rows - 1)
    score = np.random.default_rng(350).random(rows - 1).round(6)
    frame = pl.DataFrame(
        {"m": row // len(items), "item_id": items[row % len(items)], "score": score}
    )
    frame = frame.select(
        pl.format("model-{}", "m").alias("model"),
        "item_id",
        pl.when(pl.col("score") >= 0.5).then(pl.lit("Yes")).otherwise(pl.lit("No")).alias("label"),
        "score",
    )
    last = frame.head(1)  # a duplicate at the end: refused after a full read
    if problem == "label":
        last = last.with_columns(pl.lit("maybe").alias("label"), pl.lit(2.0).alias("score"))
    if problem != "json":
        frame = pl.concat([frame, last])
    if layout == "csv":
        frame.write_csv(path)
    else:
        frame.write_ndjson(path)
    if problem == "json":
        with path.open("a") as stream:
            stream.write('{"model": "model-0", "item_id": \n')


def bench(
    data: Path, rows: int, cases: list[tuple[str, str]], runs: int, work: Path
) -> list[dict[str, Any]]:
    results = []
    for layout, problem in cases:
        path = work / f"predictions.{layout}"
        print(f"writing {rows:,} rows to {path.name} ({problem}) ...", file=sys.stderr)
        make_predictions(data, rows, layout, path, problem)
        ours = [*dices_command(), "evaluate", str(path), "-d", "350", "--data", str(data)]
        theirs = [sys.executable, "-c", PANDAS[layout], str(path), str(rows - 1)]
        dices, pandas = [], []
        for run in range(runs):  # alternated, so that drift in the machine hits both alike
            print(f"{layout} ({problem}) run {run + 1}/{runs} ...", file=sys.stderr)
            dices.append(measure(ours, expected=1))
            pandas.append(measure(theirs))
        results.append(
            {
                "format": layout,
                "problem": problem,
                "rows": rows,
                "size_mb": path.stat().st_size / 1e6,
                "dices_wall_s": statistics.median(r.wall for r in dices),
                "dices_peak_mb": statistics.median(r.peak_rss_mb for r in dices),
                "pandas_wall_s": statistics.median(r.wall for r in pandas),
                "pandas_peak_mb": statistics.median(r.peak_rss_mb for r in pandas),
            }
        )
        path.unlink()
    return results


def table(results: list[dict[str, Any]], runs: int) -> str:
    lines = [
        f"dices evaluate (read + validate, refused) vs pandas reading the file; median of {runs}",
        "format  problem    rows          MB   dices s  dices MB  pandas s  pandas MB  "
        "dices/pandas",
    ]
    for r in results:
        lines.append(
            f"{r['format']:<6}  {r['problem']:<9}  {r['rows']:>10,}  {r['size_mb']:>6.0f}"
            f"  {r['dices_wall_s']:>7.2f}"
            f"  {r['dices_peak_mb']:>8.0f}  {r['pandas_wall_s']:>8.2f}  {r['pandas_peak_mb']:>9.0f}"
            f"  {r['dices_wall_s'] / r['pandas_wall_s']:>12.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the file")
    parser.add_argument("--formats", nargs="+", choices=sorted(PANDAS), default=sorted(PANDAS))
    parser.add_argument(
        "--problems",
        nargs="+",
        choices=PROBLEMS,
        default=list(PROBLEMS),
        help="the problems on the last row (json: JSON Lines only)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per tool and format")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--smoke", action="store_true", help="2,000 rows, one run, two cases")
    add_shared_dir_argument(parser)
    args = parser.parse_args(argv)
    rows, runs = (2000, 1) if args.smoke else (args.rows, args.runs)
    cases = [(f, p) for f in args.formats for p in args.problems if f == "jsonl" or p != "json"]
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        results = bench(data, rows, SMOKE_CASES if args.smoke else cases, runs, Path(temp))
    document = {"runs": runs, "results": results}
    append("predictions", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(table(results, runs))


if __name__ == "__main__":
    main()
