"""Text from outside (a server's answer, a value in a data file) made safe to show on a
terminal, where a control character is an instruction: ESC starts an escape sequence that
can recolour, retitle or rewrite the screen, CR and BS overwrite what was shown.

Escaped: what a terminal may act on, what is not text at all, and what reorders or hides
text. That is the C0 and C1 control characters and DEL (Unicode category Cc, tab and line
break included: a message is one line), the noncharacters U+FFFE and U+FFFF, lone
surrogates, and the format characters (category Cf): the bidirectional controls (U+202A to
U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C), which make a terminal or a browser show
text in another order than it is read ("Trojan Source"), and the invisible ones (U+200B,
U+2060, U+FEFF, U+00AD, tag characters...), which make two different values look the same.

Format characters that pass: ZERO WIDTH NON-JOINER and ZERO WIDTH JOINER (U+200C, U+200D),
which Persian and the Indic scripts write words with and which join emoji sequences (👩‍💻),
and an emoji tag sequence whole (🏴, tag characters, U+E007F: the flags of England,
Scotland and Wales). Everything else, any script and emoji included, is shown as it is.
Data written to a file or a pipe as CSV or JSON is never passed through this: it stays
exact.
"""

from __future__ import annotations

import re

# Unicode's format characters (Cf) as of Unicode 14 (Python 3.11's `unicodedata`), less
# U+200C and U+200D; `tests/test_terminal_text.py` checks them against every code point.
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
# A run of characters to escape; the tags of an emoji tag sequence are such a run, after 🏴.
# (One character class: an alternation for the flag made the search four times slower.)
_UNSHOWABLE = re.compile(f"[\x00-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff{_FORMAT}]+")
_FLAG_TAGS = re.compile("[\U000e0020-\U000e007e]+\U000e007f")


def _escape(match: re.Match[str]) -> str:
    run, start = match[0], match.start()
    flag = _FLAG_TAGS.match(run) if match.string[start - 1 : start] == "🏴" else None
    kept = flag[0] if flag else ""  # a flag's tags are how it is written
    # Each of the rest is written as an escape, never as itself (none is a quote or a
    # backslash, which repr would write otherwise).
    return kept + repr(run[len(kept) :])[1:-1]


def printable(text: str) -> str:
    """`text` with each control character, U+FFFE, U+FFFF, lone surrogate and format
    character (but ZWNJ, ZWJ and emoji tag sequences) replaced by its escape as Python
    writes it (`\\n`, `\\x1b`, `\\x85`, `\\ufffe`, `\\ud800`, `\\u202e`, `\\U000e0041`)."""
    if text.isprintable():  # none of them (all are "non-printable" to Python): the usual case
        return text
    return _UNSHOWABLE.sub(_escape, text)
