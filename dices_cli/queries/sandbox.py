"""`dices sql`: ad-hoc, read-only SQL over the views of DICES or of another family
(`dices_cli.queries.family.session_for`: never both).

Only a single SELECT is accepted. The views it names (`engine.statement_names`) are made
over the stored files they read, and the user's own tables (`dices_cli.runs.sql`: files read by
dices, as a predictions file is) and the judge's cache (`judge_calls`, when the statement
names it) are loaded into memory; then the connection is locked down: no access to files
but those stored files (DuckDB's `allowed_paths`, read by its own Parquet reader), none to
URLs or extensions, no temporary directory, configuration frozen.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.output import Result, Stream, Table
from dices_cli.queries.engine import (
    RaterSelection,
    Session,
    connect,
    run_script,
    statement_names,
)
from dices_cli.queries.family import session_for
from dices_cli.read.source import DEFAULT_MAX_SIZE, Source, open_source
from dices_cli.store.datasets import Store

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

MIN_TIMEOUT = 0.1  # seconds
# After the time limit, the connection is interrupted again this often until the query has
# stopped: an interrupt that comes while DuckDB runs nothing (between two batches, or before
# a statement it runs again as a stream) is forgotten when the next statement starts.
INTERRUPT_EVERY = 0.1  # seconds
# A query still running this long after its time limit is stuck in one call that DuckDB
# cannot interrupt (`md5(repeat('a', 1500000000))`); `run_sql`'s `stuck` is called then.
STOP_GRACE = 2.0  # seconds
# The memory DuckDB may hold for one statement (its buffers: not every string a function
# makes, which only the time limit bounds). With no temporary directory nothing spills to
# disk: a statement that needs more fails with DuckDB's Out of Memory error.
MEMORY_LIMIT = "2GiB"
# The most columns a table of the user's may have: the readers' memory grows with the
# columns, not the bytes (a 439 KB CSV of 50,000 columns took 1.2 GB), so this is checked
# before a file is given to them. DICES's widest view has under a hundred.
MAX_TABLE_COLUMNS = 4096

LOCKDOWN = (
    f"SET memory_limit = '{MEMORY_LIMIT}'",
    # No temporary directory, so no spilling to disk: DuckDB's default, ./.tmp (wherever
    # a symlink there points), would go on the list of directories a query may read with
    # external access off. It can be changed only while external access is still on.
    "SET temp_directory = ''",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET python_enable_replacements = false",
    "SET allow_persistent_secrets = false",  # never load ~/.duckdb/stored_secrets
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)

# Settings that would let a query past the lockdown: files it may read although external
# access is off (`allowed_paths` must list the stored files it reads, and nothing else),
# options it may change although the configuration is locked.
ESCAPE_HATCHES = ("allowed_directories", "allowed_paths", "allowed_configs")


# The names a query already knows: the views, and the schema of the tables behind them.
TAKEN_NAMES = (
    "items",
    "raters",
    "ratings",
    "ratings_wide",
    "published_removed",
    "internal",
    "judge_calls",
)
# The judge's cache (dices_cli.store.judge_cache), a table every statement that names it sees.
JUDGE_CALLS = "judge_calls"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class QueryRefusedError(DicesError):
    """The statement is not a single read-only SELECT."""


class QueryTimeoutError(DicesError):
    """The statement ran longer than the time allowed."""

    @classmethod
    def after(cls, timeout: float) -> QueryTimeoutError:
        return cls(f"the query ran longer than {timeout:g} s and was stopped")


def check_single_select(sql: str, parser: duckdb.DuckDBPyConnection) -> None:
    """Refuse anything but one SELECT, before any data is loaded (`parser`: a connection
    that has none)."""
    import duckdb

    try:
        statements = parser.extract_statements(sql)
    except duckdb.Error as error:
        raise DicesError(f"the SQL does not parse: {error}") from error
    if len(statements) != 1:
        raise QueryRefusedError(f"give exactly one statement (got {len(statements)})")
    try:
        kind = statements[0].type.name
    except ValueError:  # a kind DuckDB's Python API cannot name, such as UPDATE EXTENSIONS
        kind = statements[0].query.split()[0].upper()
    if kind != duckdb.StatementType.SELECT.name:
        raise QueryRefusedError(f"only SELECT is allowed here, not {kind}; dices sql is read-only")


def check_table_names(names: Sequence[object]) -> None:
    """Each NAME must be a plain identifier, not a keyword, and name nothing a query already
    sees (nor another table given). Checked before anything is read or written: the API
    writes a frame given as table NAME to a file named after it."""
    seen: list[str] = []
    for name in names:
        _check_table_name(name, seen)
        seen.append(str(name))


def _check_table_name(name: object, others: Iterable[str]) -> None:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise UsageError(
            f"a table name is letters, digits and _, not starting with a digit: {name!r}"
        )
    # Reserved keywords, and those that may name a type or function but not a table
    # (semi, anti, asof, positional, similar, glob, join, ...): `FROM semi` is an error.
    with connect() as catalog:
        reserved = catalog.execute(
            "SELECT count(*) FROM duckdb_keywords() WHERE keyword_name = lower($name) "
            "AND keyword_category IN ('reserved', 'type_function')",
            {"name": name},
        ).fetchone()
    if reserved and reserved[0]:
        raise UsageError(f"{name!r} is an SQL keyword; choose another table name")
    if name.lower() in TAKEN_NAMES or name.lower() in map(str.lower, others):
        raise UsageError(
            f"the table name {name!r} is taken: give each table its own name, "
            f"other than {', '.join(TAKEN_NAMES)}"
        )


def read_table(name: str, given: str, max_size: int = DEFAULT_MAX_SIZE) -> pa.Table:
    """The CSV, TSV, JSON Lines or Parquet file `given` ("-" for stdin) as an Arrow table,
    its format told as a predictions file's is, its column types inferred.

    Polars holds a whole file, so text is looked at first, a chunk at a time: a record
    longer than a record may be is refused (Polars held 4.3 GB for a line of 1 GB), and so
    is a JSON line that the JSON Lines readers of dices refuse (`dices_cli.read.json_lines`:
    Polars kept the first of two equal keys, made an escaped lone surrogate NUL, and
    crashed at 900 levels of nesting)."""
    import polars as pl

    from dices_cli.read.file_formats import file_format, parquet_file

    with open_source(given, max_size) as source:
        kind = file_format(given, source)
        if kind != "parquet":
            problem = _text_problem(source, kind)
            if problem is not None:
                raise DicesError(f"cannot read table {name} from {source.name}: {problem}")
        try:
            if kind == "parquet":
                parquet_file(source, max_size, _too_wide(name, source.name))
                frame = pl.read_parquet(source.text_path)
            elif kind == "jsonl":
                frame = pl.read_ndjson(source.text_path)
            else:
                separator = "\t" if kind == "tsv" else ","
                frame = pl.read_csv(source.text_path, separator=separator, infer_schema_length=None)
        except BaseException as error:
            # A Rust panic on a malformed file is a BaseException (pyo3's PanicException).
            if not isinstance(error, pl.exceptions.PolarsError | OSError) and (
                type(error).__name__ != "PanicException"
            ):
                raise
            raise DicesError(
                f"cannot read table {name} from {source.name} as {kind}: {error}"
            ) from error
        source.check_unchanged()
    return frame.to_arrow()


def _text_problem(source: Source, kind: str) -> str | None:
    """The first problem of a text table that Polars must not be given, as "line N: what
    [type]"; None when there is none."""
    # Imported here: dices sql reads no table of a user's but with --table, and the
    # problems module costs its start (bench/startup.py).
    from dices_cli.problems import ProblemType
    from dices_cli.read.json_lines import JsonLineError, json_lines, parsed, too_long_message
    from dices_cli.read.lines import MAX_RECORD_BYTES, first_overlong, header_fields

    if kind != "jsonl":
        with source.open_text() as text:
            line = first_overlong(text, quoted=True)
        if line is not None:
            return (
                f"line {line}: the record starting here is longer than "
                f"{MAX_RECORD_BYTES >> 20} MiB [{ProblemType.RECORD_TOO_LONG}]"
            )
        with source.open_text() as text:
            fields = header_fields(text, b"\t" if kind == "tsv" else b",", MAX_TABLE_COLUMNS)
        return _too_many_columns("its header names", "") if fields > MAX_TABLE_COLUMNS else None
    keys: set[tuple[str, ...]] = set()  # every key, as its path from the row
    with source.open_text() as text:
        for number, line_text in json_lines(text):
            if line_text is None:
                return f"line {number}: {too_long_message('a row')} [{ProblemType.RECORD_TOO_LONG}]"
            try:
                value = parsed(line_text)
            except JsonLineError as error:
                return f"line {number}: {error.message} [{error.type}]"
            if not _add_keys(value, keys):
                keyed = " (keys, nested ones included)"
                return f"line {number}: {_too_many_columns('the rows so far hold', keyed)}"
    return None


