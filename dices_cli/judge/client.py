"""The judge's client for OpenAI-compatible Chat Completions endpoints (vLLM, Ollama,
llama.cpp's server, TGI, LM Studio, OpenAI, gateways).

Worker threads, each with a kept-alive connection to each endpoint
(`dices_cli.judge.transport`: opened by the standard library's `http.client`, each exchange
read and written on the socket itself): a thread pool spends a fraction of the CPU an
asyncio client does per request, and the transport less than `http.client`'s requests do.
No SDK stands in between (the `openai` package brings pydantic and its own retry policy,
which would have to be switched off to keep ours).
The transport is imported only when a judge run talks to a server; each answer is handed to
the caller's thread, which caches it.

At most `concurrency` requests are in flight (`concurrency` workers share the requests), at
most `rpm` start a minute, each goes to the endpoint with the fewest in flight. A 429 waits
as long as its Retry-After says; a 5xx, a timeout, a dropped connection or an unreadable body
is retried with exponential backoff and full jitter, up to `retries` times; then, or at a
401/403/404 or another 4xx, the run stops (`RequestFailedError`, `RefusedError`) and the
calls already answered stay answered. The API key goes in the Authorization header and
nowhere else; any text shown from a server has it blanked out.
"""

from __future__ import annotations

import contextlib
import json
import math
import queue
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from dices_cli import __version__
from dices_cli.errors import DicesError, Option
from dices_cli.read.untrusted import UntrustedError, finite_number, loads_json

if TYPE_CHECKING:
    from dices_cli.judge.transport import Connections, Target

MAX_BODY_BYTES = 1 << 20  # an answer body larger than this, inflated, is refused
MAX_BODY_DEPTH = 16  # levels of JSON in an answer: Chat Completions needs 6
MAX_ANSWER_CHARS = 20_000  # of an answer's text kept in the cache
MAX_MESSAGE_CHARS = 300  # of a server's error message shown
BACKOFF_SECONDS = 0.5  # the first retry's wait at most; doubled each time
MAX_BACKOFF_SECONDS = 30.0
MAX_RETRY_AFTER_SECONDS = 300.0
TOP_LOGPROBS = 5
LOGPROB_ROUNDING = 1e-6  # a logprob above 0 by at most this is taken as 0


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
            from email.utils import parsedate_to_datetime  # a date: rare, and slow to import

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
    if type(value) is float:  # as JSON gives nearly every logprob: NaN fails both tests
        return min(value, 0.0) if -math.inf < value <= LOGPROB_ROUNDING else None
    number = finite_number(value, high=LOGPROB_ROUNDING)
    return None if number is None else min(number, 0.0)


def _turn(state: dict[str, Any], rpm: int | None) -> float:
    """Seconds this request waits for its turn under `rpm` requests a minute (the turns are
    handed out under the state's lock, one worker at a time)."""
    if not rpm:
        return 0.0
    with state.setdefault("lock", threading.Lock()):
        now = time.monotonic()
        start = max(now, state.get("next", now))
        state["next"] = start + 60.0 / rpm
    return start - now


async def _pace(state: dict[str, Any], rpm: int | None) -> None:
    """Wait for this request's turn under `rpm` requests a minute, in a coroutine."""
    import asyncio

    await asyncio.sleep(_turn(state, rpm))


def run_calls(
    endpoint: Endpoint,
    calls: Iterable[tuple[Any, dict[str, Any]]],
    on_reply: Callable[[Any, Reply], None],
    on_failure: Callable[[Any, Attempt], None],
) -> None:
    """Send each call's body (a Chat Completions request), `endpoint.concurrency` at a time,
    handing each answer to `on_reply` (and each failed attempt to `on_failure`) as it comes,
    in this thread. The first refused or finally failed request stops the run: its error is
    raised once the requests in flight are done."""
    from dices_cli.judge import transport

    headers = {"Accept-Encoding": "gzip, deflate", "User-Agent": f"dices/{__version__}"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    urls = [url.rstrip("/") for url in endpoint.base_urls]
    goals = {url: transport.target(completions_url(url)) for url in urls}
    context = transport.tls_context() if any(g.tls for g in goals.values()) else None
    run = _Run(endpoint, iter(calls), _Balance(dict.fromkeys(urls, 0)), goals)
    workers = [
        threading.Thread(
            target=run.work,
            args=(transport.Connections(headers, context, MAX_BODY_BYTES),),
            daemon=True,
        )
        for _ in range(endpoint.concurrency)
    ]
    for worker in workers:
        worker.start()
    running = len(workers)
    try:
        with _ctrl_c_queued(run):
            while running:
                done = run.results.get()
                if done is None:
                    running -= 1
                elif done is _CTRL_C:
                    raise KeyboardInterrupt
                else:
                    _hand(done, on_reply, on_failure)
    except KeyboardInterrupt:
        run.halt.set()
        with contextlib.suppress(queue.Empty):  # what came before the interrupt is kept
            while True:
                done = run.results.get_nowait()
                if done is not None and done is not _CTRL_C:
                    _hand(done, on_reply, on_failure)
        raise
    finally:
        run.halt.set()
    if run.stop:
        raise run.stop[0]


# Put in the results by Ctrl-C while answers are handed (`_ctrl_c_queued`).
_CTRL_C: tuple[Any, Any] = (None, None)


@contextlib.contextmanager
def _ctrl_c_queued(run: _Run) -> Iterator[None]:
    """Inside: Ctrl-C queues `_CTRL_C` among the results instead of interrupting this
    thread where it is, so an answer being handed is handed whole (cached and counted)
    before the run stops. Only in the main thread with Python's own handler in place
    (elsewhere Ctrl-C is left as it is)."""
    import signal

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda _signal, _frame: run.results.put(_CTRL_C))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _hand(
    done: tuple[Any, Any],
    on_reply: Callable[[Any, Reply], None],
    on_failure: Callable[[Any, Attempt], None],
) -> None:
    """A worker's result to its callback; a worker's own error (a bug) raised."""
    if isinstance(done[1], Reply):
        on_reply(*done)
    elif isinstance(done[1], Attempt):
        on_failure(*done)
    else:
        raise done[1]


