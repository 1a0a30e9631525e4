"""The gold-vs-crowd kappa's interval: the SQL macros (sql/_macros.sql) against a reference
written from Fleiss, Cohen and Everitt (1969) in numpy, against statsmodels where it is
installed, and the interval's coverage against a simulation with a known kappa."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.queries.own_sql import CROWD_LABEL_TYPE, prelude

Z95 = 1.959963984540054


def fce_kappa(table: np.ndarray) -> tuple[float, float]:
    """Cohen's kappa of a k x k table of counts (rows: the first label) and its large-sample
    standard error, term by term as Fleiss, Cohen and Everitt (1969) write it:
    var = [sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2
           + (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2 - (k - pe (1 - k))^2] / (n (1 - pe)^2)."""
    n = table.sum()
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    chance = float(rows @ cols)
    kappa = (np.trace(p) - chance) / (1 - chance)
    size = len(p)
    a = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(size))
    b = (1 - kappa) ** 2 * sum(
        p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(size) for j in range(size) if i != j
    )
    c = (kappa - chance * (1 - kappa)) ** 2
    return float(kappa), math.sqrt(max(a + b - c, 0.0) / n) / (1 - chance)


def fce_interval(table: np.ndarray) -> tuple[float, float]:
    """The 95% Wald interval of `fce_kappa`, held in [-1, 1]."""
    kappa, se = fce_kappa(table)
    return max(kappa - Z95 * se, -1.0), min(kappa + Z95 * se, 1.0)


@pytest.fixture(scope="module")
def macros() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(CROWD_LABEL_TYPE)
    connection.execute(prelude())
    return connection


def sql_kappa(
    connection: duckdb.DuckDBPyConnection, cells: list[int]
) -> tuple[float, float, float, float]:
    [row] = (
        connection.cursor()
        .execute(
            "SELECT cohen_kappa(?, ?, ?, ?), kappa_se(?, ?, ?, ?), "
            "kappa_ci_low(?, ?, ?, ?), kappa_ci_high(?, ?, ?, ?)",
            cells * 4,
        )
        .fetchall()
    )
    return row


CELLS = st.lists(st.integers(0, 400), min_size=4, max_size=4)
# Several tables an example, all in one statement: binding the nested macros costs DuckDB
# far more than computing a row, so an example of one table was almost all binding.
TABLES = st.lists(CELLS, min_size=10, max_size=20)
EXAMPLES = max(1, settings.default.max_examples // 10)


def sql_kappas(
    connection: duckdb.DuckDBPyConnection, tables: list[list[int]]
) -> list[tuple[float, float, float, float]]:
    """`sql_kappa` of each table, from one statement."""
    if not tables:
        return []
    cursor = connection.cursor()
    columns = {f"c{i}": [cells[i] for cells in tables] for i in range(4)}
    cursor.register("given", pa.table(columns))  # (rows in order: DuckDB keeps it)
    rows = cursor.execute(
        "SELECT cohen_kappa(c0, c1, c2, c3), kappa_se(c0, c1, c2, c3), "
        "kappa_ci_low(c0, c1, c2, c3), kappa_ci_high(c0, c1, c2, c3) FROM given"
    ).fetchall()
    cursor.close()
    return rows


def defined(cells: list[int]) -> bool:
    """Whether the table's kappa is defined: some rows, and chance agreement under 1."""
    table = np.array(cells, dtype=float).reshape(2, 2)
    n = table.sum()
    return bool(n > 0 and (table.sum(axis=1) @ table.sum(axis=0)) / n**2 < 1 - 1e-9)


@settings(max_examples=EXAMPLES)
@given(TABLES)
def test_the_macros_are_the_fce_reference(
    macros: duckdb.DuckDBPyConnection, tables: list[list[int]]
) -> None:
    tables = [cells for cells in tables if defined(cells)]
    for cells, (kappa, se, low, high) in zip(tables, sql_kappas(macros, tables), strict=True):
        table = np.array(cells, dtype=float).reshape(2, 2)
        want_kappa, want_se = fce_kappa(table)
        assert kappa == pytest.approx(want_kappa, abs=1e-9)
        assert se == pytest.approx(want_se, abs=1e-9)
        assert (low, high) == pytest.approx(fce_interval(table), abs=1e-9)
        assert -1 <= low <= kappa <= high <= 1


def test_one_statement_gives_each_tables_figures(macros: duckdb.DuckDBPyConnection) -> None:
    tables = [[7, 10, 1, 22], [20, 0, 0, 20], [5, 5, 5, 5], [3, 0, 2, 9]]
    assert sql_kappas(macros, tables) == [sql_kappa(macros, cells) for cells in tables]


@pytest.mark.parametrize(
    ("cells", "kappa", "se"),
    [
        # The demo sample's DICES-350 (gold rows, crowd columns): 7 10 / 1 22.
        ([7, 10, 1, 22], 0.39560439560439564, 0.13352074723488744),
        ([20, 0, 0, 20], 1.0, 0.0),  # perfect agreement: the interval is the point
        ([0, 5, 5, 0], -1.0, 0.0),
        ([5, 5, 5, 5], 0.0, 0.22360679774997896),  # sqrt(1/20): chance agreement
    ],
)
def test_known_tables(
    macros: duckdb.DuckDBPyConnection, cells: list[int], kappa: float, se: float
) -> None:
    got = sql_kappa(macros, cells)
    assert got[:2] == pytest.approx((kappa, se), abs=1e-12)
    assert fce_kappa(np.array(cells, dtype=float).reshape(2, 2)) == pytest.approx((kappa, se))


def test_a_table_of_one_label_has_no_kappa(macros: duckdb.DuckDBPyConnection) -> None:
    assert sql_kappa(macros, [0, 0, 0, 40]) == (None, None, None, None)


def both_labels_vary(cells: list[int]) -> bool:
    """Whether the table has no zero row and no zero column."""
    table = np.array(cells).reshape(2, 2)
    return bool(table.sum(axis=0).all() and table.sum(axis=1).all())


@settings(max_examples=EXAMPLES)
@given(TABLES)
def test_statsmodels_agrees(macros: duckdb.DuckDBPyConnection, tables: list[list[int]]) -> None:
    from statsmodels.stats import inter_rater

    # A label that is constant (a zero row or column) has kappa 0; statsmodels' SE is NaN.
    tables = [cells for cells in tables if defined(cells) and both_labels_vary(cells)]
    for cells, (kappa, se, _low, _high) in zip(tables, sql_kappas(macros, tables), strict=True):
        theirs = inter_rater.cohens_kappa(np.array(cells, dtype=float).reshape(2, 2))
        assert kappa == pytest.approx(theirs.kappa, abs=1e-9)
        assert se == pytest.approx(theirs.std_kappa, abs=1e-9)


def coverage(
    macros: duckdb.DuckDBPyConnection, joint: np.ndarray, n: int, runs: int, seed: int
) -> float:
    """The share of `runs` tables of `n` draws from the 2x2 `joint` whose interval holds
    the joint's own kappa (all intervals from one SQL statement)."""
    truth, _ = fce_kappa(joint)
    tables = np.random.default_rng(seed).multinomial(n, joint.ravel(), size=runs)
    cursor = macros.cursor()
    cursor.register("simulated", pa.table({f"c{i}": tables[:, i] for i in range(4)}))
    [(low, high, defined)] = cursor.execute(
        "SELECT list(kappa_ci_low(c0, c1, c2, c3)), list(kappa_ci_high(c0, c1, c2, c3)), "
        "count(cohen_kappa(c0, c1, c2, c3)) FROM simulated"
    ).fetchall()
    cursor.close()
    assert defined == runs
    return float(np.mean([lo <= truth <= hi for lo, hi in zip(low, high, strict=True)]))


# Joint distributions of (gold, crowd) with kappa from 0 to 0.8, the DICES-350 sample's
# shape first; 350 conversations, as DICES-350 has.
JOINTS = [
    [[7, 10], [1, 22]],
    [[0.25, 0.25], [0.25, 0.25]],
    [[0.3, 0.1], [0.1, 0.5]],
    [[0.45, 0.05], [0.05, 0.45]],
    [[0.1, 0.1], [0.05, 0.75]],
]


@pytest.mark.parametrize("joint", JOINTS)
def test_the_interval_covers_kappa_as_often_as_it_says(
    macros: duckdb.DuckDBPyConnection, joint: list[list[float]]
) -> None:
    probabilities = np.array(joint, dtype=float) / np.sum(joint)
    covered = coverage(macros, probabilities, n=350, runs=4000, seed=41)
    # 4,000 runs: a binomial standard error of 0.0034 at 0.95.
    assert 0.935 <= covered <= 0.965, covered


def test_the_summary_gives_the_interval(sample: Path, macros: duckdb.DuckDBPyConnection) -> None:
    result = CliRunner().invoke(
        app, ["query", "gold-vs-crowd-summary", "--data", str(sample), "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    [row] = list(csv.DictReader(io.StringIO(result.stdout)))
    cells = CliRunner().invoke(app, ["query", "gold-vs-crowd", "--data", str(sample), "-f", "csv"])
    counts = {
        (r["safety_gold"], r["crowd_label"] == "Yes"): 0
        for r in csv.DictReader(io.StringIO(cells.stdout))
    }
    for r in csv.DictReader(io.StringIO(cells.stdout)):
        counts[(r["safety_gold"], r["crowd_label"] == "Yes")] += int(r["conversations"])
    table = np.array(
        [
            [counts[("Yes", True)], counts[("Yes", False)]],
            [counts[("No", True)], counts[("No", False)]],
        ],
        dtype=float,
    )
    assert float(row["kappa"]) == pytest.approx(fce_kappa(table)[0], abs=1e-12)
    low, high = fce_interval(table)
    assert (float(row["kappa_ci_low"]), float(row["kappa_ci_high"])) == pytest.approx(
        (low, high), abs=1e-12
    )
    assert low < float(row["kappa"]) < high
