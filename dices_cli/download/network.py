"""The network side of a download: urllib's handlers watched by a deadline, redirects that
are followed unread and only to http(s), and the faults a source can give."""

from __future__ import annotations

import contextlib
import http.client
import socket
import string
import threading
import time
import urllib.request
from collections.abc import Callable
from http.client import HTTPResponse
from typing import IO, Any
from urllib.parse import quote, urljoin, urlsplit

from dices_cli.errors import Option
from dices_cli.terminal_text import printable

Message = tuple[str | Option, ...]  # a message in parts, as `DicesError` takes it
MAX_REDIRECTS = 10  # redirects followed for one request


class SourceFault(Exception):
    """This source cannot serve the file; `did` says what it did instead."""

    def __init__(self, *did: str | Option, unreachable: bool = False) -> None:
        super().__init__("".join(map(str, did)))
        self.did: Message = did
        self.unreachable = unreachable


class Interrupted(SourceFault):
    """The transfer stopped for a reason that trying again may cure."""


class Deadline:
    """The time one source has to serve a whole file, tries included. A socket timeout bounds
    each wait, not their sum: a server sending a byte a second never trips it. When the
    time is up, every connection opened for the source is shut down (through a duplicate of
    its socket, which stays valid once TLS has wrapped the original), so that whatever read
    waits on one returns at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._ends = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for watched in self._watched:
                watched.close()
            self._watched.clear()

    def remaining(self) -> float:
        return max(0.0, self._ends - time.monotonic())

    def opener(self) -> urllib.request.OpenerDirector:
        """urllib's opener for HTTP(S) alone (proxies from the environment included), with
        connections that this deadline shuts down and redirects followed to HTTP(S) alone
        (`Redirects`): no other scheme (ftp://, file://, data:) can be opened, so nothing
        escapes the deadline."""
        opener = urllib.request.OpenerDirector()
        for handler in (
            urllib.request.ProxyHandler(),
            urllib.request.UnknownHandler(),
            urllib.request.HTTPDefaultErrorHandler(),
            Redirects(),
            urllib.request.HTTPErrorProcessor(),
            WatchedHTTP(self),
            WatchedHTTPS(self),
        ):
            opener.add_handler(handler)
        return opener

    def connection(self, kind: type[http.client.HTTPConnection]) -> Callable[..., Any]:
        def connect(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
            opened = kind(*args, **kwargs)
            # http.client's own hook for making the socket (documented for tests to replace).
            opened._create_connection = self._connect  # type: ignore[attr-defined]
            return opened

        return connect

    def _connect(self, *args: Any, **kwargs: Any) -> socket.socket:
        made = socket.create_connection(*args, **kwargs)
        with self._lock:
            self._watched.append(made.dup())
            if self.passed:
                shut(self._watched[-1])
        return made

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            for watched in self._watched:
                shut(watched)


def shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already
        connection.shutdown(socket.SHUT_RDWR)


class WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> HTTPResponse:
        return self.do_open(self.deadline.connection(http.client.HTTPConnection), req)


class WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> HTTPResponse:
        return self.do_open(self.deadline.connection(http.client.HTTPSConnection), req)


class Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed as urllib follows them, but only to http:// or https://, at most
    `MAX_REDIRECTS` times, and without reading the redirect's body: urllib's handler reads
    it whole, and a server can make it endless. A redirect refused is `SourceFault`."""

    def http_error_302(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
    ) -> Any | None:
        location = headers.get("location") or headers.get("uri")
        if location is None:
            return None  # an error with its status, as any other answer that is not the file
        # As urllib does: http.client decodes the header as ISO-8859-1; those bytes, and
        # anything not sendable, percent-encoded.
        address = urljoin(
            req.full_url, quote(location, encoding="iso-8859-1", safe=string.punctuation)
        )
        parts = urlsplit(address)
        followed: int = getattr(req, "dices_redirects", 0)
        refused = None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            refused = (
                f"redirected to {printable(location)}, which is not an http:// or https:// address"
            )
        elif followed == MAX_REDIRECTS:
            refused = f"redirected more than {MAX_REDIRECTS} times"
        if refused is not None:
            fp.close()
            raise SourceFault(refused)
        new = self.redirect_request(req, fp, code, msg, headers, address)
        if new is None:
            return None
        new.dices_redirects = followed + 1  # type: ignore[attr-defined]
        fp.close()  # unread: its body is never wanted
        return self.parent.open(new, timeout=req.timeout)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302
