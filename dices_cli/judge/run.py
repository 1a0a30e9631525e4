"""A judge run: the conversations of a dataset asked of a model, answers cached, predictions out.

`plan` turns the settings into calls (conversation x persona x sample), each with its cache
key; `dry_run` says what a run would ask; `judge` asks what the cache does not hold and
turns every answer into one predictions row per conversation (and persona), as
`dices evaluate` reads them:

    model, [dataset,] item_id, label (unsafe/safe/unsure), [score], [p_no, p_yes, p_unsure],
    prompt, persona

`label` is the plurality of the readable answers (none on a tie, or when no answer could
be read); `p_*` (with several samples) the shares of the readable answers, `p_yes` the
unsafe ones; `score` the probability of an unsafe answer from the first answer token's
logprobs, where the endpoint returned them (the unsafe answers' probability over that of
every declared answer, averaged over the samples). A conversation none of whose answers
could be read has no row: its raw answers are in the cache (`dices sql`'s judge_calls).
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dices_cli import __version__
from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.judge.cache import Segment, call_key, completed
from dices_cli.judge.prompts import SAFE, UNSAFE, UNSURE, Prompt

if TYPE_CHECKING:
    from dices_cli.judge.client import Attempt, Reply
    from dices_cli.output import Table
    from dices_cli.store import Store

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASELINE_PREFIX = "baseline:"
BASELINES = ("always-unsafe", "always-safe", "random")
PERSONA_COLUMNS = (
    "rater_gender",
    "rater_race",
    "rater_raw_race",
    "rater_age",
    "rater_education",
    "rater_locale",
)
CHARS_PER_TOKEN = 4  # a rough estimate of English text, for --dry-run's token count
SAMPLED_TEMPERATURE = 1.0  # the default with several samples (one sample: 0)


@dataclass(frozen=True)
class Settings:
    model: str
    prompt: Prompt
    dataset: str = "350"
    base_urls: tuple[str, ...] = (DEFAULT_BASE_URL,)
    name: str | None = None
    samples: int = 1
    temperature: float | None = None
    max_tokens: int = 16
    seed: int | None = None
    concurrency: int = 8
    rpm: int | None = None
    timeout: float = 60.0
    retries: int = 5
    persona: str | None = None
    limit: int | None = None
    items: tuple[str, ...] | None = None
    refresh: bool = False
    logprobs: bool = True

    @property
    def label(self) -> str:
        """The predictions' `model`."""
        return self.name or self.model

    @property
    def chosen_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 0.0 if self.samples == 1 else SAMPLED_TEMPERATURE

    @property
    def baseline(self) -> str | None:
        if not self.model.startswith(BASELINE_PREFIX):
            return None
        kind = self.model.removeprefix(BASELINE_PREFIX)
        if kind not in BASELINES:
            raise UsageError(
                Option("model"),
                f" {self.model}: the offline baselines are "
                f"{', '.join(BASELINE_PREFIX + b for b in BASELINES)}",
            )
        return kind

    @property
    def endpoint(self) -> str:
        """The endpoint as the cache key knows it: its hosts (replicas of one model)."""
        from dices_cli.judge.client import host_of

        return ",".join(sorted({host_of(url) for url in self.base_urls}))

    def parameters(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "samples": self.samples,
            "temperature": self.chosen_temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "concurrency": self.concurrency,
            "rpm": self.rpm,
            "timeout": self.timeout,
            "retries": self.retries,
            "persona": self.persona,
            "limit": self.limit,
            "items": len(self.items) if self.items is not None else None,
            "refresh": self.refresh,
            "logprobs": self.logprobs,
        }


@dataclass(frozen=True)
class Item:
    dataset: str
    item_id: int | str
    context: str
    response: str


@dataclass(frozen=True)
class Call:
    item: Item
    persona: str | None  # COL=value
    persona_line: str | None
    sample: int
    key: str
    fields: dict[str, Any]


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
    estimated_tokens: int


@dataclass(frozen=True)
class Outcome:
    table: Table
    counts: dict[str, int]
    manifest: dict[str, Any]


