"""Which reader parses a DICES file (`dices_cli.formats.dices.csvparse`): Polars, whose result
the byte counts must prove whole, or Python's strict csv reader.

Polars turns every line into a row of every column before its row limit applies, so a file
with more lines than DICES data could hold (blank lines, lines of spaces or of commas) goes
to the strict reader without Polars parsing it; its counts come from the pass that hashes
the file, before Polars would start. The results are those of the strict reader, which
Polars' untrusted result was handed to before: blank lines are skipped, other lines are
records with their problems. Memory: tests/hostile/test_bounded_input.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fixtures.dices_csv import build

from dices_cli.formats.dices import csvparse
from dices_cli.formats.dices.csvparse import LINE
from dices_cli.formats.validate import CheckedFile, check_file
from dices_cli.problems import ProblemType
from dices_cli.read.source import open_source

SAMPLE = files("dices_cli") / "data" / "dices_350_sample.csv.gz"
VALID = build("350", items=4, raters=5)  # 20 records on 61 lines
RECORDS, LINES = 20, VALID.count(b"\n")
TENTH = VALID.index(b"\n10,") + 1  # where the record of id 10 starts
BROKEN = 2_000  # lines: far more than one in MIN_LINE_BYTES
COMMAS = b"," * 40 + b"\n"  # a record of 41 empty cells


def readers(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each reader is asked to parse a file, counted from now on."""
    calls: Counter[str] = Counter()

    def counted(name: str, reader: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return reader(*args, **kwargs)

        return call

    monkeypatch.setattr(pl, "read_csv", counted("polars", pl.read_csv))
    monkeypatch.setattr(csvparse, "csv_records", counted("strict", csvparse.csv_records))
    return calls


def checked(data: bytes, tmp_path: Path, name: str = "ratings.csv") -> CheckedFile:
    path = tmp_path / name
    path.write_bytes(data)
    with open_source(path) as source:
        return check_file(source)


def valid_rows(result: CheckedFile) -> pl.DataFrame:
    """The valid records' cells as strings (each parse has Categorical codes of its own)."""
    return result.valid_cells().drop(LINE).with_columns(pl.col(pl.Categorical).cast(pl.String))


def test_a_clean_file_is_parsed_by_polars_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = readers(monkeypatch)
    result = checked(VALID, tmp_path)
    assert calls == {"polars": 1}
    assert (result.report.ok, result.report.rows_read) == (True, RECORDS)


def test_real_contexts_with_their_line_breaks_are_parsed_by_polars_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged sample: 40 real DICES-350 conversations, whose contexts hold a line
    break every few hundred bytes; gzip, so counted as it is spooled."""
    calls = readers(monkeypatch)
    result = checked(SAMPLE.read_bytes(), tmp_path, "sample.csv.gz")
    assert calls == {"polars": 1}
    assert (result.report.ok, result.report.rows_read) == (True, 4920)


BLANK = {
    "at the end": VALID + b"\n" * BROKEN,
    "in the middle": VALID[:TENTH] + b"\n" * BROKEN + VALID[TENTH:],
    "CRLF": VALID + b"\r\n" * BROKEN,
    "lone CR": VALID + b"\r" * BROKEN,
}


@pytest.mark.parametrize("where", BLANK)
def test_blank_lines_go_to_the_strict_reader_and_are_skipped(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = checked(VALID, tmp_path, "clean.csv")
    calls = readers(monkeypatch)

    result = checked(BLANK[where], tmp_path)

    assert calls == {"strict": 1}
    assert result.report.problems == clean.report.problems  # warnings only
    assert (result.report.rows_read, result.report.rows_rejected) == (RECORDS, 0)
    assert valid_rows(result).equals(valid_rows(clean))
    shift = BROKEN if where == "in the middle" else 0
    assert result.valid_cells().get_column(LINE).to_list() == [
        line + (shift if line >= VALID[:TENTH].count(b"\n") + 1 else 0)
        for line in clean.valid_cells().get_column(LINE)
    ]


def test_lines_of_spaces_go_to_the_strict_reader_as_broken_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = checked(VALID, tmp_path, "clean.csv")
    calls = readers(monkeypatch)

    result = checked(VALID + b" \n" * BROKEN, tmp_path)

    assert calls == {"strict": 1}
    report = result.report
    assert [(p.type, p.line, p.value, p.message) for p in report.problems] == [
        (ProblemType.WRONG_FIELD_COUNT, line, "1", "the record has 1 fields but the header has 41")
        for line in range(LINES + 1, LINES + 1 + BROKEN)
    ]
    assert (report.rows_read, report.rows_rejected) == (RECORDS + BROKEN, BROKEN)
    assert valid_rows(result).equals(valid_rows(clean))


def test_lines_of_commas_go_to_the_strict_reader_as_records_of_empty_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = checked(VALID, tmp_path, "clean.csv")
    calls = readers(monkeypatch)

    result = checked(VALID + COMMAS * BROKEN, tmp_path)

    assert calls == {"strict": 1}
    report = result.report
    assert {p.type for p in report.problems} == {ProblemType.MISSING_VALUE}
    assert {p.line for p in report.problems} == set(range(LINES + 1, LINES + 1 + BROKEN))
    first = [(p.column, p.message) for p in report.problems if p.line == LINES + 1]
    assert first[:2] == [("id", "id must not be empty"), ("rater_id", "rater_id must not be empty")]
    assert len(report.problems) == len(first) * BROKEN
    assert (report.rows_read, report.rows_rejected) == (RECORDS + BROKEN, BROKEN)
    assert valid_rows(result).equals(valid_rows(clean))
