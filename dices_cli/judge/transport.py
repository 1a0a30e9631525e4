"""One judge worker's HTTP/1.1 exchanges with its endpoints, on the standard library's
`http.client`: a kept-alive connection to each endpoint, opened when first needed and again
after any failure.

Each exchange is bounded as a whole: one deadline covers connecting, the proxy's tunnel,
sending, the status line, the headers and the body (every read of the socket waits at most
what is left of it, so a server dribbling a byte at a time reaches it too). The body is
read a step at a time and inflated a step at a time (`Inflater`): refused as soon as it
would pass the client's cap, however small it came compressed. Redirects are never followed
(`http.client` follows none): a 3xx is an answer like any other, for the client to refuse.
Proxies are taken from the environment as urllib and httpx take them (http_proxy,
https_proxy, all_proxy, no_proxy): an http:// endpoint through an http:// proxy by an
absolute URL, an https:// endpoint through a CONNECT tunnel. https is verified with one TLS
context a run (`tls_context`), the CA bundle as httpx loads it.
"""

from __future__ import annotations

import base64
import functools
import http.client
import io
import os
import select
import socket
import ssl
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from dices_cli.errors import DicesError

MAX_ENCODINGS = 4  # layers of Content-Encoding undone at most
INFLATE_STEP = 64 << 10  # bytes inflated at a time: a compressed body is capped as it inflates
READ_STEP = 64 << 10  # bytes of a body read at a time
IDLE_SECONDS = 1.0  # a kept connection idle this long is checked before it is used again


class Transient(Exception):
    """An exchange that failed in a way a retry may mend: its HTTP status (0: no answer),
    why, and how long the server asked to be left alone (None: it did not say)."""

    def __init__(self, status: int, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.wait = wait


class ProxyError(DicesError):
    """A proxy in the environment that dices cannot use."""


@dataclass(frozen=True)
class Target:
    """Where one endpoint's requests go: the server (or proxy) to connect to, the request
    target as the request line carries it, and the tunnel to open through a proxy."""

    tls: bool
    host: str
    port: int
    path: str  # the request target: a path and query, or an absolute URL through a proxy
    tunnel: tuple[str, int] | None = None
    proxy_authorization: str | None = None


def target(url: str) -> Target:
    """The `Target` of a Chat Completions URL, through the environment's proxy if any."""
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if tls else 80)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    proxy = _proxy_for(parts.scheme, host, port)
    if proxy is None:
        return Target(tls, host, port, path)
    proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if proxy_parts.scheme != "http" or not proxy_parts.hostname:
        raise ProxyError(
            f"the proxy the environment gives for {parts.scheme}:// is not an http:// URL; "
            "dices reaches endpoints directly or through an http:// proxy"
        )
    authorization = None
    if proxy_parts.username is not None:
        user_password = f"{unquote(proxy_parts.username)}:{unquote(proxy_parts.password or '')}"
        authorization = "Basic " + base64.b64encode(user_password.encode()).decode()
    proxy_host, proxy_port = proxy_parts.hostname, proxy_parts.port or 80
    if tls:
        return Target(True, proxy_host, proxy_port, path, (host, port), authorization)
    return Target(False, proxy_host, proxy_port, url, None, authorization)


def _proxy_for(scheme: str, host: str, port: int) -> str | None:
    """The environment's proxy for `scheme://host:port` (None: none, or no_proxy names it)."""
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return None
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if "no" in proxies and bypass(f"{host}:{port}", proxies):
        return None
    return proxy


def tls_context() -> ssl.SSLContext:
    """The run's one TLS context, verifying as httpx's default does: $SSL_CERT_FILE, else
    $SSL_CERT_DIR, else certifi's bundle (the system's store without certifi)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class Inflater:
    """A body's bytes as sent (`Content-Encoding`: identity, gzip or deflate, any number of
    layers) inflated a step at a time, refused once it would pass `limit` bytes: a small
    compressed body never inflates past the cap, whatever its ratio."""

    def __init__(self, encoding: str, limit: int) -> None:
        names = [n.strip().lower() for n in encoding.split(",") if n.strip()]
        if len(names) > MAX_ENCODINGS:
            raise ValueError(f"the answer is encoded {len(names)} times over")
        unknown = [n for n in names if n not in ("identity", "gzip", "x-gzip", "deflate")]
        if unknown:
            raise ValueError(f"the answer's Content-Encoding {unknown[0][:20]!r} is not supported")
        # The last encoding applied is undone first; zlib's 32 + 15 reads gzip or zlib.
        self.layers = [zlib.decompressobj(32 + 15) for n in reversed(names) if n != "identity"]
        self.sizes = [0] * len(self.layers)
        self.body = bytearray()
        self.limit = limit
        self.refusal = f"the answer is larger than {limit / (1 << 20):g} MB"

    def feed(self, data: bytes) -> None:
        self._push(0, data)

    def _push(self, layer: int, data: bytes) -> None:
        if layer == len(self.layers):
            self.body += data
            if len(self.body) > self.limit:
                raise ValueError(self.refusal)
            return
        inflater = self.layers[layer]
        try:
            while data:
                out = inflater.decompress(data, INFLATE_STEP)
                data = inflater.unconsumed_tail
                self.sizes[layer] += len(out)
                if self.sizes[layer] > self.limit:
                    raise ValueError(self.refusal)
                self._push(layer + 1, out)
                if inflater.eof:
                    return
        except zlib.error as error:
            raise ValueError(f"the answer's compressed body is broken ({error})") from None


class _Timeout(Exception):
    """The exchange's deadline passed."""


