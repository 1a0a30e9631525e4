"""Time `dices judge` against two minimal clients making the same requests, in one run.

Goals: DICES-990 x 3 samples (2,970 requests) at concurrency 32, against a local server that
answers at once, `dices judge` takes at most 1.3 times the wall time of a minimal asyncio +
httpx client and at most 1.3 times the CPU time of a thread pool over the standard
library's `http.client` (a fresh process each, median of the runs), and peaks under 300 MB
of RSS. CPU is the child's user + system time (wait4): the server runs in this process, so
none of its work is counted; each client's start (imports, reading its bodies) is.

    python bench/judge.py                  # build and ingest both replicas, 3 runs each
    python bench/judge.py --runs 5 --json
    python bench/judge.py --data DIR       # an existing data directory, nothing generated
    python bench/judge.py --quick          # one sample, for the smoke test

The server is tests/drivers/judge_server.py, in this process (a thread per connection).
The minimal clients are this file run as `python bench/judge.py --minimal URL CONCURRENCY
BODIES` (httpx) or `--threads URL CONCURRENCY BODIES` (CONCURRENCY threads, each with one
persistent `http.client.HTTPConnection`, TCP_NODELAY as the server): each sends every
request body of the JSON Lines file BODIES, CONCURRENCY at a time, and reads each answer's
JSON; nothing else. dices runs with --refresh (every request asked, every answer cached,
the predictions written) on a copy of the data whose cached answers are removed before each
run (not the copy of the conversations it keeps beside them, `dices_cli.judge.conversations`:
the first run reads them from the Parquet files, as a first run on a data directory does).
dices' modules and this folder's are compiled before the runs, as an installed package's
are (an editable install run with PYTHONDONTWRITEBYTECODE would compile them in each).

Each client's fixed cost is measured beside it: dices the same run answered from the cache
that run wrote, each minimal client with no bodies to send. CPU per request is given both
ways: the run's CPU over the requests (the goal's), and beyond the fixed cost ((run - fixed
run) / requests).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append
from ingest import REPO, add_shared_dir_argument, dices_command, ingested_replicas
from scale import measure

GOAL = 1.3  # dices / httpx client, median wall time
CPU_GOAL = 1.3  # dices / http.client thread pool, median CPU time
DICES = "dices judge"
HTTPX = "httpx client"
THREADS = "http.client threads"
# Each client's fixed cost: dices answered from its cache (the same run, nothing asked), a
# minimal client given no bodies (its interpreter and imports).
FIXED = {DICES: "dices judge, from the cache", HTTPX: "httpx client, no requests"}
FIXED[THREADS] = "http.client threads, no requests"
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


def threads(url: str, concurrency: int, bodies_file: str) -> None:
    """The thread pool: every body POSTed over `concurrency` persistent connections."""
    import http.client
    import socket
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    path = f"{parts.path}/chat/completions"
    headers = {"Content-Type": "application/json"}
    local = threading.local()

    def post(line: str) -> None:
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local.connection = connection
        connection.request("POST", path, body=line.encode(), headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
        json.loads(body)

    # Each body sent as json.dumps wrote it (the httpx client parses and dumps it again).
    lines = Path(bodies_file).read_text().splitlines()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(post, lines))


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

    # Every client's modules compiled first, as an installed package's are: run from this
    # checkout under PYTHONDONTWRITEBYTECODE, each process would compile them again.
    for folder in ("dices_cli", "bench"):
        compileall.compile_dir(REPO / folder, quiet=1)
    bodies = directory / "bodies.jsonl"
    requests = write_bodies(data, samples, bodies)
    nothing = directory / "none.jsonl"
    nothing.write_text("")
    # A copy of the data: each dices run starts from an empty cache, so the run answered
    # from it reads what one run wrote.
    store = directory / "store"
    shutil.copytree(data, store, ignore=shutil.ignore_patterns("judge"), symlinks=True)
    walls: dict[str, list[float]] = {DICES: [], HTTPX: [], THREADS: []}
    walls |= {name: [] for name in FIXED.values()}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    rss: list[float] = []
    with running() as server:
        out = directory / "p.csv"
        command = [*dices_command(), "judge", "--model", "m", "--base-url", server.base_url]
        command += ["--data", str(store), "-d", "990", "--samples", str(samples), "-q"]
        command += ["--concurrency", str(CONCURRENCY), "-o", str(out), "--force"]
        minimal = [server.base_url, str(CONCURRENCY)]
        commands = {
            DICES: [*command, "--refresh"],
            FIXED[DICES]: command,
            HTTPX: [sys.executable, __file__, "--minimal", *minimal, str(bodies)],
            FIXED[HTTPX]: [sys.executable, __file__, "--minimal", *minimal, str(nothing)],
            THREADS: [sys.executable, __file__, "--threads", *minimal, str(bodies)],
            FIXED[THREADS]: [sys.executable, __file__, "--threads", *minimal, str(nothing)],
        }
        for run in range(runs):
            print(f"run {run + 1}/{runs} ...", file=sys.stderr)
            for segment in (store / "judge").glob("calls-*.jsonl"):
                segment.unlink()  # the answers; the conversations' copy is kept
            for name, argv in commands.items():  # alternated: drift in the load hits all
                done = measure(argv)
                walls[name].append(done.wall)
                cpus[name].append(done.cpu)
                if name == DICES:
                    rss.append(done.peak_rss_mb)
    medians = {name: statistics.median(values) for name, values in walls.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
    ratio = medians[DICES] / medians[HTTPX]
    cpu_ratio = cpu_medians[DICES] / cpu_medians[THREADS]
    # CPU a request beyond the client's fixed cost (the run's, less its fixed run's).
    marginal = {
        name: 1000 * (cpu_medians[name] - cpu_medians[FIXED[name]]) / requests
        for name in (DICES, HTTPX, THREADS)
    }
    return {
        "requests": requests,
        "concurrency": CONCURRENCY,
        "runs": runs,
        "wall_median_s": medians,
        "wall_min_s": {name: min(values) for name, values in walls.items()},
        "wall_s": walls,
        "cpu_median_s": cpu_medians,
        "cpu_s": cpus,
        "cpu_per_request_ms": {
            name: 1000 * cpu_medians[name] / requests for name in (DICES, HTTPX, THREADS)
        },
        "cpu_per_request_beyond_fixed_ms": marginal,
        "cpu_ratio_beyond_fixed": marginal[DICES] / marginal[THREADS],
        "ratio": ratio,
        "goal": GOAL,
        "wall_ratio_to_threads": medians[DICES] / medians[THREADS],
        "cpu_ratio": cpu_ratio,
        "cpu_ratio_to_httpx": cpu_medians[DICES] / cpu_medians[HTTPX],
        "cpu_goal": CPU_GOAL,
        "peak_rss_mb": max(rss),
        "memory_goal_mb": MEMORY_GOAL_MB,
        "holds": ratio <= GOAL and cpu_ratio <= CPU_GOAL and max(rss) < MEMORY_GOAL_MB,
    }


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] in (["--minimal"], ["--threads"]):
        url, concurrency, bodies = arguments[1:4]
        (minimal if arguments[0] == "--minimal" else threads)(url, int(concurrency), bodies)
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
    header = f"{'client':<33} {'wall median':>11} {'wall min':>9} {'CPU median':>11}"
    print(f"{header} {'CPU/req':>9} {'beyond fixed':>12}")
    for name, median in result["wall_median_s"].items():
        cpu = result["cpu_median_s"][name]
        line = f"{name:<33} {median:>9.2f} s {result['wall_min_s'][name]:>7.2f} s {cpu:>9.2f} s"
        if name in FIXED:
            per_request = result["cpu_per_request_ms"][name]
            beyond = result["cpu_per_request_beyond_fixed_ms"][name]
            line += f" {per_request:>6.3f} ms {beyond:>9.3f} ms"
        print(line)
    print(f"requests: {result['requests']} at concurrency {result['concurrency']}")
    print(f"dices judge peak RSS: {result['peak_rss_mb']:.0f} MB (goal < {MEMORY_GOAL_MB} MB)")
    print(f"wall: dices / httpx client = {result['ratio']:.2f} (goal <= {GOAL})")
    print(f"CPU: dices / http.client threads = {result['cpu_ratio']:.2f} (goal <= {CPU_GOAL})")
    beyond = result["cpu_ratio_beyond_fixed"]
    print(f"CPU a request beyond each one's fixed cost: dices / http.client threads = {beyond:.2f}")
    verdict = "hold" if result["holds"] else "do NOT all hold"
    print(f"the goals {verdict}")


if __name__ == "__main__":
    main()
