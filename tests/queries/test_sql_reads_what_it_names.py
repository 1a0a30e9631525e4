"""`dices sql` opens only the stored files of the views a statement names (and of the views
those read), and makes the shared macros only for a statement that calls one; a statement
that may look at the catalogue, or that runs SQL given as a value, still sees every view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.queries import engine
from dices_cli.queries.engine import (
    STORED_TABLES,
    VIEWS,
    RaterSelection,
    Session,
    statement_names,
    views_and_tables,
)
from dices_cli.queries.own_sql import macro_names
from dices_cli.store.datasets import Store

EVERY = (set(VIEWS), set(STORED_TABLES))


@pytest.fixture
def parser() -> Iterator[duckdb.DuckDBPyConnection]:
    with duckdb.connect(":memory:") as connection:
        yield connection


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("SELECT * FROM ratings_wide", {"ratings_wide"}),
        ("SELECT * FROM ratings JOIN raters USING (dataset, rater_id)", {"ratings", "raters"}),
        (
            "WITH x AS (SELECT * FROM Items) SELECT * FROM x "
            "WHERE item_id IN (SELECT item_id FROM internal.ratings_350)",
            {"items", "x", "ratings_350"},
        ),
        ("SELECT (SELECT count(*) FROM raters) AS n", {"raters", "count_star"}),
        ("SELECT 1", set()),
        ("SELECT Plurality(1, 2, 3), max(x) OVER () FROM p", {"plurality", "max", "p"}),
        ('SELECT "Entropy_Bits"(1, 2, 3)', {"entropy_bits"}),
    ],
)
def test_the_tables_and_functions_a_statement_names(
    statement: str, named: set[str], parser: duckdb.DuckDBPyConnection
) -> None:
    assert statement_names(statement, parser) == named


@pytest.mark.parametrize(
    "statement",
    [
        "SHOW TABLES",
        "DESCRIBE items",
        "SUMMARIZE ratings",
        "SELECT * FROM duckdb_views()",
        "SELECT * FROM information_schema.columns",
        "SELECT * FROM pragma_table_info('items')",
        "SELECT * FROM query_table('ite' || 'ms')",
        "SELECT * FROM items, query('SELECT count(*) AS n FROM ratings')",
    ],
)
def test_a_statement_that_may_see_the_catalogue_names_no_tables(
    statement: str, parser: duckdb.DuckDBPyConnection
) -> None:
    assert statement_names(statement, parser) is None


@pytest.mark.parametrize(
    ("named", "needed"),
    [
        (None, EVERY),
        (set(), EVERY),
        ({"p"}, EVERY),  # a user's table only
        ({"items"}, ({"items"}, {"items"})),
        (
            {"ratings_wide", "p"},
            ({"ratings_wide", "ratings", "raters", "items"}, set(STORED_TABLES)),
        ),
        ({"published_removed"}, ({"published_removed"}, set())),
        ({"raters", "ratings_990"}, ({"raters"}, {"raters", "ratings_990"})),
        ({"ratings_350"}, (set(), {"ratings_350"})),
    ],
)
def test_the_views_and_stored_tables_a_statement_needs(
    named: set[str] | None, needed: tuple[set[str], set[str]]
) -> None:
    assert views_and_tables(named) == needed


def opened_files(
    sample: Path, statement: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[str]]:
    """The output of `dices sql STATEMENT`, and the stored files it opened."""
    opened: list[str] = []
    stored_view = engine.stored_view

    def record(name: str) -> str:
        table, dataset = name.rsplit("_", 1)
        opened.append(f"{dataset}/{table}.parquet")
        return stored_view(name)

    monkeypatch.setattr(engine, "stored_view", record)
    result = CliRunner().invoke(app, ["sql", statement, "--data", str(sample), "-f", "csv"])
    assert result.exit_code == 0, result.output
    return result.stdout, sorted(opened)


def test_a_statement_opens_only_the_files_it_reads(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert opened_files(sample, "SELECT count(*) AS n FROM items", monkeypatch) == (
        "n\n120\n",
        ["350/items.parquet", "990/items.parquet"],
    )
    assert opened_files(sample, "SELECT count(*) AS n FROM internal.raters_990", monkeypatch) == (
        "n\n173\n",
        ["990/raters.parquet"],
    )
    everything = sorted(f"{d}/{t}.parquet" for d in ("350", "990") for t in STORED_TABLES)
    assert opened_files(sample, "SELECT count(*) AS n FROM ratings_wide", monkeypatch) == (
        "n\n10775\n",
        everything,
    )
    assert opened_files(sample, "SHOW TABLES", monkeypatch) == (
        "name\nitems\npublished_removed\nraters\nratings\nratings_wide\n",
        everything,
    )


def test_a_statement_naming_a_table_inside_sql_given_as_a_value_sees_it(sample: Path) -> None:
    """`query('...')` runs SQL the parser sees only as a string: every view is made."""
    statement = "SELECT n FROM items, query('SELECT count(*) AS n FROM ratings') LIMIT 1"
    result = CliRunner().invoke(app, ["sql", statement, "--data", str(sample), "-f", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "n\n10775\n"


def made(session: Session) -> tuple[list[str], list[str]]:
    """The tables and views of the session's main schema, and the macros of the prelude."""
    tables = session.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' "
        "ORDER BY 1"
    ).fetchall()
    macros = session.con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() "
        "WHERE list_contains($macros, function_name) ORDER BY 1",
        {"macros": sorted(macro_names())},
    ).fetchall()
    return [name for (name,) in tables], [name for (name,) in macros]


# A statement that uses one macro of sql/_macros.sql gets them all.
EVERY_MACRO = [
    "cohen_kappa", "crowd_label_of", "entropy_bits", "kappa_chance", "kappa_ci_high",
    "kappa_ci_low", "kappa_se", "kappa_se_of", "neg_p_log2_p", "plurality",
]  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "selection", "tables", "macros"),
    [
        ("SELECT count(*) FROM ratings", RaterSelection(), ["ratings"], []),
        (
            "SELECT count(*) FROM ratings",
            RaterSelection(exclude_removed=True),
            ["published_removed", "ratings"],
            [],
        ),
        (
            "SELECT plurality(1, 2, 3) FROM items",
            RaterSelection(),
            ["items"],
            EVERY_MACRO,
        ),
        ("SELECT * FROM published_removed", RaterSelection(), ["published_removed"], []),
        (
            "SHOW TABLES",
            RaterSelection(),
            ["items", "published_removed", "raters", "ratings", "ratings_wide"],
            EVERY_MACRO,
        ),
    ],
)
def test_a_session_makes_the_tables_and_macros_its_statement_uses(
    statement: str,
    selection: RaterSelection,
    tables: list[str],
    macros: list[str],
    sample: Path,
    parser: duckdb.DuckDBPyConnection,
) -> None:
    named = statement_names(statement, parser)
    session = Session(Store(sample), ["350", "990"], selection, named=named)
    assert made(session) == (tables, macros)


def test_a_user_statement_may_call_a_shared_macro(sample: Path) -> None:
    statement = "SELECT plurality(1, 2, 3) AS p, entropy_bits(1, 1, 0) AS h"
    result = CliRunner().invoke(app, ["sql", statement, "--data", str(sample), "-f", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "p,h\nUnsure,1.0\n"
