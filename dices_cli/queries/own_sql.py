"""The SQL dices runs itself, not a canned query: the `sql/_NAME.sql` files, among them the
macros every query may use (`prelude`), always read from the packaged directory.

A module apart from the catalogue (`dices_cli.queries.catalog`) so that a session, and
`dices sql`, which runs no canned query, need not import the catalogue's parser and classes
(part of `dices sql`'s start: bench/startup.py).
"""

from __future__ import annotations

import re
from pathlib import Path

_MACRO = re.compile(r"^CREATE MACRO (\w+)", re.MULTILINE | re.IGNORECASE)

# The type of the shared macros' crowd labels (sql/_macros.sql): every session creates it
# before it loads them.
CROWD_LABEL_TYPE = "CREATE TYPE crowd_label AS ENUM ('No', 'Yes', 'Unsure', 'No=Unsure', 'tie')"


def packaged_sql_directory() -> Path:
    """`dices_cli/sql` in an installed wheel; the repository's `sql/` in a source checkout.
    The code's own SQL (`_NAME.sql`) is always read from here."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "sql"
    return packaged if packaged.is_dir() else package.parent / "sql"


def internal_sql(name: str) -> str:
    """An SQL file the code runs itself (sql/_NAME.sql), not a canned query."""
    return (packaged_sql_directory() / f"_{name}.sql").read_text(encoding="utf-8")


def prelude() -> str:
    """Macros every query may use (sql/_macros.sql)."""
    return internal_sql("macros")


def macro_names() -> frozenset[str]:
    """The names of the macros `prelude` makes, in lower case (as `engine.statement_names`
    gives the functions a statement calls)."""
    return frozenset(name.lower() for name in _MACRO.findall(prelude()))
