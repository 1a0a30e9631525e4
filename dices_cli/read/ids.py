"""How an integer is spelled: one rule for the cells ingest reads and the ids `--raters` reads.

An id a rater list accepts is one a DICES file may hold, and the other way round: ASCII
digits, an optional leading `-`, no leading zeros, no `+`, no `_`, no other script's digits
(Python's `int` takes `1_000`, `+5`, `0007` and `٣`; ingest refuses them all), within the
column's range.
"""

from __future__ import annotations

import re

from dices_cli.families.schema import Column

INTEGER_PATTERN = r"^(0|-?[1-9][0-9]*)$"  # no "-0", which would not export back as written
INT64_MAX = 2**63 - 1
_INTEGER = re.compile(INTEGER_PATTERN, re.ASCII)


def integer_range(column: Column) -> tuple[int, int]:
    """The smallest and largest value an integer column may hold."""
    low = column.minimum if column.minimum is not None else -INT64_MAX
    high = column.maximum if column.maximum is not None else INT64_MAX
    return low, high


def parse_integer(text: str, column: Column) -> int | None:
    """The value `text` spells in `column`, or None when ingest would refuse it there."""
    if _INTEGER.fullmatch(text) is None:
        return None
    value = int(text)
    low, high = integer_range(column)
    return value if low <= value <= high else None
