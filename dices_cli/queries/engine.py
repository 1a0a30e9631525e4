"""A DuckDB session over the ingested Parquet: typed views, rater selection, canned queries.

Views (each with a `dataset` column, '350' or '990'):

    items         one row per conversation
    raters        one row per rater (after rater selection)
    ratings       one row per rating (after rater selection), answers as ENUMs, plus
                  granular_answers (the Q2-Q6 answers as a list) and implied_overall
                  (the Q_overall its sub-questions imply)
    ratings_wide  ratings joined to raters and items
    published_removed  the raters the DICES authors removed (dataset, rater_id)

The tables behind them live in the schema `internal`, out of SHOW TABLES.

Columns that mean the same thing in both datasets have the same name (DICES-990's
Q3_unfair_bias_overall is Q3_bias_overall here); a column a dataset lacks is NULL there.
Everything is generated from `dices_cli.families.schema`, whose names are fixed identifiers; every
value that comes from a user is bound as a parameter.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from dices_cli.errors import DamagedDataError, DicesError, NotIngestedError, UsageError
from dices_cli.families import family_of, listed
from dices_cli.families.schema import (
    DATASETS,
    GOLD_REASONS,
    HARM_TAGS,
    PUBLISHED_REMOVED,
    UNIFIED_NAMES,
    Column,
    Dataset,
    Entity,
    Kind,
    missing_group_column,
)
from dices_cli.output import Result, Stream, Table, relation_stream, table_from_rows
from dices_cli.queries.own_sql import CROWD_LABEL_TYPE, macro_names, prelude
from dices_cli.store.datasets import Store, StoredDataset

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb
    import pyarrow as pa

    from dices_cli.queries.catalog import Query

_Result = TypeVar("_Result")

# The schema of the tables behind the views: a query sees them only by naming it.
INTERNAL = "internal"
# The DuckDB variable holding the paths of a session's stored files, by the name of the
# view over each (`stored_view`): a value bound by the session, never pasted into SQL.
STORED_FILES = "dices_stored_files"
# The views, in the order they are made, each with the views it reads. items, raters and
# ratings read the stored tables of their own name (internal.items_350, ...);
# published_removed is a table of the schema's own ids (and is read by raters and ratings
# when they leave those raters out).
VIEWS: dict[str, tuple[str, ...]] = {
    "published_removed": (),
    "items": (),
    "raters": (),
    "ratings": (),
    "ratings_wide": ("ratings", "raters", "items"),
}
STORED_TABLES = ("items", "raters", "ratings")
# The views of one entity each, made from the stored table of their name.
ENTITY_VIEWS = ((Entity.ITEM, "items"), (Entity.RATER, "raters"), (Entity.RATING, "ratings"))


def _enum_type(column: Column) -> str:
    return "answer" if column.is_answer else f"{column.name}_t"


def enum_types(new_values: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """The DuckDB ENUM types, by name: one per enum column (one `answer` for all answers),
    holding the schema's values and then `new_values` (column -> values) the data brought."""
    columns = {c.name: c for d in DATASETS.values() for c in d.columns if c.kind is Kind.ENUM}
    types = {_enum_type(column): column.values for column in columns.values()}
    for name, values in new_values.items():
        column = columns[name]
        types[_enum_type(column)] = tuple(dict.fromkeys([*column.values, *values]))
    return types


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _sql_type(column: Column) -> str:
    if column.kind is Kind.ENUM:
        return _enum_type(column)
    if column.kind is Kind.INTEGER:
        return "BIGINT"
    if column.kind is Kind.TIMESTAMP:
        return "TIMESTAMPTZ"
    return "VARCHAR"


@dataclass(frozen=True)
class _ViewColumn:
    name: str  # in the view
    sql_type: str
    sources: dict[str, str]  # dataset -> column in its Parquet file


def _view_columns(entity: Entity, datasets: Sequence[Dataset]) -> list[_ViewColumn]:
    columns: dict[str, _ViewColumn] = {}
    for dataset in datasets:
        own = list(dataset.of(entity))
        if entity is Entity.RATING:  # the keys live with their own entity, but ratings need them
            own[1:1] = [dataset.column("rater_id"), dataset.column("item_id")]
        for column in own:
            name = UNIFIED_NAMES.get(column.name, column.name)
            if name not in columns:
                columns[name] = _ViewColumn(name, _sql_type(column), {})
            columns[name].sources[dataset.name] = column.name
    return list(columns.values())


