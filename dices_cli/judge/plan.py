"""The plan of a judge run: its settings, the conversations, and one call per conversation x
persona x sample, each with its cache key and its Chat Completions request.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.families.schema import DATASETS, DEMOGRAPHIC_COLUMNS, SCORED_BY_DEFAULT
from dices_cli.judge.prompts import Prompt
from dices_cli.store.judge_cache import KEY_FIELDS, Segment, completed, run_tag

if TYPE_CHECKING:
    from dices_cli.store.datasets import Store

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASELINE_PREFIX = "baseline:"
BASELINES = ("always-unsafe", "always-safe", "random")
PERSONA_COLUMNS = DEMOGRAPHIC_COLUMNS  # a persona is a group of raters
SAMPLED_TEMPERATURE = 1.0  # the default with several samples (one sample: 0)


@dataclass(frozen=True)
class Settings:
    model: str
    prompt: Prompt
    dataset: str = SCORED_BY_DEFAULT
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
    price_in: float | None = None  # dollars per million tokens, online
    price_out: float | None = None
    # A scale prompt's: the values of its label's scale, as text (`judge.declared`)
    values: tuple[str, ...] = ()

    @property
    def prices(self) -> tuple[float, float] | None:
        """(input, output) dollars per million tokens online: the options' over the
        prompt's [price]; None when neither is known."""
        given = self.prompt.price or (None, None)
        price_in = self.price_in if self.price_in is not None else given[0]
        price_out = self.price_out if self.price_out is not None else given[1]
        if price_in is None or price_out is None:
            return None
        return price_in, price_out

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
        """The endpoint as it is recorded: its hosts (replicas of one model), never a path
        or a query string, which may carry a token."""
        from dices_cli.judge.client import host_of

        return ",".join(sorted({host_of(url) for url in self.base_urls}))

    @property
    def endpoint_sha256(self) -> str:
        """The SHA-256 of the whole endpoint URLs (path and query too): in the cache key,
        so two models served under two paths of one host never share answers."""
        from dices_cli.judge.client import completions_url, host_of

        urls = sorted({host_of(url) + _after_host(completions_url(url)) for url in self.base_urls})
        return hashlib.sha256("\n".join(urls).encode()).hexdigest()

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


def _after_host(url: str) -> str:
    """A URL's path and query, as sent."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class Item:
    dataset: str
    item_id: int | str
    context: str
    response: str
    text: tuple[tuple[str, str], ...] = ()  # a declared item's text fields, by name


@dataclass(frozen=True)
class Call:
    item: Item
    persona: str | None  # COL=value
    persona_line: str | None
    sample: int
    key: str
    fields: dict[str, Any]


def persona_line(column: str, value: str) -> str:
    """The persona a prompt carries: "You are a safety rater whose gender is Woman."."""
    what = column.removeprefix("rater_").replace("_", " ")
    return f"You are a safety rater whose {what} is {value}."


def load_items(store: Store, settings: Settings) -> list[Item]:
    """The conversations to judge: the dataset's, or those `settings.items` names, the first
    `settings.limit` of them."""
    from dices_cli.judge.conversations import stored_rows
    from dices_cli.judge.declared import declared_items

    if settings.prompt.label is not None:
        texts = declared_items(store, settings.dataset, settings.prompt.fields)
        return _chosen([Item(settings.dataset, i, "", "", text) for i, text in texts], settings)
    rows = stored_rows(store, settings.dataset, lambda: _stored_items(store, settings.dataset))
    items = [Item(d, i, _turns(d, c or ""), r or "") for d, i, c, r in rows]
    return _chosen(items, settings)


def _stored_items(store: Store, dataset: str) -> list[tuple[str, Any, Any, Any]]:
    """The items rows of `dataset`, read from its stored files (those of items only)."""
    from dices_cli.queries.family import session_for

    session = session_for(store, dataset, named={"items"})
    rows = session.execute(
        "SELECT dataset::VARCHAR, item_id, context, response FROM items ORDER BY dataset, item_id"
    ).rows
    return [(str(d), i, c, r) for d, i, c, r in rows]


def _chosen(items: list[Item], settings: Settings) -> list[Item]:
    """The items `settings.items` names (all: None), the first `settings.limit` of them."""
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


def _turns(dataset: str, context: str) -> str:
    """A context as the model should read it: its turns separated by line breaks, whatever
    the dataset's file writes between them (stored as given)."""
    written = DATASETS[dataset].context_line_break if dataset in DATASETS else "\n"
    return context.replace(written, "\n")


