"""The judge transport's own reading of an answer (status line, headers, body by
Content-Length, in chunks or to the stream's end), against a server writing raw bytes: each
form a server may send is read, a connection is kept only when the answer allows it, and
each broken answer is a failed attempt, not a hang or a crash."""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dices_cli.judge import transport

ANSWER = b'{"choices": [{"message": {"content": "Yes"}}]}'


class RawServer:
    """Answers each request on a connection with the next of `answers` (raw bytes), closing
    the connection after each when told to (`close_after`), else holding it open once they
    are all sent; counts connections and requests."""

    def __init__(self, answers: list[bytes], close_after: bool = False) -> None:
        self.answers = list(answers)
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                sock, _ = self.listener.accept()
                self.connections += 1
                threading.Thread(target=self._talk, args=(sock,), daemon=True).start()

    def _talk(self, sock: socket.socket) -> None:
        with sock, contextlib.suppress(OSError):
            sock.settimeout(10)
            data = b""
            while self.answers:
                while b"\r\n\r\n" not in data:
                    got = sock.recv(65536)
                    if not got:
                        return
                    data += got
                head, _, data = data.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                while len(data) < length:
                    data += sock.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + data[:length])
                data = data[length:]
                sock.sendall(self.answers.pop(0))
                if self.close_after:
                    return
            sock.recv(1)  # held open until the client leaves

    def close(self) -> None:
        self.listener.close()


@contextlib.contextmanager
def serving(answers: list[bytes], close_after: bool = False) -> Iterator[RawServer]:
    server = RawServer(answers, close_after)
    try:
        yield server
    finally:
        server.close()


def post(
    server: RawServer, times: int = 1, timeout: float = 5.0, limit: int = 1 << 20
) -> list[Any]:
    """`times` POSTs over one worker's connections: each (status, Retry-After, body), or the
    `Transient` it raised."""
    goal = transport.target(f"http://127.0.0.1:{server.port}/v1/chat/completions")
    connections = transport.Connections({"User-Agent": "t"}, None, limit)
    results: list[Any] = []
    try:
        for _ in range(times):
            try:
                results.append(connections.post(goal, b'{"q": 1}', timeout))
            except transport.Transient as failure:
                results.append((failure.status, str(failure)))
    finally:
        connections.close()
    return results


def sized(body: bytes, *headers: str, status: str = "200 OK", version: str = "HTTP/1.1") -> bytes:
    lines = [f"{version} {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(body: bytes, step: int = 7) -> bytes:
    chunks = b"".join(
        b"%x;ext=1\r\n%s\r\n" % (len(body[i : i + step]), body[i : i + step])
        for i in range(0, len(body), step)
    )
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head + chunks + b"0\r\nX-T: 1\r\n\r\n"


def test_the_request_carries_host_length_and_headers_on_one_kept_connection() -> None:
    with serving([sized(ANSWER), sized(ANSWER)]) as server:
        assert post(server, 2) == [(200, None, ANSWER)] * 2
    assert server.connections == 1
    head = server.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert sorted(head[1:]) == sorted(
        [
            f"Host: 127.0.0.1:{server.port}".encode(),
            b"Content-Type: application/json",
            b"User-Agent: t",
            b"Content-Length: 8",
        ]
    )
    assert server.requests[0].endswith(b'\r\n\r\n{"q": 1}')


@pytest.mark.parametrize(
    ("answer", "connections"),
    [
        (chunked(ANSWER), 1),
        (sized(ANSWER, "Connection: close"), 2),
        (sized(ANSWER, version="HTTP/1.0"), 2),
        (sized(ANSWER, "Connection: keep-alive", version="HTTP/1.0"), 1),
        (b"HTTP/1.1 100 Continue\r\n\r\n" + sized(ANSWER), 1),
        (sized(gzip.compress(ANSWER), "Content-Encoding: gzip"), 1),
        (sized(ANSWER, "X-A: 1", "x-a: 2", "Content-Type: application/json"), 1),
    ],
)
def test_each_form_of_an_answer_is_read_and_its_connection_kept_when_allowed(
    answer: bytes, connections: int
) -> None:
    with serving([answer, answer]) as server:
        assert post(server, 2) == [(200, None, ANSWER)] * 2
    assert server.connections == connections


def test_a_body_to_the_end_of_the_stream_is_read_and_its_connection_not_kept() -> None:
    answer = b"HTTP/1.1 200 OK\r\n\r\n" + ANSWER
    with serving([answer, answer], close_after=True) as server:
        assert post(server, 2) == [(200, None, ANSWER)] * 2
    assert server.connections == 2


def test_retry_after_and_a_non_200_status_are_given_back() -> None:
    answer = sized(b'{"error": "slow"}', "Retry-After: 3", status="429 Too Many Requests")
    with serving([answer]) as server:
        assert post(server) == [(429, "3", b'{"error": "slow"}')]


def test_bytes_after_an_answer_close_its_connection() -> None:
    with serving([sized(ANSWER) + b"HTTP/1.1 200 OK\r\n", sized(ANSWER)]) as server:
        assert post(server, 2) == [(200, None, ANSWER)] * 2
    assert server.connections == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"", "connection failed: RemoteDisconnected"),
        (b"NOT HTTP\r\n\r\n", "connection failed: BadStatusLine"),
        (b"HTTP/1.1 20 OK\r\n\r\n", "connection failed: BadStatusLine"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"x" * 70_000 + b"\r\n\r\n", "connection failed: LineTooLong"),
        (
            b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
            "connection failed: HTTPException",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "connection failed: IncompleteRead"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "connection failed: IncompleteRead",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdeXX",
            "connection failed: IncompleteRead",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "connection failed: IncompleteRead"),
        (sized(b"x" * 2000), "the answer is larger than 0.000976562 MB"),
        (
            sized(ANSWER, "Content-Encoding: br"),
            "the answer's Content-Encoding 'br' is not supported",
        ),
    ],
)
def test_a_broken_answer_is_a_failed_attempt(answer: bytes, error: str) -> None:
    with serving([answer], close_after=True) as server:
        [(status, reason)] = post(server, limit=1024)
    assert reason == error
    assert status == (200 if "answer" in error else 0)


def test_an_answer_that_never_ends_meets_the_deadline() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"
    with serving([answer]) as server:
        assert post(server, timeout=0.3) == [(0, "no answer within 0.3 s")]
