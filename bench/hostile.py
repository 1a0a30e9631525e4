"""Memory and time of the worst hostile inputs of issue 36, each run by `dices` in a fresh
process under an address-space cap (`ulimit -v`), in any tree of the project.

The cases: a double-gzip judge reply, a deep-JSON judge reply and a judge reply with a
logprob of 710 (from a local server), a FIFO where the judge's cache segment goes, a 302
redirect with an endless body on `dices download` (from a local server), a 50,000-column
CSV given to `dices sql --table`, `md5(repeat('a', 1500000000))` under `--timeout 5`, and
`dices ingest` of the packaged DICES-350 sample with 3 million blank lines at its end or in
its middle (Polars once built a row of every column for each).
Each is run once per tree (a hostile input is the same work every time; the figures are of
one run): its wall time, its peak RSS and how it ended. A run still going after the wall
limit is killed (exit `killed`); one over the CPU limit is killed by the system (SIGXCPU).

    python bench/hostile.py                      # this tree
    python bench/hostile.py --tree /tmp/before   # another tree: a worktree of an older commit
    python bench/hostile.py --smoke              # small inputs and short limits (CI)

`--tree DIR` runs `python -m dices_cli` with DIR first on PYTHONPATH, so one installed
environment measures any commit: `git worktree add --detach /tmp/before COMMIT`. The peak
RSS is of the `dices` process alone: a small launcher sets the caps and spawns it (Linux
counts a child's peak RSS from before its exec, so a child of this script would start
with this script's).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import append

HERE = Path(__file__).resolve().parent
MiB = 1 << 20
# The launcher: caps, spawns `python -m dices_cli ARGS`, kills it after the wall limit, and
# prints how it ended (exit code, or -signal), its wall seconds and its peak RSS in KiB.
LAUNCHER = """
import json, os, resource, signal, sys, time
cap, cpu, wall = (int(v) for v in sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
quiet = os.open(os.devnull, os.O_WRONLY)
started = time.monotonic()
pid = os.posix_spawn(sys.executable, [sys.executable, "-m", "dices_cli", *sys.argv[4:]],
                     os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, quiet, 1)])
killed = False
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() - started > wall and not killed:
        os.kill(pid, signal.SIGKILL)
        killed = True
    time.sleep(0.02)
seconds = time.monotonic() - started
code = os.waitstatus_to_exitcode(status)
print(json.dumps({"exit": "killed" if killed else code, "wall_s": round(seconds, 2),
                  "peak_rss_kib": usage.ru_maxrss}), file=sys.stderr)
