"""The judge's client for OpenAI-compatible Chat Completions endpoints (vLLM, Ollama,
llama.cpp's server, TGI, LM Studio, OpenAI, gateways).

httpx with asyncio: one well-kept library with HTTP/1.1 keep-alive, connection limits,
timeouts and streaming bodies, and no SDK in between (the `openai` package brings pydantic
and its own retry policy, which would have to be switched off to keep ours). It is imported
only when a judge run talks to a server.

At most `concurrency` requests are in flight (`concurrency` workers share the requests), at
most `rpm` start a minute, each goes to the endpoint with the fewest in flight. A 429 waits
as long as its Retry-After says; a 5xx, a timeout, a dropped connection or an unreadable body
is retried with exponential backoff and full jitter, up to `retries` times; then, or at a
401/403/404 or another 4xx, the run stops (`RequestFailedError`, `RefusedError`) and the
calls already answered stay answered. The API key goes in the Authorization header and
nowhere else; any text shown from a server has it blanked out.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dices_cli.errors import DicesError, Option
from dices_cli.read.untrusted import UntrustedError, finite_number, loads_json

MAX_BODY_BYTES = 1 << 20  # an answer body larger than this, inflated, is refused
MAX_BODY_DEPTH = 16  # levels of JSON in an answer: Chat Completions needs 6
MAX_ENCODINGS = 4  # layers of Content-Encoding undone at most
INFLATE_STEP = 64 << 10  # bytes inflated at a time: a compressed body is capped as it inflates
MAX_ANSWER_CHARS = 20_000  # of an answer's text kept in the cache
MAX_MESSAGE_CHARS = 300  # of a server's error message shown
BACKOFF_SECONDS = 0.5  # the first retry's wait at most; doubled each time
MAX_BACKOFF_SECONDS = 30.0
MAX_RETRY_AFTER_SECONDS = 300.0
TOP_LOGPROBS = 5


class RefusedError(DicesError):
    """The server refused a request in a way retrying cannot mend (401, 403, 404, other 4xx,
    a redirect); `status` is its HTTP status."""

    status = 0


class RequestFailedError(DicesError):
    """A request failed every time it was tried."""


@dataclass(frozen=True)
class Endpoint:
    base_urls: tuple[str, ...]
    api_key: str | None
    timeout: float
    concurrency: int
    rpm: int | None
    retries: int


@dataclass
class Reply:
    """What one completed call gave: the answer's text (None: no choice), and its audit."""

    status: int
    latency_ms: float | None  # None: not measured (a batch's answer)
    answer: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    first_token: list[tuple[str, float]] | None  # the first answer token's top logprobs
    problem: str | None = None  # what of the answer could not be read (its logprobs)


@dataclass
class Attempt:
    """A failed attempt, for the audit: its status (0: no answer) and why."""

    status: int
    latency_ms: float
    error: str


@dataclass
class _Balance:
    in_flight: dict[str, int] = field(default_factory=dict)
    turn: int = 0

    def pick(self) -> str:
        self.turn += 1
        urls = list(self.in_flight)
        return min(urls, key=lambda u: (self.in_flight[u], (urls.index(u) - self.turn) % len(urls)))


def host_of(base_url: str) -> str:
    """scheme://host[:port] of a base URL: what is recorded of it (never a path or query,
    which may carry a token)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def check_base_url(base_url: str) -> str | None:
    """Why `base_url` cannot be an endpoint (None: it can): an http(s) URL with a host, a
    port from 1 to 65535, and nothing an HTTP request line cannot carry."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError as error:
        return f"not a URL ({error})"
    if parts.scheme not in ("http", "https"):
        return "give an http:// or https:// URL"
    if not parts.hostname:
        return "the URL has no host"
    if port == 0:
        return "the port must be 1 to 65535"
    if not base_url.isascii() or any(not c.isprintable() or c.isspace() for c in base_url):
        return "the URL has spaces, control or non-ASCII characters (percent-encode them)"
    return None


def completions_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, the path extended before any query string
    (`http://h/v1?key=k` -> `http://h/v1/chat/completions?key=k`); a fragment is dropped."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def shown(text: str, secret: str | None) -> str:
    """A server's text as safe to show: the key blanked, control characters replaced, cut."""
    if secret:
        text = text.replace(secret, "***")
    cleaned = "".join(c if c.isprintable() else " " for c in text)
    cut = cleaned[:MAX_MESSAGE_CHARS]
    return cut + ("..." if len(cleaned) > MAX_MESSAGE_CHARS else "")


