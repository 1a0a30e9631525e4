"""Time `dices judge` against a minimal asyncio + httpx client making the same requests.

Goal: DICES-990 x 3 samples (2,970 requests) at concurrency 32, against a local server that
answers at once, takes at most 1.3 times the wall time of the minimal client (a fresh
process each, median of the runs), and `dices judge` peaks under 300 MB of RSS.

    python bench/judge.py                  # build and ingest both replicas, 3 runs each
    python bench/judge.py --runs 5 --json
    python bench/judge.py --data DIR       # an existing data directory, nothing generated
    python bench/judge.py --quick          # one sample, for the smoke test

The server is tests/drivers/judge_server.py, in this process (a thread per connection).
The minimal client is this file run as `python bench/judge.py --minimal URL CONCURRENCY
BODIES`: it sends each request body of the JSON Lines file BODIES, CONCURRENCY at a time,
and reads each answer's JSON; nothing else. dices runs with --refresh (every request
asked, every answer cached, the predictions written).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import REPO, add_shared_dir_argument, dices_command, ingested_replicas, measure

GOAL = 1.3  # dices / minimal client, median wall time
MEMORY_GOAL_MB = 300
CONCURRENCY = 32
SAMPLES = 3


def minimal(url: str, concurrency: int, bodies_file: str) -> None:
    """The minimal client: every body POSTed, `concurrency` at a time, each answer parsed."""
    import httpx

    bodies = [json.loads(line) for line in Path(bodies_file).read_text().splitlines()]

    async def run() -> None:
        pending = iter(bodies)
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:

            async def worker() -> None:
                for body in pending:
                    response = await client.post(f"{url}/chat/completions", json=body)
                    response.raise_for_status()
                    response.json()

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    asyncio.run(run())


def write_bodies(data: Path, samples: int, path: Path) -> int:
    """The request bodies `dices judge -d 990 --samples N` sends, one JSON a line."""
    sys.path.insert(0, str(REPO))
    from dices_cli.judge.plan import Settings, load_items, plan, request_body
    from dices_cli.judge.prompts import load_prompt
    from dices_cli.store.datasets import Store

    settings = Settings(
        model="m", prompt=load_prompt("dices-safety"), dataset="990", samples=samples
    )
    calls = plan(settings, load_items(Store(data), settings), {})
    with path.open("w") as handle:
        for call in calls:
            handle.write(json.dumps(request_body(settings, call)) + "\n")
    return len(calls)


def bench(data: Path, runs: int, samples: int, directory: Path) -> dict[str, Any]:
    from tests.drivers.judge_server import running

    bodies = directory / "bodies.jsonl"
    requests = write_bodies(data, samples, bodies)
    walls: dict[str, list[float]] = {"dices judge": [], "minimal client": []}
    rss: list[float] = []
    with running() as server:
        for run in range(runs):
            print(f"run {run + 1}/{runs} ...", file=sys.stderr)
            out = directory / "p.csv"
            command = [*dices_command(), "judge", "--model", "m", "--base-url", server.base_url]
            command += ["--data", str(data), "-d", "990", "--samples", str(samples), "-q"]
            command += ["--concurrency", str(CONCURRENCY), "--refresh", "-o", str(out), "--force"]
            done = measure(command)
            walls["dices judge"].append(done.wall)
            rss.append(done.peak_rss_mb)
            script = [sys.executable, __file__, "--minimal", server.base_url]
            walls["minimal client"].append(measure([*script, str(CONCURRENCY), str(bodies)]).wall)
    medians = {name: statistics.median(values) for name, values in walls.items()}
    ratio = medians["dices judge"] / medians["minimal client"]
    return {
        "requests": requests,
        "concurrency": CONCURRENCY,
        "runs": runs,
        "wall_median_s": medians,
        "wall_min_s": {name: min(values) for name, values in walls.items()},
        "ratio": ratio,
        "goal": GOAL,
        "peak_rss_mb": max(rss),
        "memory_goal_mb": MEMORY_GOAL_MB,
        "holds": ratio <= GOAL and max(rss) < MEMORY_GOAL_MB,
    }


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--minimal"]:
        url, concurrency, bodies = arguments[1:4]
        minimal(url, int(concurrency), bodies)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per client")
    parser.add_argument("--data", type=Path, help="an existing data directory holding DICES-990")
    parser.add_argument("--quick", action="store_true", help="one sample a conversation")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_shared_dir_argument(parser)
    options = parser.parse_args(arguments)
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        data = options.data or ingested_replicas(options.shared_dir, directory)
        result = bench(data, options.runs, 1 if options.quick else SAMPLES, directory)
    append("judge", result)
    if options.json:
        print(json.dumps(result, indent=2))
        return
    for name, median in result["wall_median_s"].items():
        print(f"{name:<16} median {median:.2f} s  min {result['wall_min_s'][name]:.2f} s")
    print(f"requests: {result['requests']} at concurrency {result['concurrency']}")
    print(f"dices judge peak RSS: {result['peak_rss_mb']:.0f} MB (goal < {MEMORY_GOAL_MB} MB)")
    verdict = "holds" if result["holds"] else "does NOT hold"
    print(f"ratio dices / minimal = {result['ratio']:.2f} (goal <= {GOAL}): the goal {verdict}")


if __name__ == "__main__":
    main()