"""


def gzip_of_zeros(mib: int) -> bytes:
    """The gzip of `mib` MiB of zeros, made without compressing them all: after a full
    flush, every MiB of zeros compresses to the same bytes."""
    zeros = bytes(MiB)
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    head = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    end = packer.flush()[:-8]
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return head + block * (mib - 1) + end + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def completion(logprob: str) -> bytes:
    """A chat completion answering Yes, with a second token of `logprob` (JSON text)."""
    top = f'[{{"token": "Yes", "logprob": -0.2}}, {{"token": "No", "logprob": {logprob}}}]'
    return (
        '{"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": '
        f'[{{"token": "Yes", "logprob": -0.2, "top_logprobs": {top}}}]}}}}]}}'
    ).encode()


GOOD_CSV = b"item_id,rater_id\n1,2\n"
SAMPLE_350 = HERE.parent / "dices_cli" / "data" / "dices_350_sample.csv.gz"
FILLER = b"x" * 65536


class Server(http.server.ThreadingHTTPServer):
    """127.0.0.1, any port: POST answers `reply` (status, headers, body); GET /350.csv is a
    302 with an endless body, GET /moved/350.csv a small file."""

    daemon_threads = True
    reply: tuple[int, dict[str, str], bytes] = (500, {}, b"")

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, headers, body = self.server.reply
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self._send(body)

    def do_GET(self) -> None:
        if self.path == "/moved/350.csv":
            self.send_response(200)
            self.send_header("Content-Length", str(len(GOOD_CSV)))
            self.end_headers()
            self._send(GOOD_CSV)
            return
        self.send_response(302)
        self.send_header("Location", "/moved/350.csv")
        self.end_headers()
        while self._send(FILLER):
            pass

    def _send(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            return True
        except OSError:  # the reader left
            return False


Setup = Callable[[Path, Server], list[str]]


def cases(smoke: bool) -> dict[str, Setup]:
    """Each case: given a scratch directory (holding `data`, an ingested sample) and the
    server, it scripts the server and gives the arguments of `dices`."""

    def judge(data: Path, server: Server, *more: str) -> list[str]:
        args = ["judge", "--model", "m", "--base-url", f"{server.url}/v1", "--data", str(data)]
        return [*args, "--limit", "1", "--retries", "0", "--timeout", "5", *more]

    def double_gzip(scratch: Path, server: Server) -> list[str]:
        bomb = gzip.compress(gzip_of_zeros(64 if smoke else 2048), compresslevel=9)
        json_gzip = {"Content-Encoding": "gzip, gzip", "Content-Type": "application/json"}
        server.reply = (200, json_gzip, bomb)
        return judge(scratch / "data", server)

    def deep_json(scratch: Path, server: Server) -> list[str]:
        levels = 100_000
        server.reply = (200, {"Content-Type": "application/json"}, b"[" * levels + b"]" * levels)
        return judge(scratch / "data", server)

    def logprob_710(scratch: Path, server: Server) -> list[str]:
        server.reply = (200, {"Content-Type": "application/json"}, completion("710"))
        return judge(scratch / "data", server, "-o", str(scratch / "p.csv"), "--force")

    def fifo_segment(scratch: Path, server: Server) -> list[str]:
        (scratch / "data" / "judge").mkdir(exist_ok=True)
        os.mkfifo(scratch / "data" / "judge" / "calls-00000000000000000001-1.jsonl")
        return judge(scratch / "data", server)

    def endless_redirect(scratch: Path, server: Server) -> list[str]:
        digest = hashlib.sha256(GOOD_CSV).hexdigest()
        args = ["download", "350", "--dir", str(scratch / "down"), "--url", f"{server.url}/350.csv"]
        return [*args, "--sha256", digest, "--max-size", "1M", "--retries", "0"]

    def wide_table(scratch: Path, server: Server) -> list[str]:
        columns = 5_000 if smoke else 50_000
        table = scratch / "wide.csv"
        names = ",".join(f"c{i}" for i in range(columns))
        table.write_text(f"{names}\n{','.join('1' * columns)}\n")
        statement = "SELECT count(*) FROM t"
        return ["sql", "--data", str(scratch / "data"), "--table", f"t={table}", statement]

    def long_function(scratch: Path, server: Server) -> list[str]:
        repeat = 10_000_000 if smoke else 1_500_000_000
        statement = f"SELECT md5(repeat('a', {repeat}))"
        return ["sql", "--data", str(scratch / "data"), statement, "--timeout", "5"]

    def blank_lines(middle: bool) -> Setup:
        def setup(scratch: Path, server: Server) -> list[str]:
            rows = gzip.decompress(SAMPLE_350.read_bytes())
            # Where a record starts, by its id and rater id: not inside a quoted context.
            record = re.compile(rb"\n\d+,\d{6,},").search(rows, len(rows) // 2)
            at = record.start() + 1 if middle and record is not None else len(rows)
            blank = b"\n" * (300_000 if smoke else 3_000_000)
            path = scratch / "blank-lines.csv"
            path.write_bytes(rows[:at] + blank + rows[at:])
            return ["ingest", str(path), "-d", "350", "--data", str(scratch / "blank"), "--force"]

        return setup

    return {
        "judge: double-gzip reply": double_gzip,
        "judge: deep JSON reply": deep_json,
        "judge: logprob 710": logprob_710,
        "judge: FIFO cache segment": fifo_segment,
        "download: endless redirect body": endless_redirect,
        "sql --table: 50,000 columns": wide_table,
        "sql --timeout 5: md5(repeat)": long_function,
        "ingest: 3M blank lines at the end": blank_lines(middle=False),
        "ingest: 3M blank lines mid-file": blank_lines(middle=True),
    }


def tree_environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "OPENAI_API_KEY": "", "NO_COLOR": "1"}


def ingest_sample(tree: Path, data: Path) -> None:
    """The packaged sample of both datasets, ingested by `tree`'s own dices."""
    environment = tree_environment(tree)
    paths = subprocess.run(
        [sys.executable, "-c", "from dices_cli.runs.demo import sample_paths as s; print(*s())"],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    command = [sys.executable, "-m", "dices_cli", "ingest", *paths, "--data", str(data), "-q"]
    subprocess.run(command, cwd=tree, env=environment, check=True, capture_output=True)


def run_case(tree: Path, args: list[str], cap: int, cpu: int, wall: int) -> dict[str, Any]:
    """`dices ARGS` from `tree` under the caps: how it ended and its first line on stderr."""
    launcher = [sys.executable, "-c", LAUNCHER, str(cap), str(cpu), str(wall), *args]
    done = subprocess.run(  # from `tree`: `python -m` imports from its working directory first
        launcher,
        cwd=tree,
        env=tree_environment(tree),
        capture_output=True,
        text=True,
        timeout=wall + 60,
    )
    *said, ended = done.stderr.rstrip("\n").split("\n")
    figures = json.loads(ended)
    first = next((line for line in said if line.strip()), "")
    return {
        "exit": figures["exit"],
        "wall_s": figures["wall_s"],
        "peak_rss_mb": round(figures["peak_rss_kib"] / 1024, 1),
        "said": first[:160],
    }


def commit_of(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the tree to measure")
    parser.add_argument("--cap-mib", type=int, default=4096, help="address space (ulimit -v)")
    parser.add_argument("--cpu", type=int, default=120, help="CPU seconds before SIGXCPU")
    parser.add_argument("--wall", type=int, default=60, help="wall seconds before SIGKILL")
    parser.add_argument("--smoke", action="store_true", help="small inputs, short limits")
    parser.add_argument("--json", action="store_true", help="print the document")
    options = parser.parse_args()
    wall = 10 if options.smoke else options.wall
    tree = options.tree.resolve()
    server = Server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rows = []
    with tempfile.TemporaryDirectory() as scratch_root:
        sample = Path(scratch_root) / "sample"
        ingest_sample(tree, sample)
        for name, setup in cases(options.smoke).items():
            scratch = Path(scratch_root) / f"case{len(rows)}"
            shutil.copytree(sample, scratch / "data", symlinks=True)
            args = setup(scratch, server)
            print(f"{name} ...", file=sys.stderr)
            ended = run_case(tree, args, options.cap_mib * MiB, options.cpu, wall)
            rows.append({"case": name, **ended})
    server.shutdown()
    document = {
        "tree": str(tree),
        "tree_commit": commit_of(tree),
        "cap_mib": options.cap_mib,
        "cpu_s": options.cpu,
        "wall_limit_s": wall,
        "smoke": options.smoke,
        "cases": rows,
    }
    if options.json:
        print(json.dumps(document, indent=2))
    else:
        print(f"tree {tree} ({document['tree_commit']}), ulimit -v {options.cap_mib} MiB")
        print(f"{'case':34} {'wall s':>7} {'peak RSS MB':>12} {'exit':>7}  stderr's first line")
        for row in rows:
            figures = f"{row['wall_s']:7.2f} {row['peak_rss_mb']:12.1f} {row['exit']!s:>7}"
            print(f"{row['case']:34} {figures}  {row['said'][:100]}")
    append("hostile", document)


if __name__ == "__main__":
    main()
