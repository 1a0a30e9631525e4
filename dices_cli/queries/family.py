"""A DuckDB session over a family other than DICES: typed views of its stored tables, and
the canned queries written for it (`sql/FAMILY/NAME.sql`); `dices sql -d prosocial` runs
in one (`session_for`).

Views (ProsocialDialog), each with a `dataset` column ('prosocial'):

    items    one row per utterance, its enums as DuckDB ENUMs (split, safety_label,
             safety_label_recomputed, source)
    ratings  one row per annotation: item_id, annotator_slot, annotation (ENUM), reason

The tables behind them live in the schema `internal` (internal.items_prosocial, ...), out
of SHOW TABLES, as for DICES.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from dices_cli.families import FAMILIES, family_of
from dices_cli.queries.engine import (
    INTERNAL,
    NothingIngestedError,
    RaterSelection,
    Session,
    connect,
    create_view,
    needs_macros,
    open_session,
    run_script,
    sql_literals,
    views_and_tables,
)
from dices_cli.queries.own_sql import CROWD_LABEL_TYPE, prelude
from dices_cli.store.datasets import Store

if TYPE_CHECKING:
    import duckdb

    from dices_cli.output import Result
    from dices_cli.queries.catalog import Query

# Each ENUM column of a family's views, by view: column -> the family's enum it takes.
_ENUM_COLUMNS = {
    "items": {
        "split": "split",
        "safety_label": "safety_label",
        "safety_label_recomputed": "safety_label",
        "source": "source",
    },
    "ratings": {"annotation": "annotation"},
}


class FamilySession(Session):
    """A session over one stored dataset of a family without raters (ProsocialDialog): the
    DICES session's way of running queries, over views of its own.

    `named` and `connection` as for `Session`: `dices sql` reads only the stored files of
    the views a statement names."""

    def __init__(  # a setup of its own: no super()
        self,
        store: Store,
        name: str,
        named: Collection[str] | None = None,
        connection: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        self._stored = {}
        if not store.ingested():
            raise NothingIngestedError(store.root)
        stored = store.open(name)
        family = family_of(name)
        self.datasets = []
        self.selection = RaterSelection()
        self.con = connection or connect()
        views, tables = views_and_tables(
            named, {table: () for table in family.tables}, family.tables, [name]
        )
        self._choose_stored(stored, family.tables, tables)
        # A family of one annotation scale (ProsocialDialog) has its plurality type too.
        annotations = family.enums.get("annotation")
        plurality = sql_literals([*(annotations or ()), "tie"])
        setup = [
            *(
                f"CREATE TYPE {enum}_t AS ENUM ({sql_literals(values)})"
                for enum, values in family.enums.items()
            ),
            *([f"CREATE TYPE annotation_plurality AS ENUM ({plurality})"] if annotations else []),
            CROWD_LABEL_TYPE,
            f"CREATE TYPE dataset_name AS ENUM ({sql_literals([name])})",
            f"CREATE SCHEMA {INTERNAL}",
            *self._declare_stored(),
        ]
        run_script(self.con, setup, self._paths())
        self._make_views(())  # the views below are made from the stored tables' columns
        statements = [self._view(name, table) for table in family.tables if table in views]
        if needs_macros(named):
            statements.append(prelude())
        if statements:
            run_script(self.con, statements)

    def run(self, query: Query, parameters: dict[str, Any], typed: bool = True) -> Result:
        """The query's result as a stream of Arrow batches (its own queries have no compute
        step). A result with a row per utterance (an item_id column: item-distribution has
        a row per line of train.json) is unbounded, written by Arrow, far faster than
        through Python as a DICES query's few rows are. The others have a few rows, and
        are bounded: Arrow's writer would import pandas first (bench/prosocial.py times
        both); without `typed`,
        they come as a `Table` of Python values, as `Session.run` gives them."""
        from dices_cli.queries.catalog import render_sql  # canned only: see own_sql

        sql = render_sql(query)
        named = {k: v for k, v in parameters.items() if f"${k}" in sql}
        per_item = any(column.name == "item_id" for column in query.columns)
        if not typed and not per_item:
            return self.execute(sql, named)
        return self.stream(sql, named, bounded=not per_item)

    def _view(self, name: str, table: str) -> str:
        """The statement making the view `table`: the stored table's columns, its enums
        as the family's ENUMs."""
        columns = self.con.execute(
            f"SELECT column_name FROM (DESCRIBE {INTERNAL}.{table}_{name})"
        ).fetchall()
        enums = _ENUM_COLUMNS.get(table, {})
        cells = [
            f'CAST("{c}" AS {enums[c]}_t) AS "{c}"' if c in enums else f'"{c}"' for (c,) in columns
        ]
        return create_view(
            table,
            f"SELECT '{name}'::dataset_name AS dataset, "
            f"{', '.join(cells)} FROM {INTERNAL}.{table}_{name}",
        )


def session_for(
    store: Store,
    dataset: str,
    selection: RaterSelection | None = None,
    named: Collection[str] | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> Session:
    """A session over `dataset`: DICES's views ('all', '350', '990': `open_session`), or,
    for another family named, its own (`FamilySession`); never both. A family without
    raters takes no rater selection."""
    family = FAMILIES.get(dataset)
    if family is None:
        return open_session(store, dataset, selection, named=named, connection=connection)
    if selection is not None and selection != RaterSelection():
        raise ValueError(f"{family.title} has no raters to select")
    return FamilySession(store, family.members[0], named, connection)
