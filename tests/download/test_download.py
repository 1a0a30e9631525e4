"""`dices download` against a local HTTP server on 127.0.0.1: a normal download, a dropped
connection (resumed with Range), wrong bytes, a silent server (timeout), 404, 5xx, no network,
a proxy from the environment, and `--ingest`. Each asserts the exit code, the message and what
is left on disk."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fixtures.dices_csv import build
from typer.testing import CliRunner, Result

from dices_cli import download as download_module
from dices_cli.cli.commands.download import WAYS_ROUND
from dices_cli.cli.main import app
from dices_cli.families import listed, single_file_members
from dices_cli.read.source import DEFAULT_MAX_SIZE, parse_size
from tests.conftest import SHARED

NAME_350 = "diverse_safety_adversarial_dialog_350.csv"
NAME_990 = "diverse_safety_adversarial_dialog_990.csv"
BODY_350 = build("350", items=3, raters=4)
BODY_990 = build("990", items=3, raters=4)
# The five real ProsocialDialog rows, shared out over the three splits.
_REAL_ROWS = SHARED / "data" / "prosocial" / "samples.jsonl"
_LINES = _REAL_ROWS.read_bytes().splitlines(keepends=True) if _REAL_ROWS.exists() else []
PROSOCIAL = {
    "train.json": b"".join(_LINES[:3]),
    "valid.json": b"".join(_LINES[3:4]),
    "test.json": b"".join(_LINES[4:]),
}


# Every published file, and the datasets published as one, as --url's errors list them.
EVERY_FILE = len(download_module.published_files())
SINGLE_FILE = listed(single_file_members(), "or")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def part_name(name: str, url: str) -> str:
    """Where the bytes of `name` from the source at `url` are gathered."""
    return f"{name}.{sha256(url.encode())[:8]}.part"


@dataclass
class Server:
    """What the server holds and how it misbehaves; it records every request."""

    url: str
    files: dict[str, bytes] = field(default_factory=dict)
    drops: int = 0  # the next N answers stop halfway through the body
    failures: int = 0  # the next N answers are 503
    corrupt: bool = False  # every byte of every body flipped
    ranges: bool = True  # serves byte ranges (206)
    stall: threading.Event | None = None  # answer only once this is set
    statuses: dict[str, int] = field(default_factory=dict)  # path -> the error it answers
    reason: str | None = None  # the reason phrase of an error, if not the usual one
    length: bool = True  # says Content-Length (else the body ends when the connection does)
    endless: bool = False  # after the body, the same bytes again, until the reader leaves
    trickle: str | None = None  # "head" or "body": sent a byte every 20 ms, until it leaves
    raw: bytes | None = None  # the whole answer, as it is, to every request
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range)
    closed: threading.Event = field(default_factory=threading.Event)  # a reader left


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            return None

        def do_GET(self) -> None:
            # A proxy is asked for the whole URL: serve it by its path all the same.
            path = urlsplit(self.path).path
            server.requests.append((self.path, self.headers.get("Range")))
            if server.stall is not None:
                server.stall.wait(10)
                return
            if server.raw is not None:
                self.wfile.write(server.raw)
                self.close_connection = True
                return
            if server.failures:
                server.failures -= 1
                self.send_error(503)
                return
            if path in server.statuses or path not in server.files:
                self.send_error(server.statuses.get(path, 404), server.reason)
                return
            if server.trickle == "head":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                self._trickle(b"a")
                return
            body = server.files[path]
            if server.corrupt:
                body = bytes(b ^ 0xFF for b in body)
            start = 0
            asked = self.headers.get("Range")
            if asked and server.ranges:
                start = int(asked.removeprefix("bytes=").removesuffix("-"))
                if start >= len(body):
                    self.send_error(416)
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            if server.ranges:
                self.send_header("Accept-Ranges", "bytes")
            if server.length:
                self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            rest = body[start:]
            self.close_connection = True
            if server.drops:
                server.drops -= 1
                self.wfile.write(rest[: len(rest) // 2])
                return
            if server.trickle == "body":
                self._trickle(rest)
                return
            try:
                self.wfile.write(rest)
                while server.endless:
                    self.wfile.write(rest)
            except OSError:
                server.closed.set()

        def _trickle(self, data: bytes) -> None:
            """`data`, over and over, a byte every 20 ms, until the reader leaves."""
            try:
                while not server.closed.wait(0.02):
                    self.wfile.write(data[:1])
                    self.wfile.flush()
                    data = data[1:] + data[:1]
            except OSError:
                server.closed.set()

    return Handler


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.daemon_threads = True
    state = Server(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield state
    state.closed.set()
    if state.stall is not None:
        state.stall.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the machine's environment, no mirror, and no waiting between tries."""
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.delenv(download_module.BASE_VARIABLE, raising=False)
    monkeypatch.setattr(download_module, "BACKOFF_SECONDS", 0.0)


