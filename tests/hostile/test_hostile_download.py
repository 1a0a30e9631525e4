"""`dices download` against HTTP servers that lie: status lines with control characters or
none at all, Content-Length too small, too large, huge, negative or not a number, chunked
bodies well and badly framed, Content-Range and Location that point anywhere, bodies cut
short, altered, padded or endless. Hypothesis draws the answers; the runs of `dices
download` go a few to a fresh process under the memory cap of
`tests/hostile/test_bounded_input.py`.

Whatever the server does, the run ends with exit 0 and exactly the expected bytes kept, or
exit 1 and one line with nothing kept but a resumable `.part`; it writes no more than
`--max-size`, shows no control character on the terminal, and its peak memory stays under
the fixed allowance of the bounded-input tests.
"""

from __future__ import annotations

import hashlib
import socket
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.dices_csv import build
from hypothesis import event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.commands.download import WAYS_ROUND
from dices_cli.cli.main import app
from tests.hostile.test_bounded_input import (
    FIXED_MEMORY,
    assert_clean,
    run_capped,
    run_capped_each,
)

pytestmark = pytest.mark.slow  # a hostile corpus

GOOD = build("350", items=3, raters=4)
NAME = "diverse_safety_adversarial_dialog_350.csv"
MAX_SIZE = 1 << 20  # --max-size 1M: no published size applies with --sha256
FILLER = b"x" * (1 << 16)


@dataclass(frozen=True)
class Lie:
    """One answer, sent as it is to every request; `endless`: then FILLER until the reader
    leaves."""

    head: bytes
    body: bytes
    endless: bool

    def __repr__(self) -> str:  # short, for Hypothesis's falsifying example
        return f"Lie(head={self.head!r}, body={len(self.body)} bytes, endless={self.endless})"


def chunked(body: bytes, framing: str) -> bytes:
    if framing == "bad size":
        return b"zz\r\n" + body + b"\r\n0\r\n\r\n"
    if framing == "unended":
        return b"%x\r\n" % len(body) + body
    return b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


