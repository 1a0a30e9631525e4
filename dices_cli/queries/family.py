"""A DuckDB session over a family other than DICES: typed views of its stored tables, and
the canned queries written for it (`sql/FAMILY/NAME.sql`).

Views (ProsocialDialog), each with a `dataset` column ('prosocial'):

    items    one row per utterance, its enums as DuckDB ENUMs (split, safety_label,
             safety_label_recomputed, source)
    ratings  one row per annotation: item_id, annotator_slot, annotation (ENUM), reason

The tables behind them live in the schema `internal`, out of SHOW TABLES, as for DICES.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dices_cli.families import family_of
from dices_cli.queries.catalog import Query, prelude, render_sql
from dices_cli.queries.engine import (
    INTERNAL,
    NothingIngestedError,
    RaterSelection,
    Session,
    _literals,
)
from dices_cli.store import Store

if TYPE_CHECKING:
    from dices_cli.output import Result

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
    DICES session's way of running queries, over views of its own."""

    def __init__(self, store: Store, name: str) -> None:  # a setup of its own: no super()
        import duckdb

        if not store.ingested():
            raise NothingIngestedError(store.root)
        stored = store.open(name)
        family = family_of(name)
        self.datasets = []
        self.selection = RaterSelection()
        self.con = duckdb.connect(":memory:")
        for enum, values in family.enums.items():
            self.con.execute(f"CREATE TYPE {enum}_t AS ENUM ({_literals(values)})")
        annotations = family.enums["annotation"]
        self.con.execute(
            f"CREATE TYPE annotation_plurality AS ENUM ({_literals([*annotations, 'tie'])})"
        )
        # The type of the shared macros' DICES plurality: the macros load only with it.
        self.con.execute("CREATE TYPE crowd_label AS ENUM ('No', 'Yes', 'Unsure', 'tie')")
        self.con.execute(f"CREATE TYPE dataset_name AS ENUM ({_literals([name])})")
        stored.check_sizes()  # a missing or truncated file is an error here, not in DuckDB
        self.con.execute(f"CREATE SCHEMA {INTERNAL}")
        self.con.execute(f"USE {INTERNAL}")  # a relation is created in the current schema
        try:
            for table in family.tables:
                path = stored.table_path(table)
                try:
                    self.con.read_parquet(str(path)).create_view(f"{table}_stored")
                except duckdb.Error as error:  # a damaged footer or page
                    raise stored.unreadable(path, error) from error
        finally:
            self.con.execute("USE main")
        for table in family.tables:
            self._create_view(name, table)
        self.con.execute(prelude())

    def run(self, query: Query, parameters: dict[str, Any]) -> Result:
        """The query's result as a stream of Arrow batches (its own queries have no compute
        step). A result with a row per utterance (an item_id column: item-distribution has
        120,236 rows for train.json) is unbounded, written by Arrow: its CSV took 5.4 s as
        a DICES query's few rows are written, through Python, and 2.2 s so. The others
        have a few rows, and are bounded: Arrow's writer would import pandas first
        (overview: 1.8 s unbounded, 1.1 s bounded; bench/prosocial.py)."""
        sql = render_sql(query)
        named = {k: v for k, v in parameters.items() if f"${k}" in sql}
        per_item = any(column.name == "item_id" for column in query.columns)
        return self.stream(sql, named, bounded=not per_item)

    def _create_view(self, name: str, table: str) -> None:
        columns = self.con.execute(
            f"SELECT column_name FROM (DESCRIBE {INTERNAL}.{table}_stored)"
        ).fetchall()
        enums = _ENUM_COLUMNS.get(table, {})
        cells = [
            f'CAST("{c}" AS {enums[c]}_t) AS "{c}"' if c in enums else f'"{c}"' for (c,) in columns
        ]
        self.con.execute(
            f"CREATE VIEW {table} AS SELECT '{name}'::dataset_name AS dataset, "
            f"{', '.join(cells)} FROM {INTERNAL}.{table}_stored"
        )
