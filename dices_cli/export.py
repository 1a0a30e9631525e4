"""The original wide CSV, rebuilt from an ingested dataset."""

from __future__ import annotations

import errno
from typing import BinaryIO

import polars as pl

from dices_cli.schema import DATASETS, canonical_names
from dices_cli.store import StoredDataset
from dices_cli.tables import TABLES, wide_cells


def wide_frame(stored: StoredDataset) -> pl.DataFrame:
    """Every row and column of the source file, in its order, under its header names."""
    dataset = DATASETS[stored.name]
    header: list[str] = stored.manifest["header"]
    cells = wide_cells(dataset, {table: stored.read(table) for table in TABLES})
    return cells.select(
        pl.col(name).alias(cell)
        for cell, name in zip(header, canonical_names(dataset, header), strict=True)
    )


def write_csv(stored: StoredDataset, handle: BinaryIO) -> None:
    try:
        wide_frame(stored).write_csv(handle)
    except OSError as error:
        # Polars reports a closed pipe (`dices export | head`) as a bare OSError.
        if error.errno == errno.EPIPE or f"os error {errno.EPIPE})" in str(error):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe") from error
        raise
