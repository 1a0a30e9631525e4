"""`dices download` against HTTP servers that lie: status lines with control characters or
none at all, Content-Length too small, too large, huge, negative or not a number, chunked
bodies well and badly framed, Content-Range and Location that point anywhere, bodies cut
short, altered, padded or endless. Hypothesis draws the answers; each run is `dices
download` in a fresh process under the memory cap of `tests/test_bounded_input.py`.

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
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.dices_csv import build
from hypothesis import event, given
from hypothesis import strategies as st
from test_bounded_input import FIXED_MEMORY, assert_clean, run_capped

from dices_cli.cli.commands.download import WAYS_ROUND

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


@pytest.fixture(scope="module")
def lying() -> Iterator[LyingServer]:
    server = LyingServer()
    yield server
    server.listener.close()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@given(lie=lies())
def test_a_lying_server_gets_the_file_or_one_clean_line(lying: LyingServer, lie: Lie) -> None:
    lying.lie = lie
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        args = ["download", "350", "--dir", scratch, "--url", lying.url]
        args += ["--sha256", hashlib.sha256(GOOD).hexdigest(), "--max-size", "1M"]
        args += ["--retries", "0", "--timeout", "2", "--deadline", "5"]

        code, stderr, peak = run_capped(args)
        event(f"exit {code}")  # --hypothesis-show-statistics: how many were served

        assert_clean(code, stderr, 0 if code == 0 else 1)
        # A source that could not be reached also gets the ways round (a fixed line).
        shown = stderr.removesuffix("\n").removeprefix(f"{WAYS_ROUND}\n")
        assert "\n" not in shown, stderr
        assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in shown), stderr
        assert peak < FIXED_MEMORY, f"{peak >> 20} MiB"
        if code == 0:
            assert listing(directory) == [NAME]
            assert (directory / NAME).read_bytes() == GOOD
            assert shown.startswith(f"DICES-350: downloaded from {lying.url}, ")
        else:
            assert shown.startswith(f"Error: {lying.url} "), stderr
            left = listing(directory)
            assert left in ([], [p.name for p in directory.glob(f"{NAME}.*.part")]), left
            assert all(p.stat().st_size <= MAX_SIZE for p in directory.iterdir())
