"""A judge run: the planned calls (`dices_cli.judge.plan`) the cache does not answer asked of
the model, every answer cached as it comes, then the predictions
(`dices_cli.judge.predictions`) and the run's manifest.

`dry_run` says what a run would ask; `judge` runs it.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli import __version__
from dices_cli.errors import DicesError, Option
from dices_cli.judge.plan import (
    Call,
    Item,
    Settings,
    cached,
    load_items,
    persona_groups,
    plan,
    request_body,
)
from dices_cli.judge.plan import segment as run_segment
from dices_cli.judge.predictions import baseline_predictions, predictions

if TYPE_CHECKING:
    from dices_cli.judge.client import Attempt, Reply
    from dices_cli.output import Table
    from dices_cli.store.datasets import Store

MANIFEST_SUFFIX = ".judge.json"
# --dry-run's prompt tokens, offline: the pieces GPT-style byte-level BPE tokenizers cut text
# into before merging bytes (cl100k's split; o200k's and Llama 3's are close): a contraction,
# a run of letters with the character before it, up to three digits, a run of punctuation,
# line breaks, spaces. A merge never crosses two pieces, so each is at least one token: a
# lower bound for those tokenizers, and close for English prose, whose common words are one
# token each. (Python's `re` has no \p{L}: a letter is a word character that is neither a
# digit nor an underscore.)
PRETOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)|(?:[^\r\n\w]|_)?[^\W\d_]+|\d{1,3}| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    re.IGNORECASE,
)
# The chat format's own tokens: each message's role and separators, and the reply's
# opening (OpenAI's published count for its chat models).
TOKENS_PER_MESSAGE, TOKENS_PER_REPLY = 3, 3
# A batch costs this share of the online price (OpenAI's and Anthropic's batch APIs).
BATCH_SHARE = 0.5


@dataclass
class Progress:
    """What the run has done so far, handed to the progress callback after each answer."""

    total: int
    cached: int = 0
    done: int = 0
    failures: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class DryRun:
    calls: int
    cached: int
    to_ask: int
    prompt_tokens: int  # estimated: `prompt_tokens`
    completion_tokens: int  # at most: max tokens x requests
    cost: dict[str, Any] | None = None  # `cost`, at these tokens

    @property
    def estimated_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def cost(
    prices: tuple[float, float] | None, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any] | None:
    """The dollars of these tokens at (input, output) dollars per million, online and as a
    batch (BATCH_SHARE of it); None without prices."""
    if prices is None:
        return None
    online = (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1e6
    return {
        "price_in": prices[0],
        "price_out": prices[1],
        "online": round(online, 6),
        "batch": round(online * BATCH_SHARE, 6),
    }


@dataclass(frozen=True)
class Outcome:
    table: Table
    counts: dict[str, int]
    manifest: dict[str, Any]


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    """The estimated tokens of a request's messages: the PRETOKEN pieces of each message's
    content, plus the chat format's TOKENS_PER_MESSAGE each and TOKENS_PER_REPLY."""
    pieces = sum(_pieces(message["content"]) for message in messages)
    return pieces + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_REPLY


@functools.lru_cache(maxsize=4096)
def _pieces(text: str) -> int:
    """The PRETOKEN pieces of a message (remembered: a prompt's system message is in every
    request, and each conversation's in each of its samples)."""
    return len(PRETOKEN.findall(text))


def dry_run(store: Store, settings: Settings) -> DryRun:
    """What a run would ask: the calls, those the cache answers, and the tokens of the
    others: their prompts' estimated (`prompt_tokens`), and at most max tokens each of
    answer (every sample is a request)."""
    calls = plan(settings, load_items(store, settings), persona_groups(store, settings))
    if settings.baseline is not None:
        return DryRun(len(calls), 0, 0, 0, 0)
    answered = cached(store, settings, calls)
    todo = [call for call in calls if call.key not in answered]
    estimate = _estimator(settings)
    prompts = sum(estimate(call) for call in todo)
    answers = settings.max_tokens * len(todo)
    spent = cost(settings.prices, prompts, answers)
    return DryRun(len(calls), len(calls) - len(todo), len(todo), prompts, answers, spent)


