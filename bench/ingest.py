"""Time `dices ingest` against `pandas.read_csv` of the same replica files.

Goal (a standing goal of the project): the whole ingest (imports, parsing, validation,
Parquet writing) takes at most 0.8 of the time pandas takes just to read the file, i.e.
dices / pandas <= 0.8 on median wall time, both measured as a fresh process. See bench/README.md.

    python bench/ingest.py                    # both replica files, 5 runs each
    python bench/ingest.py --scale 20         # DICES-350 x 20 (861,000 rows, 620 MB)
    python bench/ingest.py --files a.csv --json
    python bench/ingest.py --baseline /tmp/before  # and another tree, alternated, CPU beside

`--baseline DIR` also runs the `dices` of DIR (a worktree of an older commit: `git worktree
add --detach /tmp/before COMMIT`) as `python -m dices_cli` from DIR, alternated with this
tree's, run the same way then; each with its CPU time (user + sys), which a loaded machine
disturbs less than the wall time.
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
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _results import append

REPO = Path(__file__).resolve().parents[1]
GOAL = 0.8  # dices / pandas, median wall time of a fresh process
MAXRSS_UNITS_PER_MB = 1024 * 1024 if sys.platform == "darwin" else 1024  # bytes there, KB here
# A fresh process that reads the file with pandas and reports the read alone and the rows.
PANDAS_SCRIPT = (
    "import sys, time, pandas; start = time.perf_counter(); frame = pandas.read_csv(sys.argv[1]); "
    "print(time.perf_counter() - start, len(frame))"
)


@dataclass
class Run:
    wall: float  # seconds, the whole process
    cpu: float  # seconds, the child's user + system time
    peak_rss_mb: float  # the child's ru_maxrss
    stdout: str


@dataclass
class Tool:
    label: str
    walls: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    def add(self, wall: float, rss_mb: float | None = None, cpu: float | None = None) -> None:
        self.walls.append(wall)
        if rss_mb is not None:
            self.rss_mb.append(rss_mb)
        if cpu is not None:
            self.cpus.append(cpu)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def summary(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": min(self.walls),
            "median_peak_rss_mb": statistics.median(self.rss_mb) if self.rss_mb else None,
            "median_cpu_s": statistics.median(self.cpus) if self.cpus else None,
            "wall_s": self.walls,
            "cpu_s": self.cpus,
            "peak_rss_mb": self.rss_mb,
        }


@dataclass
class Result:
    name: str
    path: Path
    rows: int
    dices: Tool
    pandas: Tool
    pandas_read: Tool  # read_csv alone, inside the pandas process: import excluded
    baseline: Tool | None = None  # another tree's dices ingest (--baseline)

    @property
    def ratio(self) -> float:
        return self.dices.median / self.pandas.median

    @property
    def ratio_read_only(self) -> float:
        return self.dices.median / self.pandas_read.median

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.name,
            "path": str(self.path),
            "size_mb": self.path.stat().st_size / 1e6,
            "rows": self.rows,
            "dices_ingest": self.dices.summary(),
            "pandas_process": self.pandas.summary(),
            "pandas_read_csv_only": self.pandas_read.summary(),
            "ratio": self.ratio,
            "ratio_vs_read_csv_only": self.ratio_read_only,
            "goal_met": self.ratio <= GOAL,
            **({} if self.baseline is None else {"baseline_ingest": self.baseline.summary()}),
        }


def measure(command: list[str], expected: int = 0, cwd: Path | None = None) -> Run:
    """Run `command` (from `cwd`) in a fresh process; wall time, and the child's own CPU time
    and peak RSS (wait4). Any exit code but `expected` stops the benchmark."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if process.returncode != expected:
            err.seek(0)
            message = err.read().decode(errors="replace")
            sys.exit(f"failed ({process.returncode}): {' '.join(command)}\n{message}")
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Run(wall, cpu, usage.ru_maxrss / MAXRSS_UNITS_PER_MB, out.read().decode())


def dices_command() -> list[str]:
    script = Path(sys.executable).parent / "dices"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dices_cli"]


def generate(shared: Path, datasets: list[str], scale: int, directory: Path) -> list[Path]:
    generator = shared / "data" / "make_replica.py"
    if not generator.exists():
        sys.exit(f"replica generator not found at {generator}; use --shared-dir or --files")
    paths = []
    for name in datasets:
        path = directory / (f"dices_{name}.csv" if scale == 1 else f"dices_{name}_x{scale}.csv")
        print(f"generating {path.name} ...", file=sys.stderr)
        command = [sys.executable, str(generator), name, str(path), "--scale", str(scale)]
        subprocess.run(command, check=True, capture_output=True)
        paths.append(path)
    return paths


