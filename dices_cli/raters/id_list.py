"""Rater id lists: read from a file or stdin to choose the raters a query sees."""

from __future__ import annotations

import codecs
import csv
import io

from dices_cli.errors import DicesError
from dices_cli.families.schema import RATER_ID
from dices_cli.read.ids import parse_integer


def parse_rater_ids(data: bytes, source: str) -> frozenset[int]:
    """Rater ids from one id per line, or from the `rater_id` column of a CSV with a header.

    The bytes are UTF-8 (a byte-order mark is allowed). An id is spelled as ingest accepts
    it in the rater_id column (see `dices_cli.read.ids`); spaces around it and blank lines are
    ignored, and anything else is an error naming its line.
    """
    text = _decoded(data, source)
    lines = text.splitlines()
    first = lines[0] if lines else ""
    if "rater_id" in first.split(",") or "," in first:
        rows = list(csv.reader(io.StringIO(text)))
        header = [cell.strip() for cell in rows[0]]
        if "rater_id" not in header:
            raise DicesError(f"{source}: line 1 has columns but none is named rater_id")
        column = header.index("rater_id")
        numbered = [
            (n, row[column] if column < len(row) else "")
            for n, row in enumerate(rows[1:], 2)
            if row
        ]
    else:
        numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    ids = set()
    for number, cell in numbered:
        rater_id = parse_integer(cell.strip(), RATER_ID)
        if rater_id is None:
            raise DicesError(f"{source}: line {number}: {cell.strip()!r} is not a rater id")
        ids.add(rater_id)
    if not ids:
        raise DicesError(f"{source}: no rater ids found")
    return frozenset(ids)


def _decoded(data: bytes, source: str) -> str:
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DicesError(
            f"{source}: line {line} is not UTF-8 text; save the list as UTF-8"
        ) from None
