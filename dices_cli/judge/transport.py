"""One judge worker's HTTP/1.1 exchanges with its endpoints: a kept-alive connection to each
endpoint, opened when first needed and again after any failure.

A connection is opened by the standard library's `http.client` (the proxy's tunnel, TLS);
each exchange on it is our own: the request's head made once an endpoint and sent with the
body in one write, the answer's status line, headers and body read off the socket in large
steps and cut with bytes methods. `http.client`'s request and answer objects (a header
parser from the email package, a buffered reader an answer) cost more CPU than the rest of
a request; its bounds stay: a line of at most `MAX_LINE` bytes, at most `MAX_HEADERS`
headers. An answer's body is read by its Content-Length, in chunks, or to the end of the
connection (which is then closed); a connection whose answer says `close`, or that sent
bytes after its answer, is not kept.

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
MAX_LINE = 65536  # bytes of an answer's status, header or chunk-size line (http.client's)
MAX_HEADERS = 100  # header lines of an answer (http.client's)


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
    host_header: str = ""  # the endpoint's host[:port], as the Host header carries it


def target(url: str) -> Target:
    """The `Target` of a Chat Completions URL, through the environment's proxy if any."""
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if tls else 80)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    named = f"[{host}]" if ":" in host else host
    host_header = named if port == (443 if tls else 80) else f"{named}:{port}"
    proxy = _proxy_for(parts.scheme, host, port)
    if proxy is None:
        return Target(tls, host, port, path, host_header=host_header)
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
        return Target(True, proxy_host, proxy_port, path, (host, port), authorization, host_header)
    return Target(False, proxy_host, proxy_port, url, None, authorization, host_header)


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


class _Answer:
    """An answer read off a connection's socket (bytes kept in `buffer` between reads),
    every wait bounded by the connection's deadline."""

    def __init__(self, sock: socket.socket, connection: _Deadline) -> None:
        self.sock = sock
        self.connection = connection
        self.buffer = bytearray()

    def _fill(self) -> bool:
        """More bytes into the buffer; False at the end of the stream."""
        self.sock.settimeout(self.connection.remaining())
        data = self.sock.recv(READ_STEP)
        self.buffer += data
        return bool(data)

    def line(self) -> bytes:
        """The next line, its line break included (b"": the stream ended before any byte)."""
        searched = 0
        while (end := self.buffer.find(b"\n", searched)) < 0:
            if len(self.buffer) > MAX_LINE:
                raise http.client.LineTooLong("a line of the answer")
            searched = len(self.buffer)
            if not self._fill():
                if self.buffer:
                    raise http.client.IncompleteRead(bytes(self.buffer))
                return b""
        if end >= MAX_LINE:
            raise http.client.LineTooLong("a line of the answer")
        line = bytes(self.buffer[: end + 1])
        del self.buffer[: end + 1]
        return line

    def head(self) -> tuple[int, bool, dict[str, str]]:
        """The final answer's status, whether its connection may be kept, and its headers
        (lower-case names, repeated ones joined by ", "); 1xx answers are passed over."""
        while True:
            line = self.line()
            if not line:
                raise http.client.RemoteDisconnected("the server closed the connection")
            parts = line.decode("iso-8859-1").split(None, 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise http.client.BadStatusLine(line[:80].decode("iso-8859-1"))
            status = int(parts[1])
            if not 100 <= status <= 999:
                raise http.client.BadStatusLine(line[:80].decode("iso-8859-1"))
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADERS + 1):
                line = self.line()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, colon, value = line.decode("iso-8859-1").partition(":")
                if colon:
                    name, value = name.strip().lower(), value.strip()
                    headers[name] = f"{headers[name]}, {value}" if name in headers else value
            else:
                raise http.client.HTTPException(f"more than {MAX_HEADERS} headers")
            if status >= 200:
                tokens = headers.get("connection", "").lower()
                keep = "close" not in tokens and (parts[0] == "HTTP/1.1" or "keep-alive" in tokens)
                return status, keep, headers

    def body(self, status: int, headers: dict[str, str], feed: Any) -> bool:
        """The body handed to `feed` a step at a time; whether the connection may be kept
        (not when the body ran to the end of the stream)."""
        if status in (204, 304):
            return True
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked(feed)
            return True
        length = headers.get("content-length", "")
        if not length.isdigit():  # none, or none that can be read: the stream's end
            while self.buffer or self._fill():
                feed(bytes(self.buffer))
                self.buffer.clear()
            return False
        self._exactly(int(length), feed)
        return True

    def _exactly(self, length: int, feed: Any) -> None:
        while length:
            if not self.buffer and not self._fill():
                raise http.client.IncompleteRead(b"", length)
            step = bytes(self.buffer[:length])
            del self.buffer[:length]
            length -= len(step)
            feed(step)

    def _chunked(self, feed: Any) -> None:
        while True:
            line = self.line()
            size = line.split(b";", 1)[0].strip()
            if not line or not size or size.strip(b"0123456789abcdefABCDEF"):
                raise http.client.IncompleteRead(b"")
            if not (length := int(size, 16)):
                break
            self._exactly(length, feed)
            if self.line() not in (b"\r\n", b"\n"):
                raise http.client.IncompleteRead(b"")
        for _ in range(MAX_HEADERS + 1):  # the trailer
            if self.line() in (b"\r\n", b"\n", b""):
                return
        raise http.client.HTTPException(f"more than {MAX_HEADERS} trailer lines")


