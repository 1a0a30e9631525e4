"""A declared CSV read whole (dices_cli.formats.declared.read): a record Polars would pad
(too few fields) or a blank line is a wrong-field-count problem on its line, never a
record with empty cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from dices_cli.errors import InvalidInputError
from dices_cli.formats.ingest import ingest
from dices_cli.store.datasets import Store

DECLARATION = """
[[dataset]]
name = "shorty"
title = "Shorty"
[[dataset.file]]
role = "ratings"
item = "item"
rater = "rater"
labels = ["harm"]
rater_attributes = ["gender"]
[dataset.scales.harm]
kind = "nominal"
values = ["no", "yes"]
"""
HEADER = "item,rater,harm,gender"
ROWS = ["i1,r1,yes,woman", "i2,r2,no,man", "i3,r1,no,woman"]

pytestmark = pytest.mark.usefixtures("registry_as_it_was")


def problems(tmp_path: Path, lines: list[str]) -> list[tuple[str, int | None, str]]:
    """The problems of ingesting `lines` (a header first), or [] when it is stored."""
    declaration = tmp_path / "shorty.toml"
    declaration.write_text(DECLARATION, encoding="utf-8")
    data = tmp_path / "s.csv"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        ingest([data], Store(tmp_path / "data"), declaration=declaration)
    except InvalidInputError as error:
        return [(p.type, p.line, p.message) for p in error.report.problems]
    return []


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([HEADER, ROWS[0], "i2,r2", ROWS[2]], (3, "2 fields, the header has 4")),
        ([HEADER, ROWS[0], "i2", ROWS[2]], (3, "1 field, the header has 4")),
        ([HEADER, ROWS[0], "", *ROWS[1:]], (3, "0 fields, the header has 4")),
        ([HEADER, *ROWS, ""], (5, "0 fields, the header has 4")),
    ],
)
def test_a_short_record_or_a_blank_line_is_a_wrong_field_count(
    tmp_path: Path, lines: list[str], expected: tuple[int, str]
) -> None:
    assert problems(tmp_path, lines) == [("wrong-field-count", *expected)]


def test_whole_records_are_stored(tmp_path: Path) -> None:
    assert problems(tmp_path, [HEADER, *ROWS]) == []