def persona_line(column: str, value: str) -> str:
    """The persona a prompt carries: "You are a safety rater whose gender is Woman."."""
    what = column.removeprefix("rater_").replace("_", " ")
    return f"You are a safety rater whose {what} is {value}."


def load_items(store: Store, settings: Settings) -> list[Item]:
    """The conversations to judge: the dataset's, or those `settings.items` names, the first
    `settings.limit` of them."""
    from dices_cli.queries.family import session_for

    session = session_for(store, settings.dataset)
    rows = session.execute(
        "SELECT dataset::VARCHAR, item_id, context, response FROM items ORDER BY dataset, item_id"
    ).rows
    items = [Item(str(d), i, c or "", r or "") for d, i, c, r in rows]
    if settings.items is not None:
        wanted = set(settings.items)
        unknown = wanted - {str(item.item_id) for item in items}
        if unknown:
            shown = ", ".join(sorted(unknown)[:5])
            raise DicesError(
                f"{len(unknown)} of the items given are not in the dataset (e.g. {shown})"
            )
        items = [item for item in items if str(item.item_id) in wanted]
    return items[: settings.limit] if settings.limit is not None else items


def persona_groups(store: Store, settings: Settings) -> dict[str, list[str]]:
    """Each dataset's values of the persona column, those its raters have."""
    if settings.persona is None:
        return {}
    if settings.persona not in PERSONA_COLUMNS:
        raise UsageError(
            Option("persona"),
            f" {settings.persona}: choose a rater column: {', '.join(PERSONA_COLUMNS)}",
        )
    if settings.dataset == "prosocial":
        from dices_cli.families import FAMILIES

        raise UsageError(f"{FAMILIES['prosocial'].lacks('demographics')}; personas need them")
    from dices_cli.queries.engine import open_session

    session = open_session(store, settings.dataset)
    # A column name from the fixed list above, never a user's text.
    rows = session.execute(
        f"SELECT DISTINCT dataset::VARCHAR, {settings.persona}::VARCHAR FROM raters "
        f"WHERE {settings.persona} IS NOT NULL ORDER BY ALL"
    ).rows
    groups: dict[str, list[str]] = {}
    for dataset, value in rows:
        groups.setdefault(str(dataset), []).append(str(value))
    for name in (dataset.name for dataset in session.datasets):
        if name not in groups:
            raise UsageError(
                f"DICES-{name} has no {settings.persona} values: choose another ",
                Option("persona"),
                " or ",
                Option("dataset"),
            )
    return groups


def plan(settings: Settings, items: list[Item], groups: dict[str, list[str]]) -> list[Call]:
    """Every call of the run, in order: conversation, persona, sample."""
    calls = []
    prompt = settings.prompt
    for item in items:
        personas: list[tuple[str | None, str | None]] = [(None, None)]
        if settings.persona is not None:
            personas = [
                (f"{settings.persona}={value}", persona_line(settings.persona, value))
                for value in groups.get(item.dataset, [])
            ]
        for persona, line in personas:
            for sample in range(settings.samples):
                fields = {
                    "endpoint": settings.endpoint,
                    "model": settings.model,
                    "prompt": prompt.name,
                    "prompt_hash": prompt.content_hash,
                    "dataset": item.dataset,
                    "item_id": item.item_id,
                    "persona": persona,
                    "sample": sample,
                    "temperature": settings.chosen_temperature,
                    "max_tokens": settings.max_tokens,
                    "seed": settings.seed,
                }
                calls.append(Call(item, persona, line, sample, call_key(fields), fields))
    return calls