def _add_keys(value: object, keys: set[tuple[str, ...]]) -> bool:
    """Add the path of each key in `value` (a JSON value) to `keys`, nested ones too (each a
    column, or a field of one); False once there are more than MAX_TABLE_COLUMNS."""
    stack: list[tuple[object, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                keys.add((*path, key))
                if len(keys) > MAX_TABLE_COLUMNS:
                    return False
                stack.append((inner, (*path, key)))
        elif isinstance(item, list):
            stack.extend((inner, path) for inner in item)
    return True


def _too_many_columns(what: str, counted: str) -> str:
    return (
        f"{what} more than {MAX_TABLE_COLUMNS:,} columns{counted}, the most a table of "
        "yours may have"
    )


def _too_wide(name: str, file: str) -> Callable[[int], DicesError | None]:
    """The error for a Parquet file of `columns` columns when that is too many."""

    def check(columns: int) -> DicesError | None:
        if columns <= MAX_TABLE_COLUMNS:
            return None
        return DicesError(
            f"cannot read table {name} from {file}: it has {columns:,} columns, more than "
            f"{MAX_TABLE_COLUMNS:,}, the most a table of yours may have"
        )

    return check


def add_tables(session: Session, tables: Mapping[str, pa.Table]) -> None:
    """Copy the user's tables into the session, while it can still be changed."""
    for name, table in tables.items():
        session.con.from_arrow(table).create(name)


def lock_down(session: Session) -> None:
    """Lock the connection, letting it read only the stored files of its views, then make
    sure that no escape hatch is open wider."""
    allowed = [str(path) for path in session.read_files]
    session.con.execute("SET allowed_paths = $allowed", {"allowed": allowed})
    run_script(session.con, LOCKDOWN)
    # Read one by one (duckdb_settings() is slower); our own names, no user input. Fetched
    # whole: a result left open keeps the statement's relation (`Session.stream`) off the
    # connection ("connection has an unfinished result from execute()").
    (values,) = session.con.execute(
        "SELECT " + ", ".join(f"current_setting('{name}')" for name in ESCAPE_HATCHES)
    ).fetchall()
    open_hatches = [
        f"{name} = [{', '.join(value)}]"
        for name, value in zip(ESCAPE_HATCHES, values, strict=True)
        # DuckDB keeps allowed_paths as a set, in an order of its own.
        if value and not (name == "allowed_paths" and set(value) == set(allowed))
    ]
    if open_hatches:
        settings = ", ".join(open_hatches)
        raise DicesError(f"the SQL sandbox is not closed ({settings}); the query was not run")


def run_sql(
    store: Store,
    dataset: str,
    sql: str,
    selection: RaterSelection | None = None,
    timeout: float = 60.0,
    tables: Mapping[str, str] | None = None,
    small_cells: int | None = None,
    stuck: Callable[[QueryTimeoutError], None] | None = None,
) -> contextlib.AbstractContextManager[Result]:
    """The result of `sql`, to be read inside a `with` block: the time limit holds until
    the block ends, while the result is written. A bad limit or statement is refused here.

    `tables` ({NAME: FILE}, named as `check_table_names` checks) are read here, before the
    data is loaded, and are tables the statement may name. The result is a `Stream`, or, with
    `small_cells`, a `Table` when it is that small (`Session.small_or_stream`).

    After the time limit the connection is interrupted until the query stops, and a stream
    stops at its next batch. A query that has not stopped `STOP_GRACE` seconds after the
    limit is inside one call DuckDB cannot interrupt: `stuck` is then called (from another
    thread) with the timeout error; the command line ends the process there."""
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise UsageError(Option("timeout"), f" is a number of seconds, not {timeout!r}")
    if not timeout >= MIN_TIMEOUT:  # NaN too, which some Typer versions let through
        raise UsageError(
            Option("timeout"), f" must be at least {MIN_TIMEOUT:g} s (got {timeout:g})"
        )
    if not isinstance(sql, str):
        raise UsageError(f"the statement is text, not {type(sql).__name__}")

    # One connection parses the statement, then holds the session: a second one delays the
    # first bytes of `dices sql ... | head -c 100` (bench/output.py).
    connection = connect()
    try:
        check_single_select(sql, connection)
        named = statement_names(sql, connection)
        loaded = {name: read_table(name, given) for name, given in (tables or {}).items()}
    except BaseException:
        connection.close()
        raise
    return _running(
        store, dataset, sql, selection, timeout, loaded, named, connection, small_cells, stuck
    )


@contextlib.contextmanager
def _running(
    store: Store,
    dataset: str,
    sql: str,
    selection: RaterSelection | None,
    timeout: float,
    tables: Mapping[str, pa.Table],
    named: set[str] | None,
    connection: duckdb.DuckDBPyConnection,
    small_cells: int | None,
    stuck: Callable[[QueryTimeoutError], None] | None,
) -> Iterator[Result]:
    import duckdb

    try:
        session = session_for(store, dataset, selection, named=named, connection=connection)
    except BaseException:
        connection.close()
        raise
    with session.con:
        add_tables(session, tables)
        # Named, it is there (empty without a cache); the catalogue lists it when there is one.
        if named is None or JUDGE_CALLS in named:
            from dices_cli.store.judge_cache import calls_table, has_calls

            if named is not None or has_calls(store.root):
                add_tables(session, {JUDGE_CALLS: calls_table(store.root)})
        lock_down(session)
        watchdog = _Watchdog(session.con, timeout, stuck)
        try:
            result = (
                session.stream(sql)
                if small_cells is None
                else session.small_or_stream(sql, small_cells)
            )
            yield watchdog.watched(result)
        except DicesError as error:
            damage = session.damaged_file(error.__cause__)
            if damage is not None:
                raise damage from error
            # Our timer's interrupt (which Arrow, reading a batch, gives as an OSError), not
            # an error whose message happens to say "interrupt".
            if watchdog.timed_out.is_set() and isinstance(
                error.__cause__, duckdb.InterruptException | OSError
            ):
                raise QueryTimeoutError.after(timeout) from error
            raise
        finally:
            watchdog.finish()  # an interrupt under way is done before the connection closes


class _Watchdog:
    """A thread that stops the query at its time limit: it interrupts the connection, and
    again every `INTERRUPT_EVERY` seconds until the `with` block of `run_sql` ends; after
    `STOP_GRACE` more seconds it calls `stuck`."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        timeout: float,
        stuck: Callable[[QueryTimeoutError], None] | None,
    ) -> None:
        self.timeout = timeout
        self.timed_out = threading.Event()
        self._connection = connection
        self._stuck = stuck
        self._finished = threading.Event()
        # A longer wait (e.g. --timeout inf) overflows the timer's clock: that is "no limit".
        self._thread = threading.Thread(target=self._watch, daemon=True, name="dices-sql-timeout")
        self._thread.start()

    def _watch(self) -> None:
        if self._finished.wait(min(self.timeout, threading.TIMEOUT_MAX)):
            return
        self.timed_out.set()
        give_up = time.monotonic() + STOP_GRACE
        while True:
            self._connection.interrupt()
            if self._finished.wait(INTERRUPT_EVERY):
                return
            if self._stuck is not None and time.monotonic() >= give_up:
                self._stuck(QueryTimeoutError.after(self.timeout))
                return

    def watched(self, result: Result) -> Result:
        """`result`, its batches stopping once the time limit has passed."""
        if isinstance(result, Table):
            return result
        return Stream(result.schema, self._until_timeout(result.batches), result.bounded)

    def _until_timeout(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if self.timed_out.is_set():
                raise QueryTimeoutError.after(self.timeout)
            yield batch

    def finish(self) -> None:
        self._finished.set()
        self._thread.join()