def judge(
    store: Store,
    settings: Settings,
    api_key: str | None,
    progress: Callable[[Progress], None] | None = None,
    ask_missing: bool = True,
) -> Outcome:
    """Run the judge: ask every call the cache does not answer, then the predictions.
    Without `ask_missing` (the answers came from a batch) a call the cache does not answer
    is an `UnansweredError`, and nothing is asked."""
    started = time.time()
    items = load_items(store, settings)
    calls = plan(settings, items, persona_groups(store, settings))
    tokens: dict[str, Any] | None = None
    if settings.baseline is not None:
        table, counts = baseline_predictions(settings, calls)
    else:
        answers, state = _ask(store, settings, calls, api_key, progress, ask_missing)
        tokens = reported_tokens(settings, calls, answers)
        table, counts = predictions(settings, calls, answers)
        counts |= {
            "requests": state.done - state.cached,
            "cache_hits": state.cached,
            "failed_attempts": state.failures,
        }
    counts = {"items": len(items), "calls": len(calls), **counts}
    manifest = _manifest(store, settings, counts, started)
    if tokens is not None:
        manifest["tokens"] = tokens
        manifest["cost"] = cost(settings.prices, tokens["prompt"], tokens["completion"])
    return Outcome(table, counts, manifest)


def reported_tokens(
    settings: Settings, calls: list[Call], answers: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The tokens the server reported for the run's answers, and, for the answers it
    reported prompt tokens for, the offline estimate of those (`prompt_tokens`): each run
    checks the estimate."""
    prompt = completion = estimated = reported = 0
    estimate = _estimator(settings)
    for call in calls:
        record = answers.get(call.key)
        if record is None:
            continue
        completion += _count(record.get("completion_tokens"))
        if _count(record.get("prompt_tokens")):
            reported += 1
            prompt += _count(record.get("prompt_tokens"))
            estimated += estimate(call)
    return {
        "prompt": prompt,
        "completion": completion,
        "answers_with_prompt_tokens": reported,
        "estimated_prompt": estimated,
    }


def _estimator(settings: Settings) -> Callable[[Call], int]:
    """`prompt_tokens` of a call's request, made once for the samples of a conversation and
    persona (their messages are the same)."""
    made: dict[tuple[Item, str | None], int] = {}

    def estimate(call: Call) -> int:
        found = made.get((call.item, call.persona_line))
        if found is None:
            found = prompt_tokens(request_body(settings, call)["messages"])
            made[(call.item, call.persona_line)] = found
        return found

    return estimate


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _ask(
    store: Store,
    settings: Settings,
    calls: list[Call],
    api_key: str | None,
    progress: Callable[[Progress], None] | None,
    ask_missing: bool = True,
) -> tuple[dict[str, dict[str, Any]], Progress]:
    """Each call's completed record: from the cache, or asked now (and cached as it comes)."""
    from dices_cli.judge.client import Endpoint, run_calls

    found = cached(store, settings, calls)
    answers = {call.key: found[call.key] for call in calls if call.key in found}
    todo = [call for call in calls if call.key not in answers]
    state = Progress(total=len(calls), cached=len(answers), done=len(answers))
    if progress:
        progress(state)
    if not todo:
        return answers, state
    if not ask_missing:
        raise UnansweredError(len(todo), len(calls))
    segment = run_segment(store, settings)

    def on_reply(call: Call, reply: Reply) -> None:
        entry = answered_record(settings, call, reply, api_key)
        segment.append(entry)
        answers[call.key] = entry
        state.done += 1
        state.tokens += (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        if progress:
            progress(state)

    def on_failure(call: Call, attempt: Attempt) -> None:
        segment.append(
            failed_record(call, attempt.status or None, attempt.latency_ms, attempt.error, api_key)
        )
        state.failures += 1
        if progress:
            progress(state)

    endpoint = Endpoint(
        base_urls=settings.base_urls,
        api_key=api_key,
        timeout=settings.timeout,
        concurrency=settings.concurrency,
        rpm=settings.rpm,
        retries=settings.retries,
    )
    try:
        run_calls(
            endpoint,
            ((call, request_body(settings, call)) for call in todo),
            on_reply,
            on_failure,
        )
    except KeyboardInterrupt:
        raise JudgeInterrupted(state.done, len(calls)) from None
    except DicesError as error:
        answered = state.done - state.cached
        raise type(error)(
            *error.message,
            f"; {answered} of {len(todo)} requests were answered and are cached: "
            "run the same command again to resume",
        ) from None
    finally:
        segment.close()
    return answers, state


def _record(call: Call, **audit: Any) -> dict[str, Any]:
    return {"key": call.key, "asked_at": time.time(), **call.fields, **audit}


def answered_record(
    settings: Settings, call: Call, reply: Reply, api_key: str | None
) -> dict[str, Any]:
    """The cache record of a call's answer (`ok` true), the key blanked from its text."""
    answer = blanked(reply.answer, api_key)
    return _record(
        call,
        ok=True,
        status=reply.status,
        latency_ms=None if reply.latency_ms is None else round(reply.latency_ms, 3),
        answer=answer,
        verdict=settings.prompt.read_answer(answer),
        finish_reason=blanked(reply.finish_reason, api_key),
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        first_token=(
            None
            if reply.first_token is None
            else [(blanked(t, api_key), p) for t, p in reply.first_token]
        ),
        error=blanked(reply.problem, api_key),
    )


def failed_record(
    call: Call, status: int | None, latency_ms: float | None, error: str, api_key: str | None
) -> dict[str, Any]:
    """The cache record of a failed attempt at a call (`ok` false): its status and why."""
    return _record(
        call,
        ok=False,
        status=status,
        latency_ms=None if latency_ms is None else round(latency_ms, 3),
        error=blanked(error, api_key),
    )


class UnansweredError(DicesError):
    """A run from a batch's results whose cache lacks some calls' answers."""

    def __init__(self, missing: int, calls: int) -> None:
        super().__init__(
            f"{missing} of {calls} calls have no answer in the cache (failed or expired in "
            "the batch, or not in it): the same command with ",
            Option("batch"),
            " FILE writes a batch of those only; without ",
            Option("batch_results"),
            " they are asked online",
        )


class JudgeInterrupted(DicesError):
    """Ctrl-C during a run: what is answered is cached, and the same command resumes."""

    exit_code = 130

    def __init__(self, cached: int, calls: int) -> None:
        super().__init__(
            f"interrupted: {cached} of {calls} answers are cached; "
            "run the same command again to resume"
        )


def blanked(text: str | None, secret: str | None) -> str | None:
    """A server's text as kept in the cache: the API key, if the server echoed it, blanked."""
    if text is None or not secret:
        return text
    return text.replace(secret, "***")


def _manifest(
    store: Store, settings: Settings, counts: dict[str, int], started: float
) -> dict[str, Any]:
    from dices_cli.families import grouped_members
    from dices_cli.store.datasets import sources_of

    names = list(grouped_members()) if settings.dataset == "all" else [settings.dataset]
    datasets = {}
    for name in names:
        if store.exists(name):
            datasets[name] = [
                {"name": s.get("name"), "sha256": s.get("sha256")}
                for s in sources_of(store.open(name).manifest)
            ]
    prompt = settings.prompt
    return {
        "dices_version": __version__,
        "model": settings.model,
        "name": settings.label,
        "endpoint": None if settings.baseline is not None else settings.endpoint,
        "prompt": None
        if settings.baseline is not None
        else {
            "name": prompt.name,
            "version": prompt.version,
            "sha256": prompt.content_hash,
            "about": prompt.about,
            "answers": prompt.answers,
            **({"label": prompt.label} if prompt.label is not None else {}),
        },
        "parameters": settings.parameters(),
        "datasets": datasets,
        "counts": counts,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 3),
    }


def manifest_path(predictions: Path) -> Path:
    """Where a predictions file's manifest is: `FILE.judge.json` beside it."""
    return predictions.with_name(f"{predictions.name}{MANIFEST_SUFFIX}")


def judged_settings(predictions: Path) -> Table | None:
    """How the models of a predictions file were judged, from its manifest (None without
    one, or with one that cannot be read: the predictions are scored all the same)."""
    from dices_cli.output import table_from_rows
    from dices_cli.read.untrusted import UntrustedError, loads_json, read_regular_file

    try:
        manifest = loads_json(read_regular_file(manifest_path(predictions)))
        prompt = manifest["prompt"] or {}
        parameters = manifest["parameters"]
        counts = manifest["counts"]
        row = (
            manifest["name"],
            manifest["model"],
            manifest["endpoint"],
            prompt.get("name"),
            prompt.get("version"),
            prompt.get("sha256", "")[:12] or None,
            parameters["temperature"],
            parameters["samples"],
            parameters["max_tokens"],
            parameters["seed"],
            parameters["persona"],
            counts["items"],
            counts.get("unreadable"),
        )
    except (UntrustedError, TypeError, KeyError, AttributeError):
        return None
    if not all(value is None or isinstance(value, str | int | float) for value in row):
        return None  # a manifest written by hand: a list or a table where a value belongs
    columns = ["model", "asked", "endpoint", "prompt", "version", "prompt_sha256"]
    columns += ["temperature", "samples", "max_tokens", "seed", "persona", "items", "unreadable"]
    return table_from_rows(columns, [row])
