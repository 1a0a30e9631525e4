"""One output path for every command: a result written as CSV, TSV, JSON, JSON Lines or Parquet.

A command builds one `Output` (format, -o FILE, --force, the inputs -o must never replace)
before its work, and hands it its result: a `Table` (column names and row tuples: small
results, written without Polars or PyArrow so that a command starts fast), a `Stream` of
Arrow record batches (any size, written batch by batch as they come; one that turns out to
be small is written as a `Table`: `small_as_table`), a DuckDB relation or an Arrow table
(both written as a `Stream`). All are written alike, byte for byte:
numbers exactly (Python's shortest round-trip form), booleans as true/false, missing
values empty, times in ISO 8601, lists as JSON. Parquet from a `Stream` keeps its types
(ENUMs as dictionaries, timestamps, lists). Only the table for people, drawn by
`dices_cli.cli.render`, rounds.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import math
import os
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from dices_cli.errors import DicesError, Option, UsageError, system_reason

if TYPE_CHECKING:
    import duckdb
    import polars as pl
    import pyarrow as pa
    from duckdb.sqltypes import DuckDBPyType


class Format(StrEnum):
    TABLE = "table"
    CSV = "csv"
    TSV = "tsv"
    JSON = "json"
    JSONL = "jsonl"
    PARQUET = "parquet"
    CHART = "chart"  # bars, drawn by the CLI for the results that declare a chart


EXTENSIONS = {
    ".csv": Format.CSV,
    ".tsv": Format.TSV,
    ".tab": Format.TSV,
    ".json": Format.JSON,
    ".jsonl": Format.JSONL,
    ".ndjson": Format.JSONL,
    ".parquet": Format.PARQUET,
}
# The option that names the file a result is written to (the command line says `-o`).
OUTPUT = Option("output")
# An -o file being written is `.NAME.<random>.dices-tmp` beside it until it is complete.
TEMP_SUFFIX = ".dices-tmp"
BATCH_ROWS = 10_000  # rows of a DuckDB relation or an Arrow table read at a time
# The cells (rows x columns) of a stream that `Output.write` writes through Python.
SMALL_CELLS = 10_000
# The formats written as text, which Python writes for a small result.
TEXT_FORMATS = frozenset({Format.CSV, Format.TSV, Format.JSON, Format.JSONL})
# The temporary files being written (`open_output`), for `abandon_writes`.
_UNDER_WAY: set[Path] = set()


@dataclass(frozen=True)
class Table:
    """A result: column names, whether each is numeric, and the rows."""

    columns: list[str]
    numeric: list[bool]
    rows: list[tuple[Any, ...]]

    @classmethod
    def from_polars(cls, frame: pl.DataFrame) -> Table:
        return cls(
            list(frame.columns),
            [dtype.is_numeric() for dtype in frame.dtypes],
            frame.rows(),
        )

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class Stream:
    """A result as Arrow record batches, each read from its source when it is written.

    `bounded` says the result is of modest size by design (a canned query's): a terminal
    shows all of it, where it shows the first rows of any other stream.
    """

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    bounded: bool = False

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def head(self, limit: int | None) -> tuple[Table, bool]:
        """The first `limit` rows (all, with None) as a `Table`, and whether there are more."""
        rows: list[tuple[Any, ...]] = []
        for batch in self.batches:
            rows.extend(_python_rows(batch))
            if limit is not None and len(rows) > limit:
                break
        return table_from_rows(self.columns, rows[:limit]), limit is not None and len(rows) > limit


Result = Table | Stream


def _python_rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    from dices_cli.arrow_text import python_values

    columns = zip(batch.columns, batch.schema.names, strict=True)
    with _unwritable_said():
        return list(zip(*(python_values(column, name) for column, name in columns), strict=True))


@contextlib.contextmanager
def _unwritable_said() -> Iterator[None]:
    """A value that only Parquet holds (`arrow_text.UnwritableError`) as a `DicesError`."""
    from dices_cli.arrow_text import UnwritableError

    try:
        yield
    except UnwritableError as error:
        raise DicesError(
            f"{error}, which dices writes only as Parquet; cast it to text in the statement"
            " (CAST(... AS VARCHAR)), or write Parquet (",
            Option("format"),
            " parquet)",
        ) from error


def small_as_table(stream: Stream, cells: int = SMALL_CELLS) -> Result:
    """`stream` as a `Table` when all its rows hold at most `cells` cells (its batches are
    read here to see), else as a stream of the same rows, from the first.

    Written through Python, a small answer of `dices sql` spares the import of
    pyarrow.compute, which Arrow's CSV path needs (bench/queries.py times small answers).

    A stream with a zoned time (at any depth) stays a stream: Arrow converts those to
    Python through pandas, which it imports at a cost; `arrow_text` writes them without."""
    if any(_has_zoned_time(field.type) for field in stream.schema):
        return stream
    read: list[pa.RecordBatch] = []
    held = 0
    for batch in stream.batches:
        read.append(batch)
        held += batch.num_rows * max(len(stream.columns), 1)
        if held > cells:
            return Stream(stream.schema, itertools.chain(read, stream.batches), stream.bounded)
    return collect(Stream(stream.schema, iter(read)))


def _has_zoned_time(kind: pa.DataType) -> bool:
    """Whether values of `kind` are or hold timestamps with a time zone."""
    if getattr(kind, "tz", None):
        return True
    return any(_has_zoned_time(kind.field(i).type) for i in range(kind.num_fields))


def collect(result: Result) -> Table:
    """The whole result as Python values: for results known to be small."""
    return result if isinstance(result, Table) else result.head(None)[0]


def as_result(value: Result | pa.Table | pa.RecordBatchReader | duckdb.DuckDBPyRelation) -> Result:
    """What a command hands its `Output`, as a `Table` or a `Stream`."""
    if isinstance(value, Table | Stream):
        return value  # a Table needs no Arrow: it is not imported for one
    import pyarrow as pa

    if isinstance(value, pa.Table):
        return Stream(value.schema, iter(value.to_batches(BATCH_ROWS)))
    if isinstance(value, pa.RecordBatchReader):
        return Stream(value.schema, iter(value))
    return relation_stream(value)


# DuckDB types written as DuckDB's own text, at any depth (a list of them, a struct field):
# those whose meaning Arrow does not carry (a time's offset from UTC, a time's nanoseconds in
# Python, the bits of a BIT, the number of a BIGNUM, the value of a VARIANT, the shape of a
# GEOMETRY), and those a writer cannot take (Parquet has no INTERVAL or UNION; Arrow's
# decimal wraps a UHUGEINT over 10^38).
AS_TEXT = frozenset(
    {
        "time with time zone",
        "time_ns",
        "bit",
        "bignum",
        "variant",
        "geometry",
        "interval",
        "union",
        "uhugeint",
    }
)


def writable(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """`relation` with its values of the `AS_TEXT` types cast to VARCHAR by DuckDB (its
    other columns, names and order as they were), so that every format writes every column.
    The columns are named by position: a result may name two alike."""
    targets = [_as_text(kind) for kind in relation.types]
    if all(target is None for target in targets):
        return relation
    quoted = ['"' + name.replace('"', '""') + '"' for name in relation.columns]
    return relation.project(
        ", ".join(
            f"#{i} AS {name}" if target is None else f"CAST(#{i} AS {target}) AS {name}"
            for i, (name, target) in enumerate(zip(quoted, targets, strict=True), 1)
        )
    )


def _as_text(kind: DuckDBPyType) -> DuckDBPyType | None:
    """`kind` with its `AS_TEXT` types made VARCHAR, at any depth; None when it has none."""
    import duckdb
    from duckdb.sqltypes import DuckDBPyType

    if kind.id in AS_TEXT:
        return duckdb.sqltype("VARCHAR")
    if kind.id not in ("list", "array", "struct", "map"):
        return None
    children = {name: c for name, c in kind.children if isinstance(c, DuckDBPyType)}
    made = {name: _as_text(child) for name, child in children.items()}
    if all(child is None for child in made.values()):
        return None
    new = {name: made[name] or child for name, child in children.items()}
    if kind.id == "list":
        return duckdb.list_type(new["child"])
    if kind.id == "array":
        size = next(size for _, size in kind.children if isinstance(size, int))
        return duckdb.array_type(new["child"], size)
    if kind.id == "map":
        return duckdb.map_type(new["key"], new["value"])
    return duckdb.struct_type(new)


def relation_stream(relation: duckdb.DuckDBPyRelation, bounded: bool = False) -> Stream:
    """A DuckDB relation's rows (`writable`), read batch by batch as they are written. The
    first batch is read here, so a query that fails at once fails before anything is
    written; a query's failure is a `DicesError` (its cause DuckDB's error, or the OSError
    Arrow gives for one that fails while it is read)."""
    import duckdb

    try:
        reader = writable(relation).to_arrow_reader(BATCH_ROWS)
        first = reader.read_next_batch()
    except StopIteration:
        return Stream(reader.schema, iter(()), bounded)
    except (duckdb.Error, OSError) as error:
        raise DicesError(f"the query failed: {error}") from error

    def batches() -> Iterator[pa.RecordBatch]:
        yield first
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (duckdb.Error, OSError) as error:
                raise DicesError(f"the query failed: {error}") from error
            yield batch

    return Stream(reader.schema, batches(), bounded)


def choose_format(
    requested: Format | None, output: Path | None, stdout_is_terminal: bool, chart: bool = False
) -> Format:
    """--format wins; else -o's extension (CSV when it has none, a usage error when it is
    not one we write); else a table on a terminal and CSV in a pipe. A chart is asked for,
    never chosen, and only where the result has one (`chart`)."""
    if requested is not None:
        if requested in (Format.TABLE, Format.CHART) and output is not None:
            raise UsageError(
                Option("format"),
                f" {requested} is for the terminal; with ",
                OUTPUT,
                " pick csv, tsv, json, jsonl or parquet",
            )
        if requested is Format.CHART and not chart:
            raise UsageError(
                Option("format"),
                " chart: this command draws no chart (the distribution queries and evaluate"
                " do); pick table, csv, tsv, json, jsonl or parquet",
            )
        if requested is Format.PARQUET and output is None and stdout_is_terminal:
            raise UsageError(
                "Parquet is binary; write it with ", OUTPUT, " FILE or redirect stdout"
            )
        return requested
    if output is not None:
        extension = output.suffix.lower()
        if extension and extension not in EXTENSIONS:
            # Writing CSV into `out.xlsx` makes a file its own program cannot open.
            known = ", ".join(EXTENSIONS)
            raise UsageError(
                OUTPUT,
                f" {output}: dices does not write {output.suffix} files; name it {known}, or give ",
                Option("format"),
            )
        return EXTENSIONS.get(extension, Format.CSV)
    return Format.TABLE if stdout_is_terminal else Format.CSV


# The data directory's layout, as the store writes it (`dices_cli.store.datasets`): its
# versions under STORE, each dataset's MANIFEST. Here because no output goes inside one.
STORE = ".store"
MANIFEST = "manifest.json"


def enclosing_data_dir(path: Path) -> Path | None:
    """The data directory that `path` is in, or would be made in: one whose `.store`, or
    whose dataset folder (DIR/350, a link into `.store`), holds it; None when there is none.
    Written there, a file is deleted by the next `ingest --force`, or mixed into a dataset.
    The path is looked at as given and with its links resolved."""
    from dices_cli.families import all_members

    members = set(all_members())
    absolute = Path(os.path.abspath(path))
    for candidate in dict.fromkeys([absolute, absolute.resolve()]):
        for part in [candidate, *candidate.parents]:
            if part.name == STORE:
                return part.parent
            if part.name in members and (
                (part.parent / STORE).is_dir() or (part / MANIFEST).is_file()
            ):
                return part.parent
    return None


def check_output(
    path: Path, force: bool = False, inputs: Sequence[Path] = (), option: Option = OUTPUT
) -> None:
    """Refuse to write `path` when it is one of the command's inputs or inside a data
    directory (always), or an existing file or symbolic link (unless `force`). A directory
    among `inputs` is a data directory: nothing in it.
    """
    target = path.resolve()
    for source in inputs:
        if source.is_dir():
            if target.is_relative_to(source.resolve()):
                raise DicesError(
                    option, f" {path} is inside the data directory {source}; choose another file"
                )
        elif target == source.resolve() or _same_file(path, source):
            raise DicesError(option, f" {path} is an input of this command; choose another file")
    store = enclosing_data_dir(path)
    if store is not None:
        raise DicesError(
            option, f" {path} is inside the data directory {store}; choose another file"
        )
    if (path.is_file() or path.is_symlink()) and not force:
        raise DicesError(f"{path} exists; use ", Option("force"), " to overwrite it")


def _same_file(path: Path, other: Path) -> bool:
    """Whether two existing paths are one file (a hard link, say)."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