def server_message(body: bytes) -> str:
    """The message of an error body ({"error": {"message": ...}}, or its text)."""
    try:
        parsed = loads_json(body, MAX_BODY_BYTES, MAX_BODY_DEPTH)
    except UntrustedError:
        return body.decode("utf-8", "replace").strip()
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    return body.decode("utf-8", "replace").strip()


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds, or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def parse_reply(status: int, latency_ms: float, body: bytes) -> Reply:
    """A 200's body as a `Reply`; ValueError when it is not a Chat Completions answer."""
    try:
        parsed = loads_json(body, MAX_BODY_BYTES, MAX_BODY_DEPTH)
    except UntrustedError as error:
        raise ValueError(str(error)) from None
    return reply_of(status, latency_ms, parsed)


def reply_of(status: int, latency_ms: float | None, parsed: Any) -> Reply:
    """A Chat Completions answer, already read as JSON, as a `Reply`; ValueError when it is
    not one (a batch's result line holds it as its `response.body`)."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("choices"), list):
        raise ValueError("the answer has no choices list")
    usage: dict[str, Any] = parsed["usage"] if isinstance(parsed.get("usage"), dict) else {}
    reply = Reply(status, latency_ms, None, None, _count(usage, "prompt_tokens"), None, None)
    reply.completion_tokens = _count(usage, "completion_tokens")
    if not parsed["choices"] or not isinstance(parsed["choices"][0], dict):
        return reply  # an empty choice: an answer that cannot be read, kept as such
    choice = parsed["choices"][0]
    message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    if isinstance(content, str):
        reply.answer = content[:MAX_ANSWER_CHARS]
    elif isinstance(message.get("refusal"), str):
        reply.answer = message["refusal"][:MAX_ANSWER_CHARS]
    reason = choice.get("finish_reason")
    reply.finish_reason = reason if isinstance(reason, str) else None
    try:
        reply.first_token = _first_token(choice.get("logprobs"))
    except ValueError as error:
        reply.problem = str(error)
    return reply


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_token(logprobs: Any) -> list[tuple[str, float]] | None:
    """The top logprobs of the first token with a letter or digit in it (a reply may open
    with a space, a quote or markup). ValueError when one of them is not a number at most 0
    (NaN, Infinity, 710, text): the answer is kept, its score is not given."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    for position in content:
        if not isinstance(position, dict) or not isinstance(position.get("token"), str):
            return None
        if any(c.isalnum() for c in position["token"]):
            top = position.get("top_logprobs")
            if not isinstance(top, list) or not top:
                top = [position]
            found = []
            for candidate in top[: TOP_LOGPROBS * 4]:
                if not isinstance(candidate, dict) or not isinstance(candidate.get("token"), str):
                    continue
                logprob = valid_logprob(candidate.get("logprob"))
                if logprob is None:
                    raise ValueError(
                        f"the logprob of the token {candidate['token'][:20]!r} is "
                        f"{str(candidate.get('logprob'))[:20]}, not a number at most 0: no score"
                    )
                found.append((candidate["token"], logprob))
            return found or None
    return None


def valid_logprob(value: Any) -> float | None:
    """A logprob as a float when it is a finite number at most 0 (a rounding error above
    0 is taken as 0), else None."""
    number = finite_number(value, high=1e-6)
    return None if number is None else min(number, 0.0)


class _Inflater:
    """A body's bytes as sent (`Content-Encoding`: identity, gzip or deflate, any number of
    layers) inflated a step at a time, refused once it would pass MAX_BODY_BYTES: a small
    compressed body never inflates past the cap, whatever its ratio."""

    def __init__(self, encoding: str) -> None:
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

    def feed(self, data: bytes) -> None:
        self._push(0, data)

    def _push(self, layer: int, data: bytes) -> None:
        if layer == len(self.layers):
            self.body += data
            if len(self.body) > MAX_BODY_BYTES:
                raise ValueError("the answer is larger than 1 MB")
            return
        inflater = self.layers[layer]
        try:
            while data:
                out = inflater.decompress(data, INFLATE_STEP)
                data = inflater.unconsumed_tail
                self.sizes[layer] += len(out)
                if self.sizes[layer] > MAX_BODY_BYTES:
                    raise ValueError("the answer is larger than 1 MB")
                self._push(layer + 1, out)
                if inflater.eof:
                    return
        except zlib.error as error:
            raise ValueError(f"the answer's compressed body is broken ({error})") from None


