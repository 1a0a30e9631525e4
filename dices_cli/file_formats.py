"""How a table file a user gives is told apart and opened: CSV, TSV, JSON Lines or Parquet.

Shared by `dices evaluate` (a predictions file) and `dices sql --table` (a table of one's
own), so that both read the same files the same way.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError
from dices_cli.lines import BOM
from dices_cli.source import STDIN, Source, format_size

if TYPE_CHECKING:
    import pyarrow.parquet as pq

FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
SNIFF_BYTES = 1 << 16
PARQUET_MAGIC = b"PAR1"
# How files that are not text tables start, and what each is, to say so in one line rather
# than as a screen of invalid-UTF-8 problems.
OTHER_FORMATS = (
    (PARQUET_MAGIC, "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook, say)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an Excel .xls workbook"),
    (b"\x1f\x8b", "gzip data"),
    (b"%PDF", "a PDF document"),
)


def other_format(first: bytes) -> str | None:
    """What a file whose text starts with `first` is when it is not a CSV or TSV table: a
    Parquet file, an Excel workbook, JSON (an array or an object), ...; None otherwise."""
    for magic, kind in OTHER_FORMATS:
        if first.startswith(magic):
            return kind
    if first.removeprefix(BOM).lstrip()[:1] in (b"{", b"["):
        return "JSON"
    return None


def file_format(given: str, source: Source) -> str:
    """csv, tsv, jsonl or parquet: by the name's extension (a .gz one's inner extension),
    else (stdin, an unknown extension) by the first bytes."""
    name = PurePath(given).name.lower().removesuffix(".gz")
    for extension, kind in FORMATS.items():
        if given != STDIN and name.endswith(extension):
            return kind
    start = source.read(SNIFF_BYTES)
    if start.startswith(PARQUET_MAGIC):
        return "parquet"
    text = start.removeprefix(BOM).lstrip()
    if text.startswith(b"{"):
        return "jsonl"
    return "tsv" if b"\t" in text.split(b"\n", 1)[0] else "csv"


def parquet_file(source: Source, max_size: int) -> pq.ParquetFile:
    """The source opened as Parquet (a pyarrow ParquetFile), refused when it is not one or
    when its data would take more than `max_size` bytes once decompressed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(source.text_path)
    except (pa.ArrowException, OSError) as error:
        raise DicesError(f"{source.name} cannot be read as Parquet: {error}") from error
    metadata = parquet.metadata
    inflated = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if inflated > max_size:
        raise DicesError(
            f"{source.name} holds more than {format_size(max_size)} of data once "
            "decompressed; nothing was read"
        )
    return parquet