@contextlib.contextmanager
def open_output(
    path: Path, force: bool = False, inputs: Sequence[Path] = (), option: Option = OUTPUT
) -> Iterator[BinaryIO]:
    """`path` opened for writing, after `check_output`: a file appears whole or not at all.

    A file is written under a temporary name beside it, synced, and renamed into place
    when the `with` block ends; if the block fails (a full disk, say), the temporary file
    is removed and `path` is as it was. Without `force` the file is linked into place
    exclusively, so one that appears meanwhile is not overwritten either. A device, a pipe
    or the name of an open descriptor (`-o /dev/null`, `/dev/stdout`) is written as it is.
    A symbolic link is never followed: with `force` the link itself is replaced by the
    file, and its target is left alone. A failed write is a `DicesError` in the system's
    words.
    """
    check_output(path, force, inputs, option)
    if _written_in_place(path):
        with _reported(f"cannot write {path}"), path.open("wb") as handle:
            yield handle
        return
    final = path
    temporary = final.with_name(f".{final.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    with _reported(f"cannot write {path}"):
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        _UNDER_WAY.add(temporary)
        try:
            with open(descriptor, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            _put_in_place(temporary, final, force)
        finally:
            temporary.unlink(missing_ok=True)
            _UNDER_WAY.discard(temporary)


def abandon_writes() -> None:
    """Remove the temporary files of every -o FILE under way: for a process about to end
    without unwinding (`dices sql` stopping a query DuckDB cannot interrupt)."""
    for temporary in list(_UNDER_WAY):
        with contextlib.suppress(OSError):
            temporary.unlink()


def _written_in_place(path: Path) -> bool:
    """Whether `path` is written as it is: an existing device or pipe, or any name under
    /dev or /proc (such as /dev/stdout, whose file the shell opened; renaming a new file
    onto it would not reach that descriptor)."""
    if Path(os.path.abspath(path)).parts[1:2] in (("dev",), ("proc",)):
        return True
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode))