class _Run:
    """What a run's workers share: the calls (handed out one at a time), the balance, the
    pacing, the results for the caller's thread, and the first error that stops them."""

    def __init__(
        self,
        endpoint: Endpoint,
        calls: Iterator[tuple[Any, dict[str, Any]]],
        balance: _Balance,
        goals: dict[str, Target],
    ) -> None:
        self.endpoint = endpoint
        self.calls = calls
        self.balance = balance
        self.goals = goals
        self.lock = threading.Lock()
        self.pacing: dict[str, Any] = {}
        self.results: queue.SimpleQueue[tuple[Any, Any] | None] = queue.SimpleQueue()
        self.stop: list[DicesError] = []
        self.halt = threading.Event()

    def work(self, connections: Connections) -> None:
        try:
            while not self.halt.is_set():
                with self.lock:
                    call, body = next(self.calls, (None, None))
                if body is None:
                    return
                payload = json.dumps(
                    body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
                ).encode()
                self._ask(connections, call, payload)
        except Exception as error:  # handed to the caller's thread
            self.results.put((None, error))
        finally:
            connections.close()
            self.results.put(None)

    def _ask(self, connections: Connections, call: Any, payload: bytes) -> None:
        from dices_cli.judge.transport import Transient

        endpoint = self.endpoint
        for attempt in range(endpoint.retries + 1):
            wait = _turn(self.pacing, endpoint.rpm)
            if wait:
                time.sleep(wait)
            started = time.monotonic()
            try:
                reply = self._send(connections, payload)
            except Transient as failure:
                spent = (time.monotonic() - started) * 1000
                self.results.put((call, Attempt(failure.status, spent, str(failure))))
                if attempt == endpoint.retries:
                    self._halt(
                        RequestFailedError(
                            f"a request failed {endpoint.retries + 1} times (last: "
                            f"{'HTTP ' + str(failure.status) + ': ' if failure.status else ''}"
                            f"{failure}); the run stopped"
                        )
                    )
                    return
                backoff = min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2**attempt)
                wait = failure.wait if failure.wait is not None else random.uniform(0, backoff)
                if self.halt.wait(wait):
                    return
                continue
            except RefusedError as refused:
                spent = (time.monotonic() - started) * 1000
                self.results.put((call, Attempt(refused.status, spent, str(refused))))
                self._halt(refused)
                return
            self.results.put((call, reply))
            return

    def _halt(self, error: DicesError) -> None:
        with self.lock:
            self.stop.append(error)
        self.halt.set()

    def _send(self, connections: Connections, payload: bytes) -> Reply:
        from dices_cli.judge.transport import Transient

        endpoint = self.endpoint
        with self.lock:
            url = self.balance.pick()
            self.balance.in_flight[url] += 1
        started = time.monotonic()
        try:
            status, wait, received = connections.post(self.goals[url], payload, endpoint.timeout)
        finally:
            with self.lock:
                self.balance.in_flight[url] -= 1
        latency = (time.monotonic() - started) * 1000
        if status == 200:
            try:
                return parse_reply(status, latency, received)
            except ValueError as error:
                reason = f"the answer is not Chat Completions JSON ({error})"
                raise Transient(status, reason) from None
        message = shown(server_message(received), endpoint.api_key)
        if status == 429:
            raise Transient(status, message, retry_after(wait))
        if status >= 500 or status == 408:
            raise Transient(status, message)
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