def _columns(entity: Entity) -> list[_ViewColumn]:
    """The columns of the view of `entity`: every column of both datasets, whichever are
    selected, so that the view is the same for any -d."""
    return _view_columns(entity, list(DATASETS.values()))


def _derived_columns(entity: Entity, dataset: Dataset) -> list[str]:
    if entity is Entity.ITEM:
        derived = [f"{_quote(HARM_TAGS)}"]
        derived.append(
            _quote(GOLD_REASONS)
            if dataset.has_gold
            else f"NULL::VARCHAR[] AS {_quote(GOLD_REASONS)}"
        )
        return derived
    if entity is Entity.RATING:
        # From the stored answers as text (the names are the FROM clause's): one cast of the
        # list, and lists searched: not a cast and a comparison for each answer, bound at
        # every statement that reads the view and slower to make, count and group
        # `ratings` (bench/queries.py). The same values: a stored answer is one of the
        # ENUM's, and a missing one is in no list.
        answers = ", ".join(_quote(q) for q in dataset.granular)
        subs = ", ".join(_quote(q) for q in dataset.sub_questions)
        implied = (
            f"CASE WHEN list_contains([{subs}], 'Yes') THEN 'Yes'::answer "
            f"WHEN list_contains([{subs}], 'Unsure') THEN 'Unsure'::answer "
            "ELSE 'No'::answer END"
        )
        return [f"[{answers}]::answer[] AS granular_answers", f"{implied} AS implied_overall"]
    return []


class NothingIngestedError(NotIngestedError):
    """No dataset is ingested in `root` (the command line adds how to ingest one there), or,
    with `others` (the titles of the other families' datasets that are), no DICES dataset."""

    def __init__(self, root: Path, others: Sequence[str] = ()) -> None:
        if others:
            super().__init__(
                f"no DICES dataset is ingested in {root} (only {listed(others, 'and')})"
            )
        else:
            super().__init__(f"nothing is ingested in {root}")
        self.root = root


@dataclass
class RaterSelection:
    """Which raters every query sees. Empty selection = all raters."""

    exclude_removed: bool = False
    keep_ids: frozenset[int] | None = None
    min_quality: float | None = None  # resolved into keep_ids by dices_cli.raters.selection
    description: list[str] = field(default_factory=list)


