"""The Python API's conversions: a command's result as a Polars frame, a frame given as an
argument as a file the command reads, and what a command says on the way as a `DicesNote`."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.output import Result

# Predictions or a table of one's own: a file (CSV, TSV, JSON Lines, Parquet) or a frame.
Frame = Any  # str | os.PathLike | polars.DataFrame | pandas.DataFrame


class DicesNote(UserWarning):
    """What the command line says on stderr as `note:` or `warning:` (a dataset left out,
    a coverage under 100%, a suspected flipped polarity): given as a Python warning."""


def warn(text: str) -> None:
    """`text` as a `DicesNote`; the raters a result is of, which the caller chose, are not
    news to the caller (the command line says them on stderr)."""
    if not text.startswith("raters: "):
        warnings.warn(text, DicesNote, stacklevel=3)


# --- results as frames ------------------------------------------------------------------------


def frame(result: Result, enums: Mapping[str, Sequence[str]] | None = None) -> pl.DataFrame:
    """A result as a Polars frame: a stream's Arrow types kept, its DuckDB ENUMs as Polars
    `Enum`s of the same values in the same order; a table's Python values typed by Polars.
    A column named in `enums` (a categorical column of the datasets read, with its values in
    order) becomes that `Enum` when it is text of those values: a group column is the enum
    of the column it groups by, as stored; a text of one's own SQL stays `str`."""
    import polars as pl

    from dices_cli.output import Table

    if isinstance(result, Table):
        converted = pl.DataFrame(
            result.rows, schema=result.columns, orient="row", infer_schema_length=None
        )
    else:
        converted = from_stream(result)
    for name, values in (enums or {}).items():
        kind = converted.schema.get(name)
        if kind is None or not (kind in (pl.String, pl.Null) or isinstance(kind, pl.Categorical)):
            continue
        with contextlib.suppress(pl.exceptions.InvalidOperationError):  # not of `values`
            converted = converted.with_columns(
                pl.col(name).cast(pl.String).cast(pl.Enum(list(values)))
            )
    return converted


def from_stream(result: Any) -> pl.DataFrame:
    """A stream as a frame, each dictionary column of text (a DuckDB ENUM) a Polars `Enum`
    of its dictionary's values in their order (Polars alone makes it a `Categorical`, whose
    order is the order values were met)."""
    import polars as pl
    import pyarrow as pa

    table = pa.Table.from_batches(list(result.batches), schema=result.schema)
    table = table.unify_dictionaries()
    converted = pl.from_arrow(table)
    assert isinstance(converted, pl.DataFrame)
    for index, field in enumerate(table.schema):
        column = table.column(index)
        if not pa.types.is_dictionary(field.type) or column.num_chunks == 0:
            continue
        if not (
            pa.types.is_string(field.type.value_type)
            or pa.types.is_large_string(field.type.value_type)
        ):
            continue
        values = column.chunk(0).dictionary.to_pylist()
        converted = converted.with_columns(
            converted.to_series(index).cast(pl.String).cast(pl.Enum(values))
        )
    return converted


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def names_of(given: str | Sequence[str] | None) -> Sequence[str] | None:
    """One name or several: `by="rater_race"` is `by=["rater_race"]`, as for a query."""
    return [given] if isinstance(given, str) else given


@contextlib.contextmanager
def as_file(given: Frame, name: str) -> Iterator[str]:
    """A path for `given`: a file's own, or a frame written to a temporary Parquet file
    `name`.parquet (read back as the command line reads any Parquet file)."""
    if isinstance(given, str | os.PathLike):
        yield os.fspath(given)
        return
    import polars as pl

    if not isinstance(given, pl.DataFrame):
        try:
            given = pl.from_pandas(given)
        except TypeError:
            raise UsageError(
                Option(name),
                " is a path, a polars or a pandas DataFrame, not ",
                type(given).__name__,
            ) from None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dices-") as directory:
        path = Path(directory) / f"{name}.parquet"
        given.write_parquet(path)
        yield str(path)


def noted(text: str) -> None:
    """What a command says on the way, of which only its notes and warnings are news to a
    Python caller (the rest is in the result): each a `DicesNote`."""
    if text.startswith(("note: ", "warning: ")):
        warn(text)