@st.composite
def lies(draw: st.DrawFn) -> Lie:
    code = draw(st.sampled_from([b"200", b"206", b"404", b"410", b"302", b"416", b"503", b"2x0"]))
    reason = draw(
        st.one_of(
            st.sampled_from([b"OK", b"Not \x1b[2JFound", b"\x9b31m\x07", b"\xff\xfe", b""]),
            st.binary(max_size=24).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
        )
    )
    status = draw(
        st.sampled_from(
            [
                b"HTTP/1.1 " + code + b" " + reason,
                b"HTTP/1.0 " + code + b" " + reason,
                b"\x1b]0;title\x07",  # no status line
                b"",  # nothing before the blank line
            ]
        )
    )
    body = draw(
        st.sampled_from(
            [
                GOOD,
                GOOD[: len(GOOD) // 2],
                GOOD + b"more",
                GOOD[:-1] + bytes([GOOD[-1] ^ 1]),
                b"",
            ]
        )
    )
    headers = []
    length = draw(
        st.one_of(
            st.none(),
            st.just(str(len(body)).encode()),
            st.integers(0, 10**18).map(lambda n: str(n).encode()),
            st.sampled_from([b"-1", b"abc", b"\xb2", b" 12", b"12, 13"]),
        )
    )
    if length is not None:
        headers.append(b"Content-Length: " + length)
    framing = draw(st.sampled_from([None, "good", "bad size", "unended"]))
    if framing is not None:
        headers.append(b"Transfer-Encoding: chunked")
        body = chunked(body, framing)
    headers += draw(
        st.lists(
            st.sampled_from(
                [
                    b"Accept-Ranges: bytes",
                    b"Content-Range: bytes 0-",
                    b"Content-Range: bytes 5-9/10",
                    b"Content-Range: \x1b[31m",
                    b"Location: /350.csv",
                    b"Location: file:///etc/passwd",
                    b"X-Note: \x1b]52;c;cHduZWQ=\x07",
                ]
            ),
            max_size=3,
        )
    )
    head = b"\r\n".join([status, *headers]) + b"\r\n\r\n"
    return Lie(head, body, endless=draw(st.booleans()))


class LyingServer:
    """A TCP server on 127.0.0.1 that answers every request with `lie`."""

    def __init__(self) -> None:
        self.lie = Lie(b"", b"", endless=False)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/350.csv"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        lie = self.lie
        with connection:
            try:
                asked = b""
                while b"\r\n\r\n" not in asked and len(asked) < 1 << 16:
                    got = connection.recv(4096)
                    if not got:
                        return
                    asked += got
                connection.sendall(lie.head + lie.body)
                while lie.endless:
                    connection.sendall(FILLER)
            except OSError:
                return  # the reader left


# The lies of an example, each told by a server of its own (so that a redirect it names is
# answered with the same lie), to one `dices download` each: the downloads run one after the
# other in one capped process, whose peak bounds each one's.
LIES_PER_RUN = 5


@pytest.fixture(scope="module")
def lying() -> Iterator[list[LyingServer]]:
    servers = [LyingServer() for _ in range(LIES_PER_RUN)]
    yield servers
    for server in servers:
        server.listener.close()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# Hypothesis' first example is its simplest: one more example than the profile's share gives
# as many drawn lies as the profile's examples.
@settings(max_examples=settings.default.max_examples // LIES_PER_RUN + 1)
@given(told=st.lists(lies(), min_size=LIES_PER_RUN, max_size=LIES_PER_RUN))
def test_a_lying_server_gets_the_file_or_one_clean_line(
    lying: list[LyingServer], told: list[Lie]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        commands, directories = [], []
        for number, (server, lie) in enumerate(zip(lying, told, strict=True)):
            server.lie = lie
            directory = Path(scratch) / str(number)
            directory.mkdir()
            args = ["download", "350", "--dir", str(directory), "--url", server.url]
            args += ["--sha256", hashlib.sha256(GOOD).hexdigest(), "--max-size", "1M"]
            args += ["--retries", "0", "--timeout", "2", "--deadline", "5"]
            commands.append(args)
            directories.append(directory)

        ended, peak = run_capped_each(commands)

        assert peak < FIXED_MEMORY, f"{peak >> 20} MiB"
        for (code, stderr), server, directory in zip(ended, lying, directories, strict=True):
            event(f"exit {code}")  # --hypothesis-show-statistics: how many were served
            assert_clean(code, stderr, 0 if code == 0 else 1)
            # A source that could not be reached also gets the ways round (a fixed line).
            shown = stderr.removesuffix("\n").removeprefix(f"{WAYS_ROUND}\n")
            assert "\n" not in shown, stderr
            assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in shown), stderr
            if code == 0:
                assert listing(directory) == [NAME]
                assert (directory / NAME).read_bytes() == GOOD
                assert shown.startswith(f"DICES-350: downloaded from {server.url}, ")
            else:
                assert shown.startswith(f"Error: {server.url} "), stderr
                left = listing(directory)
                assert left in ([], [p.name for p in directory.glob(f"{NAME}.*.part")]), left
                assert all(p.stat().st_size <= MAX_SIZE for p in directory.iterdir())


# --- redirects, directories and names that lead elsewhere (issue 36, causes 4, 9, 19) ------


class RoutedServer(LyingServer):
    """A `LyingServer` that answers each path with its own lie (`routes`), and `lie` to any
    other; it records the paths asked for."""

    def __init__(self) -> None:
        self.routes: dict[bytes, Lie] = {}
        self.asked: list[bytes] = []
        super().__init__()
        self.base = self.url.removesuffix("/350.csv")

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                asked = b""
                while b"\r\n\r\n" not in asked and len(asked) < 1 << 16:
                    got = connection.recv(4096)
                    if not got:
                        return
                    asked += got
                path = asked.split(b" ", 2)[1] if asked.count(b" ") >= 2 else b""
                self.asked.append(path)
                lie = self.routes.get(path, self.lie)
                connection.sendall(lie.head + lie.body)
                while lie.endless:
                    connection.sendall(FILLER)
            except OSError:
                return  # the reader left


def served(body: bytes) -> Lie:
    return Lie(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), body, endless=False)


def redirect(location: bytes, endless: bool = False) -> Lie:
    return Lie(b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n\r\n", b"", endless)


@pytest.fixture
def routed() -> Iterator[RoutedServer]:
    server = RoutedServer()
    yield server
    server.listener.close()


def fetch_args(url: str, scratch: str, *more: str) -> list[str]:
    args = ["download", "350", "--dir", scratch, "--url", url]
    return [*args, "--sha256", hashlib.sha256(GOOD).hexdigest(), "--max-size", "1M", *more]


def test_a_redirect_with_an_endless_body_is_followed_unread(
    routed: RoutedServer, tmp_path: Path
) -> None:
    """urllib's redirect handler reads a redirect's body whole: an endless one filled memory
    (817 MiB against the 300 MiB allowance). It is closed unread, and the file fetched."""
    routed.routes[b"/350.csv"] = redirect(b"/moved/350.csv", endless=True)
    routed.routes[b"/moved/350.csv"] = served(GOOD)
    args = fetch_args(routed.url, str(tmp_path), "--retries", "0", "--deadline", "60")

    code, stderr, peak = run_capped(args, cpu=60)

    assert_clean(code, stderr, 0)
    assert stderr.startswith(f"DICES-350: downloaded from {routed.url}, "), stderr
    assert (tmp_path / NAME).read_bytes() == GOOD
    assert peak < FIXED_MEMORY, f"{peak >> 20} MiB"
    assert routed.asked == [b"/350.csv", b"/moved/350.csv"]


class Dribbler:
    """A TCP server on 127.0.0.1 that sends an FTP greeting a byte a second, for at most
    `seconds`, to whoever connects: read through, it outlasts any deadline under it."""

    def __init__(self, seconds: int = 20) -> None:
        self.seconds = seconds
        self.connected = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return  # closed
        self.connected.set()
        with connection:
            for byte in (b"220 " + b"x" * self.seconds)[: self.seconds]:
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(1)


@pytest.mark.parametrize(
    "location",
    [
        "ftp://127.0.0.1:{port}/350.csv",
        "file:///etc/passwd",
        "data:text/plain,abc",
        "gopher://127.0.0.1:{port}/",
    ],
)
def test_a_redirect_to_another_scheme_is_refused_within_the_deadline(
    routed: RoutedServer, tmp_path: Path, location: str
) -> None:
    """A redirect to ftp:// was followed, and a byte-a-second FTP server was still read long
    past `--deadline`: only http:// and https:// are followed, so the deadline holds."""
    ftp = Dribbler()
    try:
        where = location.format(port=ftp.port)
        routed.routes[b"/350.csv"] = redirect(where.encode())
        args = fetch_args(routed.url, str(tmp_path), "--retries", "2", "--deadline", "3")
        started = time.monotonic()

        code, stderr, peak = run_capped(args, cpu=60)

        took = time.monotonic() - started
        assert_clean(code, stderr, 1)
        assert stderr == (
            f"Error: {routed.url} redirected to {where}, which is not an http:// or https:// "
            "address\n"
        )
        assert took < 10, took
        assert peak < FIXED_MEMORY, f"{peak >> 20} MiB"
        assert not ftp.connected.is_set()
        assert listing(tmp_path) == []
        assert routed.asked == [b"/350.csv"]  # not tried again: another try is no cure
    finally:
        ftp.listener.close()


def test_a_redirect_loop_ends(routed: RoutedServer, tmp_path: Path) -> None:
    routed.routes[b"/350.csv"] = redirect(b"/350.csv")
    code, stderr, _peak = run_capped(fetch_args(routed.url, str(tmp_path), "--retries", "0"))
    assert_clean(code, stderr, 1)
    assert stderr == f"Error: {routed.url} redirected more than 10 times\n"
    assert len(routed.asked) == 11


def test_redirects_within_the_limit_are_followed(routed: RoutedServer, tmp_path: Path) -> None:
    for hop in range(10):
        routed.routes[b"/%d" % hop] = redirect(routed.base.encode() + b"/%d" % (hop + 1))
    routed.routes[b"/10"] = served(GOOD)
    code, stderr, _peak = run_capped(fetch_args(f"{routed.base}/0", str(tmp_path)))
    assert_clean(code, stderr, 0)
    assert (tmp_path / NAME).read_bytes() == GOOD


@pytest.mark.parametrize("link", ["prosocial", "prosocial-dangling"])
def test_a_symbolic_link_where_a_directory_goes_is_refused(
    routed: RoutedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, link: str
) -> None:
    """`DIR/prosocial` a link to another directory had the ProsocialDialog files land there,
    outside --dir; a link to nowhere had one created there."""
    directory, elsewhere = tmp_path / "dir", tmp_path / "elsewhere"
    directory.mkdir()
    (directory / "prosocial").symlink_to(
        elsewhere if link == "prosocial" else tmp_path / "nowhere", target_is_directory=True
    )
    elsewhere.mkdir()
    routed.lie = served(b'{"context": "hi"}\n')
    monkeypatch.setenv("DICES_DOWNLOAD_BASE", routed.base)

    code, stderr, _peak = run_capped(["download", "prosocial", "--dir", str(directory)])

    assert_clean(code, stderr, 1)
    assert stderr == (
        f"Error: {directory}/prosocial is a symbolic link, and dices writes only into "
        f"directories of its own under {directory}; move it away, then run this again\n"
    )
    assert listing(elsewhere) == [] and not (tmp_path / "nowhere").exists()
    assert routed.asked == []


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No name can be looked up, as on a machine without a network; the names asked for."""
    looked_up: list[str] = []

    def no_lookup(host: str, *_args: object, **_kwargs: object) -> None:
        looked_up.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.delenv("DICES_DOWNLOAD_BASE", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    return looked_up


NO_NAME = "could not be reached: no network, or no such host (the name lookup failed: "


def test_a_failed_name_lookup_is_no_network_at_once(offline: list[str], tmp_path: Path) -> None:
    """Offline, each source was tried 4 times more, 52 s in all, before the hint: a name that
    cannot be looked up is not tried again, and the hint comes at once."""
    from dices_cli import download as download_module

    started = time.monotonic()
    result = CliRunner().invoke(app, ["download", "350", "--dir", str(tmp_path)])
    took = time.monotonic() - started

    assert result.exit_code == 1
    urls = download_module.published_files()[0].urls
    said = "; ".join(f"{url} {NO_NAME}Temporary failure in name resolution)" for url in urls)
    assert result.stderr == (
        f"{WAYS_ROUND}\nError: no source served the DICES-350 file: {said}\n"
    ), result.stderr
    assert len(offline) == len(urls)  # one lookup per source, none again
    assert took < 5, took
    assert listing(tmp_path) == []


def test_a_source_unreachable_until_the_deadline_keeps_the_hint(tmp_path: Path) -> None:
    """A source refusing connections until `--deadline` passed was blamed on the deadline,
    and the hint about the network was lost: it says what the source did, then the
    deadline, and the hint."""
    with socket.socket() as probe:  # a port that nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/350.csv"
    args = ["download", "350", "--dir", str(tmp_path), "--url", url]
    result = CliRunner().invoke(app, [*args, "--retries", "20", "--deadline", "1.5"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"DICES-350: {url} could not be reached: Connection refused; trying again in 1 s"
    )
    assert result.stderr.endswith(
        f"{WAYS_ROUND}\nError: {url} could not be reached: Connection refused (tried again "
        "until the 1.5 s that --deadline allows had passed)\n"
    )
