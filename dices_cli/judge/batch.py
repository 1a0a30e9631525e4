"""Batch mode: a run's requests written as the JSON Lines of OpenAI's Batch API (which
`vllm run-batch` reads too), and the output of such a batch read back into the cache.

A request line is `{"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions",
"body": REQUEST}`: its `custom_id` is the call's cache key, so a result is matched to its
call by the key alone, and the file holds no endpoint URL and no API key. Only the calls the
cache does not answer are written: after a batch that failed or expired in part, the same
command writes those left, and nothing is asked twice. The requests are split into files at
the endpoint's limits (`Limits`: requests and bytes per file).

A result line is `{"custom_id": KEY, "response": {"status_code": N, "body": ANSWER},
"error": null | {"code": ..., "message": ...}}` (OpenAI's output and error files, vLLM's
output file). Each is read by the untrusted reader, one bounded line at a time: an answer
becomes a cache record as an online answer does, a failed request a failed attempt (its
call is in the next batch), and a line that is not a result of this run (not JSON, too long
or too deep, of the wrong shape, an unknown or repeated `custom_id`) a `Problem`, counted and
kept up to `MAX_KEPT_PROBLEMS`, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.judge.client import MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_MESSAGE_CHARS, reply_of
from dices_cli.judge.plan import (
    Call,
    Settings,
    cached,
    load_items,
    persona_groups,
    plan,
    request_body,
)
from dices_cli.judge.plan import segment as run_segment
from dices_cli.judge.run import answered_record, failed_record
from dices_cli.read.untrusted import (
    UntrustedError,
    bounded_lines,
    loads_json,
    open_regular_file,
)
from dices_cli.store.judge_cache import Segment

if TYPE_CHECKING:
    from dices_cli.store.datasets import Store

REQUEST_URL = "/v1/chat/completions"
# OpenAI's limits for one batch input file; other endpoints have their own (`Limits`).
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
# A result line wraps one answer (at most MAX_BODY_BYTES, as online) in a few fields.
MAX_RESULT_LINE_BYTES = MAX_BODY_BYTES + (64 << 10)
MAX_RESULT_DEPTH = MAX_BODY_DEPTH + 3  # the line, its response, the response's body
MAX_KEPT_PROBLEMS = 1_000  # past this, problems are only counted


@dataclass(frozen=True)
class Limits:
    """At most this many requests and bytes in one batch input file."""

    requests: int = MAX_REQUESTS
    bytes: int = MAX_BYTES


OPENAI_LIMITS = Limits()


@dataclass(frozen=True)
class BatchFile:
    path: Path
    requests: int
    bytes: int


@dataclass(frozen=True)
class Written:
    calls: int  # of the run
    cached: int  # answered already: not in a file
    files: list[BatchFile]

    @property
    def requests(self) -> int:
        return sum(part.requests for part in self.files)


@dataclass(frozen=True)
class Problem:
    """A line of a results file that is not a result of this run."""

    path: Path
    line: int
    custom_id: str | None
    problem: str


@dataclass
class ReadBack:
    """What reading results files gave: answers, failed calls, results the cache already
    held, and the lines that are no results of this run."""

    answered: int = 0
    failed: int = 0
    already_cached: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add_problem(self, problem: Problem) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_KEPT_PROBLEMS:
            self.problems.append(problem)


def planned_calls(store: Store, settings: Settings) -> list[Call]:
    """The run's calls; a baseline has none to batch."""
    if settings.baseline is not None:
        raise UsageError(Option("model"), f" {settings.model} needs no server, and no batch")
    return plan(settings, load_items(store, settings), persona_groups(store, settings))


