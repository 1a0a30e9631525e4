"""`--submit`: a batch sent to an OpenAI-compatible Files + Batches endpoint, polled until
it ends, and its results read into the cache (`dices_cli.judge.batch`).

The endpoint's steps: `POST {base}/files` (the input file, purpose "batch"), `POST
{base}/batches` (`input_file_id`, `endpoint`, `completion_window`), `GET {base}/batches/ID`
until its status is `completed`, `expired`, `failed` or `cancelled`, then `GET
{base}/files/ID/content` of its output and error files.

Resumable: the ids of the batches a run created are kept in the data directory
(`DIR/judge/batches/PLAN.json`, PLAN the SHA-256 of the run's call keys), written as soon as
each batch exists, so a run stopped while it waits (Ctrl-C, kill -9) is picked up by the
same command, which polls the same batches and submits nothing new. Once every batch has
ended and its results are read, the file is removed; calls a batch did not answer (failed,
expired) are in the batch the next run submits.

Every answer of the endpoint is untrusted: JSON through the untrusted reader (at most
`MAX_ANSWER_BYTES`), a results file streamed to disk and refused past
`MAX_RESULTS_BYTES`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.judge.batch import (
    OPENAI_LIMITS,
    REQUEST_URL,
    Limits,
    ReadBack,
    planned_calls,
    read_results,
    write_batch,
)
from dices_cli.judge.client import completions_url, host_of, server_message, shown
from dices_cli.read.untrusted import UntrustedError, loads_json, read_regular_file
from dices_cli.store.judge_cache import cache_directory

if TYPE_CHECKING:
    import httpx

    from dices_cli.judge.plan import Settings
    from dices_cli.store.datasets import Store

STATE_DIRECTORY = "batches"
COMPLETION_WINDOW = "24h"
ENDED = ("completed", "expired", "failed", "cancelled")
MAX_ANSWER_BYTES = 1 << 20  # a file's or a batch's description: a few hundred bytes
MAX_ANSWER_DEPTH = 16
MAX_RESULTS_BYTES = 4 << 30  # a results file: answers of at most 50,000 requests
DOWNLOAD_STEP = 1 << 20


class BatchEndpointError(DicesError):
    """The Files or Batches endpoint refused a step, or answered what it must not."""


class BatchInterrupted(DicesError):
    """Ctrl-C while a batch runs: its id is kept, and the same command picks it up."""

    exit_code = 130

    def __init__(self, batches: int, state: Path) -> None:
        super().__init__(
            f"interrupted: the {batches} batches go on at the endpoint, their ids kept in "
            f"{state}; run the same command again to wait for them and read their results"
        )


@dataclass(frozen=True)
class Submitted:
    read: ReadBack
    batches: list[dict[str, Any]]  # id and final status of each batch
    resumed: bool  # the batches were an earlier run's


def api_base(settings: Settings) -> str:
    """The one base URL batches go to (`/files` and `/batches` beside `/chat/completions`)."""
    if len(settings.base_urls) != 1:
        raise UsageError(
            Option("submit"), " sends a batch to one endpoint: give one ", Option("base_url")
        )
    return completions_url(settings.base_urls[0])


def _url(base: str, path: str) -> str:
    """`path` under the base URL, before any query string (as `/chat/completions` is)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base)
    root = parts.path.removesuffix("/chat/completions")
    return urlunsplit((parts.scheme, parts.netloc, root + path, parts.query, ""))


def state_path(store: Store, settings: Settings) -> Path:
    """Where a run's batch ids are kept: named by the SHA-256 of its call keys."""
    keys = sorted(call.key for call in planned_calls(store, settings))
    plan_id = hashlib.sha256("\n".join(keys).encode()).hexdigest()
    return cache_directory(store.root) / STATE_DIRECTORY / f"{plan_id}.json"


def submit(
    store: Store,
    settings: Settings,
    api_key: str | None,
    limits: Limits = OPENAI_LIMITS,
    poll_seconds: float = 60.0,
    say: Callable[[str], None] = lambda _: None,
) -> Submitted:
    """Submit the calls the cache does not answer as batches (or pick up those an earlier
    run of the same plan submitted), wait for each to end, and read its results into the
    cache."""
    import httpx

    base = api_base(settings)
    state = state_path(store, settings)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(headers=headers, timeout=settings.timeout) as client:
        batches = _load_state(state)
        resumed = bool(batches)
        if resumed:
            say(f"picking up {len(batches)} batches an earlier run submitted")
        else:
            batches = _create(client, store, settings, base, state, limits, api_key)
        try:
            ended = [_wait(client, base, i, poll_seconds, api_key, say) for i in batches]
        except KeyboardInterrupt:
            raise BatchInterrupted(len(batches), state) from None
        read = ReadBack()
        work = state.with_suffix("")
        work.mkdir(parents=True, exist_ok=True)
        for batch in ended:
            for which in ("output_file_id", "error_file_id"):
                file_id = batch.get(which)
                if isinstance(file_id, str) and file_id:
                    path = work / f"{_safe(batch['id'])}-{which.removesuffix('_id')}.jsonl"
                    _download(client, _url(base, f"/files/{file_id}/content"), path, api_key)
                    _add(read, read_results(store, settings, [path], api_key))
        _forget(state, work)
    return Submitted(read, [{"id": b["id"], "status": b["status"]} for b in ended], resumed)


