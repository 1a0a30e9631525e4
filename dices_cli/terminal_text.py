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
import unicodedata

# The joiners pass (see above), and a flag's tag run after 🏴 is how the flag is written.
_JOINERS = "\u200c\u200d"
_FLAG_TAGS = re.compile("[\U000e0020-\U000e007e]+\U000e007f")


def _unshowable(character: str) -> bool:
    # From the running Python's Unicode database, so a newer Unicode's format characters
    # are escaped too (Unicode 15 added seven).
    category = unicodedata.category(character)
    return (
        category in ("Cc", "Cs")
        or character in "\ufffe\uffff"
        or (category == "Cf" and character not in _JOINERS)
    )


def _shown(character: str) -> str:
    # `isprintable` first: a C-level test that passes almost every character.
    if character.isprintable() or not _unshowable(character):
        return character
    return repr(character)[1:-1]  # none is a quote or a backslash, which repr would alter


def _escaped(text: str) -> str:
    if "🏴" not in text:
        return "".join(map(_shown, text))
    pieces: list[str] = []
    index = 0
    while index < len(text):
        flag = _FLAG_TAGS.match(text, index + 1) if text[index] == "🏴" else None
        end = flag.end() if flag else index + 1
        pieces.append(text[index:end] if flag else _shown(text[index]))
        index = end
    return "".join(pieces)


def printable(text: str) -> str:
    """`text` with each control character, U+FFFE, U+FFFF, lone surrogate and format
    character (but ZWNJ, ZWJ and emoji tag sequences) replaced by its escape as Python
    writes it (`\\n`, `\\x1b`, `\\x85`, `\\ufffe`, `\\ud800`, `\\u202e`, `\\U000e0041`)."""
    # Every character escaped is "non-printable" to Python, so printable text, the usual
    # case, is returned at the cost of one C-level scan.
    if text.isprintable():
        return text
    return _escaped(text)