def request_line(settings: Settings, call: Call) -> bytes:
    """A call as a line of a batch input file."""
    line = {
        "custom_id": call.key,
        "method": "POST",
        "url": REQUEST_URL,
        "body": request_body(settings, call),
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def part_paths(path: Path, parts: int) -> list[Path]:
    """The files of a batch: `path` itself, or `STEM.001.jsonl`, `STEM.002.jsonl`, ... when
    the requests take several files."""
    if parts == 1:
        return [path]
    width = max(3, len(str(parts)))
    return [path.with_name(f"{path.stem}.{n:0{width}d}{path.suffix}") for n in range(1, parts + 1)]


def write_batch(
    store: Store,
    settings: Settings,
    path: Path,
    limits: Limits = OPENAI_LIMITS,
    force: bool = False,
    inputs: tuple[Path, ...] = (),
) -> Written:
    """Write the calls the cache does not answer as batch input files (`part_paths`), each
    within `limits`. Each file appears whole or not at all (`dices_cli.output.open_output`)."""
    from dices_cli.output import open_output

    calls = planned_calls(store, settings)
    answered = cached(store, settings, calls)
    todo = [call for call in calls if call.key not in answered]
    # The split first (sizes only: no file holds every line in memory), then the files.
    sizes = [len(request_line(settings, call)) for call in todo]
    bounds = _split(sizes, limits)
    files = []
    for (start, end), part in zip(bounds, part_paths(path, len(bounds)), strict=True):
        with open_output(part, force, inputs, Option("batch")) as handle:
            for call in todo[start:end]:
                handle.write(request_line(settings, call))
        files.append(BatchFile(part, end - start, sum(sizes[start:end])))
    return Written(len(calls), len(calls) - len(todo), files)


def _split(sizes: list[int], limits: Limits) -> list[tuple[int, int]]:
    """The [start, end) of each file: as many lines as fit in `limits`, in order."""
    bounds: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        if size > limits.bytes:
            raise DicesError(
                f"a request is {size:,} bytes, more than a batch file may hold "
                f"({limits.bytes:,}): raise ",
                Option("batch_max_bytes"),
            )
        if index - start == limits.requests or used + size > limits.bytes:
            bounds.append((start, index))
            start, used = index, 0
        used += size
    if start < len(sizes):
        bounds.append((start, len(sizes)))
    return bounds


def read_results(
    store: Store, settings: Settings, paths: list[Path], api_key: str | None = None
) -> ReadBack:
    """Read batch output files into the cache: each answer and each failed request of a
    call of this run that the cache does not answer yet."""
    planned = planned_calls(store, settings)
    calls = {call.key: call for call in planned}
    answered = cached(store, replace(settings, refresh=False), planned)
    read = ReadBack()
    seen: set[str] = set()
    segment = run_segment(store, settings)
    try:
        for path in paths:
            for number, line in _lines(path):
                problem = _take(line, calls, answered, seen, settings, api_key, segment, read)
                if problem is not None:
                    custom_id, why = problem
                    read.add_problem(Problem(path, number, custom_id, why))
    finally:
        segment.close()
    return read


def _lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """Each line of a results file with its number (None: longer than a result may be)."""
    try:
        with open_regular_file(path) as handle:
            yield from enumerate(bounded_lines(handle, MAX_RESULT_LINE_BYTES), 1)
    except UntrustedError as error:
        raise DicesError(f"cannot read the batch results {path}: {error}") from error
    except OSError as error:
        from dices_cli.errors import system_reason

        raise DicesError(f"cannot read the batch results {path}: {system_reason(error)}") from error


def _take(
    line: bytes | None,
    calls: dict[str, Call],
    cached: dict[str, dict[str, Any]],
    seen: set[str],  # answered: a later result for one is a problem
    settings: Settings,
    api_key: str | None,
    segment: Segment,
    read: ReadBack,
) -> tuple[str | None, str] | None:
    """Cache one result line; (its custom_id, why) when it is not a result of this run."""
    if line is None:
        return None, f"the line is longer than {MAX_RESULT_LINE_BYTES:,} bytes"
    if not line.strip():
        return None  # a blank line: nothing
    try:
        result = loads_json(line, MAX_RESULT_LINE_BYTES, MAX_RESULT_DEPTH)
    except UntrustedError as error:
        return None, str(error)
    if not isinstance(result, dict):
        return None, "the line is not a JSON object"
    custom_id = result.get("custom_id")
    if not isinstance(custom_id, str):
        return None, "the line has no custom_id text"
    shown_id = _shown(custom_id, 80)
    call = calls.get(custom_id)
    if call is None:
        return shown_id, "no call of this run has this custom_id (another run's batch?)"
    if custom_id in seen:
        return shown_id, "a result for this custom_id after its answer (the answer is kept)"
    response, failure = result.get("response"), result.get("error")
    status = response.get("status_code") if isinstance(response, dict) else None
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        status = None
    why = None if status == 200 else _failure(response, failure, status)
    if status != 200 and why is None:
        return shown_id, "the line has neither a response with a status_code nor an error"
    if custom_id in cached:
        seen.add(custom_id)
        read.already_cached += 1
        return None
    if why is None:
        try:
            reply = reply_of(
                200, None, response.get("body") if isinstance(response, dict) else None
            )
        except ValueError as problem:
            why = f"the answer is not Chat Completions JSON ({problem})"
            segment.append(failed_record(call, 200, None, why, api_key))
            read.failed += 1
            return None
        seen.add(custom_id)
        segment.append(answered_record(settings, call, reply, api_key))
        read.answered += 1
        read.prompt_tokens += reply.prompt_tokens or 0
        read.completion_tokens += reply.completion_tokens or 0
        return None
    segment.append(failed_record(call, status, None, why, api_key))
    read.failed += 1
    return None


def _failure(response: Any, error: Any, status: int | None) -> str | None:
    """Why a request of a batch failed, as its result says (None: it does not say)."""
    for holder in (error, response.get("body") if isinstance(response, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("error"), dict):
            holder = holder["error"]
        if isinstance(holder, dict):
            code, message = holder.get("code"), holder.get("message")
            parts = [p for p in (code, message) if isinstance(p, str)]
            if parts:
                return _shown(": ".join(parts), MAX_MESSAGE_CHARS)
    return None if status is None else f"HTTP {status}"


def _shown(text: str, most: int) -> str:
    cleaned = "".join(c if c.isprintable() else " " for c in text)
    return cleaned if len(cleaned) <= most else cleaned[:most] + "..."