def fetch_350(runner: CliRunner, server: Server, directory: Path, *more: str) -> Result:
    """`dices download 350` of the server's /350.csv, expecting BODY_350's checksum."""
    server.files["/350.csv"] = BODY_350
    url = f"{server.url}/350.csv"
    args = ["download", "350", "--dir", str(directory), "--url", url, "--sha256", sha256(BODY_350)]
    return runner.invoke(app, [*args, *more])


def listing(directory: Path) -> list[str]:
    return (
        sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))
        if directory.exists()
        else []
    )


def test_download_verifies_and_prints_the_path(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    result = fetch_350(runner, server, tmp_path)
    target = tmp_path / NAME_350
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{target}\n"
    assert result.stderr == (
        f"DICES-350: downloaded from {server.url}/350.csv, {len(BODY_350):,} bytes, "
        f"SHA-256 verified -> {target}\n"
    )
    assert target.read_bytes() == BODY_350
    assert listing(tmp_path) == [NAME_350]
    assert server.requests == [("/350.csv", None)]


def test_a_verified_file_is_not_fetched_again(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    (tmp_path / NAME_350).write_bytes(BODY_350)
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert "DICES-350: already there, " in result.stderr
    assert server.requests == []


def test_a_different_file_in_place_is_refused_without_force(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    target = tmp_path / NAME_350
    target.write_bytes(b"something else\n")
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {target} is already there and is not the DICES-350 file "
        f"(SHA-256 {sha256(b'something else' + bytes([10]))}, expected {sha256(BODY_350)}); "
        "move it away, or replace it with --force\n"
    )
    assert target.read_bytes() == b"something else\n" and server.requests == []
    result = fetch_350(runner, server, tmp_path, "--force")
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == BODY_350


@pytest.fixture
def mirror(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """DICES_DOWNLOAD_BASE serves every file under the published paths; the table's sizes and
    checksums are the test files'."""
    bodies = {"350": BODY_350, "990": BODY_990}
    sources = tuple(
        replace(s, size=len(bodies[s.dataset]), sha256=sha256(bodies[s.dataset]))
        if s.dataset in bodies
        else s
        for s in download_module.published_files()
        if s.dataset in (*bodies, "prosocial")  # the declared datasets: test_download_declared
    )
    monkeypatch.setattr(download_module, "published_files", lambda: sources)
    monkeypatch.setenv(download_module.BASE_VARIABLE, server.url + "/mirror")
    server.files = {
        f"/mirror/350/{NAME_350}": BODY_350,
        f"/mirror/990/{NAME_990}": BODY_990,
        **{f"/mirror/{name}": body for name, body in PROSOCIAL.items()},
    }
    return server


def test_all_from_a_mirror_checks_published_sizes_and_warns_without_checksums(
    runner: CliRunner, mirror: Server, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["download", "all", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    paths = [tmp_path / NAME_350, tmp_path / NAME_990]
    paths += [tmp_path / "prosocial" / name for name in PROSOCIAL]
    assert result.stdout == "".join(f"{p}\n" for p in paths)
    mirrored = f"{mirror.url}/mirror"
    expected = [
        f"DICES-350: downloaded from {mirrored}/350/{NAME_350}, {len(BODY_350):,} bytes, "
        f"SHA-256 verified -> {paths[0]}",
        f"DICES-990: downloaded from {mirrored}/990/{NAME_990}, {len(BODY_990):,} bytes, "
        f"SHA-256 verified -> {paths[1]}",
    ]
    for path, body in zip(paths[2:], PROSOCIAL.values(), strict=True):
        expected.append(
            f"ProsocialDialog: downloaded from {mirrored}/{path.name}, {len(body):,} bytes, "
            f"no published checksum -> {path}"
        )
        expected.append(f"  warning: {path.name} has SHA-256 {sha256(body)}")
    assert result.stderr.splitlines() == expected
    assert [p.read_bytes() for p in paths] == [BODY_350, BODY_990, *PROSOCIAL.values()]
    assert listing(tmp_path) == sorted(
        [NAME_350, NAME_990, "prosocial", *(f"prosocial/{n}" for n in PROSOCIAL)]
    )


def test_files_fetched_before_a_failure_are_reported(
    runner: CliRunner, mirror: Server, tmp_path: Path
) -> None:
    del mirror.files[f"/mirror/990/{NAME_990}"]
    result = runner.invoke(app, ["download", "all", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    target = tmp_path / NAME_350
    assert result.stdout == f"{target}\n"
    assert result.stderr.splitlines() == [
        f"DICES-350: downloaded from {mirror.url}/mirror/350/{NAME_350}, "
        f"{len(BODY_350):,} bytes, SHA-256 verified -> {target}",
        f"Error: {mirror.url}/mirror/990/{NAME_990} answered 404 Not Found",
    ]
    assert listing(tmp_path) == [NAME_350]


def test_a_dropped_connection_resumes_with_a_range_request(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    server.drops = 1
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 0, result.output
    half = len(BODY_350) // 2
    assert server.requests == [("/350.csv", None), ("/350.csv", f"bytes={half}-")]
    assert (tmp_path / NAME_350).read_bytes() == BODY_350
    assert listing(tmp_path) == [NAME_350]


def test_an_interrupted_download_keeps_its_part_for_the_next_run(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    server.drops = 2
    result = fetch_350(runner, server, tmp_path, "--retries", "1")
    half = len(BODY_350) // 2
    fetched = half + (len(BODY_350) - half) // 2  # half, then half of the rest
    url = f"{server.url}/350.csv"
    part = tmp_path / part_name(NAME_350, url)
    assert result.exit_code == 1
    assert result.stderr == (
        f"DICES-350: {url} broke off after {half:,} of {len(BODY_350):,} bytes: the server "
        "closed the connection; trying again in 0 s\n"
        f"Error: {url} broke off after {fetched:,} of {len(BODY_350):,} bytes: the server "
        f"closed the connection (the {fetched:,} bytes fetched are kept in {part} to resume)\n"
    )
    assert listing(tmp_path) == [part.name]
    assert part.read_bytes() == BODY_350[:fetched]
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert server.requests[-1] == ("/350.csv", f"bytes={fetched}-")
    assert listing(tmp_path) == [NAME_350]
    assert (tmp_path / NAME_350).read_bytes() == BODY_350


def test_a_part_longer_than_the_file_starts_over(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    (tmp_path / part_name(NAME_350, f"{server.url}/350.csv")).write_bytes(BODY_350 + b"left over")
    result = fetch_350(runner, server, tmp_path, "--retries", "0")
    assert result.exit_code == 0, result.output
    asked = f"bytes={len(BODY_350) + len(b'left over')}-"
    assert server.requests == [("/350.csv", asked), ("/350.csv", None)]  # 416, then all
    assert listing(tmp_path) == [NAME_350]
    assert (tmp_path / NAME_350).read_bytes() == BODY_350


def test_a_download_in_progress_elsewhere_is_left_alone(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    part = tmp_path / part_name(NAME_350, f"{server.url}/350.csv")
    part.write_bytes(b"theirs")
    with part.open("rb") as theirs:
        fcntl.flock(theirs, fcntl.LOCK_EX)
        result = fetch_350(runner, server, tmp_path, "--force")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {part} is being downloaded by another dices process; wait for it to finish, "
        "then run this again\n"
    )
    assert listing(tmp_path) == [part.name] and part.read_bytes() == b"theirs"
    assert server.requests == []


def test_a_server_without_ranges_starts_over_and_keeps_no_part(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    server.ranges, server.drops = False, 1
    result = fetch_350(runner, server, tmp_path, "--retries", "0")
    assert result.exit_code == 1
    assert result.stderr.endswith("the server closed the connection\n")
    assert listing(tmp_path) == []
    server.drops = 1
    result = fetch_350(runner, server, tmp_path, "--retries", "1")
    assert result.exit_code == 0, result.output
    # Asked for the rest, answered with the whole file (200): started over.
    assert server.requests[-1] == ("/350.csv", f"bytes={len(BODY_350) // 2}-")
    assert (tmp_path / NAME_350).read_bytes() == BODY_350


def test_wrong_bytes_are_an_error_and_never_kept(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    server.corrupt = True
    result = fetch_350(runner, server, tmp_path)
    wrong = sha256(bytes(b ^ 0xFF for b in BODY_350))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350.csv served different bytes "
        f"(SHA-256 {wrong}, expected {sha256(BODY_350)}), which were not kept\n"
    )
    assert listing(tmp_path) == []


def test_a_size_announced_over_the_published_one_is_refused(
    runner: CliRunner,
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    high_water: list[int],
) -> None:
    (source,) = download_module.plan("350")
    small = replace(source, size=100, sha256=sha256(BODY_350[:100]))
    monkeypatch.setattr(download_module, "published_files", lambda: (small,))
    monkeypatch.setenv(download_module.BASE_VARIABLE, server.url)
    server.files[f"/350/{NAME_350}"] = BODY_350
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350/{NAME_350} announced {len(BODY_350):,} bytes, more than "
        "the 100 bytes published\n"
    )
    assert high_water[0] == 0 and listing(tmp_path) == []


def test_a_silent_server_times_out(runner: CliRunner, server: Server, tmp_path: Path) -> None:
    server.stall = threading.Event()
    result = fetch_350(runner, server, tmp_path, "--timeout", "0.2", "--retries", "1")
    assert result.exit_code == 1
    said = f"{server.url}/350.csv could not be reached: no answer within 0.2 s"
    assert result.stderr == (
        f"DICES-350: {said}; trying again in 0 s\n{WAYS_ROUND}\nError: {said}\n"
    )
    assert len(server.requests) == 2
    assert listing(tmp_path) == []


def test_404_is_an_error_at_once(runner: CliRunner, server: Server, tmp_path: Path) -> None:
    url = f"{server.url}/missing.csv"
    args = ["download", "990", "--dir", str(tmp_path), "--url", url]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {url} answered 404 Not Found\n"
    assert server.requests == [("/missing.csv", None)]
    assert listing(tmp_path) == []


def test_5xx_is_tried_again(runner: CliRunner, server: Server, tmp_path: Path) -> None:
    server.failures = 2
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 3
    assert (tmp_path / NAME_350).read_bytes() == BODY_350
    server.failures = 5
    result = fetch_350(runner, server, tmp_path / "again", "--retries", "2")
    assert result.exit_code == 1
    said = f"{server.url}/350.csv answered 503 Service Unavailable"
    # Each fault tried again is said as it happens (issue 23); -q says none of them.
    assert result.stderr == f"DICES-350: {said}; trying again in 0 s\n" * 2 + f"Error: {said}\n"
    assert listing(tmp_path / "again") == []
    server.failures = 5
    result = fetch_350(runner, server, tmp_path / "quiet", "--retries", "2", "-q")
    assert result.stderr == f"Error: {said}\n"


def test_no_network_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/350.csv"
    arguments = ["download", "350", "--dir", str(tmp_path), "--url", url, "--retries", "1"]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 1
    said = f"{url} could not be reached: Connection refused"
    # The try again is said as it happens; the end names the ways round (issue 23).
    assert result.stderr == (
        f"DICES-350: {said}; trying again in 0 s\n{WAYS_ROUND}\nError: {said}\n"
    )
    assert listing(tmp_path) == []
    result = runner.invoke(app, [*arguments, "-q"])
    assert (result.exit_code, result.stderr) == (1, f"Error: {said}\n")


def test_proxy_from_the_environment(
    runner: CliRunner, server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("http_proxy", server.url)
    server.files["/350.csv"] = BODY_350
    url = "http://dices.invalid/350.csv"
    args = ["download", "350", "--dir", str(tmp_path), "--url", url, "--sha256", sha256(BODY_350)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert server.requests == [(url, None)]  # the proxy was asked for the whole URL
    assert (tmp_path / NAME_350).read_bytes() == BODY_350


@pytest.mark.skipif(not _LINES, reason="needs ../shared/data/prosocial/samples.jsonl")
def test_all_ingest_fetches_and_ingests_every_family(
    runner: CliRunner, mirror: Server, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    args = ["download", "all", "--dir", str(tmp_path / "files"), "--ingest", "--data", str(data)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in data.iterdir() if not p.name.startswith(".")) == [
        "350",
        "990",
        "prosocial",
    ]
    info = runner.invoke(app, ["query", "overview", "-d", "prosocial", "--data", str(data)])
    assert info.exit_code == 0, info.output
    rows = [line.split(",")[:5] for line in info.stdout.splitlines()[1:]]
    assert rows == [
        ["prosocial", "train", "1", "3", "9"],
        ["prosocial", "valid", "1", "1", "3"],
        ["prosocial", "test", "1", "1", "3"],
    ]


def test_ingest_what_was_fetched(runner: CliRunner, server: Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = fetch_350(runner, server, tmp_path / "files", "--ingest", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[1] == (
        "DICES-350: 12 rows read = 12 written + 0 rejected; 3 conversations, 4 raters "
        f"-> {data / '350'}"
    )
    assert (data / "350" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["all", "--url", "http://127.0.0.1/x.csv"],
            f"--url is for one file, and all has {EVERY_FILE}: name {SINGLE_FILE}",
        ),
        (
            ["prosocial", "--sha256", "0" * 64],
            f"--sha256 is for one file, and prosocial has 3: name {SINGLE_FILE}",
        ),
        (
            ["350", "--url", "ftp://example.org/x.csv"],
            "--url takes an http:// or https:// address, not 'ftp://example.org/x.csv'",
        ),
        (["350", "--sha256", "abc"], "--sha256 takes 64 hexadecimal digits, not 'abc'"),
    ],
)
def test_usage_errors(runner: CliRunner, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["download", *args, "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\nTry 'dices download -h' for help.\n"
    assert listing(tmp_path) == []


def test_the_defaults_in_help_are_the_core_defaults() -> None:
    from dices_cli.cli.commands import download as command

    assert command.DEFAULT_TIMEOUT == download_module.DEFAULT_TIMEOUT
    assert command.DEFAULT_DEADLINE == download_module.DEFAULT_DEADLINE
    assert command.DEFAULT_RETRIES == download_module.DEFAULT_RETRIES
    assert parse_size(command.DEFAULT_MAX_SIZE) == DEFAULT_MAX_SIZE


@pytest.mark.parametrize("size", ["", "0", "-1", "nan", "10X", "1e30G"])
def test_max_size_is_read_as_ingest_reads_it(runner: CliRunner, tmp_path: Path, size: str) -> None:
    (tmp_path / "a.csv").write_text("id\n")
    for command in (["ingest", str(tmp_path / "a.csv")], ["download", "350"]):
        result = runner.invoke(app, [*command, "--max-size", size])
        assert result.exit_code == 2
        assert result.stderr.startswith(
            f"Error: --max-size must be a size such as 500M or 4G, not {size!r}\n"
        )
    help = runner.invoke(app, ["download", "-h"], env={"COLUMNS": "200"})
    assert "--max-size" in help.stdout and "[default: 2G]" in help.stdout


@pytest.mark.parametrize("ranges", [True, False])
def test_ctrl_c_keeps_a_part_only_when_it_can_be_resumed(
    server: Server, tmp_path: Path, ranges: bool
) -> None:
    server.files["/350.csv"], server.ranges = BODY_350, ranges
    (source,) = download_module.plan("350", f"{server.url}/350.csv", sha256(BODY_350))

    def interrupt(_stage: str, _fraction: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(download_module.download([source], tmp_path, progress=interrupt))
    part = part_name(NAME_350, f"{server.url}/350.csv")
    assert listing(tmp_path) == ([part] if ranges else [])


# --- several sources per file (issue 27) ------------------------------------------------------

SOURCES = ("/one/", "/two/", "/three/")


@pytest.fixture
def three(server: Server, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """DICES-350 published at three sources of the server, in order, with BODY_350's size and
    checksum; the server holds it at none of them yet. The sources' URLs."""
    (declared,) = [f for f in download_module.published_files() if f.dataset == "350"]
    urls = [f"{server.url}{base}{declared.path}" for base in SOURCES]
    wanted = replace(declared, urls=tuple(urls), size=len(BODY_350), sha256=sha256(BODY_350))
    monkeypatch.setattr(download_module, "published_files", lambda: (wanted,))
    return urls


def serve(server: Server, url: str, body: bytes) -> None:
    server.files[urlsplit(url).path] = body


def altered(body: bytes) -> bytes:
    """`body` with one bit of its middle byte flipped: the same size, another SHA-256."""
    middle = len(body) // 2
    return body[:middle] + bytes([body[middle] ^ 1]) + body[middle + 1 :]


def downloaded(url: str, target: Path) -> str:
    return (
        f"DICES-350: downloaded from {url}, {len(BODY_350):,} bytes, SHA-256 verified -> {target}"
    )


def test_a_404_moves_to_the_next_source(
    runner: CliRunner, server: Server, three: list[str], tmp_path: Path
) -> None:
    serve(server, three[1], BODY_350)
    serve(server, three[2], BODY_350)
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path)])
    target = tmp_path / NAME_350
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{target}\n"
    assert result.stderr.splitlines() == [
        f"DICES-350: {three[0]} answered 404 Not Found; tried the next source",
        downloaded(three[1], target),
    ]
    assert target.read_bytes() == BODY_350
    assert listing(tmp_path) == [NAME_350]
    assert [path for path, _ in server.requests] == [urlsplit(u).path for u in three[:2]]


def test_wrong_bytes_are_reported_and_the_next_source_tried(
    runner: CliRunner, server: Server, three: list[str], tmp_path: Path
) -> None:
    wrong = altered(BODY_350)
    serve(server, three[0], wrong)
    server.statuses[urlsplit(three[1]).path] = 410
    serve(server, three[2], BODY_350)
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path)])
    target = tmp_path / NAME_350
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"DICES-350: {three[0]} served different bytes (SHA-256 {sha256(wrong)}, expected "
        f"{sha256(BODY_350)}), which were not kept; tried the next source",
        f"DICES-350: {three[1]} answered 410 Gone; tried the next source",
        downloaded(three[2], target),
    ]
    assert target.read_bytes() == BODY_350
    assert listing(tmp_path) == [NAME_350]


def test_when_every_source_fails_one_line_says_what_each_did(
    runner: CliRunner, server: Server, three: list[str], tmp_path: Path
) -> None:
    serve(server, three[0], b"not the file\n")
    server.statuses[urlsplit(three[1]).path] = 503
    serve(server, three[2], BODY_350 + b"more")
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path), "--retries", "1"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"DICES-350: {three[1]} answered 503 Service Unavailable; trying again in 0 s\n"
        "Error: no source served the DICES-350 file: "
        f"{three[0]} served different bytes (13 bytes, expected {len(BODY_350):,}), which were "
        f"not kept; {three[1]} answered 503 Service Unavailable; "
        f"{three[2]} announced {len(BODY_350) + 4:,} bytes, more than the {len(BODY_350):,} "
        "bytes published\n"
    )
    assert listing(tmp_path) == []
    assert [path for path, _ in server.requests] == [
        urlsplit(three[0]).path,
        *[urlsplit(three[1]).path] * 2,  # tried again once, as 5xx answers are
        urlsplit(three[2]).path,
    ]


def test_a_part_from_one_source_is_never_resumed_from_another(
    runner: CliRunner, server: Server, three: list[str], tmp_path: Path
) -> None:
    """The first source breaks off, keeping its .part; in the next run it fails, and the
    second source is asked for the whole file, not for the rest of the first one's. Once
    the file is in place, the first source's .part is removed."""
    serve(server, three[0], altered(BODY_350))  # broken, and cut short
    server.drops = 1
    args = ["download", "350", "--dir", str(tmp_path), "--retries", "0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    first = tmp_path / part_name(NAME_350, three[0])
    assert listing(tmp_path) == [first.name]
    kept = first.read_bytes()
    assert 0 < len(kept) < len(BODY_350)
    assert result.stderr.startswith(
        f"Error: no source served the DICES-350 file: {three[0]} broke off after "
        f"{len(kept):,} of {len(BODY_350):,} bytes: the server closed the connection (the "
        f"{len(kept):,} bytes fetched are kept in {first} to resume); {three[1]} answered 404"
    )

    server.statuses[urlsplit(three[0]).path] = 503
    serve(server, three[1], BODY_350)
    server.requests.clear()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert server.requests == [
        (urlsplit(three[0]).path, f"bytes={len(kept)}-"),  # its own part, from its own source
        (urlsplit(three[1]).path, None),  # the whole file
    ]
    assert (tmp_path / NAME_350).read_bytes() == BODY_350
    assert listing(tmp_path) == [NAME_350]  # the first source's part is gone


def test_quiet_says_nothing_about_the_sources(
    runner: CliRunner, server: Server, three: list[str], tmp_path: Path
) -> None:
    serve(server, three[2], BODY_350)
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout == f"{tmp_path / NAME_350}\n"


def test_a_mirror_and_a_url_are_the_only_source(
    runner: CliRunner,
    server: Server,
    three: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DICES_DOWNLOAD_BASE and --url replace the list, and are verified the same way."""
    (declared,) = download_module.published_files()
    monkeypatch.setenv(download_module.BASE_VARIABLE, f"{server.url}/mirror/")
    (mirrored,) = download_module.plan("350")
    assert mirrored.urls == (f"{server.url}/mirror/{declared.path}",)
    assert (mirrored.size, mirrored.sha256) == (declared.size, declared.sha256)
    serve(server, mirrored.urls[0], b"not the file\n")
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {mirrored.urls[0]} served different bytes (13 bytes, expected "
        f"{len(BODY_350):,}), which were not kept\n"
    )
    (given,) = download_module.plan("350", url=f"{server.url}/elsewhere.csv")
    assert given.urls == (f"{server.url}/elsewhere.csv",)
    assert (given.size, given.sha256) == (declared.size, declared.sha256)
    assert [path for path, _ in server.requests] == [urlsplit(mirrored.urls[0]).path]


def test_dry_run_lists_every_source_and_fetches_nothing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The declarations as they are: three DICES sources, one ProsocialDialog source."""

    def once_per_run() -> None:
        raise AssertionError("no request")

    monkeypatch.setattr(download_module.urllib.request, "build_opener", once_per_run)
    (tmp_path / NAME_990).write_bytes(b"something else\n")
    result = runner.invoke(
        app, ["download", "all", "--dry-run", "--dir", str(tmp_path), "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    repository = "https://raw.githubusercontent.com/google-research-datasets/dices-dataset"
    commits = (
        "b5596d9edd585361967991a591abc7b11fb1f7a3",
        "9c0eca5cda4d89ebbf380b831f70abfbb88d9306",
        "main",
    )
    hugging = "https://huggingface.co/datasets/allenai/prosocial-dialog/resolve/main"
    here = {
        "350": f"not here yet: {tmp_path / NAME_350}",
        "990": f"here, and not the published file (15 bytes, expected 50,399,432): "
        f"{tmp_path / NAME_990}",
    }
    expected = [["dataset", "file", "size", "sha256", "source", "url", "here"]]
    for name, size, digest in (
        ("350", 31_143_485, "63cb8620eb04e64957f9e45b1f7cb3d079c4eed8e8b28909f46e0b7038ce4301"),
        ("990", 50_399_432, "14332b6391cdee80383b765c734de3bebf6d8553141ee7d2f47ef0910a12fcf7"),
    ):
        file = f"diverse_safety_adversarial_dialog_{name}.csv"
        expected += [
            [f"DICES-{name}", file, str(size), digest, str(n), url, here[name]]
            for n, url in enumerate((f"{repository}/{c}/{name}/{file}" for c in commits), 1)
        ]
    for split in ("train", "valid", "test"):
        where = tmp_path / "prosocial" / f"{split}.json"
        expected.append(
            [
                *("ProsocialDialog", f"prosocial/{split}.json", "", "", "1"),
                *(f"{hugging}/{split}.json", f"not here yet: {where}"),
            ]
        )
    # The declared datasets' rows follow (test_download_declared.py).
    assert list(csv.reader(io.StringIO(result.stdout)))[: len(expected)] == expected
    assert result.stderr == ""
    assert listing(tmp_path) == [NAME_990]


def test_dry_run_says_what_is_here(runner: CliRunner, three: list[str], tmp_path: Path) -> None:
    (tmp_path / NAME_350).write_bytes(BODY_350)
    plan = ["download", "350", "--dry-run", "--dir", str(tmp_path), "--columns", "here"]
    result = runner.invoke(app, [*plan, "--limit", "1", "-f", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"here\nhere and verified: {tmp_path / NAME_350}\n"
    (tmp_path / NAME_350).unlink()
    (tmp_path / NAME_350).mkdir()
    result = runner.invoke(app, [*plan, "--limit", "1", "-f", "csv"])
    assert result.exit_code == 0, result.output
    assert list(csv.reader(io.StringIO(result.stdout))) == [
        ["here"],
        [f"{tmp_path / NAME_350} is a directory, not a file; move it away"],
    ]
    result = runner.invoke(app, ["download", "350", "--columns", "here"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --format, --columns, --sort and --limit shape the --dry-run listing; a "
        "download prints the paths of its files\n"
    )
    result = runner.invoke(app, ["download", "350", "--dry-run", "--ingest"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --dry-run fetches nothing, so there is nothing to --ingest\n"
    )


# --- bounded, safe downloads (issue 22, items 4, 5 and 9) -------------------------------------


@pytest.fixture
def high_water(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The most bytes any .part held at once, recorded as they are written."""
    most = [0]
    write = download_module._PartFile.write

    def recorded(part: download_module._PartFile, chunk: bytes) -> None:
        write(part, chunk)
        most[0] = max(most[0], part.size)

    monkeypatch.setattr(download_module._PartFile, "write", recorded)
    return most


def test_an_endless_body_stops_at_max_size(
    runner: CliRunner, server: Server, tmp_path: Path, high_water: list[int]
) -> None:
    server.length, server.endless = False, True
    result = fetch_350(runner, server, tmp_path, "--max-size", "64K")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350.csv sent more than the 64 KiB that --max-size allows for a "
        "file without a published size, which were not kept\n"
    )
    assert high_water[0] <= 64 << 10
    assert listing(tmp_path) == []


def test_an_announced_size_over_max_size_is_refused_before_any_byte(
    runner: CliRunner, server: Server, tmp_path: Path, high_water: list[int]
) -> None:
    result = fetch_350(runner, server, tmp_path, "--max-size", "1K")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350.csv announced {len(BODY_350):,} bytes, more than the 1 KiB "
        "that --max-size allows for a file without a published size\n"
    )
    assert high_water[0] == 0 and listing(tmp_path) == []


def test_no_more_than_the_content_length_is_read(
    runner: CliRunner, server: Server, tmp_path: Path, high_water: list[int]
) -> None:
    server.endless = True  # the body, then more of it, past its Content-Length
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / NAME_350).read_bytes() == BODY_350
    assert high_water[0] == len(BODY_350)


def test_a_body_longer_than_the_published_size_is_cut_off_at_it(
    runner: CliRunner,
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    high_water: list[int],
) -> None:
    (declared,) = download_module.plan("350")
    small = replace(declared, size=100, sha256=sha256(BODY_350[:100]))
    monkeypatch.setattr(download_module, "published_files", lambda: (small,))
    monkeypatch.setenv(download_module.BASE_VARIABLE, server.url)
    server.files[f"/350/{NAME_350}"] = BODY_350
    server.length = False
    result = runner.invoke(app, ["download", "350", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350/{NAME_350} sent more than the 100 bytes published, which "
        "were not kept\n"
    )
    assert high_water[0] <= 100 and listing(tmp_path) == []


@pytest.mark.parametrize("slow", ["head", "body"])
def test_a_server_sending_a_byte_at_a_time_meets_the_deadline(
    runner: CliRunner, server: Server, tmp_path: Path, slow: str
) -> None:
    """A byte every 20 ms never trips a 5 s timeout; the 0.5 s deadline ends it, tries and
    all, whether the server trickles its headers or its body."""
    server.trickle = slow
    started = time.monotonic()
    result = fetch_350(
        runner, server, tmp_path, "--deadline", "0.5", "--timeout", "5", "--retries", "3"
    )
    took = time.monotonic() - started
    assert result.exit_code == 1
    assert took < 4, took
    url = f"{server.url}/350.csv"
    part = tmp_path / part_name(NAME_350, url)
    kept = rf" \(the ([0-9,]+) bytes fetched are kept in {re.escape(str(part))} to resume\)"
    pattern = (
        rf"Error: {re.escape(url)} did not serve the whole file within the 0\.5 s that "
        r"--deadline allows" + (kept if slow == "body" else "")
    )
    assert re.fullmatch(pattern + "\n", result.stderr), result.stderr
    assert len(server.requests) == 1  # no try after the deadline
    if slow == "body":
        assert listing(tmp_path) == [part.name]
        assert part.read_bytes() == BODY_350[: part.stat().st_size]
    else:
        assert listing(tmp_path) == []


def run_dices(*args: str) -> subprocess.CompletedProcess[str]:
    """`dices ARGS` in a fresh process that must end within 60 s: one that could hang on a
    FIFO must not hang the test run."""
    return subprocess.run(
        [sys.executable, "-c", "from dices_cli.cli.main import run; run()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_dir_must_be_a_directory(runner: CliRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for directory in ("/dev/zero", str(fifo)):
        result = run_dices("download", "350", "--dir", directory)
        assert result.returncode == 2
        assert result.stderr == (
            f"Error: --dir {directory} is not a directory\nTry 'dices download -h' for help.\n"
        )


def test_a_fifo_or_directory_where_the_file_goes_is_refused_unread(
    server: Server, tmp_path: Path
) -> None:
    target = tmp_path / NAME_350
    url = f"{server.url}/350.csv"
    os.mkfifo(target)
    result = run_dices("download", "350", "--dir", str(tmp_path), "--url", url)
    assert result.returncode == 1
    assert result.stderr == f"Error: {target} is a FIFO, not a file; move it away\n"
    target.unlink()
    target.mkdir()
    result = run_dices("download", "350", "--dir", str(tmp_path), "--url", url, "--force")
    assert result.returncode == 1
    assert result.stderr == f"Error: {target} is a directory, not a file; move it away\n"
    assert server.requests == []


@pytest.mark.parametrize(
    "kind", ["directory", "FIFO", "symbolic link", "dangling link", "hard link"]
)
def test_a_part_that_is_not_a_file_of_ours_is_refused_and_left_alone(
    server: Server, tmp_path: Path, kind: str
) -> None:
    """Nothing is written through it, nothing outside --dir changes, no request is made."""
    url = f"{server.url}/350.csv"
    part = tmp_path / "files" / part_name(NAME_350, url)
    part.parent.mkdir()
    outside = tmp_path / "precious"
    outside.write_bytes(b"keep me")
    made = {
        "directory": lambda: part.mkdir(),
        "FIFO": lambda: os.mkfifo(part),
        "symbolic link": lambda: part.symlink_to(outside),
        "dangling link": lambda: part.symlink_to(tmp_path / "nothing"),
        "hard link": lambda: os.link(outside, part),
    }
    made[kind]()
    what = {
        "directory": "a directory",
        "FIFO": "a FIFO",
        "symbolic link": "a symbolic link",
        "dangling link": "a symbolic link",
        "hard link": "a file with other names",
    }[kind]
    server.files["/350.csv"] = BODY_350
    args = ["download", "350", "--dir", str(part.parent), "--url", url, "--sha256"]
    result = run_dices(*args, sha256(BODY_350), "--force")
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {part} is {what}, not a download of dices; move it away, then run this again\n"
    )
    assert outside.read_bytes() == b"keep me"
    assert not (tmp_path / "nothing").exists()
    assert os.path.lexists(part) and listing(part.parent) == [part.name]
    assert server.requests == []


def test_what_a_server_says_reaches_the_terminal_escaped(
    runner: CliRunner, server: Server, tmp_path: Path
) -> None:
    server.statuses["/350.csv"], server.reason = 404, "Not \x1b]0;owned\x07\x1b[2JFound\x9b"
    result = fetch_350(runner, server, tmp_path)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {server.url}/350.csv answered 404 Not \\x1b]0;owned\\x07\\x1b[2JFound\\x9b\n"
    )
    server.raw = b"HTTP/1.1 2\x1b[31m00 OK\r\n\r\n"
    result = fetch_350(runner, server, tmp_path, "--retries", "0")
    assert result.exit_code == 1
    assert result.stderr == (
        f"{WAYS_ROUND}\n"
        f"Error: {server.url}/350.csv could not be reached: HTTP/1.1 2\\x1b[31m00 OK\\r\\n\n"
    )


def test_an_address_with_control_characters_is_a_usage_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["download", "350", "--dir", str(tmp_path), "--url", "http://h/\x1b[2J"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --url takes an http:// or https:// address, not 'http://h/\\x1b[2J'\n"
    )
