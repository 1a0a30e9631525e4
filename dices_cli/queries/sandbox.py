"""`dices sql`: ad-hoc, read-only SQL over the views.

The data is loaded into memory first; then the connection is locked down: no access to
files, URLs or extensions, configuration frozen, and only a single SELECT is accepted.
"""

from __future__ import annotations

import threading

from dices_cli.errors import DicesError, UsageError
from dices_cli.output import Table
from dices_cli.queries.engine import RaterSelection, open_session
from dices_cli.store import Store

MIN_TIMEOUT = 0.1  # seconds

LOCKDOWN = (
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


class QueryRefusedError(DicesError):
    """The statement is not a single read-only SELECT."""


class QueryTimeoutError(DicesError):
    """The statement ran longer than the time allowed."""


def run_sql(
    store: Store,
    dataset: str,
    sql: str,
    selection: RaterSelection | None = None,
    timeout: float = 60.0,
) -> Table:
    import duckdb

    if not timeout >= MIN_TIMEOUT:  # NaN too, which some Typer versions let through
        raise UsageError(f"--timeout must be at least {MIN_TIMEOUT:g} s (got {timeout:g})")
    session = open_session(store, dataset, selection, materialize=True)
    for statement in LOCKDOWN:
        session.con.execute(statement)
    try:
        statements = session.con.extract_statements(sql)
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
    # A longer wait (e.g. --timeout inf) overflows the timer's clock: that is "no limit".
    timer = threading.Timer(min(timeout, threading.TIMEOUT_MAX), session.con.interrupt)
    timer.start()
    try:
        return session.execute(sql)
    except DicesError as error:
        if "INTERRUPT" in str(error).upper():
            raise QueryTimeoutError(
                f"the query ran longer than {timeout:g} s and was stopped"
            ) from error
        raise
    finally:
        timer.cancel()
