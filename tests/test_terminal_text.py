"""`printable`: text from outside, shown on a terminal, with every control character escaped
and nothing else changed, checked against Unicode's own categories for every code point."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from dices_cli.terminal_text import printable


def test_exactly_the_controls_noncharacters_and_surrogates_are_escaped() -> None:
    escaped = [code for code in range(sys.maxunicode + 1) if printable(chr(code)) != chr(code)]
    reference = [
        code
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cc", "Cs") or code in (0xFFFE, 0xFFFF)
    ]
    assert escaped == reference
    assert len(escaped) == 65 + 2048 + 2


def test_each_escape_is_written_as_python_writes_it() -> None:
    assert printable("a\x1b[31mred\x1b[0m") == "a\\x1b[31mred\\x1b[0m"
    assert printable("one\ntwo\tthree\rfour\x00\x7f") == "one\\ntwo\\tthree\\rfour\\x00\\x7f"
    assert printable("\x85\x9b\ufffe\uffff\ud800\udfff") == (
        "\\x85\\x9b\\ufffe\\uffff\\ud800\\udfff"
    )


def test_ordinary_unicode_is_shown_as_it_is() -> None:
    text = "Not Found, é, ß, 日本, עברית, \u200b\u202e\u2028, 🙂, \\x1b"
    assert printable(text) == text


@given(st.text(st.characters(codec=None)))
def test_what_is_shown_holds_no_control_character(text: str) -> None:
    shown = printable(text)
    assert not any(unicodedata.category(c) in ("Cc", "Cs") or c in "\ufffe\uffff" for c in shown)
    assert printable(shown) == shown