class Session:
    """One DuckDB connection with the views above, for the datasets asked for.

    The stored files are read by DuckDB's Parquet reader; `read_files` lists those it
    reads (`dices_cli.queries.sandbox` allows the query to read them and no other file).

    `named`, the names one statement uses (`statement_names`), limits the session to the
    views it names and the views and stored tables they read (`views_and_tables`): the
    stored files of the others are not opened. The shared macros (`prelude`) are made
    when it calls one of them (`needs_macros`). `connection` is the DuckDB connection to
    build on, a new one by default."""

    def __init__(
        self,
        store: Store,
        datasets: Iterable[str],
        selection: RaterSelection | None = None,
        named: Collection[str] | None = None,
        connection: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        self._stored: dict[str, tuple[StoredDataset, Path]] = {}
        self.datasets = [DATASETS[name] for name in datasets]
        if not self.datasets:
            raise DicesError("no dataset selected")
        self.selection = selection or RaterSelection()
        self.con: duckdb.DuckDBPyConnection = connection or connect()
        stored = [store.open(dataset.name) for dataset in self.datasets]
        views, tables = views_and_tables(named)
        if self.selection.exclude_removed:
            views.add("published_removed")  # the views leave its raters out
        for each in stored:
            self._choose_stored(each, STORED_TABLES, tables)
        run_script(self.con, [*self._setup(stored, views), *self._declare_stored()], self._paths())
        if self.selection.keep_ids is not None:
            self.con.execute(
                f"INSERT INTO {INTERNAL}.keep SELECT unnest($ids::BIGINT[])",
                {"ids": sorted(self.selection.keep_ids)},
            )
        self._make_views(self._views(views, needs_macros(named)))

    def _setup(self, stored: list[StoredDataset], views: Collection[str]) -> list[str]:
        """The statements before the stored tables: the ENUM types of `views` (only those
        the views need), published_removed if among them, and the schema of the tables
        behind the views.

        Run as one script, as every statement of our own: each call to DuckDB costs
        binding in its Python layer, and a session would make dozens (bench/queries.py)."""
        used = {
            c.sql_type for entity, view in ENTITY_VIEWS if view in views for c in _columns(entity)
        }
        statements = [
            f"CREATE TYPE {name} AS ENUM ({sql_literals(values)})"
            for name, values in enum_types(_new_values(stored)).items()
            if name in used
        ]
        statements.append(CROWD_LABEL_TYPE)
        statements.append(f"CREATE TYPE dataset_name AS ENUM ({sql_literals(list(DATASETS))})")
        if "published_removed" in views:
            removed = ", ".join(  # the schema's own ids and names: no value from a user
                f"('{name}', {int(rater)})"
                for name, ids in PUBLISHED_REMOVED.items()
                for rater in sorted(ids)
            )
            statements.append("CREATE TABLE published_removed (dataset VARCHAR, rater_id BIGINT)")
            statements.append(f"INSERT INTO published_removed VALUES {removed}")
        statements.append(f"CREATE SCHEMA {INTERNAL}")
        statements.append(f"CREATE TABLE {INTERNAL}.keep (rater_id BIGINT)")
        return statements

    def _choose_stored(
        self, stored: StoredDataset, tables: Sequence[str], wanted: Collection[str]
    ) -> None:
        """Take the stored files of those of `stored`'s `tables` that are `wanted` (by the
        table's name, or its own: `items_350`) as files the views read. A missing or
        truncated file of `stored` is an error here, not in DuckDB."""
        stored.check_sizes()
        for table in tables:
            name = f"{table}_{stored.name}"
            if table in wanted or name in wanted:
                self._stored[name] = (stored, stored.table_path(table))

    def _declare_stored(self) -> list[str]:
        """The statement giving DuckDB the paths of the stored files (`_paths`), bound as a
        value, where the views over them read them (`stored_view`); none without files."""
        return [f"SET VARIABLE {STORED_FILES} = $paths"] if self._stored else []

    def _paths(self) -> dict[str, Any] | None:
        """The parameter of `_declare_stored`."""
        if not self._stored:
            return None
        return {"paths": {name: str(path) for name, (_, path) in self._stored.items()}}

    def _make_views(self, then: Sequence[str]) -> None:
        """Make the views over the stored files (declared), then run `then`, in one call to
        DuckDB. A stored file DuckDB cannot open (a damaged footer) is an error naming it.

        One script, not a relation made and kept per file (in a schema made current and
        left, a call each), which costs a small answer more (bench/queries.py)."""
        import duckdb

        statements = [stored_view(name) for name in self._stored]
        try:
            run_script(self.con, [*statements, *then])
        except duckdb.Error as error:
            # Making views over several files, DuckDB may not say which one it failed to
            # open ("don't know what type"): each is opened alone to find it.
            for stored, path in self._stored.values():
                try:
                    self.con.execute(
                        "DESCRIBE FROM read_parquet($path)", {"path": str(path)}
                    ).fetchall()
                except duckdb.Error as reason:  # its first line: the SQL shown after is ours
                    raise stored.unreadable(path, str(reason).splitlines()[0]) from error
            raise

    @property
    def read_files(self) -> list[Path]:
        """The stored files the views read."""
        return [path for _, path in self._stored.values()]

    def damaged_file(self, error: BaseException | None) -> DamagedDataError | None:
        """The error to give for a stored file that DuckDB failed to decode while a query
        read it (`error` is DuckDB's, naming the file), or None: the query failed otherwise."""
        for stored, path in self._stored.values():
            _, named, reason = str(error).partition(f'Failed to read file "{path}": ')
            if named:
                return stored.unreadable(path, reason.splitlines()[0])
        return None

    def _kept(self, dataset: Dataset) -> str:
        conditions = []
        if self.selection.exclude_removed:
            conditions.append(
                f"rater_id NOT IN (SELECT rater_id FROM published_removed "
                f"WHERE dataset = '{dataset.name}')"
            )
        if self.selection.keep_ids is not None:
            conditions.append(f"rater_id IN (SELECT rater_id FROM {INTERNAL}.keep)")
        return " WHERE " + " AND ".join(conditions) if conditions else ""

    def _views(self, views: Collection[str], macros: bool) -> list[str]:
        """The statements making the views in `views`, then, with `macros`, the macros
        every query may use."""
        statements = []
        for entity, view in ENTITY_VIEWS:
            if view not in views:
                continue
            columns = _columns(entity)
            selects = []
            for dataset in self.datasets:
                cells = [
                    f"CAST({_quote(c.sources[dataset.name])} AS {c.sql_type}) AS {_quote(c.name)}"
                    if dataset.name in c.sources
                    else f"NULL::{c.sql_type} AS {_quote(c.name)}"
                    for c in columns
                ]
                cells += _derived_columns(entity, dataset)
                where = "" if entity is Entity.ITEM else self._kept(dataset)
                selects.append(
                    f"SELECT '{dataset.name}' AS dataset, {', '.join(cells)} "
                    f"FROM {INTERNAL}.{view}_{dataset.name}{where}"
                )
            statements.append(create_view(view, "\nUNION ALL\n".join(selects)))
        if "ratings_wide" in views:
            statements.append(
                create_view(
                    "ratings_wide",
                    "SELECT * FROM ratings "
                    "JOIN raters USING (dataset, rater_id) JOIN items USING (dataset, item_id)",
                )
            )
        if macros:
            statements.append(prelude())
        return statements

    def schema(self) -> Table:
        """One row per column of the views (and published_removed): its type, and an
        ENUM's values joined by '|'."""
        columns = self.con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            "ORDER BY table_name, column_index"
        ).fetchall()
        rows: list[tuple[Any, ...]] = []
        for view, column, data_type in columns:
            enum = data_type.removesuffix("[]")
            if not enum.startswith("ENUM("):
                rows.append((view, column, data_type, None))
                continue
            # The type as DuckDB spells it, read back from its own catalog: no user input.
            ((values,),) = self.con.execute(f"SELECT enum_range(NULL::{enum})").fetchall()
            kind = "ENUM" + data_type[len(enum) :]
            rows.append((view, column, kind, "|".join(values)))
        return table_from_rows(["view", "column", "type", "values"], rows)

    def execute(self, sql: str, parameters: dict[str, Any] | None = None) -> Table:
        """The result as Python values."""
        return self._fetch(sql, parameters, _python_rows)

    def stream(
        self, sql: str, parameters: dict[str, Any] | None = None, bounded: bool = False
    ) -> Stream:
        """The result as Arrow batches, each read from DuckDB when it is wanted
        (`output.relation_stream`): DuckDB's types (ENUMs, timestamps, lists) kept."""
        import duckdb

        try:
            relation = self.con.sql(sql, params=parameters or None)
        except duckdb.Error as error:
            raise DicesError(f"the query failed: {error}") from error
        return relation_stream(relation, bounded)

    def small_or_stream(self, sql: str, cells: int) -> Result:
        """The result as a `Table` of Python values if it holds at most `cells` cells, all
        of `PLAIN_TYPES`; else as a `stream`. Fetched by DuckDB, a small answer's values
        need neither Arrow nor the NumPy it imports, which saves a small answer CPU and
        memory (bench/queries.py).

        The statement runs until its first rows are ready (one bind and one run: a
        relation, which would tell its types before running, binds twice); a result that
        is not small runs again as a stream, so a sort is made twice."""
        import duckdb

        try:
            cursor = self.con.execute(sql)
            description = cursor.description or []
            if all(kind.id in PLAIN_TYPES for _, kind, *_ in description):
                most = cells // max(len(description), 1)
                rows = cursor.fetchmany(most + 1)
                if len(rows) <= most:
                    return table_from_rows([column[0] for column in description], rows)
            cursor.abort()
        except duckdb.Error as error:
            raise DicesError(f"the query failed: {error}") from error
        return self.stream(sql)

    def _fetch(
        self,
        sql: str,
        parameters: dict[str, Any] | None,
        fetch: Callable[[duckdb.DuckDBPyConnection], _Result],
    ) -> _Result:
        import duckdb

        try:
            return fetch(self.con.execute(sql, parameters or {}))
        except duckdb.Error as error:
            raise DicesError(f"the query failed: {error}") from error

    def run(self, query: Query, parameters: dict[str, Any], typed: bool = True) -> Result:
        """The query's result: a `Stream` of the SQL's (bounded: a canned query's result is
        small by design), or a `compute:` step's `Table`. A stream holds the connection
        until it is read (`output.collect` reads it whole): DuckDB serves one open result
        per connection. The SQL gets the parameters it names (DuckDB refuses any other); a
        `compute:` step gets the SQL's result, as an Arrow table, and every parameter.

        `typed` keeps DuckDB's types (ENUMs, lists, timestamps) in Arrow, for a writer that
        needs them (Parquet). Without it, the SQL's rows come as a `Table` of the Python
        values its stream would give, fetched by DuckDB: Arrow, and the NumPy it imports,
        are not loaded (bench/queries.py times a small canned query)."""
        from dices_cli.queries.catalog import compute_step, render_sql  # canned only: see own_sql

        sql = render_sql(query)
        named = {k: v for k, v in parameters.items() if re.search(rf"\${k}\b", sql)}
        compute = compute_step(query)
        if compute is None:
            return self.stream(sql, named, bounded=True) if typed else self.execute(sql, named)
        # Arrow, not Python values: a compute step works on whole columns.
        return compute(self._fetch(sql, named, arrow_table), parameters)


