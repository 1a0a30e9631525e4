"""Time `dices report` on both replica datasets, and where the time goes.

Goal: the report of both replica datasets with `--by rater_race --by rater_gender` and two
models' predictions of every DICES-350 conversation (`--predictions`: the crowd's share of Yes
as the score, and its flipped copy) is built in under 10 s (a fresh process, median), most of
it the queries.

    python bench/report.py              # build both replicas, ingest, 3 runs
    python bench/report.py --runs 5 --json
    python bench/report.py --data DIR   # an existing data directory, nothing generated
    python bench/report.py --no-predictions   # the report without the models section

In-process, per run, the steps of `dices_cli.report.build_report`: scoring the predictions
(dices evaluate's core), each section's queries (through the engine), drawing every chart
(vl-convert; each chart too, with the letters of its text), writing the page; then the whole
command as a fresh process. Wall and CPU time: on a busy machine CPU is the steadier.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import add_shared_dir_argument, dices_command, ingested_replicas, measure

_Done = TypeVar("_Done")
GOAL_S = 10.0  # the whole command, fresh process, median
BY = ["--by", "rater_race", "--by", "rater_gender"]


def write_predictions(data: Path, target: Path) -> Path:
    """Two models of every DICES-350 conversation in `data`: the crowd's share of Yes as the
    score (label Yes above one half), and the same flipped, which the report warns about."""
    query = ["query", "item-distribution", "-d", "350", "--columns", "item_id,share_yes"]
    done = subprocess.run(
        [*dices_command(), *query, "-f", "csv", "--data", str(data)],
        check=True,
        capture_output=True,
        text=True,
    )
    with target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["model", "item_id", "label", "score"])
        for model, flipped in (("crowd-share", False), ("crowd-share-flipped", True)):
            for row in csv.DictReader(io.StringIO(done.stdout)):
                share = float(row["share_yes"])
                score = 1 - share if flipped else share
                writer.writerow([model, row["item_id"], "Yes" if score > 0.5 else "No", score])
    return target


def letters(svg: str) -> int:
    """Characters of a chart's text (titles, labels, legends). vl-convert measures each text
    by laying it out with the font file mapped anew for every letter (about 0.2 ms each,
    most of it the kernel's), which is most of a chart's drawing time."""
    return sum(len(html.unescape(text)) for text in re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def in_process(
    data: Path, permutations: int | None, predictions: Path | None
) -> dict[str, tuple[float, float]]:
    """One report built in this process: (wall, CPU) seconds per stage. CPU counts every
    thread of the process; on a busy machine it is the steadier figure."""
    from dices_cli.evaluate.evaluation import Settings
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.report import BASELINES, BOOTSTRAP, agreement_options, build_report
    from dices_cli.report.context import Context
    from dices_cli.report.models import ModelsRequest, score_models
    from dices_cli.report.page import Provenance, page
    from dices_cli.report.sections import SECTIONS
    from dices_cli.report.svg import to_svg
    from dices_cli.store.datasets import Store

    store = Store(data)
    chosen, seed = agreement_options(permutations, None)
    stages: dict[str, tuple[float, float]] = {}

    def timed(name: str, action: Callable[[], _Done]) -> _Done:
        wall, cpu = time.perf_counter(), time.process_time()
        done = action()
        stages[name] = (time.perf_counter() - wall, time.process_time() - cpu)
        return done

    wall, cpu = time.perf_counter(), time.process_time()
    context = Context(store, "all", RaterSelection(), BY[1::2], chosen, seed)
    models_request = None
    if predictions is not None:
        settings = Settings(bootstrap=BOOTSTRAP, seed=seed, baselines=BASELINES)
        request = ModelsRequest(str(predictions), None, settings)
        models_request = request
        context.models = timed(
            "predictions (evaluate core)",
            lambda: score_models(store, RaterSelection(), request, context.datasets, context.by),
        )
    built = [timed(f"queries: {build.__name__}", lambda b=build: b(context)) for build in SECTIONS]
    sections = [section for section in built if section is not None]

    def draw(spec: dict[str, Any]) -> str:
        svg = timed("chart", lambda: to_svg(spec))
        # Renamed once drawn: its text, which vl-convert measures letter by letter.
        stages[f"  chart: {spec['title'][:44]} ({letters(svg)} letters)"] = stages.pop("chart")
        return svg

    drawn = timed(
        "charts (vl-convert)",
        lambda: [[draw(figure.spec) for figure in section.figures] for section in sections],
    )
    manifests = [store.open(d).manifest for d in context.datasets]
    timed("page", lambda: page(sections, drawn, Provenance("-", "-", "-", "-", manifests)))
    stages["total in-process"] = (time.perf_counter() - wall, time.process_time() - cpu)
    # The same report as `dices report` builds it: the charts drawn by a second process
    # beside the queries, and how long it waits for them after its last query (from the
    # end of the last section's queries to the last chart drawn). Both share the cores, so
    # the steps take longer here than one after the other above.
    together, waited = build_beside(
        lambda: build_report(
            store, "all", RaterSelection(), BY[1::2], "-", chosen, seed, models_request
        )
    )
    stages["build_report (charts beside the queries)"] = together
    stages["  of which waiting for the charts after the last query"] = (waited, math.nan)
    return stages


def build_beside(build: Callable[[], str]) -> tuple[tuple[float, float], float]:
    """(wall, CPU) seconds of `build`, a `build_report` call, and the seconds from the end of
    its last section's queries to the last of its charts drawn."""
    import dices_cli.report.sections as sections
    from dices_cli.report.svg import Drawer

    ends: dict[str, float] = {"queries": 0.0, "charts": 0.0}
    original_sections, original_draw = sections.SECTIONS, Drawer.draw

    def queried(section: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(context: Any) -> Any:
            built = section(context)
            ends["queries"] = time.perf_counter()
            return built

        return run

    def draw(drawer: Drawer, spec: dict[str, Any]) -> Any:
        future = original_draw(drawer, spec)
        future.add_done_callback(lambda _: ends.__setitem__("charts", time.perf_counter()))
        return future

    sections.SECTIONS = [queried(section) for section in original_sections]
    Drawer.draw = draw
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        assert "<svg" in build()
        spent = (time.perf_counter() - wall, time.process_time() - cpu)
    finally:
        sections.SECTIONS, Drawer.draw = original_sections, original_draw
    return spent, max(0.0, ends["charts"] - ends["queries"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--data", type=Path, help="an ingested data directory (no generating)")
    parser.add_argument("--permutations", type=int, help="for the agreement section")
    parser.add_argument(
        "--no-predictions", action="store_true", help="leave out --predictions (the models)"
    )
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data or ingested_replicas(args.shared_dir, Path(temp))
        extra = ["--permutations", str(args.permutations)] if args.permutations else []
        predictions = None
        if not args.no_predictions:
            predictions = write_predictions(data, Path(temp) / "predictions.csv")
            extra += ["--predictions", str(predictions)]
        runs = [in_process(data, args.permutations, predictions) for _ in range(args.runs)]
        command = [*dices_command(), "report", *BY, *extra, "--data", str(data)]
        command += ["-o", str(Path(temp) / "report.html"), "--force", "-q"]
        process = [measure(command).wall for _ in range(args.runs)]
    results = {name: [run[name] for run in runs] for name in runs[0]}
    results["dices report (process)"] = [(wall, math.nan) for wall in process]
    median = statistics.median(process)
    verdict = "met" if median < GOAL_S else "NOT met"
    summary = {
        name: {
            "median_wall_s": statistics.median(w for w, _ in times),
            "min_wall_s": min(w for w, _ in times),
            "median_cpu_s": statistics.median(c for _, c in times),
        }
        for name, times in results.items()
    }
    document = {"runs": args.runs, "goal_s": GOAL_S, "results": summary}
    append("report", document)
    if args.json:
        print(json.dumps(document, indent=2))
        return
    width = max(map(len, results))
    print(f"{'what'.ljust(width)}  median s  min s  median CPU s")
    print(f"{'-' * width}  --------  -----  ------------")
    for name, times in results.items():
        walls = [w for w, _ in times]
        cpu = statistics.median(c for _, c in times)
        cpu_text = "-" if math.isnan(cpu) else f"{cpu:.3f}"
        line = f"{statistics.median(walls):8.3f}  {min(walls):5.3f}  {cpu_text:>12}"
        print(f"{name.ljust(width)}  {line}")
    print(f"\nmedian and min of {args.runs} runs; goal < {GOAL_S:.0f} s (process): {verdict}")


if __name__ == "__main__":
    main()
