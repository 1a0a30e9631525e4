"""Rater id lists: read from a file or stdin for `--raters`."""

from __future__ import annotations

import csv
import io

from dices_cli.errors import DicesError


def parse_rater_ids(text: str, source: str) -> frozenset[int]:
    """Rater ids from one id per line, or from the `rater_id` column of a CSV with a header.

    Blank lines are ignored; anything else that is not an integer is an error naming its line.
    """
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
        try:
            rater_id = int(cell.strip())
            if not -(2**63) <= rater_id < 2**63:  # ids are BIGINT in every query
                raise ValueError(rater_id)
            ids.add(rater_id)
        except ValueError:
            raise DicesError(
                f"{source}: line {number}: {cell.strip()!r} is not a rater id"
            ) from None
    if not ids:
        raise DicesError(f"{source}: no rater ids found")
    return frozenset(ids)
