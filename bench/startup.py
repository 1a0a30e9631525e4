"""Time a small answer of `dices` against a Python + DuckDB script that answers the same query
from the stored Parquet files, and the start-up of `dices --help` and of `import dices_cli`.

Goals (issue 25): `dices sql "SELECT count(*) FROM ratings"` and `dices query overview` within
1.3x of the script (medians of fresh processes, CPU time and wall time); `dices --help` and
`dices -V` under 0.10 s (wall); `import dices_cli` under 0.05 s (the import alone, timed
inside the process).

    python bench/startup.py                 # build both replicas, ingest, 9 runs of each
    python bench/startup.py --runs 21 --json
    python bench/startup.py --data DIR      # an existing data directory, nothing generated
    python bench/startup.py --smoke --data DIR   # one run of each: that the script works

Self-contained: the standard library, and `dices` and DuckDB in fresh processes. Every run is
a fresh process; the cases take turns within each round, so that a loaded machine slows
them alike. Before any timing, each script's answer is checked to equal dices' own.

dices is timed as installed: with its modules' bytecode, which pip writes when it installs
a wheel. An editable install under PYTHONDONTWRITEBYTECODE (as on the project's machine)
has none, and every run compiled about 40 modules again (0.03-0.08 s); so the package's
bytecode is written first (`compileall`; --no-compile to time it without).
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
from dataclasses import dataclass, field
from pathlib import Path

from _results import append

REPO = Path(__file__).resolve().parents[1]
GOAL_RATIO = 1.3  # dices / the Python + DuckDB script, CPU and wall medians
GOAL_HELP_S = 0.10  # `dices --help`, wall median
GOAL_IMPORT_S = 0.05  # `import dices_cli`, timed inside the process

# The script a researcher would write: DuckDB over the stored files, CSV to stdout.
DUCKDB_SCRIPT = """
import sys
from pathlib import Path
import duckdb
data, query = sys.argv[1:]
names = [name for name in ("350", "990") if (Path(data) / name).exists()]
union = " UNION ALL BY NAME ".join(
    f"SELECT '{name}' AS dataset, * FROM read_parquet('{data}/{name}/ratings.parquet')"
    for name in names
)
relation = duckdb.sql(query.replace("RATINGS", f"({union})"))
print(",".join(relation.columns))
for row in relation.fetchall():
    print(",".join("" if value is None else str(value) for value in row))
"""
COUNT_SQL = "SELECT count(*) FROM ratings"
OVERVIEW_SQL = """
SELECT dataset, count(DISTINCT item_id) AS conversations, count(DISTINCT rater_id) AS raters,
    count(*) AS ratings,
    count(*) FILTER (Q_overall = 'No') / count(*) AS share_no,
    count(*) FILTER (Q_overall = 'Yes') / count(*) AS share_yes,
    count(*) FILTER (Q_overall = 'Unsure') / count(*) AS share_unsure
FROM RATINGS GROUP BY dataset ORDER BY dataset
"""
IMPORT_SCRIPT = (
    "import time; start = time.perf_counter(); import dices_cli; print(time.perf_counter() - start)"
)


@dataclass
class Case:
    name: str
    command: list[str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # what the process printed, each run


def dices_command() -> list[str]:
    script = Path(sys.executable).parent / "dices"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dices_cli"]


def run(case: Case) -> None:
    """One fresh process of `case`: its wall time, its CPU time (user + system, from wait4)
    and its stdout; it must exit 0."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(case.command, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit(f"failed: {' '.join(case.command)}\n{err.read().decode(errors='replace')}")
        out.seek(0)
        case.said.append(out.read().decode())
    case.wall.append(wall)
    case.cpu.append(usage.ru_utime + usage.ru_stime)


def cases(data: Path) -> list[Case]:
    dices = dices_command()
    script = [sys.executable, "-c", DUCKDB_SCRIPT, str(data)]
    where = ["--data", str(data), "-f", "csv"]
    count = COUNT_SQL.replace("ratings", "RATINGS")
    return [
        Case("python + duckdb: count", [*script, count]),
        Case("dices sql count", [*dices, "sql", COUNT_SQL, *where]),
        Case("python + duckdb: overview", [*script, OVERVIEW_SQL]),
        Case("dices query overview", [*dices, "query", "overview", *where]),
        Case("python -c pass", [sys.executable, "-c", "pass"]),
        Case("dices --help", [*dices, "--help"]),
        Case("dices -V", [*dices, "-V"]),
        Case("import dices_cli", [sys.executable, "-c", IMPORT_SCRIPT]),
    ]


