"""A Parquet predictions file, a batch of rows at a time."""

from __future__ import annotations

from dices_cli.errors import DicesError
from dices_cli.evaluate.predictions.columns import COLUMNS, header_positions, too_long_cell
from dices_cli.evaluate.predictions.rows import BATCH_ROWS, Rows, Validating
from dices_cli.problems import Report
from dices_cli.read.file_formats import parquet_file
from dices_cli.read.source import Source

PARQUET_BATCH_BYTES = 16 << 20  # of stored data per batch of Parquet rows


def parquet_rows(
    source: Source, max_size: int, report: Report, validate: Validating
) -> Rows | None:
    """A batch of rows at a time, each batch about PARQUET_BATCH_BYTES; a cell longer than
    MAX_CELL_BYTES stops the reading, before Polars copies it (64 MiB of 64 KiB labels
    ended in SIGABRT under a 2 GiB address-space cap)."""
    import polars as pl

    parquet = parquet_file(source, max_size)
    positions = header_positions(parquet.schema_arrow.names, None, report)
    columns = [name for name in COLUMNS if name in positions]
    rows = Rows(columns, validate)
    if not report.ok:
        return rows
    names = [parquet.schema_arrow.names[positions[name]] for name in columns]
    metadata = parquet.metadata
    stored = sum(metadata.row_group(g).total_byte_size for g in range(metadata.num_row_groups))
    per_row = max(stored // max(metadata.num_rows, 1), 1)
    first = 2
    for batch in parquet.iter_batches(
        batch_size=max(1, min(BATCH_ROWS, PARQUET_BATCH_BYTES // per_row)), columns=names
    ):
        too_long = too_long_cell(batch, first, columns)
        if too_long is not None:
            report.add([too_long])
            report.rows_rejected += 1
            rows.records = report.rows_read = (too_long.line or first) - 1
            return rows
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        try:
            cells = frame.select(
                pl.col(given).cast(pl.String).alias(name)
                for given, name in zip(names, columns, strict=True)
            )
        except pl.exceptions.PolarsError as error:
            raise DicesError(
                f"{source.name}: a column holds values that are neither text nor numbers ({error})"
            ) from error
        rows.add_frame(first, cells)
        first += cells.height
    rows.records = report.rows_read = first - 2
    return rows