def _put_in_place(temporary: Path, final: Path, replace: bool) -> None:
    """Give the written file its name: replacing an existing file only when `replace`."""
    if replace:
        with contextlib.suppress(FileNotFoundError):  # keep the replaced file's permissions
            replaced = final.lstat()
            if stat.S_ISREG(replaced.st_mode):
                os.chmod(temporary, stat.S_IMODE(replaced.st_mode))
        os.replace(temporary, final)  # a link is replaced itself: os.replace never follows
        return
    try:
        os.link(temporary, final)  # unlike a rename, fails if `final` appeared meanwhile
    except FileExistsError:
        raise DicesError(f"{final} exists; use ", Option("force"), " to overwrite it") from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        # A file system without hard links (FAT, say): check, then rename.
        if final.exists():
            raise DicesError(f"{final} exists; use ", Option("force"), " to overwrite it") from None
        os.replace(temporary, final)


@contextlib.contextmanager
def open_stdout() -> Iterator[BinaryIO]:
    """Standard output's bytes, flushed when the `with` block ends; a failed write (a full
    disk behind `> file`, `> /dev/full`) is a `DicesError`, a reader that went away stays a
    `BrokenPipeError`. Text printed to `sys.stdout` inside the block is flushed too."""
    with _reported("cannot write to standard output"):
        yield sys.stdout.buffer
        sys.stdout.flush()