def persona_groups(store: Store, settings: Settings) -> dict[str, list[str]]:
    """Each dataset's values of the persona column, those its raters have."""
    if settings.persona is None:
        return {}
    if settings.prompt.label is not None:
        from dices_cli.judge.declared import declared_persona_groups

        return declared_persona_groups(store, settings.dataset, settings.persona)
    if settings.persona not in PERSONA_COLUMNS:
        raise UsageError(
            Option("persona"),
            f" {settings.persona}: choose a rater column: {', '.join(PERSONA_COLUMNS)}",
        )
    from dices_cli.families import family_of

    family = family_of(settings.dataset)
    if not family.has_demographics:
        raise UsageError(f"{family.lacks('demographics')}; personas need them")
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
    from dices_cli.judge.declared import rater_line

    calls = []
    prompt = settings.prompt
    line_of = persona_line if prompt.label is None else rater_line
    shared = _run_fields(settings)
    encoded = {name: _json(value) for name, value in shared.items()}
    for item in items:
        personas: list[tuple[str | None, str | None]] = [(None, None)]
        if settings.persona is not None:
            personas = [
                (f"{settings.persona}={value}", line_of(settings.persona, value))
                for value in groups.get(item.dataset, [])
            ]
        encoded |= {"dataset": _json(item.dataset), "item_id": _json(item.item_id)}
        for persona, line in personas:
            encoded["persona"] = _json(persona)
            for sample in range(settings.samples):
                fields = {
                    "endpoint": shared["endpoint"],
                    "endpoint_sha256": shared["endpoint_sha256"],
                    "model": shared["model"],
                    "prompt": shared["prompt"],
                    "prompt_hash": shared["prompt_hash"],
                    "dataset": item.dataset,
                    "item_id": item.item_id,
                    "persona": persona,
                    "sample": sample,
                    "temperature": shared["temperature"],
                    "max_tokens": shared["max_tokens"],
                    "seed": shared["seed"],
                }
                encoded["sample"] = str(sample)
                calls.append(Call(item, persona, line, sample, _key(encoded), fields))
    return calls


def _run_fields(settings: Settings) -> dict[str, Any]:
    """The key fields every call of the run shares (`RUN_FIELDS`)."""
    return {
        "endpoint": settings.endpoint,
        "endpoint_sha256": settings.endpoint_sha256,
        "model": settings.model,
        "prompt": settings.prompt.name,
        "prompt_hash": settings.prompt.content_hash,
        "temperature": settings.chosen_temperature,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed,
    }


def cached(store: Store, settings: Settings, calls: list[Call]) -> dict[str, dict[str, Any]]:
    """The cache's latest completed record of each of `calls` (none with `refresh`), read
    from the segments of the run's tag only."""
    if settings.refresh or not calls:
        return {}
    return completed(store.root, run_tag(_run_fields(settings)), {call.key for call in calls})


def segment(store: Store, settings: Settings) -> Segment:
    """The segment this run's records go to, named with its tag."""
    return Segment(store.root, run_tag(_run_fields(settings)))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _key(encoded: dict[str, str]) -> str:
    """`dices_cli.store.judge_cache.call_key` of a call's key fields, each already JSON
    (`_json`): the JSON list those make, hashed, without encoding each again."""
    text = "[" + ", ".join(encoded[name] for name in KEY_FIELDS) + "]"
    return hashlib.sha256(text.encode()).hexdigest()


def request_body(settings: Settings, call: Call) -> dict[str, Any]:
    """The Chat Completions request of a call. Samples of one seed get seeds of their own."""
    prompt, item = settings.prompt, call.item
    messages = (
        prompt.messages(item.context, item.response, call.persona_line)
        if prompt.label is None
        else prompt.item_messages(dict(item.text), call.persona_line)
    )
    body: dict[str, Any] = {
        "model": settings.model,
        "messages": messages,
        "temperature": settings.chosen_temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.seed is not None:
        body["seed"] = settings.seed + call.sample
    if settings.logprobs:
        from dices_cli.judge.client import TOP_LOGPROBS

        body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    return body