# The types whose values DuckDB gives Python as Arrow does (`output.Stream.head`), so that
# a result of them is written in the same bytes either way (`Session.small_or_stream`).
# Not DATE: DuckDB gives Python an infinite date as 0001-01-01 or 9999-12-31, where Arrow
# keeps it infinite (`arrow_text.python_values`).
PLAIN_TYPES = frozenset(
    {
        "boolean",
        "tinyint",
        "smallint",
        "integer",
        "bigint",
        "utinyint",
        "usmallint",
        "uinteger",
        "ubigint",
        "float",
        "double",
        "decimal",
        "varchar",
        "enum",
    }
)

# Words of a statement that may see tables it does not name in a FROM clause: the
# catalogue (SHOW TABLES, DESCRIBE, duckdb_views(), information_schema, pragma_table_info).
# Such a statement gets every view.
SEES_THE_CATALOGUE = re.compile(
    r"duckdb_|information_schema|pg_|sqlite_|pragma|show|describe|summarize", re.IGNORECASE
)
# Functions that name a table by a value (`query_table('ite' || 'ms')`) or run SQL given as
# one (`query('SELECT ... FROM ratings')`): those names are not in the statement's tree, so
# a statement calling one gets every view and macro.
BY_VALUE = frozenset({"query", "query_table"})


