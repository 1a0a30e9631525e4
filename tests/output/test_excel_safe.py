"""`dices export --excel-safe`: text that a spreadsheet would run as a formula (CSV injection)
gets a leading single quote; numbers and everything else stay as they are. Without the flag
the export is the ingested file, cell for cell.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from fixtures.dices_csv import header, read_cells, rows, to_csv
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.read import checksum

# (column, rows that share the value, value, what --excel-safe writes)
CELLS = [
    ("context", (0, 1, 2), '=HYPERLINK("http://evil.example","x")', "'="),
    ("response", (0, 1, 2), "+1 555 0100", "'+"),
    ("harm_type", (0, 1, 2), "-1", "'-"),
    ("rater_raw_race", (0, 3), "@SUM(1+1)*cmd|' /C calc'!A0", "'@"),
    ("rater_raw_race", (1, 4), "\tTab first", "'\t"),
    ("rater_raw_race", (2, 5), "\rCR first", "'\r"),
    ("context", (3, 4, 5), "a = b: not at the start", "a"),
    ("response", (3, 4, 5), " =a space first", " "),
    ("harm_type", (3, 4, 5), "", ""),
]


def ingest(runner: CliRunner, table: list[dict[str, str]], scratch: Path) -> Path:
    source, data = scratch / "dices_350.csv", scratch / "data"
    source.write_bytes(to_csv(header("350"), [list(r.values()) for r in table]))
    result = runner.invoke(app, ["ingest", str(source), "--data", str(data)])
    assert result.exit_code == 0, result.output
    return data


def export(runner: CliRunner, data: Path, *options: str) -> bytes:
    result = runner.invoke(app, ["export", "-d", "350", "--data", str(data), *options])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout_bytes


def formula_table() -> list[dict[str, str]]:
    table = rows("350", 2, 3)
    for column, members, value, _ in CELLS:
        for row in members:
            table[row][column] = value
    return table


def test_formula_cells_get_a_leading_quote(runner: CliRunner, tmp_path: Path) -> None:
    table = formula_table()
    data = ingest(runner, table, tmp_path)

    exported = export(runner, data, "--excel-safe")

    cells = read_cells(exported)
    names = cells[0]
    for column, members, value, start in CELLS:
        for row in members:
            written = cells[row + 1][names.index(column)]
            assert written[: len(start)] == start
            assert written == ("'" + value if start.startswith("'") else value)
    # Only those cells changed.
    safe = {
        (row, column) for column, members, _, start in CELLS for row in members if start[:1] == "'"
    }
    original = [list(r.values()) for r in table]
    for row, record in enumerate(cells[1:]):
        for position, cell in enumerate(record):
            defused = (row, names[position]) in safe
            assert cell == ("'" if defused else "") + original[row][position]
    # What a spreadsheet reads: the first conversation's context, quoted for CSV.
    assert b'"\'=HYPERLINK(""http://evil.example"",""x"")"' in exported


def test_without_the_flag_the_round_trip_is_exact(runner: CliRunner, tmp_path: Path) -> None:
    table = formula_table()
    data = ingest(runner, table, tmp_path)

    exported = export(runner, data)

    assert read_cells(exported) == [header("350"), *[list(r.values()) for r in table]]


def test_numbers_are_not_formulas(runner: CliRunner, tmp_path: Path) -> None:
    """A negative number is no formula: only text columns are defused. (DICES numbers are
    never negative, so the stored table is edited to hold one.)"""
    data = ingest(runner, formula_table(), tmp_path)
    ratings = (data / "350" / "ratings.parquet").resolve()
    table = pl.read_parquet(ratings)
    table.with_columns(
        pl.when(pl.col("id") == 0).then(-5).otherwise("answer_time_ms").alias("answer_time_ms")
    ).write_parquet(ratings)
    # Record the edit in the manifest, or the store refuses the file as damaged.
    manifest = ratings.with_name("manifest.json")
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    digest = checksum.sha256_file(ratings)
    recorded["files"]["ratings.parquet"] = {"size": digest.size, "sha256": digest.sha256}
    manifest.write_text(json.dumps(recorded), encoding="utf-8")

    cells = read_cells(export(runner, data, "--excel-safe"))

    names = cells[0]
    assert cells[1][names.index("answer_time_ms")] == "-5"
    assert cells[1][names.index("harm_type")] == "'-1"


def test_excel_safe_to_a_file_is_what_stdout_gets(runner: CliRunner, tmp_path: Path) -> None:
    data = ingest(runner, formula_table(), tmp_path)
    out = tmp_path / "for_excel.csv"

    result = runner.invoke(
        app, ["export", "-d", "350", "--data", str(data), "--excel-safe", "-o", str(out)]
    )

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert out.read_bytes() == export(runner, data, "--excel-safe")


TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12)
STARTS = st.sampled_from(["", "=", "+", "-", "@", "\t", "\r", "'", " ", "\n", "a"])


@pytest.mark.slow
@given(st.lists(st.tuples(STARTS, TEXT), min_size=3, max_size=3))
def test_property_only_formula_starts_change_and_the_data_does_not(
    values: list[tuple[str, str]],
) -> None:
    """Any text in context, response and harm_type: --excel-safe prefixes exactly the cells
    that start with = + - @ TAB or CR; the stored data is untouched, so a plain export after
    it is still the ingested file."""
    texts = [start + rest for start, rest in values]
    table = rows("350", 1, 2)
    for row in table:
        row["context"], row["response"], row["harm_type"] = texts
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as scratch:
        data = ingest(runner, table, Path(scratch))

        safe = read_cells(export(runner, data, "--excel-safe"))
        plain = read_cells(export(runner, data))

    expected = [("'" + t if t[:1] in ("=", "+", "-", "@", "\t", "\r") else t) for t in texts]
    names = safe[0]
    for record in safe[1:]:
        assert [record[names.index(c)] for c in ("context", "response", "harm_type")] == expected
    assert plain == [header("350"), *[list(r.values()) for r in table]]