def check_answers(found: dict[str, Case]) -> None:
    """The scripts answer what dices answers (the count's header aside), or nothing is timed."""
    for script, dices in (
        ("python + duckdb: count", "dices sql count"),
        ("python + duckdb: overview", "dices query overview"),
    ):
        ours, theirs = found[dices].said[0].splitlines(), found[script].said[0].splitlines()
        if ours[1:] != theirs[1:]:
            sys.exit(f"{script} answers {theirs}, {dices} answers {ours}: not the same query")


def bench(data: Path, runs: int) -> dict[str, Case]:
    found = {case.name: case for case in cases(data)}
    for case in found.values():  # a first run of each: the answers, and warm file caches
        run(case)
    check_answers(found)
    for case in found.values():
        case.wall.clear()
        case.cpu.clear()
    for _ in range(runs):
        for case in found.values():
            run(case)
    return found


def summary(found: dict[str, Case]) -> dict[str, float]:
    median = {name: statistics.median(case.wall) for name, case in found.items()}
    cpu = {name: statistics.median(case.cpu) for name, case in found.items()}
    imports = [float(said.strip()) for said in found["import dices_cli"].said[1:]]
    return {
        "sql count / script (cpu)": cpu["dices sql count"] / cpu["python + duckdb: count"],
        "sql count / script (wall)": median["dices sql count"] / median["python + duckdb: count"],
        "query overview / script (cpu)": cpu["dices query overview"]
        / cpu["python + duckdb: overview"],
        "query overview / script (wall)": median["dices query overview"]
        / median["python + duckdb: overview"],
        "dices --help (wall s)": median["dices --help"],
        "dices -V (wall s)": median["dices -V"],
        "import dices_cli (s, in-process)": statistics.median(imports),
    }


def report(found: dict[str, Case], runs: int) -> str:
    width = max(len(name) for name in found)
    lines = [
        f"{'what'.ljust(width)}  wall median s  wall min s  cpu median s",
        f"{'-' * width}  -------------  ----------  ------------",
    ]
    for name, case in found.items():
        lines.append(
            f"{name.ljust(width)}  {statistics.median(case.wall):13.3f}  {min(case.wall):10.3f}"
            f"  {statistics.median(case.cpu):12.3f}"
        )
    lines.append(f"\n{runs} runs of each, fresh processes, taking turns")
    figures = summary(found)
    for name, value in figures.items():
        if "/" in name:
            goal, met = f"<= {GOAL_RATIO}", value <= GOAL_RATIO
        elif name.startswith("dices -"):
            goal, met = f"< {GOAL_HELP_S}", value < GOAL_HELP_S
        else:
            goal, met = f"< {GOAL_IMPORT_S}", value < GOAL_IMPORT_S
        lines.append(f"{name}: {value:.4f} (goal {goal}: {'met' if met else 'NOT met'})")
    return "\n".join(lines)


def ingested_replicas(shared: Path, directory: Path) -> Path:
    """Both replica datasets, built with the shared generator and ingested into `directory`."""
    generator = shared / "data" / "make_replica.py"
    if not generator.exists():
        sys.exit(f"replica generator not found at {generator}; use --shared-dir or --data")
    files = []
    for name in ("350", "990"):
        files.append(str(directory / f"dices_{name}.csv"))
        print(f"generating {Path(files[-1]).name} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(generator), name, files[-1]], check=True)
    data = directory / "data"
    subprocess.run([*dices_command(), "ingest", *files, "--data", str(data)], check=True)
    return data


def compile_bytecode() -> None:
    """Write the bytecode of the dices_cli package that runs (see the module's docstring)."""
    where = subprocess.run(
        [sys.executable, "-c", "import dices_cli, os; print(os.path.dirname(dices_cli.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A read-only install fails to write, and has its bytecode from pip already.
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], capture_output=True)
    print(f"bytecode of {where} written (as pip writes it at install)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh-process runs of each case")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument(
        "--shared-dir",
        type=Path,
        default=Path(os.environ.get("DICES_SHARED", REPO.parent / "shared")),
        help="folder holding data/make_replica.py (default $DICES_SHARED or ../shared)",
    )
    parser.add_argument("--smoke", action="store_true", help="one run of each: the script works")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--no-compile", action="store_true", help="time dices without writing its bytecode first"
    )
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else args.runs
    if not args.no_compile:
        compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        found = bench(data, runs)
    results = {name: {"wall_s": case.wall, "cpu_s": case.cpu} for name, case in found.items()}
    document = {"runs": runs, "summary": summary(found), "results": results}
    append("startup", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(report(found, runs))


if __name__ == "__main__":
    main()
