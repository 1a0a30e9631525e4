"""`dices sql`: ad-hoc, read-only SQL over the views.

The data is loaded into memory first; then the connection is locked down: no access to
files, URLs or extensions, configuration frozen, and only a single SELECT is accepted.
"""

from __future__ import annotations

import threading

from dices_cli.errors import DicesError
from dices_cli.output import Table
from dices_cli.queries.engine import RaterSelection, open_session
from dices_cli.store import Store

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

    session = open_session(store, dataset, selection, materialize=True)
    for statement in LOCKDOWN:
        session.con.execute(statement)
    try:
        statements = session.con.extract_statements(sql)
    except duckdb.Error as error:
        raise DicesError(f"the SQL does not parse: {error}") from error
    if len(statements) != 1:
        raise QueryRefusedError(f"give exactly one statement (got {len(statements)})")
    if statements[0].type != duckdb.StatementType.SELECT:
        kind = statements[0].type.name
        raise QueryRefusedError(f"only SELECT is allowed here, not {kind}; dices sql is read-only")
    timer = threading.Timer(timeout, session.con.interrupt)
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
