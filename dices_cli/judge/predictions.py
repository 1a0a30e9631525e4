"""A judge run's answers as predictions, one row per conversation (and persona), as
`dices evaluate` reads them:

    model, [dataset,] item_id, label (unsafe/safe/unsure), [score], [p_no, p_yes, p_unsure],
    prompt, persona

`label` is the plurality of the readable answers (none on a tie, or when no answer could
be read); `p_*` (with several samples) the shares of the readable answers, `p_yes` the
unsafe ones; `score` the probability of an unsafe answer from the first answer token's
logprobs, where the endpoint returned them (the unsafe answers' probability over that of
every declared answer, averaged over the samples). A conversation none of whose answers
could be read has no row: its raw answers are in the cache (`dices sql`'s judge_calls).

A scale prompt's predictions (a declared dataset's items) are `scale_predictions`:

    model, item_id, label (a value of the scale), [p_VALUE per value], prompt, persona
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import TYPE_CHECKING, Any

from dices_cli.judge.prompts import SAFE, UNSAFE, UNSURE, Prompt

if TYPE_CHECKING:
    from dices_cli.judge.plan import Call, Settings
    from dices_cli.output import Table


def unsafe_probability(prompt: Prompt, first_token: Any) -> float | None:
    """P(unsafe answer) from a first answer token's top logprobs, over the declared answers;
    None when they are not [token, logprob] pairs of text and numbers at most 0 (NaN, 710 or
    text from a server, a cache written by hand): no score is guessed from the rest."""
    if not first_token or not _valid_logprobs(first_token):
        return None
    return _probability(prompt, first_token)


def _probability(prompt: Prompt, first_token: list[Any]) -> float | None:
    """`unsafe_probability` of top logprobs already found valid (`_valid_logprobs`)."""
    from dices_cli.judge.client import valid_logprob

    mass = dict.fromkeys((UNSAFE, SAFE, UNSURE), 0.0)
    for token, logprob in first_token:
        verdict = prompt.first_token_verdict(token)
        if verdict is not None:
            mass[verdict] += math.exp(valid_logprob(logprob) or 0.0)
    total = sum(mass.values())
    return mass[UNSAFE] / total if total > 0 else None


def _valid_logprobs(first_token: Any) -> bool:
    """Whether a record's `first_token` is a list of [text, logprob at most 0] pairs."""
    from dices_cli.judge.client import valid_logprob

    return isinstance(first_token, list) and all(
        isinstance(pair, list | tuple)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and valid_logprob(pair[1]) is not None
        for pair in first_token
    )


def _scored(prompt: Prompt, record: dict[str, Any]) -> tuple[float | None, bool]:
    """An answer's `unsafe_probability`, and whether its logprobs came but could not be
    read (NaN, 710, text): its score is not given, and the run counts it."""
    first_token = record.get("first_token")
    valid = first_token is None or _valid_logprobs(first_token)
    unscored = isinstance(record.get("error"), str) or not valid
    return (_probability(prompt, first_token) if first_token and valid else None), unscored


def predictions(
    settings: Settings, calls: list[Call], answers: dict[str, dict[str, Any]]
) -> tuple[Table, dict[str, int]]:
    if settings.prompt.label is not None:
        return scale_predictions(settings, calls, answers)
    groups = _grouped(calls, answers)
    sampled = settings.samples > 1
    rows = []
    unreadable = unlabelled = tokens = unscored = 0
    for (dataset, item_id, persona), records in groups.items():
        # Read again from the raw answer: a cached verdict is as an older dices read it.
        verdicts = [settings.prompt.read_answer(r.get("answer")) for r in records]
        read = [v for v in verdicts if v in (UNSAFE, SAFE, UNSURE)]
        unreadable += len(verdicts) - len(read)
        scored = [_scored(settings.prompt, r) for r in records]
        unscored += sum(flag for _, flag in scored)
        tokens += sum(
            _count(r.get("prompt_tokens")) + _count(r.get("completion_tokens")) for r in records
        )
        tally = Counter(read).most_common()
        label = tally[0][0] if tally and (len(tally) == 1 or tally[0][1] > tally[1][1]) else None
        scores = [score for score, _ in scored if score is not None]
        mean_score = sum(scores) / len(scores) if scores else None
        shares = (
            tuple(read.count(v) / len(read) for v in (SAFE, UNSAFE, UNSURE))
            if sampled and read
            else (None, None, None)
        )
        if label is None and mean_score is None and shares[0] is None:
            unlabelled += 1
            continue
        rows.append((dataset, item_id, label, mean_score, *shares, persona))
    table = _table(settings, rows, has_score=any(r[3] is not None for r in rows))
    return table, {
        "answers": sum(len(g) for g in groups.values()),
        "unreadable": unreadable,
        "unreadable_logprobs": unscored,
        "without_prediction": unlabelled,
        "tokens": tokens,
    }


def _grouped(
    calls: list[Call], answers: dict[str, dict[str, Any]]
) -> dict[tuple[str, Any, str | None], list[dict[str, Any]]]:
    """The answers of each item (and persona), in the calls' order."""
    groups: dict[tuple[str, Any, str | None], list[dict[str, Any]]] = {}
    for call in calls:
        group = groups.setdefault((call.item.dataset, call.item.item_id, call.persona), [])
        if call.key in answers:
            group.append(answers[call.key])
    return groups


def scale_predictions(
    settings: Settings, calls: list[Call], answers: dict[str, dict[str, Any]]
) -> tuple[Table, dict[str, int]]:
    """A scale prompt's predictions: the plurality value of each item's readable answers
    (none on a tie), and with several samples the share of each value (`p_VALUE`)."""
    from dices_cli.output import table_from_rows

    sampled = settings.samples > 1
    rows = []
    unreadable = unlabelled = tokens = 0
    for (_, item_id, persona), records in _grouped(calls, answers).items():
        read = [v for v in (settings.prompt.read_answer(r.get("answer")) for r in records) if v]
        unreadable += len(records) - len(read)
        tokens += sum(
            _count(r.get("prompt_tokens")) + _count(r.get("completion_tokens")) for r in records
        )
        if not read:
            unlabelled += 1
            continue
        tally = Counter(read).most_common()
        label = tally[0][0] if len(tally) == 1 or tally[0][1] > tally[1][1] else None
        shares = [read.count(v) / len(read) for v in settings.values] if sampled else []
        rows.append((settings.label, item_id, label, *shares, settings.prompt.name, persona))
    shares_columns = [f"p_{v}" for v in settings.values] if sampled else []
    columns = ["model", "item_id", "label", *shares_columns, "prompt", "persona"]
    return table_from_rows(columns, rows), {
        "answers": sum(len(records) for records in _grouped(calls, answers).values()),
        "unreadable": unreadable,
        "unreadable_logprobs": 0,
        "without_prediction": unlabelled,
        "tokens": tokens,
    }


def _count(value: Any) -> int:
    """A token count of a record (0 when it is not a whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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


def baseline_predictions(settings: Settings, calls: list[Call]) -> tuple[Table, dict[str, int]]:
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
