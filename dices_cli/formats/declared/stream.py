"""A declared dataset of one long CSV (TSV) ratings file, in one streaming pass.

The large files (10^7 ratings and more) are of this shape. One lazy scan feeds every
output at once (`polars.collect_all`, streaming engine): the ratings go straight to
Parquet, and the same pass counts what `build` would report and aggregates the raters
and the items. Memory holds the raters and items, never the ratings.

What needs the records themselves (a row without its item or rater, a label outside its
scale, a second rating of an item by a rater, a rater or an item whose attributes differ
between rows) is only counted here: when any is found the caller reads the file whole
(`read_file`, `build`), which says which records and on which lines. Both ways store
the same tables (tests/formats/test_declared_stream.py holds them equal).

An entity's attribute is the same on every row that gives one (else the count above),
so its first value is its least; its rows' order is the order of its first row.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dices_cli.families.declaration import DatasetDeclaration, FileSpec
from dices_cli.formats.declared.build import ITEM_SEPARATOR, Built, label_read, typed, with_positive
from dices_cli.formats.declared.read import ITEM, RATER, ROW
from dices_cli.read.source import Source

RATINGS_FILE = "ratings.parquet"  # in the folder `stream` is given


def streamable(spec: FileSpec, fmt: str) -> bool:
    """Whether a file can be stored by `stream`: a long CSV (TSV) of ratings."""
    long = spec.role == "ratings" and spec.layout == "long" and bool(spec.item and spec.rater)
    return long and fmt in ("csv", "tsv")


def stream(
    declared: DatasetDeclaration, spec: FileSpec, source: Source, fmt: str, folder: Path
) -> tuple[Built, int] | None:
    """The tables of the file, its ratings written to folder/RATINGS_FILE, and the records
    read; None when a record needs a problem or a warning, or Polars cannot read the file
    (then nothing is kept: read it whole)."""
    scan = pl.scan_csv(
        source.text_path,
        separator="\t" if fmt == "tsv" else ",",
        infer_schema=False,
        raise_if_empty=False,
    )
    try:
        header = scan.collect_schema().names()
    except pl.exceptions.PolarsError:
        return None
    if not header or any(c not in header for c in spec.required()):
        return None
    named = [_from_name(p, source.display_name).alias(c) for c, p in spec.from_name.items()]
    rows = scan.with_row_index(ROW).with_columns(*named).with_columns(_keys(spec))
    reads = {
        label: label_read(column, label, declared.scales[label])
        for label, column in spec.labels.items()
    }
    answers = [pl.col(c).alias(n) for n, c in spec.answers.items()]
    ratings = with_positive(
        rows.select(ITEM, RATER, *(value for value, _, _ in reads.values()), *answers), declared
    )
    pair = pl.struct(ITEM, RATER).hash()
    checks = rows.select(
        pl.len().alias("records"),
        (pl.col(ITEM).is_null() | pl.col(RATER).is_null()).sum().alias("keyless"),
        pl.sum_horizontal(*(outside.sum() for _, _, outside in reads.values()), pl.lit(0)).alias(
            "outside"
        ),
        (pl.len() - pair.n_unique()).alias("again"),
        *(absent.sum().alias(f"missing_{label}") for label, (_, absent, _) in reads.items()),
    )
    raters = _entity(rows, RATER, {**spec.rater_attributes})
    items = _entity(rows, ITEM, {**spec.text, **spec.item_attributes})
    target = folder / RATINGS_FILE
    try:
        _, counted, rater_rows, item_rows = pl.collect_all(
            [ratings.sink_parquet(target, statistics=True, lazy=True), checks, raters, items],
            engine="streaming",
        )
    except pl.exceptions.PolarsError:
        target.unlink(missing_ok=True)
        return None
    found = counted.row(0, named=True)
    differs = [frame["_differ"].sum() for frame in (rater_rows, item_rows)]
    if found["keyless"] or found["outside"] or found["again"] or any(differs):
        target.unlink(missing_ok=True)
        return None
    tables: dict[str, pl.DataFrame | Path] = {
        "items": _table(item_rows, ITEM),
        "raters": _table(rater_rows, RATER),
        "ratings": target,
    }
    missing = dict.fromkeys(declared.labels, 0)
    missing.update({label: found[f"missing_{label}"] for label in reads})
    built = Built(tables, missing, {0: set()}, {"ratings": found["records"]})
    return built, found["records"]


def _keys(spec: FileSpec) -> list[pl.Expr]:
    parts = [pl.col(c).str.strip_chars() for c in spec.item]
    item = pl.concat_str(parts, separator=ITEM_SEPARATOR)
    rater = pl.col(spec.rater or "").str.strip_chars()
    return [item.replace("", None).alias(ITEM), rater.replace("", None).alias(RATER)]


def _from_name(pattern: str, name: str) -> pl.Expr:
    """A column read from the file's name, as `read` makes it."""
    import re

    found = re.search(pattern, name)
    return pl.lit(found.group(1) if found else None, pl.String)


def _entity(rows: pl.LazyFrame, key: str, columns: dict[str, str]) -> pl.LazyFrame:
    """One row per entity: its first row, each attribute's value, and `_differ`, how many
    of its attributes take two values."""
    differ = [(pl.col(c).min() != pl.col(c).max()).fill_null(False) for c in columns.values()]
    return rows.group_by(key).agg(
        pl.col(ROW).min(),
        *(pl.col(c).min().alias(n) for n, c in columns.items()),
        pl.sum_horizontal(*differ, pl.lit(0)).alias("_differ"),
    )


def _table(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    return typed(frame.sort(ROW).drop(ROW, "_differ").filter(pl.col(key).is_not_null()))
