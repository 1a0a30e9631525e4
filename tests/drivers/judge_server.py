"""A local OpenAI-compatible Chat Completions server for the judge's tests and benchmark.

It answers each conversation deterministically (`answer_for`: the SHA-256 of the user
message picks Yes or No) and injects the faults a test scripts (`script`: the next requests'
faults, in order). It measures what a client does: every request body, the requests in
flight at most, the Authorization headers. Nothing waits on a clock: a held request waits
on a condition (bounded by `WAIT_SECONDS`, so a broken test cannot hang).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WAIT_SECONDS = 10.0
# How often a serving thread looks for `shutdown()`: the default, half a second, is what every
# test would wait at its end.
POLL_SECONDS = 0.01
# An answer of 5 MB, made once (a test measuring the client's memory must not count it).
HUGE_BODY = b'{"choices": [{"message": {"content": "' + b"x" * (5 << 20) + b'"}}]}'


def answer_for(user_message: str) -> str:
    """The server's answer to a conversation: Yes or No, from the message's SHA-256."""
    return "Yes" if hashlib.sha256(user_message.encode()).digest()[0] % 2 else "No"


class JudgeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog, 5, drops a burst of 32 connections

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Condition()
        self.bodies: list[dict[str, Any]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.authorizations: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold_first = 0  # the first this many requests wait until as many are in flight
        self.held = 0
        self.release = threading.Event()  # frees requests a `hold` fault keeps
        self.script: deque[str] = deque()
        self.answer: Callable[[str], str] = answer_for
        self.logprobs = True
        self.echo_key_on_401 = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def user_messages(self) -> list[str]:
        with self.lock:
            return [body["messages"][-1]["content"] for body in self.bodies]

    def wait_for_requests(self, count: int) -> bool:
        """Wait until `count` requests have come (False after WAIT_SECONDS)."""
        with self.lock:
            return self.lock.wait_for(lambda: len(self.bodies) >= count, WAIT_SECONDS)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: JudgeServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
        # client's delayed ACK (40 ms), and the server, not the client, is what is measured.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *_args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        server = self.server
        with server.lock:
            server.bodies.append(body)
            server.arrivals.append(time.monotonic())
            server.authorizations.append(self.headers.get("Authorization"))
            fault = server.script.popleft() if server.script else "ok"
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
            if server.held < server.hold_first:
                server.held += 1
                server.lock.notify_all()
                server.lock.wait_for(lambda: server.in_flight >= server.hold_first, WAIT_SECONDS)
            server.lock.notify_all()
        try:
            self._answer(body, fault)
        finally:
            with server.lock:
                server.in_flight -= 1
                server.lock.notify_all()

    def _answer(self, body: dict[str, Any], fault: str) -> None:
        server = self.server
        user = body["messages"][-1]["content"]
        answer = server.answer(user)
        if fault == "hold":
            server.release.wait(WAIT_SECONDS)
        if fault.startswith("429"):
            self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": fault[4:] or "0"})
        elif fault == "500":
            self._send(500, {"error": {"message": "internal error"}})
        elif fault == "401":
            key = self.headers.get("Authorization", "")
            said = f"invalid key {key}" if server.echo_key_on_401 else "invalid key"
            self._send(401, {"error": {"message": said}})
        elif fault == "404":
            self._send(404, {"error": {"message": f"model {body['model']} not found"}})
        elif fault == "400-logprobs":
            self._send(400, {"error": {"message": "logprobs are not supported"}})
        elif fault == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif fault == "dribble":  # a byte every 50 ms, each read well within any read timeout
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(200):  # 10 s at most
                    self.wfile.write(b" ")
                    if server.release.wait(0.05):
                        break
            self.close_connection = True
        elif fault == "slow":
            server.release.wait(WAIT_SECONDS)
            self._send(200, self._completion(answer))
        elif fault == "malformed":
            self._raw(200, b'{"choices": [{"message": {"content": "Yes"')
        elif fault == "empty":
            self._send(200, {"choices": [], "usage": {"prompt_tokens": 5}})
        elif fault == "huge":
            self._raw(200, HUGE_BODY)
        elif fault.startswith("say:"):
            self._send(200, self._completion(fault[4:], logprobs=False))
        else:
            self._send(200, self._completion(answer))

    def _completion(self, text: str, logprobs: bool = True) -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        if logprobs and self.server.logprobs:
            other = "No" if text == "Yes" else "Yes"
            top = [
                {"token": text, "logprob": math.log(0.8)},
                {"token": other, "logprob": math.log(0.15)},
                {"token": "Maybe", "logprob": math.log(0.05)},
            ]
            choice["logprobs"] = {
                "content": [{"token": text, "logprob": top[0]["logprob"], "top_logprobs": top}]
            }
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [choice],
            "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
        }

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._raw(status, json.dumps(payload).encode(), headers)

    def _raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):  # a client that gave up on a huge body
            self.wfile.write(data)


@contextmanager
def running() -> Iterator[JudgeServer]:
    server = JudgeServer()
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT_SECONDS)
