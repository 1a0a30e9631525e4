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
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from dices_cli.errors import DicesError, Option

MAX_BODY_BYTES = 1 << 20  # an answer body larger than this is refused: memory stays bounded
MAX_ANSWER_CHARS = 20_000  # of an answer's text kept in the cache
MAX_MESSAGE_CHARS = 300  # of a server's error message shown
BACKOFF_SECONDS = 0.5  # the first retry's wait at most; doubled each time
MAX_BACKOFF_SECONDS = 30.0
MAX_RETRY_AFTER_SECONDS = 300.0
TOP_LOGPROBS = 5


class RefusedError(DicesError):
    """The server refused a request in a way retrying cannot mend (401, 403, 404, other 4xx)."""


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
    latency_ms: float
    answer: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    first_token: list[tuple[str, float]] | None  # the first answer token's top logprobs


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
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


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
        parsed = json.loads(body)
    except ValueError:
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
    parsed = json.loads(body)
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
    reply.first_token = _first_token(choice.get("logprobs"))
    return reply


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_token(logprobs: Any) -> list[tuple[str, float]] | None:
    """The top logprobs of the first token with a letter or digit in it (a reply may open
    with a space, a quote or markup)."""
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
            return [
                (str(t["token"]), float(t["logprob"]))
                for t in top[: TOP_LOGPROBS * 4]
                if isinstance(t, dict)
                and isinstance(t.get("token"), str)
                and isinstance(t.get("logprob"), int | float)
                and not isinstance(t.get("logprob"), bool)
            ] or None
    return None


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

    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    limits = httpx.Limits(
        max_connections=endpoint.concurrency, max_keepalive_connections=endpoint.concurrency
    )
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
            async with (
                asyncio.timeout(endpoint.timeout),
                client.stream("POST", f"{url}/chat/completions", json=body) as response,
            ):
                received = bytearray()
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if len(received) > MAX_BODY_BYTES:
                        raise _Transient(response.status_code, "the answer is larger than 1 MB")
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
        if "logprob" in message.lower():
            raise RefusedError(refused, " (try ", Option("no_logprobs"), ")")
        raise RefusedError(refused)

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
                    stop.append(refused)
                    return
                on_reply(call, reply)
                break

    async with httpx.AsyncClient(
        headers=headers, limits=limits, timeout=endpoint.timeout
    ) as client:
        await asyncio.gather(*(worker(client) for _ in range(endpoint.concurrency)))
    if stop:
        raise stop[0]
