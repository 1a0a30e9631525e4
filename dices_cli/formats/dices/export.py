"""The original wide CSV, rebuilt from an ingested dataset; or its rows typed, in other formats."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import polars as pl

from dices_cli.families.schema import DATASETS, Kind, canonical_names
from dices_cli.formats.dices.tables import wide_cells, wide_typed
from dices_cli.output import Stream
from dices_cli.store.datasets import StoredDataset

if TYPE_CHECKING:
    import pyarrow as pa

# A cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection").
FORMULA_START = r"^[=+\-@\t\r]"


def wide_frame(stored: StoredDataset, excel_safe: bool = False) -> pl.DataFrame:
    """Every row and column of the source file, in its order, under its header names.

    With `excel_safe`, a text cell that a spreadsheet would run as a formula gets a leading
    `'`; numbers (ids, times) are never changed.
    """
    dataset = DATASETS[stored.name]
    cells = wide_cells(dataset, {table: stored.read(table) for table in stored.tables})
    if excel_safe:
        numeric = (Kind.INTEGER, Kind.TIMESTAMP)
        cells = cells.with_columns(
            _defused(column.name) for column in dataset.columns if column.kind not in numeric
        )
    return _in_file_order(stored, cells)


def typed_table(stored: StoredDataset) -> pa.Table:
    """The rows and columns of `wide_frame`, typed as stored (ENUMs, integers, UTC times):
    what every format but CSV writes."""
    dataset = DATASETS[stored.name]
    typed = wide_typed(dataset, {table: stored.read(table) for table in stored.tables})
    return _in_file_order(stored, typed).to_arrow()


def _in_file_order(stored: StoredDataset, frame: pl.DataFrame) -> pl.DataFrame:
    """`frame`'s columns under the source file's header names, in its order."""
    header: list[str] = stored.manifest["header"]
    return frame.select(
        pl.col(name).alias(cell)
        for cell, name in zip(header, canonical_names(DATASETS[stored.name], header), strict=True)
    )


def _defused(name: str) -> pl.Expr:
    cell = pl.col(name)
    formula = cell.str.contains(FORMULA_START)
    return pl.when(formula).then(pl.concat_str(pl.lit("'"), cell)).otherwise(cell).alias(name)


def defused(stream: Stream) -> Stream:
    """`stream` with what `excel_safe` does to the wide CSV done to every text cell (plain
    or ENUM): a leading `'` where a spreadsheet would run it as a formula. Numbers are never
    changed, nor a missing value."""
    return Stream(stream.schema, map(_defused_batch, stream.batches), stream.bounded)


def _defused_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.record_batch([_defused_column(column) for column in batch.columns], batch.schema)


def _defused_column(column: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type):
        return pa.DictionaryArray.from_arrays(column.indices, _defused_column(column.dictionary))
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return column
    quoted = pc.binary_join_element_wise(pa.scalar("'", kind), column, pa.scalar("", kind))
    return pc.if_else(pc.match_substring_regex(column, FORMULA_START), quoted, column)


def source_path(stored: StoredDataset) -> Path | None:
    """The file the dataset was ingested from, as the manifest records it."""
    path = stored.manifest.get("source", {}).get("path")
    return Path(path) if path else None


def write_csv(stored: StoredDataset, handle: BinaryIO, excel_safe: bool = False) -> None:
    try:
        wide_frame(stored, excel_safe).write_csv(handle)
    except OSError as error:
        # Polars reports a closed pipe (`dices export | head`) as a bare OSError.
        if error.errno == errno.EPIPE or f"os error {errno.EPIPE})" in str(error):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe") from error
        raise