def _create(
    client: httpx.Client,
    store: Store,
    settings: Settings,
    base: str,
    state: Path,
    limits: Limits,
    api_key: str | None,
) -> list[str]:
    """Write the batch files, upload each, create a batch of it, and keep its id."""
    work = state.with_suffix("")
    work.mkdir(parents=True, exist_ok=True)
    written = write_batch(store, settings, work / "input.jsonl", limits, force=True)
    batches: list[str] = []
    for part in written.files:
        with part.path.open("rb") as handle:
            uploaded = _json(
                client.post(
                    _url(base, "/files"),
                    data={"purpose": "batch"},
                    files={"file": (part.path.name, handle, "application/jsonl")},
                ),
                api_key,
            )
        file_id = _text(uploaded, "id")
        created = _json(
            client.post(
                _url(base, "/batches"),
                json={
                    "input_file_id": file_id,
                    "endpoint": REQUEST_URL,
                    "completion_window": COMPLETION_WINDOW,
                },
            ),
            api_key,
        )
        batches.append(_text(created, "id"))
        _save_state(state, batches)  # at once: a run stopped now picks the batch up
        part.path.unlink()
    return batches


def _wait(
    client: httpx.Client,
    base: str,
    batch_id: str,
    poll_seconds: float,
    api_key: str | None,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The batch's description once its status is one of `ENDED`."""
    while True:
        batch = _json(client.get(_url(base, f"/batches/{batch_id}")), api_key)
        status = _text(batch, "status")
        if status in ENDED:
            return batch
        counts = batch.get("request_counts")
        if isinstance(counts, dict):
            done, total = counts.get("completed"), counts.get("total")
            say(f"batch {shown(batch_id, None)}: {shown(status, None)}, {done} of {total} done")
        time.sleep(poll_seconds)


def _download(client: httpx.Client, url: str, path: Path, api_key: str | None) -> None:
    """A results file streamed to `path`, refused past MAX_RESULTS_BYTES."""
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            _json(response, api_key, body=response.read())
        size = 0
        with path.open("wb") as handle:
            for chunk in response.iter_bytes(DOWNLOAD_STEP):
                size += len(chunk)
                if size > MAX_RESULTS_BYTES:
                    raise BatchEndpointError(
                        f"{host_of(url)} sent a results file larger than "
                        f"{MAX_RESULTS_BYTES >> 30} GiB"
                    )
                handle.write(chunk)


def _json(response: httpx.Response, api_key: str | None, body: bytes | None = None) -> Any:
    """A JSON answer of the endpoint, or `BatchEndpointError` with its message."""
    data = response.content if body is None else body
    where = f"{host_of(str(response.request.url))} {response.request.method} " + shown(
        response.request.url.path, api_key
    )
    if response.status_code != 200:
        message = shown(server_message(data), api_key)
        raise BatchEndpointError(f"{where} refused: HTTP {response.status_code}: {message}")
    try:
        value = loads_json(data, MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH)
    except UntrustedError as error:
        raise BatchEndpointError(f"{where} answered what is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise BatchEndpointError(f"{where} answered what is not a JSON object")
    return value


def _text(value: dict[str, Any], name: str) -> str:
    text = value.get(name)
    if not isinstance(text, str) or not text or len(text) > 200:
        raise BatchEndpointError(f"the batch endpoint's answer has no {name}")
    return text


def _safe(name: str) -> str:
    """An id as a file name: letters, digits, - and _ kept, anything else as _."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in name)


def _add(total: ReadBack, read: ReadBack) -> None:
    total.answered += read.answered
    total.failed += read.failed
    total.already_cached += read.already_cached
    total.prompt_tokens += read.prompt_tokens
    total.completion_tokens += read.completion_tokens
    for problem in read.problems:
        total.add_problem(problem)
    total.problem_count += read.problem_count - len(read.problems)


def _load_state(state: Path) -> list[str]:
    """The batch ids an earlier run kept (none without a state file)."""
    if not state.exists():
        return []
    try:
        value = loads_json(read_regular_file(state, MAX_ANSWER_BYTES))
    except UntrustedError as error:
        raise DicesError(f"cannot read the batch state {state}: {error}") from error
    ids = value.get("batches") if isinstance(value, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise DicesError(f"the batch state {state} is not one of dices': remove it")
    return ids


def _save_state(state: Path, batches: list[str]) -> None:
    temporary = state.with_name(f".{state.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"batches": batches, "saved": time.time()}) + "\n")
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, state)


def _forget(state: Path, work: Path) -> None:
    """Remove a run's state once every batch's results are cached."""
    with contextlib.suppress(FileNotFoundError):
        state.unlink()
    if work.is_dir():
        for path in work.iterdir():
            path.unlink()
        work.rmdir()
