"""Typed tables from validated string cells, and the wide string table back from them."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from dices_cli.families.schema import (
    GOLD_REASONS,
    HARM_TAGS,
    HARM_TYPE,
    ITEM_ID,
    RATER_ID,
    SAFETY_GOLD_REASON,
    Column,
    Dataset,
    Entity,
    Kind,
)


def polars_type(column: Column, new_values: Sequence[str] = ()) -> pl.DataType:
    """The column's type; an enum's `new_values` come after the values the schema lists."""
    if column.kind is Kind.INTEGER:
        return pl.Int64()
    if column.kind is Kind.TIMESTAMP:
        return pl.Datetime("us", "UTC")
    if column.kind is Kind.ENUM:
        return pl.Enum([*column.values, *new_values])
    return pl.String()


def unlisted(column: Column) -> pl.Expr:
    """True on the cells of an enum column that hold a value the schema does not list."""
    cell = pl.col(column.name)  # Categorical or String: compared without a cast, which is slow
    return (cell != "") & ~cell.is_in(list(column.values))


def _new_values(column: Column, cells: pl.DataFrame) -> list[str]:
    """The values of an extensible column that the schema does not list, in file order."""
    if not column.extensible:
        return []
    new = cells.filter(unlisted(column)).get_column(column.name).cast(pl.String)
    return new.unique(maintain_order=True).to_list()


# An Enum's values by the category code of Categorical cells, one lookup per pair of types
# (`_enum_lookup`); None where casting each row's string is cheaper.
EnumLookups = dict[tuple[pl.DataType, pl.DataType], pl.Series | None]


def _typed(column: Column, cells: pl.DataFrame, lookups: EnumLookups) -> pl.Expr:
    cell = pl.col(column.name)
    if column.nullable:
        cell = pl.when(cell != "").then(cell)
    if column.kind is Kind.ENUM:
        dtype = polars_type(column, _new_values(column, cells))
        lookup = _enum_lookup(cells, column.name, dtype, lookups)
        enum = cell.cast(dtype) if lookup is None else pl.lit(lookup).gather(cell.to_physical())
        return enum.alias(column.name)
    text = cell.cast(pl.String)  # the cells may be Categorical
    if column.kind is Kind.TIMESTAMP:
        seconds = pl.from_epoch(text.cast(pl.Int64), time_unit="s")
        return seconds.dt.replace_time_zone("UTC").alias(column.name)
    return text.cast(polars_type(column)).alias(column.name)


def _enum_lookup(
    cells: pl.DataFrame, name: str, dtype: pl.DataType, lookups: EnumLookups
) -> pl.Series | None:
    """`dtype`'s value of each category of the Categorical column `name` (null for a string
    outside it), by category code, when the rows outnumber the categories.

    A cast looks each row's string up in the Enum; a lookup casts each category once and
    picks the rows' values by code, several times faster when rows far outnumber
    categories (bench/ingest.py).
    """
    given = cells.schema[name]
    if not isinstance(given, pl.Categorical):
        return None
    if (given, dtype) not in lookups:
        strings = given.categories.to_series()
        fewer = strings.len() < cells.height
        lookups[given, dtype] = strings.cast(dtype, strict=False) if fewer else None
    return lookups[given, dtype]


def _typed_table(dataset: Dataset, cells: pl.DataFrame) -> pl.DataFrame:
    lookups: EnumLookups = {}
    typed = cells.select(_typed(dataset.column(name), cells, lookups) for name in cells.columns)
    for name, dtype in typed.schema.items():
        if lookups.get((cells.schema[name], dtype)) is None:
            continue
        column = dataset.column(name)
        empty = (cells.get_column(name) == "").sum() if column.nullable else 0
        if typed.get_column(name).null_count() != empty:
            # A string outside the Enum, which the lookup leaves null: the cast refuses it.
            cast: EnumLookups = {(cells.schema[name], dtype): None}
            typed = typed.with_columns(cells.select(_typed(column, cells, cast)))
    return typed


def new_values(dataset: Dataset, tables: dict[str, pl.DataFrame]) -> dict[str, list[str]]:
    """Per column, the enum values that `tables` hold beyond those the schema lists."""
    found = {}
    for table in tables.values():
        for name, dtype in table.schema.items():
            if isinstance(dtype, pl.Enum) and name in dataset.names:
                listed = dataset.column(name).values
                if extra := dtype.categories.to_list()[len(listed) :]:
                    found[name] = extra
    return found


def _derived(dataset: Dataset) -> list[pl.Expr]:
    """List forms kept beside the raw strings they are parsed from."""
    tags = (
        pl.col(HARM_TYPE.name)
        .str.split(",")
        .list.eval(pl.element().str.strip_chars().str.to_lowercase())
        .list.filter(pl.element() != "")
    )
    derived = [tags.alias(HARM_TAGS)]
    if SAFETY_GOLD_REASON.name in dataset.names:
        # The malformed literals in the real file miss a quote; the names are intact.
        reasons = pl.col(SAFETY_GOLD_REASON.name).str.extract_all(r"[A-Za-z_]+")
        derived.append(reasons.alias(GOLD_REASONS))
    return derived


def _names(dataset: Dataset, entity: Entity) -> list[str]:
    return [c.name for c in dataset.of(entity)]


def _item_columns(dataset: Dataset) -> list[str]:
    """The conversation's columns, each derived list right after its raw string."""
    columns = []
    for name in _names(dataset, Entity.ITEM):
        columns.append(name)
        if name == HARM_TYPE.name:
            columns.append(HARM_TAGS)
        elif name == SAFETY_GOLD_REASON.name:
            columns.append(GOLD_REASONS)
    return columns


