"""The shape of a result: which columns, in which order of rows, how many rows.

Applied once, to any result, just before it is written: a `Table` in Python, a `Stream` of
Arrow batches with Arrow (batch by batch, without reading further than it needs, unless
the rows are sorted: sorting reads them all).

Sorting orders numbers by value and text by code point (an ENUM column by its values'
text too, so a query's rows sort alike whichever form its result takes), is stable (rows
that tie keep the result's order), and puts NaN and then missing values last whichever
the direction.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dices_cli.errors import UsageError
from dices_cli.output import Result, Stream, Table

if TYPE_CHECKING:
    import pyarrow as pa


class UnknownColumnError(UsageError):
    """A shape names a column the result does not have; `available` are the ones it has."""

    def __init__(self, column: str, available: Sequence[str]) -> None:
        super().__init__(
            f"the result has no column {column!r}; its columns are: {', '.join(available)}"
        )
        self.column = column
        self.available = tuple(available)


@dataclass(frozen=True)
class Shape:
    """Keep `columns` (None: all) in their order, after sorting the rows by `sort` (None:
    as they come; `descending` for the other way), and then only the first `limit` rows."""

    columns: tuple[str, ...] | None = None
    sort: str | None = None
    descending: bool = False
    limit: int | None = None

    @classmethod
    def parse(cls, columns: str | None, sort: str | None, limit: int | None) -> Shape:
        """From the text forms: `columns` as `a,b`; `sort` as `col`, or `-col` descending."""
        chosen = None if columns is None else _named(columns)
        descending = sort is not None and sort.startswith("-")
        key = sort[1:] if sort is not None and descending else sort
        if key == "":
            raise UsageError("name the column to sort by, with - in front to sort descending")
        if limit is not None and limit < 0:
            raise UsageError(f"the number of rows must be 0 or more (got {limit})")
        return cls(chosen, key, descending, limit)

    @property
    def is_identity(self) -> bool:
        return self.columns is None and self.sort is None and self.limit is None


def _named(columns: str) -> tuple[str, ...]:
    """The column names of `a,b`, each once."""
    chosen = tuple(name.strip() for name in columns.split(","))
    if "" in chosen:
        raise UsageError(f"give column names separated by commas (got {columns!r})")
    twice = next((n for n in chosen if chosen.count(n) > 1), None)
    if twice is not None:
        raise UsageError(f"column {twice!r} is named twice")
    return chosen


def apply(result: Result, shape: Shape) -> Result:
    """`result` in `shape`; a column the result lacks is an `UnknownColumnError`, raised
    before any row is read."""
    for name in [*(shape.columns or ()), *([shape.sort] if shape.sort else [])]:
        if name not in result.columns:
            raise UnknownColumnError(name, result.columns)
    if shape.is_identity:
        return result
    if isinstance(result, Stream):
        return _shape_stream(result, shape)
    return _shape_table(result, shape)


def _shape_table(table: Table, shape: Shape) -> Table:
    rows = table.rows
    if shape.sort is not None:
        rows = _sorted_rows(rows, table.columns.index(shape.sort), shape.descending)
    if shape.limit is not None:
        rows = rows[: shape.limit]
    if shape.columns is None:
        return Table(table.columns, table.numeric, rows)
    positions = [table.columns.index(name) for name in shape.columns]
    return Table(
        list(shape.columns),
        [table.numeric[i] for i in positions],
        [tuple(row[i] for i in positions) for row in rows],
    )


def _sorted_rows(rows: list[tuple[Any, ...]], position: int, descending: bool) -> list[tuple]:
    return [rows[i] for i in _order([row[position] for row in rows], descending)]


def _order(values: list[Any], descending: bool) -> list[int]:
    """The positions of `values` in sorted order (see the module; a list orders element by
    element, a struct field by field)."""

    def missing(value: Any) -> int:  # 0: a value, 1: NaN, 2: no value
        if value is None:
            return 2
        return 1 if isinstance(value, float) and math.isnan(value) else 0

    ranked = {rank: [i for i, v in enumerate(values) if missing(v) == rank] for rank in (0, 1, 2)}
    ordered = sorted(ranked[0], key=lambda i: _comparable(values[i]), reverse=descending)
    return [*ordered, *ranked[1], *ranked[2]]


def _comparable(value: Any) -> Any:
    """`value` as Python compares it; in a list or a struct, a missing value after any other."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return tuple((v is None, None if v is None else _comparable(v)) for v in value)
    return value


def _shape_stream(stream: Stream, shape: Shape) -> Stream:
    batches = stream.batches
    if shape.sort is not None:
        batches = _sorted_batches(stream, shape.sort, shape.descending)
    if shape.limit is not None:
        batches = _first_rows(batches, shape.limit)
    if shape.columns is None:
        return Stream(stream.schema, batches, stream.bounded)
    import pyarrow as pa

    names = list(shape.columns)
    schema = pa.schema([stream.schema.field(name) for name in names], stream.schema.metadata)
    return Stream(schema, (batch.select(names) for batch in batches), stream.bounded)


def _sorted_batches(stream: Stream, column: str, descending: bool) -> Iterator[pa.RecordBatch]:
    """Every row of `stream`, sorted: the whole result is read here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.Table.from_batches(list(stream.batches), stream.schema)
    key = table.column(column)
    if pa.types.is_dictionary(key.type):  # an ENUM: by its values' text (see the module)
        key = key.cast(key.type.value_type)
    if pa.types.is_nested(key.type):  # a list, a struct: which Arrow does not sort
        order = pa.array(_order(key.to_pylist(), descending), pa.int64())
        return iter(table.take(order).to_batches())
    order = "descending" if descending else "ascending"
    options = pc.SortOptions(sort_keys=[("key", order, "at_end")])
    indices = pc.sort_indices(pa.table({"key": key}), options=options)
    return iter(table.take(indices).to_batches())


def _first_rows(batches: Iterator[pa.RecordBatch], limit: int) -> Iterator[pa.RecordBatch]:
    """The batches holding the first `limit` rows; no batch after them is read."""
    left = limit
    if left == 0:
        return
    for batch in batches:
        kept = batch.slice(0, left)
        left -= kept.num_rows
        yield kept
        if left == 0:
            return
