"""Time a declared dataset at scale: `dices ingest` and a group share query, each against
DuckDB doing the same in the same run.

Goals (issue 38, item 6), on a long CSV of 2 x 10^7 ratings (item, rater, an ordinal label,
two rater attributes), median wall time of fresh processes (dices' modules byte-compiled
first, as an install leaves them):

- ingest: `dices ingest FILE --declaration D.toml` at most 1.2x DuckDB's own
  `COPY (FROM read_csv(FILE, columns = the same types)) TO 'x.parquet'`, peak RSS < 1 GB;
- share query: `dices query label-by-group` (and `label-distribution`) by a rater attribute
  at most 1.3x a DuckDB script computing the same figures from the stored Parquet files:
  what a user would compute by hand with DuckDB to get the same columns. The script's
  counts must equal dices' own (the same work is timed). label-by-group runs its default
  permutation test and is timed twice:
  - with the Wilson interval (`label-by-group`): the script gives each group's counts
    (raters, items, ratings, n_positive), share and mean, the sum of squares the mean's
    normal interval needs, and each rater's Yes, ratings and sum of values in lists, what
    the permutation test relabels;
  - with its default, the clustered interval (`label-by-group-clustered`): the script
    adds what the two-way cluster-robust variances of the share, the mean and their
    differences from the rest need, each group's sums over its raters (Y_r^2, Y_r N_r,
    N_r^2 and the values' T_r^2, T_r N_r) and over its items with themselves and with
    the item's sums over every group, and those of the items over every group. These
    are the sums dices' SQL hands its compute step (equal, checked by hand at 2 x 10^7
    rows); neither side makes rater x item cell sums, as each cell holds one rating.
  The scripts are plain GROUP BYs (one per level: rater, item, item over every group) and
  joins over one view of the ratings, and leave out what dices adds in Python (the
  intervals' arithmetic and the relabellings): dices' ratio includes that.
  The COPY writes DuckDB's defaults (Snappy, row groups of 122,880 rows); dices' ratings
  file is Polars' (zstd, its own row groups): each tool as a user runs it.

    python bench/scale.py                      # 2 x 10^7 rows, 3 runs each
    python bench/scale.py --rows 2000000 --runs 5
    python bench/scale.py --rows 2000 --runs 1 # the CI smoke run

The file is generated under a temporary directory (DuckDB writes it: a few seconds) and
removed after. Each figure is the median of --runs fresh processes, dices and DuckDB
alternated; CPU is the child's user + system time, peak RSS its ru_maxrss.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _results import append

INGEST_GOAL = 1.2  # dices ingest / DuckDB COPY, median wall
QUERY_GOAL = 1.3  # dices query / DuckDB script, median wall
RSS_GOAL_MB = 1000.0
MAXRSS_UNITS_PER_MB = 1024 * 1024 if sys.platform == "darwin" else 1024
GENDERS = ("man", "woman", "nonbinary")
AGES = ("18-24", "25-34", "35-44", "45-54", "55+")
COLUMNS = {
    "item_id": "VARCHAR",
    "rater_id": "VARCHAR",
    "toxicity": "BIGINT",
    "gender": "VARCHAR",
    "age_group": "VARCHAR",
}
DECLARATION = """family = "scalebench"

[[dataset]]
name = "scalebench"
title = "Scale bench"

[[dataset.file]]
role = "ratings"
format = "csv"
item = "item_id"
rater = "rater_id"
labels = ["toxicity"]
rater_attributes = ["gender", "age_group"]

