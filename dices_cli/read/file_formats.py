"""How a table file a user gives is told apart and opened: CSV, TSV, JSON Lines or Parquet.

Shared by `dices evaluate` (a predictions file) and `dices sql --table` (a table of one's
own), so that both read the same files the same way.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError
from dices_cli.read.lines import BOM
from dices_cli.read.source import STDIN, Source, format_size

if TYPE_CHECKING:
    from collections.abc import Callable

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


def parquet_file(
    source: Source, max_size: int, columns: Callable[[int], DicesError | None] | None = None
) -> pq.ParquetFile:
    """The source opened as Parquet (a pyarrow ParquetFile), refused when it is not one or
    when its data would take more than `max_size` bytes once decoded (`decoded_size`).
    `columns`, given the number of columns (leaves of nested ones included), returns the
    error to raise when they are too many, before the data is looked at."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(source.text_path)
        wide = columns(parquet.metadata.num_columns) if columns is not None else None
        if wide is not None:
            raise wide
        inflated = decoded_size(parquet, source.text_path, max_size)
    except (pa.ArrowException, OSError) as error:
        raise DicesError(f"{source.name} cannot be read as Parquet: {error}") from error
    if inflated > max_size:
        raise DicesError(
            f"{source.name} holds more than {format_size(max_size)} of data once "
            "decompressed and decoded; nothing was read"
        )
    return parquet


def decoded_size(parquet: pq.ParquetFile, path: str, limit: int) -> int:
    """About how many bytes the columns of `parquet` take once read, counted until past
    `limit`. The sizes a footer records are of the encoded data: a dictionary of one string
    of 8 MiB, indexed by 512 rows, is 2 KB in the file and 4 GiB read. So a column of fixed
    width counts its values x its width; a column of text with a dictionary (or with
    delta-encoded text, which also repeats a value for almost nothing) is read as
    dictionary indices, and the lengths of the values they point to are summed; other
    columns count their decompressed size. A nested column with a dictionary counts each
    value as the whole dictionary (an upper bound: such a column is seldom a table's)."""
    import pyarrow.parquet as pq

    metadata = parquet.metadata
    total, counted = 0, set()
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(index)
            width = _WIDTHS.get(chunk.physical_type) or metadata.schema.column(index).length
            repeats = bool({*chunk.encodings} & _REPEATING) or chunk.has_dictionary_page
            if chunk.physical_type != "BYTE_ARRAY" and width:
                total += chunk.num_values * width
            elif not repeats:
                total += chunk.total_uncompressed_size
            elif "." not in chunk.path_in_schema:
                counted.add(chunk.path_in_schema)
            else:
                total += chunk.num_values * chunk.total_uncompressed_size
            if total > limit:
                return total
    if counted:
        names = sorted(counted)
        indexed = pq.ParquetFile(path, read_dictionary=names)
        for batch in indexed.iter_batches(batch_size=COUNT_ROWS, columns=names):
            total += sum(_text_bytes(column) for column in batch.columns)
            if total > limit:
                break
    return total


# Bytes per value of Parquet's fixed-width physical types (FIXED_LEN_BYTE_ARRAY: its length).
_WIDTHS = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}
_REPEATING = {"PLAIN_DICTIONARY", "RLE_DICTIONARY", "DELTA_BYTE_ARRAY"}
COUNT_ROWS = 4096  # rows of dictionary indices read at a time to count a text column


def _text_bytes(column: object) -> int:
    """The bytes of a column of text once read: its values' lengths and an offset each."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(column, pa.DictionaryArray):
        return int(column.nbytes)  # type: ignore[attr-defined]
    lengths = pc.take(pc.binary_length(column.dictionary), column.indices)
    return int(pc.sum(lengths).as_py() or 0) + 8 * len(column)
