"""`printable`: text from outside, shown on a terminal, with every control, bidirectional and
other format character escaped and nothing else changed, checked against Unicode's own
categories for every code point."""

from __future__ import annotations

import re
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from dices_cli.terminal_text import printable

# ZERO WIDTH NON-JOINER and ZERO WIDTH JOINER: the format characters that pass (words of
# Persian and the Indic scripts, emoji sequences).
JOINERS = "\u200c\u200d"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ENGLAND = "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # a tag sequence


def escaped_by_unicode(character: str) -> bool:
    """The reference: a control (Cc), a surrogate (Cs), U+FFFE, U+FFFF, or a format
    character (Cf) other than the joiners."""
    category = unicodedata.category(character)
    return (
        category in ("Cc", "Cs")
        or character in "\ufffe\uffff"
        or (category == "Cf" and character not in JOINERS)
    )


def test_exactly_controls_surrogates_noncharacters_and_format_characters_are_escaped() -> None:
    escaped = [code for code in range(sys.maxunicode + 1) if printable(chr(code)) != chr(code)]
    reference = [code for code in range(sys.maxunicode + 1) if escaped_by_unicode(chr(code))]
    assert escaped == reference
    # Cc, Cs, the two noncharacters, and the format characters less the joiners (161 of
    # Unicode 14's, in Python 3.11).
    if unicodedata.unidata_version == "14.0.0":
        assert len(escaped) == 65 + 2048 + 2 + 161


def test_each_escape_is_written_as_python_writes_it() -> None:
    assert printable("a\x1b[31mred\x1b[0m") == "a\\x1b[31mred\\x1b[0m"
    assert printable("one\ntwo\tthree\rfour\x00\x7f") == "one\\ntwo\\tthree\\rfour\\x00\\x7f"
    assert printable("\x85\x9b\ufffe\uffff\ud800\udfff") == (
        "\\x85\\x9b\\ufffe\\uffff\\ud800\\udfff"
    )
    assert printable("abc\u202edef\u2066x\u2069\u200e\u061c\u00ad\ufeff\U000e0041") == (
        "abc\\u202edef\\u2066x\\u2069\\u200e\\u061c\\xad\\ufeff\\U000e0041"
    )


def test_ordinary_unicode_joiners_and_flags_are_shown_as_they_are() -> None:
    text = f"Not Found, é, ß, 日本, עברית, \u2028, 🙂, 👩‍💻, می‌خواهم, क्‍ष, {ENGLAND}, \\x1b"
    assert printable(text) == text


def test_tags_outside_a_flag_are_escaped() -> None:
    # Tag characters hide text ("ASCII smuggling"): only a whole emoji tag sequence passes.
    tags = ENGLAND[1:]
    assert printable(tags) == "\\U000e0067\\U000e0062\\U000e0065\\U000e006e\\U000e0067\\U000e007f"
    unended = ENGLAND[:-1]
    assert printable(unended) == "🏴" + "\\U000e0067\\U000e0062\\U000e0065\\U000e006e\\U000e0067"
    assert printable(f"{ENGLAND}\u202e{ENGLAND}") == f"{ENGLAND}\\u202e{ENGLAND}"


@given(
    st.text(
        st.one_of(
            st.sampled_from(BIDI),
            st.characters(min_codepoint=0x5D0, max_codepoint=0x5EA),  # Hebrew letters
            st.characters(min_codepoint=0x627, max_codepoint=0x64A),  # Arabic letters
            st.sampled_from("abc 0123456789-_.,()[]<>/"),
        )
    )
)
def test_bidirectional_controls_are_escaped_and_the_rest_kept(text: str) -> None:
    """Text that would show in another order than it is read ("Trojan Source"): each
    bidirectional control is written as its \\u escape, in place; the letters are kept."""
    expected = "".join(f"\\u{ord(c):04x}" if c in BIDI else c for c in text)
    assert printable(text) == expected


@given(st.text(st.characters(codec=None)))
def test_what_is_shown_holds_no_control_or_format_character(text: str) -> None:
    shown = printable(text)
    flags_left_out = re.sub("🏴[\U000e0020-\U000e007e]+\U000e007f", "", shown)
    assert not any(escaped_by_unicode(c) for c in flags_left_out)
    assert printable(shown) == shown
