"""Judge prompts: declared TOML files, one per prompt, and the reading of their answers.

A prompt file (`prompts/NAME.toml`, or a user's own with the same keys):

    name = "dices-safety"          the prompt's name (a predictions file's `prompt` column)
    version = 1                    bumped when the wording changes
    about = "..."                  optional: what the prompt asks
    system = "..."                 optional: the system message
    user = "...{context}...{response}..."   the user message; `{persona}` in persona mode
    [answers]                      each answer the model may give -> unsafe, safe or unsure
    Yes = "unsafe"
    No = "safe"

The polarity is declared, never assumed: a file without `[answers]`, or whose answers do not
name both `unsafe` and `safe`, is refused. Only `{context}`, `{response}` and `{persona}` are
filled in; any other braces are the prompt's own text.

A scale prompt judges the items of a declared dataset (`dices_cli.judge.declared`):

    label = "offensiveness"        the declared label its answers rate
    user = "...{text}..."          any of the dataset's declared text fields, `{persona}`
    [answers]                      each answer word -> a value of that label's scale
    "1" = 1
    "5" = 5

Its placeholders are the `{name}`s of its user message (a name: letters, digits, _); which
are the dataset's text fields, and whether each answer is a value of the label's scale, is
checked against the declaration when a run starts.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.judge.answers import SAFE, UNSAFE, UNSURE, WORD, read_answer, read_value
from dices_cli.read.untrusted import UntrustedError, loads_toml, read_regular_file

VERDICTS = (UNSAFE, SAFE, UNSURE)
DEFAULT_PROMPT = "dices-safety"
KEYS = {"name", "version", "about", "system", "user", "answers", "price", "label"}
MAX_PRICE = 1e6  # dollars per million tokens: far above any model's
MAX_PROMPT_BYTES = 256 << 10  # a prompt is a few KB
MAX_REMEMBERED = 4096  # texts whose verdict a prompt keeps (a run's answers repeat)
_UNREAD = object()
# The placeholders filled in, in one pass: text put in (the data) is never filled in again.
_PLACEHOLDER = re.compile(r"\{(context|response|persona)\}")
# A scale prompt's placeholders: `{name}`, filled from the item's text fields in one pass too.
FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = WORD


class PromptError(DicesError):
    """A prompt file that cannot be used as it is."""


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    about: str
    system: str | None
    user: str
    answers: dict[str, Any]  # as written -> unsafe, safe or unsure (a scale's: a value)
    source: str  # where it was read from, for messages
    # [price] input and output, in dollars per million tokens (online): the cost of a run,
    # not a part of the question (not in `content_hash`)
    price: tuple[float, float] | None = None
    label: str | None = None  # a scale prompt's declared label; None: DICES's verdicts
    # What `read_answer` and `first_token_verdict` gave each text: a run's answers repeat
    # ("Yes", "No"), and each is read once when cached and again for the predictions.
    _read: dict[tuple[str, str], str | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def content_hash(self) -> str:
        """SHA-256 of what reaches the model and how its answers are read (not comments)."""
        content = {
            "name": self.name,
            "version": self.version,
            "system": self.system,
            "user": self.user,
            "answers": self.answers,
        }
        if self.label is not None:  # a DICES prompt's hash is as it always was
            content["label"] = self.label
        encoded = json.dumps(content, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(encoded).hexdigest()

    @property
    def has_unsure(self) -> bool:
        return UNSURE in self.answers.values()

    def messages(self, context: str, response: str, persona: str | None) -> list[dict[str, str]]:
        """The chat messages for one conversation; a persona line goes where the template
        says `{persona}`, else first in the system message. The template's placeholders are
        filled in one pass: a `{response}` inside the conversation stays as it is."""
        values = {"context": context, "response": response, "persona": persona or ""}
        return self._messages(_PLACEHOLDER, values, persona)

    @property
    def fields(self) -> tuple[str, ...]:
        """A scale prompt's placeholders but `{persona}`: the item's text fields it uses (a
        DICES prompt's: none, it fills `{context}` and `{response}`)."""
        if self.label is None:
            return ()
        return tuple(dict.fromkeys(n for n in FIELD.findall(self.user) if n != "persona"))

    def item_messages(self, text: Mapping[str, str], persona: str | None) -> list[dict[str, str]]:
        """A scale prompt's chat messages for one item: its `fields` from `text`, in one
        pass (an item's text is never filled in again), the persona as in `messages`."""
        values = {**{name: text.get(name, "") for name in self.fields}, "persona": persona or ""}
        pattern = re.compile(r"\{(" + "|".join(map(re.escape, values)) + r")\}")
        return self._messages(pattern, values, persona)

    def _messages(
        self, pattern: re.Pattern[str], values: Mapping[str, str], persona: str | None
    ) -> list[dict[str, str]]:
        user = pattern.sub(lambda match: values[match[1]], self.user)
        system = self.system
        if persona is not None and "{persona}" not in self.user:
            system = f"{persona}\n\n{system}" if system else persona
        return [
            *([{"role": "system", "content": system}] if system else []),
            {"role": "user", "content": user},
        ]

    def read_answer(self, text: object) -> str | None:
        """The verdict (unsafe, safe, unsure) an answer gives, or None when it cannot be
        read (`dices_cli.judge.answers`: negations, hedges and both answers understood); a
        scale prompt's: the value of the scale (as text), or None."""
        if not isinstance(text, str):
            return self._read_answer(text)
        found = self._read.get(("answer", text), _UNREAD)
        if found is _UNREAD:
            found = self._remember(("answer", text), self._read_answer(text))
        return found  # type: ignore[return-value]

    def _read_answer(self, text: object) -> str | None:
        if self.label is not None:
            return read_value(self.answers, text)
        return read_answer(self.answers, text)

    def _remember(self, text: tuple[str, str], verdict: str | None) -> str | None:
        if len(self._read) < MAX_REMEMBERED:
            self._read[text] = verdict
        return verdict

    def first_token_verdict(self, token: str) -> str | None:
        """The verdict a first answer token starts, if only one answer starts so ("Yes",
        " yes", "un" of "unsafe" when no other answer begins "un")."""
        found = self._read.get(("token", token), _UNREAD)
        if found is _UNREAD:
            found = self._remember(("token", token), self._first_token_verdict(token))
        return found  # type: ignore[return-value]

    def _first_token_verdict(self, token: str) -> str | None:
        stem = "".join(_WORD.findall(token.casefold()))
        if not stem:
            return None
        found = {
            verdict
            for answer, verdict in self.answers.items()
            if "".join(_WORD.findall(answer.casefold())).startswith(stem)
        }
        return found.pop() if len(found) == 1 else None


def packaged_prompts_directory() -> Path:
    """`dices_cli/prompts` in an installed wheel; the repository's `prompts/` in a checkout."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "prompts"
    return packaged if packaged.is_dir() else package.parent / "prompts"


def shipped_prompts() -> list[str]:
    return sorted(path.stem for path in packaged_prompts_directory().glob("*.toml"))


def load_prompt(given: str) -> Prompt:
    """A shipped prompt by name, or a prompt file by path (anything with a / or .toml)."""
    if "/" in given or given.endswith(".toml"):
        path = Path(given)
    else:
        path = packaged_prompts_directory() / f"{given}.toml"
        if not path.is_file():
            raise UsageError(
                Option("prompt"),
                f" {given}: no such prompt; choose {', '.join(shipped_prompts())} or give a file",
            )
    try:
        data = read_regular_file(path, MAX_PROMPT_BYTES)
    except UntrustedError as error:
        raise PromptError(f"cannot read the prompt {path}: {error}") from error
    return parse_prompt(data, str(path))


def parse_prompt(data: bytes, source: str) -> Prompt:
    """A prompt from the bytes of its TOML file; any problem is a `PromptError`."""
    try:
        table = loads_toml(data, MAX_PROMPT_BYTES)
    except UntrustedError as error:
        raise PromptError(f"the prompt {source} cannot be used: {error}") from error
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise PromptError(
            f"the prompt {source} has unknown keys: {', '.join(unknown)} "
            f"(a prompt has {', '.join(sorted(KEYS))})"
        )
    for key in ("name", "user"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise PromptError(f'the prompt {source} needs {key} = "..." (text)')
    if not isinstance(table.get("version"), int | str) or isinstance(table.get("version"), bool):
        raise PromptError(f"the prompt {source} needs version = 1 (a number or text)")
    for key in ("about", "system"):
        if key in table and not isinstance(table[key], str):
            raise PromptError(f"the prompt {source}: {key} is text")
    if "label" in table:
        return _scale_prompt(table, source)
    for placeholder in ("{context}", "{response}"):
        if placeholder not in table["user"]:
            raise PromptError(f"the prompt {source}: user has no {placeholder}")
    answers = table.get("answers")
    if not isinstance(answers, dict) or not answers:
        raise PromptError(
            f"the prompt {source} has no [answers]: its polarity must be declared, "
            'e.g. Yes = "unsafe", No = "safe"'
        )
    for answer, verdict in answers.items():
        if verdict not in VERDICTS or not _WORD.findall(answer):
            raise PromptError(
                f"the prompt {source}: answer {answer!r} = {verdict!r}; each answer is a word "
                f"mapped to {', '.join(VERDICTS)}"
            )
    _declared_once(answers, source, "verdicts")
    if not {UNSAFE, SAFE} <= set(answers.values()):
        raise PromptError(f"the prompt {source}: [answers] must name both unsafe and safe answers")
    return _prompt(table, answers, source)


def _prompt(
    table: dict[str, Any], answers: dict[str, Any], source: str, label: str | None = None
) -> Prompt:
    """The prompt of a checked TOML table and its checked `answers` (of `label`'s scale, or
    verdicts without one)."""
    return Prompt(
        price=_price(table.get("price"), source),
        name=table["name"],
        version=str(table["version"]),
        about=table.get("about", ""),
        system=table.get("system"),
        user=table["user"],
        answers=dict(answers),
        source=source,
        label=label,
    )


def _declared_once(answers: dict[str, Any], source: str, what: str) -> None:
    """Refuse one answer (case and punctuation ignored) declared with two `what`s."""
    said: dict[tuple[str, ...], tuple[str, Any]] = {}
    for answer, meaning in answers.items():
        words = tuple(_WORD.findall(answer.casefold()))
        if words in said and said[words][1] != meaning:
            first, other = said[words]
            raise PromptError(
                f"the prompt {source}: the answer {first!r} = {other!r} and {answer!r} = "
                f"{meaning!r} are one answer (case and punctuation are ignored) with two "
                f"{what}; declare it once"
            )
        said.setdefault(words, (answer, meaning))


def _scale_prompt(table: dict[str, Any], source: str) -> Prompt:
    """A scale prompt (`label = "NAME"`): its answers words, each mapped to one value (a
    number or text; whether it is the label's is checked when a run starts)."""
    label = table["label"]
    if not isinstance(label, str) or not label.strip():
        raise PromptError(f'the prompt {source} needs label = "..." (a declared label\'s name)')
    if not FIELD.search(table["user"].replace("{persona}", "")):
        raise PromptError(
            f"the prompt {source}: user has no {{field}}: name the item's text fields it "
            "reads, as {text}"
        )
    answers = table.get("answers")
    if not isinstance(answers, dict) or not answers:
        raise PromptError(
            f"the prompt {source} has no [answers]: map each answer to a value of "
            f'{label}\'s scale, e.g. "1" = 1'
        )
    for answer, value in answers.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not _WORD.findall(answer) or not (
            isinstance(value, str) or (number and math.isfinite(value))
        ):
            raise PromptError(
                f"the prompt {source}: answer {answer!r} = {value!r}; each answer is a word "
                f"mapped to a value of {label}'s scale (a number or text)"
            )
    _declared_once(answers, source, "values")
    return _prompt(table, answers, source, label)


def _price(table: object, source: str) -> tuple[float, float] | None:
    """A prompt's [price] (input and output, dollars per million tokens), checked."""
    from dices_cli.read.untrusted import finite_number

    if table is None:
        return None
    if not isinstance(table, dict) or set(table) != {"input", "output"}:
        raise PromptError(
            f"the prompt {source}: [price] holds input = and output = (dollars per million "
            "tokens), nothing else"
        )
    prices = [finite_number(table[key], 0.0, MAX_PRICE) for key in ("input", "output")]
    if prices[0] is None or prices[1] is None:
        raise PromptError(
            f"the prompt {source}: [price] input and output are numbers from 0 to {MAX_PRICE:g}"
        )
    return prices[0], prices[1]
