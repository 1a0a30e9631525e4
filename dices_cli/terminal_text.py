"""Text from the data made safe to draw: control characters shown as visible escapes.

A terminal obeys the control characters it is sent (ESC starts a sequence that can move the
cursor, recolour, retitle the window or rewrite what is already shown), and the chart
renderer (vl-convert) aborts the process on a character that XML cannot hold. Everything
drawn for a person, in a terminal or a chart, goes through `printable`; data written as
CSV, JSON or Parquet keeps its exact values.
"""

from __future__ import annotations

import re

# C0 controls (tab and line feed among them), DEL, C1 controls, the noncharacters U+FFFE and
# U+FFFF, and surrogates (a Python string holds one only as a lone surrogate).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character, U+FFFE, U+FFFF and lone surrogate written as a
    visible escape: ESC as `\\x1b`, U+FFFE as `\\ufffe`. Other text is unchanged."""
    return _UNPRINTABLE.sub(_escape, text)