def bench(path: Path, runs: int, data_dir: Path, baseline: Path | None = None) -> Result:
    """Alternate dices and pandas runs (and this tree's and the `baseline` tree's dices, each
    first in turn) so that drift in the machine hits them alike."""
    arguments = ["ingest", str(path), "--data", str(data_dir), "--force"]
    # Against another tree, both are run as `python -m dices_cli` from their tree.
    this = [sys.executable, "-m", "dices_cli"] if baseline else dices_command()
    read = [sys.executable, "-c", PANDAS_SCRIPT, str(path)]
    dices = Tool("dices ingest (process)")
    other = Tool(f"dices ingest of {baseline}") if baseline else None
    pandas = Tool("pandas.read_csv (process)")
    pandas_read = Tool("pandas.read_csv only, in-process")
    rows = 0
    for number in range(1, runs + 1):
        print(f"{path.name}: run {number}/{runs}", file=sys.stderr)
        trees = [(dices, this, REPO), *([(other, this, baseline)] if other else [])]
        for tool, command, tree in trees if number % 2 else trees[::-1]:
            assert tool is not None
            run = measure([*command, *arguments], cwd=tree)
            tool.add(run.wall, run.peak_rss_mb, run.cpu)
        run = measure(read)
        pandas.add(run.wall, run.peak_rss_mb, run.cpu)
        read_only, rows_text = run.stdout.split()
        pandas_read.add(float(read_only))
        rows = int(rows_text)
    return Result(path.name, path, rows, dices, pandas, pandas_read, other)


def _aligned(cells: tuple[str, ...], widths: list[int]) -> str:
    """Text columns (file, tool) to the left, numbers to the right."""
    return "  ".join(
        cell.ljust(width) if index in (0, 3) else cell.rjust(width)
        for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
    )


def table(results: list[Result], runs: int) -> str:
    header = ("file", "MB", "rows", "tool", "median s", "min s", "CPU s", "peak RSS MB")
    lines: list[tuple[str, ...]] = [header]
    for result in results:
        first = (result.name, f"{result.path.stat().st_size / 1e6:.1f}", f"{result.rows:,}")
        tools = (result.dices, *([result.baseline] if result.baseline else []), result.pandas)
        for index, tool in enumerate((*tools, result.pandas_read)):
            rss = f"{statistics.median(tool.rss_mb):.0f}" if tool.rss_mb else "-"
            cpu = f"{statistics.median(tool.cpus):.3f}" if tool.cpus else "-"
            lead = first if index == 0 else ("", "", "")
            walls = (f"{tool.median:.3f}", f"{min(tool.walls):.3f}")
            lines.append((*lead, tool.label, *walls, cpu, rss))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [_aligned(line, widths) for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    text.append("")
    text.append(
        f"median and min of {runs} runs each; CPU (user + sys) and peak RSS are medians of the "
        "runs' own"
    )
    for result in results:
        if result.baseline:
            this, other = result.dices, result.baseline
            text.append(
                f"{result.name}: this tree / baseline = {this.median / other.median:.3f} wall, "
                f"{statistics.median(this.cpus) / statistics.median(other.cpus):.3f} CPU"
            )
        verdict = "met" if result.ratio <= GOAL else "NOT met"
        text.append(
            f"{result.name}: dices/pandas = {result.ratio:.2f} (goal <= {GOAL:.1f}: {verdict}); "
            f"against read_csv alone, import excluded: {result.ratio_read_only:.2f}"
        )
    return "\n".join(text)


def ingested_replicas(shared: Path, directory: Path) -> Path:
    """A data directory in `directory` holding both replica datasets, built and ingested."""
    data = directory / "data"
    paths = generate(shared, ["350", "990"], 1, directory)
    subprocess.run(
        [*dices_command(), "ingest", *map(str, paths), "--data", str(data)],
        check=True,
        capture_output=True,
    )
    return data


def add_shared_dir_argument(parser: argparse.ArgumentParser) -> None:
    """--shared-dir: where the replica generator lives (every benchmark builds replicas)."""
    parser.add_argument(
        "--shared-dir",
        type=Path,
        default=Path(os.environ.get("DICES_SHARED", REPO.parent / "shared")),
        help="folder holding data/make_replica.py (default $DICES_SHARED or ../shared)",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh-process runs per tool")
    parser.add_argument("--files", type=Path, nargs="+", help="CSV files to use (no generating)")
    add_shared_dir_argument(parser)
    parser.add_argument("--datasets", nargs="+", choices=["350", "990"], help="replicas to build")
    parser.add_argument("--scale", type=int, default=1, help="generator --scale (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--baseline", type=Path, help="another tree whose dices ingest runs alternated with this"
    )
    args = parser.parse_args(argv)
    baseline = args.baseline.resolve() if args.baseline else None
    datasets = args.datasets or (["350", "990"] if args.scale == 1 else ["350"])
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        directory = Path(temp)
        paths = args.files or generate(args.shared_dir, datasets, args.scale, directory)
        results = [bench(path, args.runs, directory / "data", baseline) for path in paths]
        document = {
            "runs": args.runs,
            "goal": GOAL,
            "scale": args.scale,
            "dices_cli": version("dices-cli"),
            "pandas": version("pandas"),
            "baseline_tree": None if baseline is None else str(baseline),
            "results": [result.to_json() for result in results],
        }
        append("ingest", document)
        if args.json:
            print(json.dumps(document, indent=2))
        else:
            print(table(results, args.runs))


if __name__ == "__main__":
    main()