class _Refused(Exception):
    """A body refused as it was read (too large, broken, an unknown encoding)."""


class Connections:
    """One worker's connections, one to each endpoint it has asked, kept alive."""

    def __init__(self, headers: dict[str, str], context: ssl.SSLContext | None, limit: int) -> None:
        self.headers = {"Content-Type": "application/json", **headers}
        self.context = context
        self.limit = limit  # of a body, inflated
        self.open: dict[Target, _Plain | _Secure] = {}
        self.heads: dict[Target, bytes] = {}

    def _head(self, goal: Target) -> bytes:
        """The request's head for `goal`, up to its Content-Length's value."""
        head = self.heads.get(goal)
        if head is None:
            headers = {"Host": goal.host_header, **self.headers}
            if goal.proxy_authorization and goal.tunnel is None:
                headers["Proxy-Authorization"] = goal.proxy_authorization
            lines = [f"POST {goal.path} HTTP/1.1"]
            lines += [f"{name}: {value}" for name, value in headers.items()]
            head = self.heads[goal] = ("\r\n".join(lines) + "\r\nContent-Length: ").encode(
                "latin-1"
            )
        return head

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
            if connection.sock is None:
                connection.connect()
            sock = connection.sock
            assert sock is not None
            sock.settimeout(connection.remaining())
            sock.sendall(b"%s%d\r\n\r\n%s" % (self._head(goal), len(body), body))
            answer = _Answer(sock, connection)
            status, keep, headers = answer.head()
            try:
                inflater = Inflater(headers.get("content-encoding", ""), self.limit)
            except ValueError as error:
                raise _Refused(str(error)) from None
            keep = answer.body(status, headers, _refusing(inflater.feed)) and keep
            if keep and not answer.buffer:
                connection.used = time.monotonic()
            else:  # the stream ended, or the server said close or sent what nobody asked
                connection.close()
            return status, headers.get("retry-after"), bytes(inflater.body)
        except _Refused as refused:
            connection.close()
            raise Transient(status, str(refused)) from None
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


def _refusing(feed: Any) -> Any:
    """`feed`, its refusal of a body (ValueError) as `_Refused`."""

    def refusing(data: bytes) -> None:
        try:
            feed(data)
        except ValueError as error:
            raise _Refused(str(error)) from None

    return refusing