def _rating_columns(dataset: Dataset) -> list[str]:
    row_id, *answers = _names(dataset, Entity.RATING)
    return [row_id, RATER_ID.name, ITEM_ID.name, *answers]


def split(dataset: Dataset, cells: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """items (one row per conversation), raters (one per rater), ratings (one per row).

    `cells` holds validated String cells; rows keep their file order, and items and
    raters the order in which they first appear.
    """
    # Deduplicate before typing, so the conversation text is cast once per conversation.
    items = cells.select(_names(dataset, Entity.ITEM)).unique(
        ITEM_ID.name, keep="first", maintain_order=True
    )
    raters = cells.select(_names(dataset, Entity.RATER)).unique(
        RATER_ID.name, keep="first", maintain_order=True
    )
    return {
        "items": _typed_table(dataset, items)
        .with_columns(_derived(dataset))
        .select(_item_columns(dataset)),
        "raters": _typed_table(dataset, raters),
        "ratings": _typed_table(dataset, cells.select(_rating_columns(dataset))),
    }


def _as_cell(column: Column) -> pl.Expr:
    value = pl.col(column.name)
    if column.kind is Kind.TIMESTAMP:
        value = value.dt.epoch("s")
    text = value.cast(pl.String)
    # An empty cell is null: CSV writers write null as nothing, as the DICES files have
    # it, while Polars quotes an empty string ("") to tell it from null.
    return pl.when(text != "").then(text).alias(column.name)


def wide_typed(dataset: Dataset, tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The wide file's rows (file order) and columns (schema names), typed as stored."""
    wide = (
        tables["ratings"]
        .join(tables["raters"], on=RATER_ID.name, how="left", maintain_order="left")
        .join(tables["items"], on=ITEM_ID.name, how="left", maintain_order="left")
    )
    return wide.select(c.name for c in dataset.columns)


def wide_cells(dataset: Dataset, tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The wide file again, every cell a String as it was in the CSV (an empty one null),
    rows in file order."""
    return wide_typed(dataset, tables).select(_as_cell(c) for c in dataset.columns)