@contextlib.contextmanager
def _reported(failure: str) -> Iterator[None]:
    """An OSError inside the block as a DicesError: `failure`, then the system's reason."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise DicesError(f"{failure}: {system_reason(error)}") from error


@dataclass(frozen=True)
class Output:
    """Where a command's result goes and in what format: built once, before the work, from
    --format, -o FILE, --force and the inputs that -o must never replace.

    `write` writes a result: a `Table`, a `Stream`, a DuckDB relation or an Arrow table, in
    streaming fashion; `open` gives the bytes to a command that writes its own (plain ids,
    a file's rows verbatim). -o FILE appears whole or not at all (`open_output`).
    """

    format: Format
    path: Path | None = None
    force: bool = False
    inputs: tuple[Path, ...] = ()
    option: Option = OUTPUT

    @classmethod
    def build(
        cls,
        requested: Format | None,
        path: Path | None,
        force: bool = False,
        inputs: Sequence[Path] = (),
        option: Option = OUTPUT,
        chart: bool = False,
    ) -> Output:
        """The format chosen (`choose_format`; `chart`: the result can be drawn as one) and
        -o FILE checked (`check_output`): a usage error or a refused file is said before any
        work. An input named as -o FILE is said first, whatever its extension."""
        if path is not None:
            check_output(path, force, inputs, option)
        chosen = choose_format(requested, path, sys.stdout.isatty(), chart)
        return cls(chosen, path, force, tuple(inputs), option)

    @contextlib.contextmanager
    def open(self) -> Iterator[BinaryIO]:
        """The bytes to write: -o FILE (`open_output`) or standard output (`open_stdout`)."""
        if self.path is None:
            with open_stdout() as handle:
                yield handle
        else:
            with open_output(self.path, self.force, self.inputs, self.option) as handle:
                yield handle

    def write(self, result: Result | pa.Table | duckdb.DuckDBPyRelation) -> None:
        """`result` in this output's format (not a table or a chart, which the CLI draws)."""
        if self.format in (Format.TABLE, Format.CHART):
            raise ValueError(f"a {self.format} is drawn by the CLI, not written here")
        written = as_result(result)  # a relation that fails at once: before -o FILE is made
        if isinstance(written, Stream) and self.format is not Format.PARQUET:
            # A canned query's few rows, in the same bytes through Python: formatting them
            # with Arrow's compute functions imports pyarrow.compute and, through its
            # conversion of Python strings, pandas, which doubles a canned query's time
            # (bench/queries.py).
            written = collect(written) if written.bounded else small_as_table(written)
        with self.open() as handle:
            write_result(written, self.format, handle)


def text_cell(value: Any) -> str:
    """A value as a CSV/TSV cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return blob_text(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(_json_value(value), ensure_ascii=False)
    return str(value)


# A BLOB's bytes as DuckDB writes them as text: printable ASCII as it is, but for the quotes
# and the backslash, and every other byte as \xHH.
_BLOB_TEXT = [
    chr(byte) if 0x20 <= byte < 0x7F and chr(byte) not in "\"'\\" else f"\\x{byte:02X}"
    for byte in range(256)
]


def blob_text(value: bytes) -> str:
    """`value` as DuckDB's cast of a BLOB to VARCHAR writes it."""
    return "".join(map(_BLOB_TEXT.__getitem__, value))


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return blob_text(value)
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def delimited_row(cells: Sequence[str], delimiter: str) -> str:
    """One CSV/TSV record, ended by a line feed: a cell is quoted (its quotes doubled) when
    it holds the delimiter, a quote, a line feed or a carriage return, and a record of one
    empty cell is `""`. Python's csv module, ending records with a line feed, leaves a lone
    CR unquoted, and every reader (itself, pandas) then starts a new record there."""
    special = (delimiter, '"', "\n", "\r")
    quoted = [
        '"' + cell.replace('"', '""') + '"' if any(c in cell for c in special) else cell
        for cell in cells
    ]
    return delimiter.join(quoted if quoted != [""] else ['""']) + "\n"


def _write_delimited(table: Table, handle: BinaryIO, delimiter: str) -> None:
    text = io.TextIOWrapper(handle, encoding="utf-8", newline="", write_through=True)
    text.write(delimited_row(table.columns, delimiter))
    text.writelines(delimited_row([text_cell(v) for v in row], delimiter) for row in table.rows)
    text.detach()  # leave `handle` open for the caller


def _write_json_lines(table: Table, handle: BinaryIO) -> None:
    for record in table.records():
        handle.write(json.dumps(_json_value(record), ensure_ascii=False).encode() + b"\n")


def _write_parquet(table: Table, handle: BinaryIO) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: [row[i] for row in table.rows] for i, name in enumerate(table.columns)}
    pq.write_table(pa.table(columns), handle)