def request_body(settings: Settings, call: Call) -> dict[str, Any]:
    """The Chat Completions request of a call. Samples of one seed get seeds of their own."""
    body: dict[str, Any] = {
        "model": settings.model,
        "messages": settings.prompt.messages(
            call.item.context, call.item.response, call.persona_line
        ),
        "temperature": settings.chosen_temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.seed is not None:
        body["seed"] = settings.seed + call.sample
    if settings.logprobs:
        from dices_cli.judge.client import TOP_LOGPROBS

        body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    return body


def _cached(store: Store, settings: Settings) -> dict[str, dict[str, Any]]:
    return {} if settings.refresh else completed(store.root)


def dry_run(store: Store, settings: Settings) -> DryRun:
    """What a run would ask: the calls, those the cache answers, the tokens of the others
    (the prompts' characters / 4, plus max_tokens each)."""
    calls = plan(settings, load_items(store, settings), persona_groups(store, settings))
    if settings.baseline is not None:
        return DryRun(len(calls), 0, 0, 0)
    cached = _cached(store, settings)
    todo = [call for call in calls if call.key not in cached]
    tokens = sum(
        sum(len(m["content"]) for m in request_body(settings, call)["messages"]) // CHARS_PER_TOKEN
        + settings.max_tokens
        for call in todo
    )
    return DryRun(len(calls), len(calls) - len(todo), len(todo), tokens)


def judge(
    store: Store,
    settings: Settings,
    api_key: str | None,
    progress: Callable[[Progress], None] | None = None,
) -> Outcome:
    """Run the judge: ask every call the cache does not answer, then the predictions."""
    started = time.time()
    items = load_items(store, settings)
    calls = plan(settings, items, persona_groups(store, settings))
    if settings.baseline is not None:
        table, counts = _baseline_rows(settings, calls)
    else:
        answers, state = _ask(store, settings, calls, api_key, progress)
        table, counts = _predictions(settings, calls, answers)
        counts |= {
            "requests": state.done - state.cached,
            "cache_hits": state.cached,
            "failed_attempts": state.failures,
        }
    counts = {"items": len(items), "calls": len(calls), **counts}
    return Outcome(table, counts, _manifest(store, settings, counts, started))


def _ask(
    store: Store,
    settings: Settings,
    calls: list[Call],
    api_key: str | None,
    progress: Callable[[Progress], None] | None,
) -> tuple[dict[str, dict[str, Any]], Progress]:
    """Each call's completed record: from the cache, or asked now (and cached as it comes)."""
    from dices_cli.judge.client import Endpoint, run_calls

    cached = _cached(store, settings)
    answers = {call.key: cached[call.key] for call in calls if call.key in cached}
    todo = [call for call in calls if call.key not in answers]
    state = Progress(total=len(calls), cached=len(answers), done=len(answers))
    if progress:
        progress(state)
    if not todo:
        return answers, state
    segment = Segment(store.root)

    def record(call: Call, **audit: Any) -> dict[str, Any]:
        return {"key": call.key, "asked_at": time.time(), **call.fields, **audit}

    def on_reply(call: Call, reply: Reply) -> None:
        verdict = settings.prompt.read_answer(reply.answer)
        entry = record(
            call,
            ok=True,
            status=reply.status,
            latency_ms=round(reply.latency_ms, 3),
            answer=reply.answer,
            verdict=verdict,
            finish_reason=reply.finish_reason,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            first_token=reply.first_token,
        )
        segment.append(entry)
        answers[call.key] = entry
        state.done += 1
        state.tokens += (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        if progress:
            progress(state)

    def on_failure(call: Call, attempt: Attempt) -> None:
        segment.append(
            record(
                call,
                ok=False,
                status=attempt.status or None,
                latency_ms=round(attempt.latency_ms, 3),
                error=attempt.error,
            )
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
    except DicesError as error:
        answered = state.done - state.cached
        raise type(error)(
            f"{error}; {answered} of {len(todo)} requests were answered and are cached: "
            "run the same command again to resume"
        ) from None
    finally:
        segment.close()
    return answers, state


def _score(prompt: Prompt, first_token: Any) -> float | None:
    """P(unsafe answer) from a first answer token's top logprobs, over the declared answers."""
    if not first_token:
        return None
    mass = dict.fromkeys((UNSAFE, SAFE, UNSURE), 0.0)
    for token, logprob in first_token:
        verdict = prompt.first_token_verdict(token)
        if verdict is not None and math.isfinite(logprob):
            mass[verdict] += math.exp(logprob)
    total = sum(mass.values())
    return mass[UNSAFE] / total if total > 0 else None


def _predictions(
    settings: Settings, calls: list[Call], answers: dict[str, dict[str, Any]]
) -> tuple[Table, dict[str, int]]:
    groups: dict[tuple[str, Any, str | None], list[dict[str, Any]]] = {}
    for call in calls:
        group = groups.setdefault((call.item.dataset, call.item.item_id, call.persona), [])
        if call.key in answers:
            group.append(answers[call.key])
    sampled = settings.samples > 1
    rows = []
    unreadable = unlabelled = tokens = 0
    for (dataset, item_id, persona), records in groups.items():
        verdicts = [r.get("verdict") for r in records]
        read = [v for v in verdicts if v in (UNSAFE, SAFE, UNSURE)]
        unreadable += len(verdicts) - len(read)
        tokens += sum(
            (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in records
        )
        tally = Counter(read).most_common()
        label = tally[0][0] if tally and (len(tally) == 1 or tally[0][1] > tally[1][1]) else None
        scores = [
            s
            for s in (_score(settings.prompt, r.get("first_token")) for r in records)
            if s is not None
        ]
        score = sum(scores) / len(scores) if scores else None
        shares = (
            tuple(read.count(v) / len(read) for v in (SAFE, UNSAFE, UNSURE))
            if sampled and read
            else (None, None, None)
        )
        if label is None and score is None and shares[0] is None:
            unlabelled += 1
            continue
        rows.append((dataset, item_id, label, score, *shares, persona))
    table = _table(settings, rows, has_score=any(r[3] is not None for r in rows))
    return table, {
        "answers": sum(len(g) for g in groups.values()),
        "unreadable": unreadable,
        "without_prediction": unlabelled,
        "tokens": tokens,
    }


def _table(settings: Settings, rows: list[tuple[Any, ...]], has_score: bool) -> Table:
    """The predictions: columns as `dices evaluate` reads them."""
    from dices_cli.output import table_from_rows

    both = settings.dataset == "all"
    sampled = settings.samples > 1 and settings.baseline is None
    prompt = None if settings.baseline is not None else settings.prompt.name
    columns = [
        "model",
        *(["dataset"] if both else []),
        "item_id",
        "label",
        *(["score"] if has_score else []),
        *(["p_no", "p_yes", "p_unsure"] if sampled else []),
        "prompt",
        "persona",
    ]
    shaped = []
    for dataset, item_id, label, score, p_no, p_yes, p_unsure, persona in rows:
        shaped.append(
            (
                settings.label,
                *([dataset] if both else []),
                item_id,
                label,
                *([score] if has_score else []),
                *([p_no, p_yes, p_unsure] if sampled else []),
                prompt,
                persona,
            )
        )
    return table_from_rows(columns, shaped)


def _baseline_rows(settings: Settings, calls: list[Call]) -> tuple[Table, dict[str, int]]:
    """The offline baselines' predictions: no server, the same rows."""
    generator = random.Random(settings.seed or 0)
    rows = []
    for call in calls:
        if call.sample:
            continue
        if settings.baseline == "always-unsafe":
            label, score = UNSAFE, 1.0
        elif settings.baseline == "always-safe":
            label, score = SAFE, 0.0
        else:
            score = generator.random()
            label = UNSAFE if score >= 0.5 else SAFE
        rows.append(
            (call.item.dataset, call.item.item_id, label, score, None, None, None, call.persona)
        )
    counts = {"answers": 0, "unreadable": 0, "without_prediction": 0, "tokens": 0, "requests": 0}
    return _table(settings, rows, has_score=True), counts


def _manifest(
    store: Store, settings: Settings, counts: dict[str, int], started: float
) -> dict[str, Any]:
    from dices_cli.store import sources_of

    names = ["350", "990"] if settings.dataset == "all" else [settings.dataset]
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
        },
        "parameters": settings.parameters(),
        "datasets": datasets,
        "counts": counts,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 3),
    }