class _Transient(Exception):
    def __init__(self, status: int, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.wait = wait


async def _pace(state: dict[str, float], rpm: int | None) -> None:
    """Wait for this request's turn under `rpm` requests a minute."""
    if not rpm:
        return
    now = time.monotonic()
    start = max(now, state.get("next", now))
    state["next"] = start + 60.0 / rpm
    if start > now:
        await asyncio.sleep(start - now)


def run_calls(
    endpoint: Endpoint,
    calls: Iterable[tuple[Any, dict[str, Any]]],
    on_reply: Callable[[Any, Reply], None],
    on_failure: Callable[[Any, Attempt], None],
) -> None:
    """Send each call's body (a Chat Completions request), `endpoint.concurrency` at a time,
    handing each answer to `on_reply` (and each failed attempt to `on_failure`) as it comes.
    The first refused or finally failed request stops the run: its error is raised once the
    requests in flight are done."""
    asyncio.run(_run(endpoint, iter(calls), on_reply, on_failure))


async def _run(
    endpoint: Endpoint,
    calls: Iterator[tuple[Any, dict[str, Any]]],
    on_reply: Callable[[Any, Reply], None],
    on_failure: Callable[[Any, Attempt], None],
) -> None:
    import httpx

    headers = {"Accept-Encoding": "gzip, deflate"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    # A client a worker, holding a connection to each endpoint: httpcore's pool rescans
    # every connection for every waiting request, a cost that grows with the pool's size.
    # A worker has one request in flight, so an endpoint sees at most `concurrency`.
    hosts = len(endpoint.base_urls)
    limits = httpx.Limits(max_connections=hosts, max_keepalive_connections=hosts)
    balance = _Balance({url.rstrip("/"): 0 for url in endpoint.base_urls})
    pacing: dict[str, float] = {}
    stop: list[DicesError] = []

    async def send(client: httpx.AsyncClient, body: dict[str, Any]) -> Reply:
        url = balance.pick()
        balance.in_flight[url] += 1
        started = time.monotonic()
        try:
            # The whole answer within the timeout: httpx's own is per read, which a server
            # dribbling a byte at a time would never reach.
            # The raw bytes, inflated here a step at a time: httpx inflates a chunk whole.
            async with (
                asyncio.timeout(endpoint.timeout),
                client.stream("POST", completions_url(url), json=body) as response,
            ):
                try:
                    inflater = _Inflater(response.headers.get("content-encoding", ""))
                    async for chunk in response.aiter_raw():
                        inflater.feed(chunk)
                        await asyncio.sleep(0)  # the timeout is checked between chunks
                except ValueError as error:
                    raise _Transient(response.status_code, str(error)) from None
                received = inflater.body
        except (httpx.TimeoutException, TimeoutError):
            raise _Transient(0, f"no answer within {endpoint.timeout:g} s") from None
        except httpx.TransportError as error:
            raise _Transient(0, f"connection failed: {type(error).__name__}") from None
        finally:
            balance.in_flight[url] -= 1
        latency = (time.monotonic() - started) * 1000
        status = response.status_code
        if status == 200:
            try:
                return parse_reply(status, latency, bytes(received))
            except ValueError as error:
                raise _Transient(
                    status, f"the answer is not Chat Completions JSON ({error})"
                ) from None
        message = shown(server_message(bytes(received)), endpoint.api_key)
        if status == 429:
            raise _Transient(status, message, retry_after(response.headers.get("retry-after")))
        if status >= 500 or status == 408:
            raise _Transient(status, message)
        refused = f"{host_of(url)} refused the request: HTTP {status}: {message}"
        if 300 <= status < 400:
            refused += " (a redirect, which dices does not follow: give the URL it names)"
        refusal = (
            RefusedError(refused, " (try ", Option("no_logprobs"), ")")
            if "logprob" in message.lower()
            else RefusedError(refused)
        )
        refusal.status = status
        raise refusal

    async def worker(client: httpx.AsyncClient) -> None:
        for call, body in calls:
            if stop:
                return
            for attempt in range(endpoint.retries + 1):
                await _pace(pacing, endpoint.rpm)
                started = time.monotonic()
                try:
                    reply = await send(client, body)
                except _Transient as failure:
                    on_failure(
                        call,
                        Attempt(failure.status, (time.monotonic() - started) * 1000, str(failure)),
                    )
                    if attempt == endpoint.retries:
                        stop.append(
                            RequestFailedError(
                                f"a request failed {endpoint.retries + 1} times (last: "
                                f"{'HTTP ' + str(failure.status) + ': ' if failure.status else ''}"
                                f"{failure}); the run stopped"
                            )
                        )
                        return
                    backoff = min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2**attempt)
                    wait = failure.wait if failure.wait is not None else random.uniform(0, backoff)
                    await asyncio.sleep(wait)
                    if stop:
                        return
                    continue
                except RefusedError as refused:
                    on_failure(
                        call,
                        Attempt(refused.status, (time.monotonic() - started) * 1000, str(refused)),
                    )
                    stop.append(refused)
                    return
                on_reply(call, reply)
                break

    # httpx's default verification, its CA bundle loaded once, not once a client.
    tls = httpx.create_ssl_context()
    async with contextlib.AsyncExitStack() as clients:
        workers = []
        for _ in range(endpoint.concurrency):
            client = httpx.AsyncClient(
                headers=headers, limits=limits, timeout=endpoint.timeout, verify=tls
            )
            workers.append(worker(await clients.enter_async_context(client)))
        await asyncio.gather(*workers)
    if stop:
        raise stop[0]