def _write_stream(stream: Stream, fmt: Format, handle: BinaryIO) -> None:
    """`stream` batch by batch, in the bytes `write_table` gives the same rows."""
    if fmt is Format.PARQUET:
        import pyarrow.parquet as pq

        with pq.ParquetWriter(handle, stream.schema) as writer:
            for batch in stream.batches:
                writer.write_batch(batch)
    elif fmt in (Format.CSV, Format.TSV):
        from dices_cli.arrow_text import delimited

        delimiter = "," if fmt is Format.CSV else "\t"
        _write_delimited(Table(stream.columns, [], []), handle, delimiter)  # the header
        with _unwritable_said():
            for lines in delimited(stream.batches, delimiter, text_cell):
                handle.write(lines)
    elif fmt is Format.JSONL:
        for batch in stream.batches:
            _write_json_lines(Table(stream.columns, [], _python_rows(batch)), handle)
    elif fmt is Format.JSON:
        separator = b"["
        for batch in stream.batches:
            for record in Table(stream.columns, [], _python_rows(batch)).records():
                handle.write(
                    separator + json.dumps(_json_value(record), ensure_ascii=False).encode()
                )
                separator = b", "
        handle.write(b"[]\n" if separator == b"[" else b"]\n")
    else:
        raise ValueError(f"{fmt} is drawn by the CLI, not written here")