[dataset.scales.toxicity]
kind = "ordinal"
values = [0, 1, 2, 3, 4]
positive = [2, 3, 4]
"""
# Each item rated by 10 raters (distinct), each rater's attributes fixed by its number.
GENERATE = """
COPY (
    SELECT
        'i' || lpad((k // 10)::VARCHAR, 9, '0') AS item_id,
        'r' || lpad(r::VARCHAR, 6, '0') AS rater_id,
        (hash(k) % 5)::INTEGER AS toxicity,
        $genders[r % 3 + 1] AS gender,
        $ages[(r // 3) % 5 + 1] AS age_group
    FROM (SELECT k, ((k // 10) * 37 + k % 10) % $raters AS r FROM range($rows) AS t(k))
) TO '{path}' (HEADER)
"""
COPY_SCRIPT = """
import sys, duckdb
connection = duckdb.connect()
connection.execute("SET enable_progress_bar = false")
connection.execute(
    "COPY (FROM read_csv(?, header = true, columns = {columns})) TO '" + sys.argv[2] + "'",
    [sys.argv[1]],
)
"""
# The figures of each query, from the stored Parquet files, as CSV on stdout: what a user
# computes by hand with DuckDB to get label-by-group's columns. With a Wilson interval: the
# counts, the mean, the sum of squares its normal interval needs and each rater's Yes,
# ratings and sum of values (the permutation test relabels raters).
RATED = """
WITH rated AS (
    SELECT r.gender, t.rater_id, t.item_id, t.toxicity_positive::INTEGER AS y, t.toxicity AS v
    FROM read_parquet($ratings) AS t JOIN read_parquet($raters) AS r USING (rater_id)
    WHERE t.toxicity IS NOT NULL
),
per_rater AS (
    SELECT gender, rater_id, sum(y) AS y, count(*) AS n, sum(v) AS v, sum(v * v) AS q
    FROM rated
    GROUP BY ALL
),
by_raters AS (
    SELECT gender, count(*) AS raters, sum(n) AS ratings, sum(y) AS n_positive,
        n_positive / ratings AS share_positive, sum(v) / ratings AS mean, sum(q) AS squares,
        list(y ORDER BY rater_id) AS rater_yes, list(n ORDER BY rater_id) AS rater_ratings,
        list(v ORDER BY rater_id) AS rater_total,
        sum(y * y) AS r_yy, sum(y * n) AS r_yn, sum(n * n) AS r_nn,
        sum(v * v) AS r_vv, sum(v * n) AS r_vn
    FROM per_rater
    GROUP BY gender
)"""
SHARE_SQL = (
    RATED
    + """
SELECT b.*, i.items
FROM by_raters AS b
JOIN (SELECT gender, count(DISTINCT item_id) AS items FROM rated GROUP BY ALL) AS i USING (gender)
ORDER BY gender
"""
)
# With the clustered interval (the default) also what its two-way cluster-robust variances
# of a share, a mean and their differences from the rest need: the sums of squares and
# products of each group's items (Y_c, N_c, T_c) with themselves and with the item's sums
# over every group, and the latter's own (no rater x item cell sums: each cell holds one
# rating, which dices' ingest records and its query uses as this script does).
CLUSTERED_SQL = (
    RATED
    + """,
per_item AS (
    SELECT gender, item_id, sum(y) AS y, count(*) AS n, sum(v) AS v FROM rated GROUP BY ALL
),
item_totals AS (
    SELECT item_id, sum(y) AS y, count(*) AS n, sum(v) AS v FROM rated GROUP BY ALL
),
by_items AS (
    SELECT i.gender, count(*) AS items,
        sum(i.y * i.y) AS c_yy, sum(i.y * i.n) AS c_yn, sum(i.n * i.n) AS c_nn,
        sum(i.v * i.v) AS c_vv, sum(i.v * i.n) AS c_vn,
        sum(i.y * t.y) AS x_yy, sum(i.y * t.n) AS x_yn, sum(i.n * t.y) AS x_ny,
        sum(i.n * t.n) AS x_nn, sum(i.v * t.v) AS x_vv, sum(i.v * t.n) AS x_vn,
        sum(i.n * t.v) AS x_nv
    FROM per_item AS i JOIN item_totals AS t USING (item_id)
    GROUP BY i.gender
),
family AS (
    SELECT count(*) AS f_items, sum(y * y) AS f_yy, sum(y * n) AS f_yn, sum(n * n) AS f_nn,
        sum(v * v) AS f_vv, sum(v * n) AS f_vn
    FROM item_totals
)
SELECT * FROM by_raters JOIN by_items USING (gender) CROSS JOIN family ORDER BY gender
"""
)
DISTRIBUTION_SQL = """
SELECT gender, toxicity AS value, ratings, ratings / sum(ratings) OVER (PARTITION BY gender)
    AS share
FROM (
    SELECT r.gender, t.toxicity, count(*) AS ratings
    FROM read_parquet($ratings) AS t JOIN read_parquet($raters) AS r USING (rater_id)
    WHERE t.toxicity IS NOT NULL
    GROUP BY ALL
) ORDER BY gender, value
"""
QUERY_SCRIPT = """
import csv, sys, duckdb
connection = duckdb.connect()
connection.execute("SET enable_progress_bar = false")
stored = sys.argv[2]
tables = {"ratings": stored + "/ratings.parquet", "raters": stored + "/raters.parquet"}
cursor = connection.execute(sys.argv[1], tables)
out = csv.writer(sys.stdout, lineterminator="\\n")
out.writerow(d[0] for d in cursor.description)
out.writerows(cursor.fetchall())
"""
# What is timed: its canned query and options, the DuckDB script and the columns both give.
QUERIES = {
    "label-by-group": (
        "label-by-group",
        ["--by", "gender", "--interval", "wilson"],
        SHARE_SQL,
        ("raters", "items", "ratings", "n_positive"),
    ),
    "label-by-group-clustered": (
        "label-by-group",
        ["--by", "gender"],
        CLUSTERED_SQL,
        ("raters", "items", "ratings", "n_positive"),
    ),
    "label-distribution": (
        "label-distribution",
        ["--by", "gender"],
        DISTRIBUTION_SQL,
        ("ratings",),
    ),
}


@dataclass
class Run:
    wall: float
    cpu: float
    peak_rss_mb: float
    stdout: str


@dataclass
class Tool:
    label: str
    runs: list[Run] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(getattr(run, name) for run in self.runs)

    def summary(self) -> dict[str, Any]:
        return {
            "median_wall_s": self.median("wall"),
            "median_cpu_s": self.median("cpu"),
            "median_peak_rss_mb": self.median("peak_rss_mb"),
            "wall_s": [run.wall for run in self.runs],
            "cpu_s": [run.cpu for run in self.runs],
            "peak_rss_mb": [run.peak_rss_mb for run in self.runs],
        }


def measure(command: list[str]) -> Run:
    """Run `command` in a fresh process (niced): wall, the child's CPU and peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            ["nice", "-n", "5", *command], stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            message = err.read().decode(errors="replace")
            sys.exit(f"failed: {' '.join(command)}\n{message[-3000:]}")
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Run(wall, cpu, usage.ru_maxrss / MAXRSS_UNITS_PER_MB, out.read().decode())


def dices_command() -> list[str]:
    script = Path(sys.executable).parent / "dices"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dices_cli"]


def compiled() -> None:
    """dices' modules byte-compiled, as an install leaves them: with PYTHONDONTWRITEBYTECODE
    set, every fresh process would compile them again (DuckDB's are compiled already)."""
    import compileall

    import dices_cli

    compileall.compile_dir(Path(dices_cli.__file__).parent, quiet=1)


def generate(path: Path, rows: int) -> None:
    import duckdb

    connection = duckdb.connect()
    parameters = {
        "rows": rows,
        "raters": max(rows // 2000, 20),
        "genders": list(GENDERS),
        "ages": list(AGES),
    }
    connection.execute(GENERATE.format(path=path), parameters)


def figures(text: str, keys: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    """The rows of CSV `text`, the group and the `keys` columns, as text of numbers; None
    when `text` is not such a table."""
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    named = ["gender", *(["value"] if rows and "value" in rows[0] else []), *keys]
    if not rows or any(name not in rows[0] for name in named):
        return None
    return [
        (
            *(row[n] for n in named[: len(named) - len(keys)]),
            *(str(int(float(row[k]))) for k in keys),
        )
        for row in rows
    ]


def ratio(a: Tool, b: Tool, name: str = "wall") -> float:
    return a.median(name) / b.median(name)


def bench(rows: int, runs: int, folder: Path, queries: list[str]) -> dict[str, Any]:
    data_file = folder / "ratings.csv"
    compiled()
    print(f"generating {rows:,} rows ...", file=sys.stderr)
    generate(data_file, rows)
    declaration = folder / "scalebench.toml"
    declaration.write_text(DECLARATION, encoding="utf-8")
    data = folder / "data"
    ingest = [
        *dices_command(),
        *("ingest", str(data_file), "--declaration", str(declaration)),
        *("--data", str(data), "--force"),
    ]
    types = "{" + ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items()) + "}"
    copy = [
        sys.executable,
        "-c",
        COPY_SCRIPT.format(columns=types),
        str(data_file),
        str(folder / "x.parquet"),
    ]
    dices, duck = Tool("dices ingest"), Tool("DuckDB COPY")
    for number in range(1, runs + 1):
        print(f"ingest: run {number}/{runs}", file=sys.stderr)
        dices.runs.append(measure(ingest))
        duck.runs.append(measure(copy))
    document: dict[str, Any] = {
        "rows": rows,
        "runs": runs,
        "csv_mb": data_file.stat().st_size / 1e6,
        "ingest": {
            "dices": dices.summary(),
            "duckdb": duck.summary(),
            "ratio_wall": ratio(dices, duck),
            "ratio_cpu": ratio(dices, duck, "cpu"),
            "goal": INGEST_GOAL,
            "goal_met": ratio(dices, duck) <= INGEST_GOAL
            and dices.median("peak_rss_mb") < RSS_GOAL_MB,
        },
        "queries": {},
    }
    print(table([(dices, duck, "ingest")]), file=sys.stderr)
    stored = str((data / "scalebench").resolve())
    tools = [(dices, duck, "ingest")]
    for name in queries:
        canned, arguments, sql, keys = QUERIES[name]
        query = [
            *dices_command(),
            *("query", canned, "-d", "scalebench", *arguments),
            *("--data", str(data), "--format", "csv"),
        ]
        script = [sys.executable, "-c", QUERY_SCRIPT, sql, stored]
        ours, theirs = (
            Tool(f"dices query {' '.join([canned, *arguments[2:]])}"),
            Tool("DuckDB script"),
        )
        for number in range(1, runs + 1):
            print(f"{name}: run {number}/{runs}", file=sys.stderr)
            ours.runs.append(measure(query))
            theirs.runs.append(measure(script))
        mine = figures(ours.runs[0].stdout, keys)
        same = mine is not None and mine == figures(theirs.runs[0].stdout, keys)
        if not same:
            print(f"{name}: dices and DuckDB DISAGREE", file=sys.stderr)
        document["queries"][name] = {
            "dices": ours.summary(),
            "duckdb": theirs.summary(),
            "ratio_wall": ratio(ours, theirs),
            "ratio_cpu": ratio(ours, theirs, "cpu"),
            "goal": QUERY_GOAL,
            "command": query[len(dices_command()) :],
            "same_figures": same,
            "dices_output": ours.runs[0].stdout[:3000],
            "duckdb_output": theirs.runs[0].stdout[:3000],
            "goal_met": same and ratio(ours, theirs) <= QUERY_GOAL,
        }
        tools.append((ours, theirs, name))
    document["table"] = table(tools)
    return document


def table(tools: list[tuple[Tool, Tool, str]]) -> str:
    header = ("step", "tool", "wall s", "CPU s", "peak RSS MB", "wall ratio", "CPU ratio")
    lines = [header]
    for ours, theirs, step in tools:
        for tool in (ours, theirs):
            lines.append(
                (
                    step if tool is ours else "",
                    tool.label,
                    f"{tool.median('wall'):.2f}",
                    f"{tool.median('cpu'):.2f}",
                    f"{tool.median('peak_rss_mb'):.0f}",
                    f"{ratio(ours, theirs):.2f}" if tool is ours else "",
                    f"{ratio(ours, theirs, 'cpu'):.2f}" if tool is ours else "",
                )
            )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=2e7, help="ratings in the CSV (2e7)")
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per tool")
    parser.add_argument(
        "--queries",
        nargs="*",
        choices=list(QUERIES),
        default=list(QUERIES),
        help="the queries to time (default: all; none: ingest alone)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-scale-") as folder:
        document = bench(int(arguments.rows), arguments.runs, Path(folder), arguments.queries)
    append("scale", document)
    if arguments.json:
        print(json.dumps(document, indent=2))
        return
    print(document["table"])
    print()
    ingest = document["ingest"]
    print(
        f"{document['rows']:,} rows ({document['csv_mb']:.0f} MB), median of {document['runs']} "
        f"runs; ingest dices/DuckDB = {ingest['ratio_wall']:.2f} wall, "
        f"{ingest['ratio_cpu']:.2f} CPU (goal <= {INGEST_GOAL} and peak RSS < "
        f"{RSS_GOAL_MB:.0f} MB: {'met' if ingest['goal_met'] else 'NOT met'})"
    )
    for name, query in document["queries"].items():
        print(
            f"{name}: dices/DuckDB = {query['ratio_wall']:.2f} wall, {query['ratio_cpu']:.2f} "
            f"CPU (goal <= {QUERY_GOAL}: {'met' if query['goal_met'] else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
