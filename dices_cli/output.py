"""One output path for every command: a frame written as CSV, TSV, JSON, JSON Lines or Parquet.

Tables for people are drawn by the CLI (`dices_cli.render`); this module writes the
machine formats, with numbers exact and column order stable.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

import polars as pl

from dices_cli.errors import UsageError


class Format(StrEnum):
    TABLE = "table"
    CSV = "csv"
    TSV = "tsv"
    JSON = "json"
    JSONL = "jsonl"
    PARQUET = "parquet"


EXTENSIONS = {
    ".csv": Format.CSV,
    ".tsv": Format.TSV,
    ".tab": Format.TSV,
    ".json": Format.JSON,
    ".jsonl": Format.JSONL,
    ".ndjson": Format.JSONL,
    ".parquet": Format.PARQUET,
}


def choose_format(
    requested: Format | None, output: Path | None, stdout_is_terminal: bool
) -> Format:
    """--format wins; else -o's extension; else a table on a terminal and CSV in a pipe."""
    if requested is not None:
        if requested is Format.TABLE and output is not None:
            raise UsageError(
                "--format table is for the terminal; pick csv, tsv, json, jsonl or parquet with -o"
            )
        if requested is Format.PARQUET and output is None and stdout_is_terminal:
            raise UsageError("Parquet is binary; write it with -o FILE or redirect stdout")
        return requested
    if output is not None:
        return EXTENSIONS.get(output.suffix.lower(), Format.CSV)
    return Format.TABLE if stdout_is_terminal else Format.CSV


def _flatten_for_text(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV has no lists: list cells become JSON arrays, so they still parse unambiguously."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(pl.col(nested).map_elements(_json_list, return_dtype=pl.String))


def _json_list(values: pl.Series) -> str:
    import json

    return json.dumps(values.to_list(), ensure_ascii=False)


DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%S%:z"


def write_frame(frame: pl.DataFrame, fmt: Format, handle: BinaryIO) -> None:
    if fmt in (Format.CSV, Format.TSV):
        _flatten_for_text(frame).write_csv(
            handle,
            separator="," if fmt is Format.CSV else "\t",
            datetime_format=DATETIME_FORMAT,
        )
    elif fmt is Format.JSON:
        handle.write(frame.write_json().encode() + b"\n")
    elif fmt is Format.JSONL:
        frame.write_ndjson(handle)
    elif fmt is Format.PARQUET:
        frame.write_parquet(handle)
    else:
        raise ValueError(f"{fmt} is drawn by the CLI, not written here")
