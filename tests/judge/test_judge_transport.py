"""The judge's transport on http.client: endpoints kept busy in proportion to their speed,
one deadline over the whole exchange (headers too), a connection the server closed while it
idled replaced before use, and a proxy from the environment."""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from dices_cli.judge import client, transport
from tests.drivers.judge_server import (
    POLL_SECONDS,
    WAIT_SECONDS,
    JudgeServer,
    _Handler,
    answer_for,
    running,
)


def ask(
    urls: list[str], calls: Any, concurrency: int = 1, timeout: float = 30.0
) -> tuple[dict[Any, str | None], list[tuple[Any, client.Attempt]], Exception | None]:
    """`calls` sent to `urls` with no retry: each call's answer, the failed attempts, and
    the error that stopped the run (None: none)."""
    replies: dict[Any, str | None] = {}
    failures: list[tuple[Any, client.Attempt]] = []
    endpoint = client.Endpoint(tuple(urls), None, timeout, concurrency, None, 0)
    try:
        client.run_calls(
            endpoint,
            calls,
            lambda call, reply: replies.__setitem__(call, reply.answer),
            lambda call, attempt: failures.append((call, attempt)),
        )
    except client.RequestFailedError as error:
        return replies, failures, error
    return replies, failures, None


def body(i: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}


def slowed(server: JudgeServer, seconds: float) -> None:
    """Make `server` take `seconds` over each answer."""

    def answer(user: str) -> str:
        time.sleep(seconds)
        return answer_for(user)

    server.answer = answer


def test_two_endpoints_are_kept_busy_in_proportion_to_their_speed() -> None:
    """The endpoint with the fewest requests in flight gets the next: both stay equally
    busy, so the one answering twice as fast answers about twice as many."""
    with running() as fast, running() as slow:
        slowed(fast, 0.05)  # long beside what a request costs either side, even under load
        slowed(slow, 0.1)
        calls = [(i, body(i)) for i in range(150)]
        replies, failures, error = ask([fast.base_url, slow.base_url], calls, concurrency=8)
        split = len(fast.bodies), len(slow.bodies)
    assert error is None and failures == []
    assert replies == {i: answer_for(f"q{i}") for i in range(150)}
    assert sum(split) == 150
    assert 1.5 <= split[0] / split[1] <= 2.7, split


class _ClosingHandler(_Handler):
    """Answers, then closes the connection without saying so (as a server whose keep-alive
    ran out does between two requests)."""

    def do_POST(self) -> None:
        super().do_POST()
        self.close_connection = True


def spaced(server: JudgeServer, count: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """`count` calls, the next handed out once `server` has closed the connection that
    answered the last."""
    closed = threading.Semaphore(0)
    close = server.shutdown_request

    def shutdown_request(request: Any) -> None:
        close(request)
        closed.release()

    server.shutdown_request = shutdown_request  # type: ignore[method-assign]
    for i in range(count):
        if i:
            assert closed.acquire(timeout=WAIT_SECONDS)
        yield i, body(i)


@pytest.mark.parametrize("checked", [True, False])
def test_a_connection_closed_while_it_idled_is_replaced_before_use(
    checked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "IDLE_SECONDS", 0.0 if checked else 3600.0)
    with running() as server:
        server.RequestHandlerClass = _ClosingHandler
        replies, failures, error = ask([server.base_url], spaced(server, 3))
    if checked:
        assert error is None and failures == []
        assert replies == {i: answer_for(f"q{i}") for i in range(3)}
    else:  # the check is what mends it: unchecked, the kept connection fails
        assert error is not None
        assert failures[0][1].error.startswith("connection failed")


class _DribbledHeaders(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        with contextlib.suppress(OSError):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(200):  # 10 s at most, a byte every 50 ms
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.05)
        self.close_connection = True


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_headers_dribbled_a_byte_at_a_time_meet_the_deadline_of_the_whole_exchange() -> None:
    with serving(_DribbledHeaders) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        started = time.monotonic()
        replies, failures, error = ask([url], [(0, body(0))], timeout=0.5)
        seconds = time.monotonic() - started
    assert replies == {}
    assert [(f.status, f.error) for _, f in failures] == [(0, "no answer within 0.5 s")]
    assert str(error) == (
        "a request failed 1 times (last: no answer within 0.5 s); the run stopped"
    )
    assert seconds < 3  # not the 10 s the server would dribble for


class _Proxy(BaseHTTPRequestHandler):
    """A forward proxy for http:// URLs, keeping each request line's target."""

    protocol_version = "HTTP/1.1"
    targets: ClassVar[list[str]] = []

    def log_message(self, *_args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.targets.append(self.path)
        parts = urlsplit(self.path)
        upstream = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        sent = self.rfile.read(int(self.headers["Content-Length"]))
        upstream.request("POST", parts.path, sent, {"Content-Type": "application/json"})
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()


@pytest.mark.parametrize("bypassed", [False, True])
def test_an_http_proxy_from_the_environment_carries_the_requests(
    bypassed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _Proxy.targets = []
    with running() as server, serving(_Proxy) as proxy:
        for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        if bypassed:
            monkeypatch.setenv("no_proxy", "127.0.0.1")
        replies, failures, error = ask([server.base_url], [(i, body(i)) for i in range(3)])
    assert error is None and failures == []
    assert replies == {i: answer_for(f"q{i}") for i in range(3)}
    expected = [] if bypassed else [f"{server.base_url}/chat/completions"] * 3
    assert _Proxy.targets == expected


def test_a_proxy_dices_cannot_use_is_refused_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("no_proxy", "NO_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    with pytest.raises(transport.ProxyError) as refused:
        transport.target("https://example.org/v1/chat/completions")
    assert str(refused.value) == (
        "the proxy the environment gives for https:// is not an http:// URL; dices reaches "
        "endpoints directly or through an http:// proxy"
    )