def write_result(result: Result, fmt: Format, handle: BinaryIO) -> None:
    if isinstance(result, Stream):
        _write_stream(result, fmt, handle)
    else:
        write_table(result, fmt, handle)


def write_table(table: Table, fmt: Format, handle: BinaryIO) -> None:
    if fmt is Format.CSV:
        _write_delimited(table, handle, ",")
    elif fmt is Format.TSV:
        _write_delimited(table, handle, "\t")
    elif fmt is Format.JSON:
        handle.write(json.dumps(_json_value(table.records()), ensure_ascii=False).encode() + b"\n")
    elif fmt is Format.JSONL:
        _write_json_lines(table, handle)
    elif fmt is Format.PARQUET:
        _write_parquet(table, handle)
    else:
        raise ValueError(f"{fmt} is drawn by the CLI, not written here")


def table_from_rows(columns: Sequence[str], rows: list[tuple[Any, ...]]) -> Table:
    """A Table whose numeric columns are found from the values themselves."""
    numeric = [
        all(
            isinstance(row[i], int | float | Decimal) and not isinstance(row[i], bool)
            for row in rows
            if row[i] is not None
        )
        and any(row[i] is not None for row in rows)
        for i in range(len(columns))
    ]
    return Table(list(columns), numeric, rows)
