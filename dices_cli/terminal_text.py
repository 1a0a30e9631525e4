"""Text from outside (a server's answer, a value in a data file) made safe to show on a
terminal, where a control character is an instruction: ESC starts an escape sequence that
can recolour, retitle or rewrite the screen, CR and BS overwrite what was shown.

Only what a terminal may act on, or what is not text at all, is escaped: the C0 and C1
control characters and DEL (Unicode category Cc, tab and line break included: a message is
one line), the noncharacters U+FFFE and U+FFFF, and lone surrogates. Everything else, any
script, emoji and invisible formatting characters included, is shown as it is. Data written
to a file or a pipe as CSV or JSON is never passed through this: it stays exact.
"""

from __future__ import annotations

import re

_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return repr(match[0])[1:-1]  # each of these is written as an escape, never as itself


def printable(text: str) -> str:
    """`text` with each control character, U+FFFE, U+FFFF and lone surrogate replaced by its
    escape as Python writes it (`\\n`, `\\x1b`, `\\x85`, `\\ufffe`, `\\ud800`)."""
    return _UNSHOWABLE.sub(_escape, text)