def statement_names(sql: str, parser: duckdb.DuckDBPyConnection) -> set[str] | None:
    """The names a checked statement uses, as DuckDB's parser sees them (lower case): the
    tables in its FROM clauses and subqueries (without their schema) and the functions it
    calls. None when it may see tables it does not name (`SEES_THE_CATALOGUE`,
    `BY_VALUE`) or the parser cannot say."""
    import json

    if SEES_THE_CATALOGUE.search(sql):
        return None
    # Fetched whole: a result left open keeps a relation (`Session.stream`) off the connection.
    ((serialized,),) = parser.execute("SELECT json_serialize_sql($sql)", {"sql": sql}).fetchall()
    tree = json.loads(serialized)
    if tree.get("error", True):
        return None
    named: set[str] = set()
    pending: list[object] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                named.add(str(node.get("table_name", "")).lower())
            if isinstance(node.get("function_name"), str):
                named.add(node["function_name"].lower())
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return None if named & BY_VALUE else named


def needs_macros(named: Collection[str] | None) -> bool:
    """Whether a statement that uses the names `named` (`statement_names`; None: it may use
    any) calls one of the shared macros (`prelude`): they are made only then."""
    return named is None or not macro_names().isdisjoint(named)


def views_and_tables(
    named: Collection[str] | None,
    views: Mapping[str, tuple[str, ...]] = VIEWS,
    stored_tables: Sequence[str] = STORED_TABLES,
    datasets: Iterable[str] = DATASETS,
) -> tuple[set[str], set[str]]:
    """The views a statement naming the tables `named` (lower case) needs, with the views
    they read, and the stored tables behind them: the view's name (`items`, one per dataset)
    or the stored table's own (`items_350`, named as `internal.items_350`). Every view and
    stored table for None, or for a statement that names none of them (`SELECT 1`).

    `views` (view -> the views it reads), `stored_tables` and `datasets` are DICES's by
    default; a family's session gives its own."""
    every = set(views), set(stored_tables)
    if named is None:
        return every
    needed = {name for name in named if name in views}
    needed |= {read for view in needed for read in views[view]}
    stored = {f"{table}_{name}" for table in stored_tables for name in datasets} & set(named)
    if not needed and not stored:
        return every
    return needed, (needed & set(stored_tables)) | stored


def stored_view(name: str) -> str:
    """The statement making the stored file of `name` (`{table}_{dataset}`: ours) the view
    internal.`name`, read by DuckDB's Parquet reader from the path the session declared
    (`STORED_FILES`)."""
    return (
        f"CREATE VIEW {INTERNAL}.{name} AS "
        f"FROM read_parquet(getvariable('{STORED_FILES}')['{name}'])"
    )