class _DeadlineReader(io.RawIOBase):
    """A socket read as a file, each read waiting at most what is left of the deadline."""

    def __init__(self, sock: socket.socket, connection: _Deadline) -> None:
        self.sock = sock
        self.connection = connection

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.sock.settimeout(self.connection.remaining())
        return self.sock.recv_into(buffer)


class _Socket:
    """What `http.client.HTTPResponse` takes a socket for: its `makefile`."""

    def __init__(self, sock: socket.socket, connection: _Deadline) -> None:
        self.sock = sock
        self.connection = connection

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self.sock, self.connection))


class _Response(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, connection: _Deadline, **kwargs: Any) -> None:
        super().__init__(_Socket(sock, connection), *args, **kwargs)  # type: ignore[arg-type]


class _Deadline:
    """A connection whose every step waits at most until `deadline` (time.monotonic())."""

    deadline = 0.0
    used = 0.0  # time.monotonic() when its last exchange ended
    sock: socket.socket | None
    timeout: float | None

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Timeout
        return left

    def connect(self) -> None:
        self.timeout = self.remaining()
        super().connect()  # type: ignore[misc]

    def stale(self) -> bool:
        """Whether a kept connection was closed by the server while it idled (readable
        while no answer is awaited: the end of the stream, or bytes nobody asked for).
        Looked at only after IDLE_SECONDS: servers close idle connections after seconds."""
        if self.sock is None or time.monotonic() - self.used < IDLE_SECONDS:
            return False
        return bool(select.select([self.sock], [], [], 0)[0])


class _Plain(_Deadline, http.client.HTTPConnection):
    pass


class _Secure(_Deadline, http.client.HTTPSConnection):
    pass


def _connection(goal: Target, context: ssl.SSLContext | None) -> _Plain | _Secure:
    connection = (
        _Secure(goal.host, goal.port, context=context) if goal.tls else _Plain(goal.host, goal.port)
    )
    connection.response_class = functools.partial(_Response, connection=connection)  # type: ignore[assignment]
    if goal.tunnel is not None:
        authorization = goal.proxy_authorization
        headers = {"Proxy-Authorization": authorization} if authorization else None
        connection.set_tunnel(*goal.tunnel, headers=headers)
    return connection


class Connections:
    """One worker's connections, one to each endpoint it has asked, kept alive."""

    def __init__(self, headers: dict[str, str], context: ssl.SSLContext | None, limit: int) -> None:
        self.headers = {"Content-Type": "application/json", **headers}
        self.context = context
        self.limit = limit  # of a body, inflated
        self.open: dict[Target, _Plain | _Secure] = {}

    def post(self, goal: Target, body: bytes, timeout: float) -> tuple[int, str | None, bytes]:
        """POST `body` to `goal` within `timeout` seconds: the status, the Retry-After
        header and the body, inflated. `Transient` when no whole answer came in time, the
        connection failed, or the body is refused (too large, broken, an unknown encoding)."""
        connection = self.open.get(goal)
        if connection is None or connection.stale():
            if connection is not None:
                connection.close()
            connection = self.open[goal] = _connection(goal, self.context)
        connection.deadline = time.monotonic() + timeout
        status = 0
        try:
            if connection.sock is not None:
                connection.sock.settimeout(connection.remaining())
            headers = self.headers
            if goal.proxy_authorization and goal.tunnel is None:
                headers = {**headers, "Proxy-Authorization": goal.proxy_authorization}
            connection.request("POST", goal.path, body, headers)
            response = connection.getresponse()
            status = response.status
            try:
                inflater = Inflater(response.getheader("content-encoding") or "", self.limit)
                while chunk := response.read(READ_STEP):
                    inflater.feed(chunk)
            except ValueError as error:  # the body refused
                connection.close()
                raise Transient(status, str(error)) from None
            if response.length:  # the connection ended before the body did
                raise http.client.IncompleteRead(b"", response.length)
            connection.used = time.monotonic()
            return status, response.getheader("retry-after"), bytes(inflater.body)
        except (_Timeout, TimeoutError):
            connection.close()
            raise Transient(0, f"no answer within {timeout:g} s") from None
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise Transient(0, f"connection failed: {type(error).__name__}") from None

    def close(self) -> None:
        for connection in self.open.values():
            connection.close()
        self.open.clear()
