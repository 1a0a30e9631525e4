"""The lines of a JSON Lines file, read in bounded memory and each parsed strictly: what
every JSON Lines reader of dices (ProsocialDialog files, predictions files, `sql --table`
files) refuses alike, so that a line means one thing to all of them.

A line ends at LF (a CR before it is JSON's blank). A line longer than MAX_RECORD_BYTES is
skipped without being held. A line is refused when it is not UTF-8, escapes a lone UTF-16
surrogate ("\\ud800", no character: one reader made it NUL), names a key twice in one
object (readers kept the first or the last, silently), or nests deeper than MAX_DEPTH
(Python's parser raises RecursionError near 1,000 levels; Polars' crashed at 900, and
PyArrow's at 100,000).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from dices_cli.problems import JsonProblemType, ProblemType
from dices_cli.read.lines import MAX_RECORD_BYTES, Lines, RecordTooLongError

if TYPE_CHECKING:
    from typing import BinaryIO

MAX_DEPTH = 64  # levels of lists and objects in one line; dices's own files need 2
BLANKS = " \t\r\n"  # JSON's whitespace: a line of nothing else is skipped
# An escape that may be half of a UTF-16 pair: the parsed value is looked at only then.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JsonLineError(Exception):
    """A line that is not one strict JSON value: `type` is its problem type, `value` the
    part to quote (a duplicated key), if any."""

    def __init__(
        self, problem: ProblemType | JsonProblemType, message: str, value: str | None = None
    ) -> None:
        super().__init__(message)
        self.type, self.message, self.value = problem, message, value


def json_lines(handle: BinaryIO, before: int = 0) -> Iterator[tuple[int, str | None]]:
    """(number, text) of each line of `handle` that is not blank, the text decoded with
    surrogateescape (`parsed` refuses invalid UTF-8); None for a line longer than
    MAX_RECORD_BYTES, which was skipped, not held. `before`: the lines before the
    handle's first (which then starts a line of the text, not the text)."""
    lines = Lines(handle, lf_only=True)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except RecordTooLongError:
            lines.forget()
            yield before + lines.count, None
            continue
        lines.forget()
        if line.strip(BLANKS):
            yield before + lines.count, line


def too_long_message(what: str) -> str:
    return (
        f"the line is longer than {MAX_RECORD_BYTES >> 20} MiB, and {what} is a few KB; "
        "reading goes on at the next line"
    )


def parsed(text: str) -> object:
    """The JSON value on one line (a str from `json_lines`); JsonLineError when it is not
    strictly one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        at = len(text[: error.start].encode("utf-8", "surrogateescape")) + 1
        raise JsonLineError(
            ProblemType.INVALID_UTF8, f"the line is not valid UTF-8 (at its byte {at})"
        ) from None
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except RecursionError:
        raise JsonLineError(JsonProblemType.INVALID_JSON, _too_deep()) from None
    except ValueError as error:
        raise JsonLineError(
            JsonProblemType.INVALID_JSON, f"the line is not valid JSON ({error})"
        ) from None
    if sum(map(text.count, "[{")) > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise JsonLineError(JsonProblemType.INVALID_JSON, _too_deep())
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise JsonLineError(
                ProblemType.INVALID_UTF8,
                "the line escapes a lone UTF-16 surrogate (\\ud800 to \\udfff), "
                "which is no character",
            ) from None
    return value


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result = dict(pairs)
    if len(result) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonLineError(
                    JsonProblemType.DUPLICATE_KEY,
                    f"the key {json.dumps(key)[:62]} appears twice in one object",
                    key,
                )
            seen.add(key)
    return result


# One decoder for every line (json.loads with a hook built one a line: a tenth of the time).
_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def _too_deep() -> str:
    return f"the line nests lists and objects deeper than {MAX_DEPTH} levels"


def _depth(value: object) -> int:
    """Levels of lists and objects in `value` (0 for a number), counted without recursion;
    counting stops past MAX_DEPTH."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
            stack.extend((child, depth + 1) for child in item)
    return deepest
