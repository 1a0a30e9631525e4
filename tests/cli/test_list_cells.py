"""List cells on a terminal and in --sort, a --sort value that starts with -, and a named
column in the one-record-per-block layout."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.commands.canned import _dataset_named
from dices_cli.cli.focus import Focus
from dices_cli.cli.main import app
from dices_cli.cli.tabular import cell_text, layout, records
from dices_cli.output import Stream, Table, text_cell
from dices_cli.shape import Shape, apply


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (["national/regional"], '["national/regional"]'),
        (["a", "b c"], '["a", "b c"]'),
        ([], "[]"),
        ([1, None], "[1, null]"),
        ({"n": 3, "tags": ["x"]}, '{"n": 3, "tags": ["x"]}'),
        (["\x1b[31m"], '["\\u001b[31m"]'),  # JSON escapes it: nothing reaches the terminal
    ],
)
def test_a_list_cell_is_drawn_as_csv_writes_it(value: Any, shown: str) -> None:
    assert cell_text(value) == shown == text_cell(value)


# A list column's rows: lists of short words (or no list at all).
LISTS = st.lists(st.none() | st.lists(st.sampled_from(["a", "ab", "b", ""]), max_size=3))


@given(LISTS, st.booleans())
def test_a_list_column_sorts_element_by_element(lists: list[Any], descending: bool) -> None:
    rows = [(i, value) for i, value in enumerate(lists)]
    shape = Shape(None, "tags", descending, None)
    table = apply(Table(["n", "tags"], [True, False], rows), shape)
    tags = pa.array(lists, pa.list_(pa.string()))
    arrow = pa.table({"n": pa.array(range(len(lists)), pa.int64()), "tags": tags})
    stream = apply(Stream(arrow.schema, iter(arrow.to_batches(max_chunksize=4))), shape)
    assert isinstance(table, Table) and isinstance(stream, Stream)
    streamed = [(r["n"], r["tags"]) for b in stream.batches for r in b.to_pylist()]
    # The reference: Python's own list order, stable, and the rows without a list last.
    present = [row for row in rows if row[1] is not None]
    expected = [
        *sorted(present, key=lambda row: row[1], reverse=descending),
        *(row for row in rows if row[1] is None),
    ]
    assert table.rows == expected
    assert streamed == expected


@pytest.mark.parametrize(
    ("args", "dataset"),
    [
        (["--sort", "-dataset"], None),
        (["--sort", "-dataset", "-d", "990"], "990"),
        (["--columns", "-dx", "--dataset", "350"], "350"),
        (["-d990", "--sort", "-raters"], "990"),
        (["--dataset=mine", "--limit", "3"], "mine"),
        (["--sort=-dataset"], None),
        (["-d", "350", "-d", "990"], "990"),
        (["--", "-dmine"], None),
    ],
)
def test_the_dataset_a_query_names(args: list[str], dataset: str | None) -> None:
    valued = {"--sort", "--columns", "--limit", "--data", "-o", "--output"}
    assert _dataset_named(args, valued) == dataset


@pytest.mark.parametrize(
    ("sort", "order"), [("-dataset", ["990", "350"]), ("dataset", ["350", "990"])]
)
def test_sort_descending_by_dataset_is_a_sort(sample: Path, sort: str, order: list[str]) -> None:
    result = CliRunner().invoke(
        app, ["query", "overview", "--data", str(sample), "--sort", sort, "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["dataset"] for row in rows] == order


def test_a_named_column_has_its_line_in_every_block_even_where_empty() -> None:
    text = "e9f9059bc4338d807ce796dec6e08a2b895694bc003a01edd4cfa16cdfd9b243"  # one word
    table = Table(["key", "text", "note"], [False, False, False], [("a", text, None)] * 2)
    named = layout(table, 30, focus=Focus(answer=("text",), named=("note",)))
    assert named.blocks
    assert [[(c.name, v) for c, v in block] for block in records(named)] == [
        [("key", "a"), ("text", text), ("note", "")]
    ] * 2
    unnamed = layout(table, 30, focus=Focus(answer=("text",)))
    assert [[c.name for c, _ in block] for block in records(unnamed)] == [["key", "text"]] * 2
