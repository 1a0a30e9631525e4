"""`dices sql --table NAME=FILE`: the user's file, read by dices, joined in SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.queries.test_sandbox_tempdir import DISABLED

DATA = Path(__file__).resolve().parents[2] / "dices_cli" / "data"
DEMO = DATA / "demo-predictions.csv"


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the packaged DICES-350 sample (40 conversations)."""
    data = tmp_path_factory.mktemp("data")
    result = CliRunner().invoke(
        app, ["ingest", str(DATA / "dices_350_sample.csv.gz"), "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    return data


def sql(runner: CliRunner, data: Path, statement: str, *tables: str) -> object:
    args = ["sql", statement, "--data", str(data), "-f", "json"]
    for table in tables:
        args += ["--table", table]
    return runner.invoke(app, args)


def test_predictions_join_the_items(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    scores = tmp_path / "scores.jsonl"
    scores.write_text('{"item_id": 13, "judge": "x"}\n', encoding="utf-8")
    result = sql(
        runner,
        sample,
        "SELECT p.model, count(*) AS n, count(s.judge) AS judged FROM p "
        "JOIN items i USING (item_id) LEFT JOIN s USING (item_id) GROUP BY ALL ORDER BY ALL",
        f"p={DEMO}",
        f"s={scores}",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"model": "five-raters", "n": 40, "judged": 1},
        {"model": "five-raters-flipped", "n": 40, "judged": 1},
    ]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("ratings_wide=x.csv", "the table name 'ratings_wide' is taken"),
        ("Items=x.csv", "the table name 'Items' is taken"),
        ("1p=x.csv", "a table name is letters, digits and _, not starting with a digit: '1p'"),
        ("p-q=x.csv", "a table name is letters, digits and _, not starting with a digit: 'p-q'"),
        ("select=x.csv", "'select' is an SQL keyword; choose another table name"),
        ("p", "give a table as NAME=FILE, not 'p'"),
    ],
)
def test_a_bad_name_is_a_usage_error(
    table: str, message: str, runner: CliRunner, sample: Path
) -> None:
    result = sql(runner, sample, "SELECT 1", table)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: {message}")


def test_the_same_name_twice_is_a_usage_error(runner: CliRunner, sample: Path) -> None:
    result = sql(runner, sample, "SELECT 1", f"p={DEMO}", f"P={DEMO}")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: the table name 'P' is taken")


def test_a_missing_file_is_an_error(runner: CliRunner, sample: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nothing.csv"
    result = sql(runner, sample, "SELECT 1", f"p={missing}")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: cannot read {missing}: No such file or directory\n"


def test_an_unreadable_parquet_file_is_an_error(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    result = sql(runner, sample, "SELECT 1", f"p={bad}")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {bad} cannot be read as Parquet: ")


def test_the_statement_still_cannot_read_the_file(runner: CliRunner, sample: Path) -> None:
    """The file is read by dices, before the lock: the statement cannot read it by path."""
    for reader in (f"read_csv('{DEMO}')", f"'{DEMO}'"):
        result = sql(runner, sample, f"SELECT count(*) FROM {reader}", f"p={DEMO}")
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr.startswith("Error: the query failed: ")
        assert DISABLED in result.stderr


def test_schema_lists_the_tables(runner: CliRunner, sample: Path) -> None:
    result = runner.invoke(
        app, ["sql", "--schema", "--data", str(sample), "--table", f"p={DEMO}", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout) if r["view"] == "p"]
    assert [(r["column"], r["type"]) for r in rows] == [
        ("model", "VARCHAR"),
        ("item_id", "BIGINT"),
        ("label", "VARCHAR"),
        ("score", "DOUBLE"),
    ]


def test_the_table_file_is_never_the_output(
    runner: CliRunner, sample: Path, tmp_path: Path
) -> None:
    table = tmp_path / "p.csv"
    table.write_bytes(DEMO.read_bytes())
    args = ["sql", "SELECT 1", "--data", str(sample), "--table", f"p={table}"]
    result = runner.invoke(app, [*args, "-o", str(table), "--force"])
    assert result.exit_code == 1
    assert result.stderr == f"Error: -o {table} is an input of this command; choose another file\n"
    assert table.read_bytes() == DEMO.read_bytes()