def _new_values(stored_datasets: Iterable[StoredDataset]) -> dict[str, list[str]]:
    """The values the datasets' files brought beyond the schema's, per column, in dataset
    order (the union, when both datasets are selected)."""
    found: dict[str, list[str]] = {}
    for stored in stored_datasets:
        for column, values in stored.manifest.get("new_values", {}).items():
            found[column] = list(dict.fromkeys([*found.get(column, []), *values]))
    return found


def _python_rows(cursor: duckdb.DuckDBPyConnection) -> Table:
    description = cursor.description or []
    if any("WITH TIME ZONE" in str(d[1]) for d in description):
        # DuckDB turns time zones into Python values only with pytz; Arrow does not.
        arrow = arrow_table(cursor)
        rows = list(zip(*(column.to_pylist() for column in arrow.columns), strict=True))
    else:
        rows = cursor.fetchall()
    return table_from_rows([d[0] for d in description], rows)


def arrow_table(cursor: duckdb.DuckDBPyConnection) -> pa.Table:
    with warnings.catch_warnings():  # "makes an extra copy": the copy is columnar and cheap
        warnings.simplefilter("ignore", UserWarning)
        return cursor.to_arrow_table()


def create_view(name: str, query: str) -> str:
    """The statement making the view `name` of our own `query`, bound by DuckDB when a
    statement reads it, not when it is made: a statement binds it again anyway, so binding
    it when it is made too is time lost (bench/queries.py)."""
    return f"CREATE VIEW {name} WITH (DEFER_BINDING) AS {query}"


def connect() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection, as every session of dices opens one.

    Without DuckDB's asynchronous I/O threads: they serve remote files, and dices reads
    only local ones. DuckDB starts 8 of them at every connection and joins them when it
    closes, a cost in every small answer (bench/startup.py); reading the stored files
    takes as long without them (bench/output.py)."""
    import duckdb

    con = duckdb.connect(":memory:", config={"async_threads": 0})
    # DuckDB draws its progress bar on stdout (a file or a pipe too), into the data.
    con.execute("SET enable_progress_bar = false")
    return con


def run_script(
    con: duckdb.DuckDBPyConnection,
    statements: Sequence[str],
    parameters: dict[str, Any] | None = None,
) -> None:
    """Run our own statements, in order, in one call to DuckDB; `parameters` are bound in
    the last one (DuckDB binds none in the others)."""
    con.execute(";\n".join(statement.strip().rstrip(";") for statement in statements), parameters)


def sql_literals(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def chosen_datasets(
    store: Store,
    dataset: str,
    needs: Sequence[str] = tuple(DATASETS),
    columns: Sequence[str] = (),
) -> list[str]:
    """The datasets a query over `dataset` ('350', '990' or 'all') reads.

    `needs` are the datasets the query applies to, and `columns` the rater columns it breaks
    results down by: with 'all', a dataset that lacks one is left out (DICES-350 has no
    rater_locale); a dataset named, or every one, lacking it is a usage error.
    """
    available = store.available()
    if not available:
        others = [family_of(name).title_of(name) for name in store.ingested()]
        raise NothingIngestedError(store.root, others)
    wanted = available if dataset == "all" else [dataset]
    chosen = [name for name in wanted if name in needs]
    if not chosen:
        only = "/".join(f"DICES-{name}" for name in needs)
        raise UsageError(f"this query applies to {only} only, not DICES-{wanted[0]}")
    lacking = {name: missing_group_column(DATASETS[name], columns) for name in chosen}
    if all(lacking.values()):
        raise UsageError(str(lacking[chosen[0]]))
    return [name for name in chosen if lacking[name] is None]


def open_session(
    store: Store,
    dataset: str,
    selection: RaterSelection | None = None,
    needs: Sequence[str] = tuple(DATASETS),
    columns: Sequence[str] = (),
    named: Collection[str] | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> Session:
    """A session over the `chosen_datasets`, seeing the raters of a resolved `selection`
    (`dices_cli.raters.selection.resolve` turns a minimum quality into rater ids first); `named`
    and `connection` as for `Session`."""
    if selection is not None and selection.min_quality is not None:
        raise ValueError("a minimum quality must be resolved into rater ids first")
    chosen = chosen_datasets(store, dataset, needs, columns)
    return Session(store, chosen, selection, named, connection)
