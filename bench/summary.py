"""The current table of bench/README.md, drawn from the figures in bench/results/*.jsonl.

    python bench/summary.py            # print the table (the newest run of each bench)
    python bench/summary.py --write    # put it in bench/README.md, between its markers

Each bench script appends one line per run to bench/results/NAME.jsonl (bench/_results.py);
this script reads the newest line of each file and turns its document into rows: what was
measured, the figure, the goal, and whether it holds, with the commit, date and machine load
of the run. A bench whose document it does not know is listed by name, with its file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _results import DEFAULT_DIRECTORY, directory

README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- current figures: begin (python bench/summary.py --write) -->"
END = "<!-- current figures: end -->"

Row = tuple[str, float, str, bool | None]  # what, figure, goal, holds
Reader = Callable[[Any], Iterator[Row]]


def _at_most(what: str, value: float, goal: float, unit: str = "") -> Row:
    holds = None if math.isnan(value) else value <= goal
    return what, value, f"<= {goal:g}{unit}", holds


def _ingest(document: dict[str, Any]) -> Iterator[Row]:
    for result in document["results"]:
        yield _at_most(f"ingest {result['file']} / pandas.read_csv", result["ratio"], 0.8, "x")


def _startup(document: dict[str, Any]) -> Iterator[Row]:
    summary = document["summary"]
    for name, value in summary.items():
        if "/ script" in name:
            yield _at_most(name, value, 1.3, "x")
    yield _at_most("dices --help (wall s)", summary["dices --help (wall s)"], 0.10, " s")


def _output(document: dict[str, Any]) -> Iterator[Row]:
    ratios = document["ratios"]
    yield _at_most("sql -f csv / DuckDB COPY", ratios["csv"], 1.5, "x")
    yield _at_most("sql -o parquet / DuckDB COPY", ratios["parquet"], 1.5, "x")
    yield _at_most("first bytes in a pipe (s)", ratios["first bytes"], 0.5, " s")


def _queries(document: dict[str, Any]) -> Iterator[Row]:
    for name, cold in document.get("cold_start", {}).items():
        yield _at_most(f"{name}, cold start (s)", cold["median_s"], cold["goal_s"], " s")


def _filter(document: dict[str, Any]) -> Iterator[Row]:
    for name, figures in document["results"].items():
        if "in-process" in name:
            yield _at_most(f"filter-raters: {name} (s)", figures["median_s"], document["goal_s"])


def _load(document: dict[str, Any]) -> Iterator[Row]:
    goals = document["goals"]
    ingest = document["ingest"]
    yield _at_most("ingest peak RSS (MB)", ingest["peak_rss_mb"], goals["ingest_peak_rss_mb"])
    for name, query in document["queries"].items():
        yield _at_most(f"{name} on the large file (s)", query["median_s"], goals["query_s"])


def _agreement(document: dict[str, Any]) -> Iterator[Row]:
    for result in document["results"]:
        yield _at_most(f"agreement --by {result['by']} (s)", result["median_s"], document["goal_s"])


def _calibration_disagreement(document: dict[str, Any]) -> Iterator[Row]:
    for result in document["results"]:
        what = f"group-disagreement --by {result['by']} -d {result['dataset']}: p <= 0.05"
        value = result["share_at_most_level"]
        bound = result["bound"]
        goal = "-" if math.isnan(bound) else f"<= {bound:.4f}"
        yield what, value, goal, bool(result["holds"]) if result["tested"] else None


def _report(document: dict[str, Any]) -> Iterator[Row]:
    figures = document["results"].get("dices report (process)")
    if figures:
        yield _at_most("dices report (s)", figures["median_wall_s"], document["goal_s"], " s")


def _prosocial(document: dict[str, Any]) -> Iterator[Row]:
    results = document["results"]
    ratio = results["ingest"]["median_s"] / results["pandas_read_json"]["median_s"]
    yield "ProsocialDialog ingest / pandas.read_json", ratio, "-", None


def _judge(document: dict[str, Any]) -> Iterator[Row]:
    yield _at_most("dices judge / minimal client (wall)", document["ratio"], document["goal"], "x")
    yield _at_most(
        "dices judge peak RSS (MB)", document["peak_rss_mb"], document["memory_goal_mb"], " MB"
    )


def _calibration_groups(document: dict[str, Any]) -> Iterator[Row]:
    for row in document["rows"]:
        what = f"{row['test']} {row['dataset']}: share p<0.05"
        yield _at_most(what, row["rate"], round(row["bound_rate"], 3))


def _within(what: str, value: float, low: float, high: float) -> Row:
    holds = None if math.isnan(value) else low <= value <= high
    return what, value, f"in [{low:g}, {high:g}]", holds


def _calibration_shares(document: dict[str, Any]) -> Iterator[Row]:
    low, high = document["coverage_range"]
    fewest, most = document["level_range"]
    for group in document["groups"]:
        raters = group["raters"]
        yield _within(f"{raters} raters: share coverage", group["share_coverage"], low, high)
        yield _within(
            f"{raters} raters: difference coverage", group["difference_coverage"], low, high
        )
        for alternative, level in group["level"]["ours"].items():
            yield _within(f"{raters} raters: level, {alternative}", level, fewest, most)
    shifted = f"{document['shifted_raters']} raters: power at a {document['shift']} shift"
    for alternative, power in document["power"].items():
        if alternative != "less":  # a shift up: `less` is the wrong side
            goal = document["power_goal"]
            yield f"{shifted}, {alternative}", power["ours"], f">= {goal:g}", power["ours"] >= goal


READERS: dict[str, Reader] = {
    "ingest": _ingest,
    "startup": _startup,
    "output": _output,
    "queries": _queries,
    "filter": _filter,
    "load": _load,
    "agreement": _agreement,
    "calibration_disagreement": _calibration_disagreement,
    "report": _report,
    "prosocial": _prosocial,
    "judge": _judge,
    "calibration_groups": _calibration_groups,
    "calibration_shares": _calibration_shares,
}


def newest(path: Path) -> dict[str, Any] | None:
    """The newest run in a results file (the last line that is JSON)."""
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found = json.loads(line)
        except ValueError:
            continue
    return found


def _figure(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:,.0f}"


def table(folder: Path) -> str:
    lines = [
        "| bench | what | figure | goal | holds | commit | date | load |",
        "| --- | --- | ---: | --- | --- | --- | --- | --- |",
    ]
    for path in sorted(folder.glob("*.jsonl")):
        run = newest(path)
        if run is None:
            continue
        bench = run["bench"]
        commit = run["commit"] + (" (dirty)" if run["dirty"] else "")
        load = "/".join(str(value) for value in run["machine"].get("load", [])[:1])
        where = f"{commit} | {run['date'][:10]} | {load}"
        reader = READERS.get(bench)
        if reader is None:
            lines.append(f"| {bench} | see `bench/results/{path.name}` | | | | {where} |")
            continue
        try:
            rows = list(reader(run["document"]))
        except (KeyError, TypeError, ZeroDivisionError) as error:
            lines.append(f"| {bench} | unreadable document ({error!r}) | | | | {where} |")
            continue
        for what, value, goal, holds in rows:
            said = "-" if holds is None else "yes" if holds else "**no**"
            lines.append(f"| {bench} | {what} | {_figure(value)} | {goal} | {said} | {where} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results",
        type=Path,
        help="the results folder (default: $DICES_BENCH_RESULTS, else bench/results)",
    )
    parser.add_argument("--write", action="store_true", help="update bench/README.md")
    args = parser.parse_args(argv)
    drawn = table(args.results or directory() or DEFAULT_DIRECTORY)
    if not args.write:
        print(drawn)
        return
    text = README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        sys.exit(f"bench/README.md has no markers {BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{drawn}\n{END}{tail}", encoding="utf-8")
    print(drawn)


if __name__ == "__main__":
    main()
