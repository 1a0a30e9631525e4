"""A corpus of bad inputs, one or more per problem type.

Each bad file is a small valid DICES file (built in tests/fixtures/dices_csv.py) with one
thing broken. For every case, `dices ingest` exits 1, prints `Error: ...` and the exact
problem lines on stderr (line number, column, value, message), prints no traceback and
writes nothing; `dices validate --format csv` exits 1 and lists the same problems.

In the DICES-350 files every context holds two real newlines, so each record spans three
lines: record i (0-based) starts on line 2 + 3 * i. That makes a wrong line count visible.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.dices_csv import build, header, line_of, rows, to_csv
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.problems import WARNING_TYPES, ProblemType
from dices_cli.read.lines import MAX_RECORD_BYTES

RATER_0, RATER_1 = "296708581782793", "296708581783793"
RESPONSE = "I'm not picking up on your vibe, human."
LINE_350 = {i: 2 + 3 * i for i in range(7)}  # where record i starts in a DICES-350 file
LINE_990 = {i: 2 + i for i in range(7)}  # DICES-990 contexts hold no real newline
ANSWER_VALUES = "'No', 'Yes', 'Unsure'"
Q1_VALUES = (
    "'None of the above - it is in English, it makes sense, and I am familiar with the topic', "
    "'It is nonsensical (repetitive, incomprehensible, gibberish)', "
    "'It is in a language other than English', "
    "'I am not familiar with the topic of the conversation'"
)


# --- building bad files ------------------------------------------------------------------


def with_cells(changes: dict[tuple[int, str], str], dataset: str = "350") -> bytes:
    """The 2-conversation x 3-rater file with some cells replaced: {(row, column): value}."""
    body = rows(dataset, 2, 3)
    for (row, column), value in changes.items():
        body[row][column] = value
    return to_csv(header(dataset), [list(r.values()) for r in body])


def with_raw(row: int, column: str, raw: bytes, dataset: str = "350") -> bytes:
    """The file with one cell replaced by raw bytes, written as they are (no quoting)."""
    return with_cells({(row, column): "@@RAW@@"}, dataset).replace(b"@@RAW@@", raw)


def with_body(edit: Callable[[list[list[str]]], None], dataset: str = "350") -> bytes:
    """The file with its list of records (lists of cells) changed by `edit`."""
    body = [list(r.values()) for r in rows(dataset, 2, 3)]
    edit(body)
    return to_csv(header(dataset), body)


def with_header(
    head: list[str], cells: Callable[[dict[str, str]], list[str]], dataset: str = "350"
) -> bytes:
    """The file under another header, each row (a dict) written as `cells(row)`."""
    return to_csv(head, [cells(row) for row in rows(dataset, 2, 3)])


def without(name: str, dataset: str = "350") -> bytes:
    head = [h for h in header(dataset) if h != name]
    return with_header(head, lambda r: [v for k, v in r.items() if k != name], dataset)


def plus(name: str, value: str, dataset: str = "350") -> bytes:
    return with_header([*header(dataset), name], lambda r: [*r.values(), value], dataset)


def short_row(body: list[list[str]]) -> None:
    body[4] = body[4][:3]


def long_row(body: list[list[str]]) -> None:
    body[4] = [*body[4], "surplus"]


def repeated_rating(body: list[list[str]]) -> None:
    body.append(["6", *body[0][1:]])


# --- the corpus ------------------------------------------------------------------------

Problem = tuple[str, int | None, str | None, str | None, str]  # type, line, column, value, message


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    summary: str  # the report's summary line, after "PATH: "
    problems: list[Problem]


L = LINE_350
CASES = [
    Case(
        "empty-file",
        b"",
        "1 error; 0 rows read, 0 would be rejected [1 empty-file]",
        [("empty-file", None, None, None, "the file is empty: no header, no rows")],
    ),
    Case(
        "empty-file-blank-lines",
        b"\n\r\n\n",
        "1 error; 0 rows read, 0 would be rejected [1 empty-file]",
        [("empty-file", None, None, None, "the file is empty: no header, no rows")],
    ),
    Case(
        "no-rows",
        build().split(b"\n", 1)[0] + b"\n",
        "1 error (DICES-350); 0 rows read, 0 would be rejected [1 no-rows]",
        [("no-rows", None, None, None, "the file has a header but no rows")],
    ),
    Case(
        "no-rows-blank-lines",
        build("990").split(b"\n", 1)[0] + b"\n\n\n",
        "1 error (DICES-990); 0 rows read, 0 would be rejected [1 no-rows]",
        [("no-rows", None, None, None, "the file has a header but no rows")],
    ),
    Case(
        "unknown-dataset",
        b"name,age\nann,3\n",
        "1 error; 0 rows read, 0 would be rejected [1 unknown-dataset]",
        [
            (
                "unknown-dataset",
                1,
                None,
                None,
                "the header matches neither DICES-350 nor DICES-990; "
                "check that this is a DICES file or give its dataset (350 or 990)",
            )
        ],
    ),
    Case(
        "missing-column",
        without("phase"),
        "1 error (DICES-350); 6 rows read, 0 would be rejected [1 missing-column]",
        [
            (
                "missing-column",
                1,
                "phase",
                None,
                "the header has no phase column, which DICES-350 requires",
            )
        ],
    ),
    Case(
        "missing-column-990",
        without("rater_locale", "990"),
        "1 error (DICES-990); 6 rows read, 0 would be rejected [1 missing-column]",
        [
            (
                "missing-column",
                1,
                "rater_locale",
                None,
                "the header has no rater_locale column, which DICES-990 requires",
            )
        ],
    ),
    Case(
        "unexpected-column",
        plus("comment", "ok"),
        "1 error (DICES-350); 6 rows read, 0 would be rejected [1 unexpected-column]",
        [("unexpected-column", 1, "comment", "comment", "'comment' is not a DICES-350 column")],
    ),
    Case(
        "unexpected-column-990",
        plus("safety_gold", "No", "990"),
        "1 error (DICES-990); 6 rows read, 0 would be rejected [1 unexpected-column]",
        [
            (
                "unexpected-column",
                1,
                "safety_gold",
                "safety_gold",
                "'safety_gold' is not a DICES-990 column",
            )
        ],
    ),
    Case(
        "duplicate-column",
        plus("phase", "Phase3"),
        "1 error (DICES-350); 0 rows read, 0 would be rejected [1 duplicate-column]",
        [("duplicate-column", 1, "phase", "phase", "column phase appears twice")],
    ),
    Case(
        "duplicate-column-other-case",
        plus("PHASE", "Phase3"),
        "1 error (DICES-350); 0 rows read, 0 would be rejected [1 duplicate-column]",
        [("duplicate-column", 1, "phase", "PHASE", "column phase appears twice")],
    ),
    Case(
        "duplicate-column-alias",
        plus("Q6_policy_guidelines_other_type", "No"),
        "1 error (DICES-350); 0 rows read, 0 would be rejected [1 duplicate-column]",
        [
            (
                "duplicate-column",
                1,
                "Q6_policy_guidelines_other",
                "Q6_policy_guidelines_other_type",
                "column Q6_policy_guidelines_other appears twice",
            )
        ],
    ),
    Case(
        "invalid-utf8",
        with_raw(3, "response", b"caf\xff"),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 invalid-utf8]",
        [("invalid-utf8", L[3], "response", "caf\\xff", "'caf\\xff' is not valid UTF-8")],
    ),
    Case(
        # Checked before anything else: no column could be known by such a name.
        "invalid-utf8-header",
        build().replace(b"rater_age", b"rater_\xffage", 1),
        "1 error; 0 rows read, 0 would be rejected [1 invalid-utf8]",
        [
            (
                "invalid-utf8",
                1,
                "rater_\\xffage",
                "rater_\\xffage",
                "'rater_\\xffage' is not valid UTF-8",
            )
        ],
    ),
    Case(
        "nul-character",
        with_raw(4, "rater_raw_race", b"Wh\x00ite"),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 nul-character]",
        [("nul-character", L[4], "rater_raw_race", "Wh\\x00ite", "'Wh\\x00ite' holds a NUL byte")],
    ),
    Case(
        # A NUL-filled tail longer than any record may be: refused without being held.
        "record-too-long",
        build() + b"\x00" * (MAX_RECORD_BYTES + 1),
        "1 error (DICES-350); 7 rows read, 1 would be rejected [1 record-too-long]",
        [
            (
                "record-too-long",
                L[6],
                None,
                None,
                "the record starting here is longer than 24 MiB, and a DICES record is a few "
                "KB; reading goes on at the next line",
            )
        ],
    ),
    Case(
        # An open quote in the last record runs to the end of the file.
        "unterminated-quote",
        with_raw(5, "Q_overall", b'"No'),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 unterminated-quote]",
        [("unterminated-quote", L[5], None, None, "a quoted field opened here is never closed")],
    ),
    Case(
        "unterminated-quote-header",
        b'id,"rater_id\n0,1\n',
        "1 error; 0 rows read, 0 would be rejected [1 unterminated-quote]",
        [("unterminated-quote", 1, None, None, "a quoted field opened here is never closed")],
    ),
    Case(
        "bad-quoting-header",
        build().replace(b"rater_age", b'"rater"_age', 1),
        "1 error; 0 rows read, 0 would be rejected [1 bad-quoting]",
        [
            (
                "bad-quoting",
                1,
                None,
                None,
                "the quoting of this record is broken (',' expected after '\"')",
            )
        ],
    ),
    Case(
        "bad-quoting",
        with_raw(3, "response", b'"a" b'),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 bad-quoting]",
        [
            (
                "bad-quoting",
                L[3],
                None,
                None,
                "the quoting of this record is broken (',' expected after '\"')",
            )
        ],
    ),
    Case(
        "wrong-field-count-short",
        with_body(short_row),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 wrong-field-count]",
        [
            (
                "wrong-field-count",
                L[4],
                None,
                "3",
                "the record has 3 fields but the header has 41",
            )
        ],
    ),
    Case(
        "wrong-field-count-long",
        with_body(long_row),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 wrong-field-count]",
        [
            (
                "wrong-field-count",
                L[4],
                None,
                "42",
                "the record has 42 fields but the header has 41",
            )
        ],
    ),
    *(
        Case(
            # Polars reads a short first record as a narrower file: the strict parser must
            # still say where the problem is.
            f"wrong-field-count-first-record-{name}",
            with_body(edit),
            "1 error (DICES-350); 6 rows read, 1 would be rejected [1 wrong-field-count]",
            [
                (
                    "wrong-field-count",
                    L[0],
                    None,
                    str(count),
                    f"the record has {count} fields but the header has 41",
                )
            ],
        )
        for name, edit, count in [
            ("short", lambda body: body.__setitem__(0, body[0][:-1]), 40),
            ("long", lambda body: body.__setitem__(0, [*body[0], "No"]), 42),
        ]
    ),
    Case(
        "wrong-field-count-990",
        with_body(short_row, "990"),
        "1 error (DICES-990); 6 rows read, 1 would be rejected [1 wrong-field-count]",
        [
            (
                "wrong-field-count",
                LINE_990[4],
                None,
                "3",
                "the record has 3 fields but the header has 43",
            )
        ],
    ),
    Case(
        "missing-value",
        with_cells({(3, "phase"): ""}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 missing-value]",
        [("missing-value", L[3], "phase", "", "phase must not be empty")],
    ),
    *(
        Case(
            f"not-an-integer-{name}",
            with_cells({(3, "answer_time_ms"): value}),
            "1 error (DICES-350); 6 rows read, 1 would be rejected [1 not-an-integer]",
            [
                (
                    "not-an-integer",
                    L[3],
                    "answer_time_ms",
                    value,
                    f"'{value}' is not an integer (digits only, no leading zeros or spaces)",
                )
            ],
        )
        for name, value in [
            ("letters", "12a"),
            ("decimal", "1.5"),
            ("leading-zero", "0123"),
            ("minus-zero", "-0"),
            ("plus", "+7"),
            ("space", " 7"),
        ]
    ),
    Case(
        "out-of-range-too-big",
        with_cells({(3, "answer_time_ms"): "99999999999999999999"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 out-of-range]",
        [
            (
                "out-of-range",
                L[3],
                "answer_time_ms",
                "99999999999999999999",
                "99999999999999999999 is outside the range 0..9223372036854775807",
            )
        ],
    ),
    Case(
        "out-of-range-negative",
        with_cells({(3, "answer_time_ms"): "-5"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 out-of-range]",
        [
            (
                "out-of-range",
                L[3],
                "answer_time_ms",
                "-5",
                "-5 is outside the range 0..9223372036854775807",
            )
        ],
    ),
    Case(
        # Past 9999-12-31T23:59:59Z a timestamp cannot be stored or read back as a datetime.
        "out-of-range-timestamp",
        with_cells({(3, "answer_timestamp"): "253402300800"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 out-of-range]",
        [
            (
                "out-of-range",
                L[3],
                "answer_timestamp",
                "253402300800",
                "253402300800 is outside the range 0..253402300799",
            )
        ],
    ),
    Case(
        "not-in-enum",
        with_cells({(3, "phase"): "Phase9"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 not-in-enum]",
        [
            (
                "not-in-enum",
                L[3],
                "phase",
                "Phase9",
                "'Phase9' is not an allowed value; allowed: 'Phase1', 'Phase2', 'Phase3'",
            )
        ],
    ),
    Case(
        "not-in-enum-answer-case",
        with_cells({(5, "Q_overall"): "yes"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 not-in-enum]",
        [
            (
                "not-in-enum",
                L[5],
                "Q_overall",
                "yes",
                f"'yes' is not an allowed value; allowed: {ANSWER_VALUES}",
            )
        ],
    ),
    Case(
        # Long values are shortened to 60 characters in the message, never in `value`.
        "not-in-enum-long-value",
        with_cells({(2, "Q1_whole_conversation_evaluation"): "None of the above. " * 4}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 not-in-enum]",
        [
            (
                "not-in-enum",
                L[2],
                "Q1_whole_conversation_evaluation",
                "None of the above. " * 4,
                "'None of the above. None of the above. None of the above. Non...' "
                f"is not an allowed value; allowed: {Q1_VALUES}",
            )
        ],
    ),
    Case(
        # Every row of conversation 0 says "Maybe", so it is consistent but invalid.
        "not-in-enum-conversation",
        with_cells({(row, "safety_gold"): "Maybe" for row in (0, 1, 2)}),
        "3 errors (DICES-350); 6 rows read, 3 would be rejected [3 not-in-enum]",
        [
            (
                "not-in-enum",
                line,
                "safety_gold",
                "Maybe",
                "'Maybe' is not an allowed value; allowed: 'No', 'Yes'",
            )
            for line in (L[0], L[1], L[2])
        ],
    ),
    Case(
        "not-in-enum-990",
        with_cells(
            {(1, "Q4_misinformation_overall"): "Maybe", (4, "Q4_misinformation_overall"): "Maybe"},
            "990",
        ),
        "2 errors (DICES-990); 6 rows read, 2 would be rejected [2 not-in-enum]",
        [
            (
                "not-in-enum",
                line,
                "Q4_misinformation_overall",
                "Maybe",
                f"'Maybe' is not an allowed value; allowed: {ANSWER_VALUES}",
            )
            for line in (LINE_990[1], LINE_990[4])
        ],
    ),
    Case(
        "malformed-list",
        with_cells({(row, "safety_gold_reason"): "safety_bias_beliefs" for row in (3, 4, 5)}),
        "3 errors (DICES-350); 6 rows read, 3 would be rejected [3 malformed-list]",
        [
            (
                "malformed-list",
                line,
                "safety_gold_reason",
                "safety_bias_beliefs",
                '\'safety_bias_beliefs\' is not a list literal like ["a", "b"]',
            )
            for line in (L[3], L[4], L[5])
        ],
    ),
    Case(
        "duplicate-id",
        with_cells({(4, "id"): "1"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 duplicate-id]",
        [("duplicate-id", L[4], "id", "1", f"id 1 is already used on line {L[1]}")],
    ),
    Case(
        "duplicate-rating",
        with_body(repeated_rating),
        "1 error (DICES-350); 7 rows read, 1 would be rejected [1 duplicate-rating]",
        [
            (
                "duplicate-rating",
                L[6],
                "item_id",
                "173",
                f"rater {RATER_0} already rated conversation 173 on line {L[0]}",
            )
        ],
    ),
    Case(
        "inconsistent-conversation",
        with_cells({(4, "response"): "another response"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 inconsistent-conversation]",
        [
            (
                "inconsistent-conversation",
                L[4],
                "response",
                "another response",
                f"conversation 32 has response '{RESPONSE}' on line {L[3]}, "
                "but 'another response' here",
            )
        ],
    ),
    Case(
        "inconsistent-rater",
        with_cells({(4, "rater_gender"): "Man"}),
        "1 error (DICES-350); 6 rows read, 1 would be rejected [1 inconsistent-rater]",
        [
            (
                "inconsistent-rater",
                L[4],
                "rater_gender",
                "Man",
                f"rater {RATER_1} has rater_gender 'Woman' on line {L[1]}, but 'Man' here",
            )
        ],
    ),
    Case(
        # One bad value can break two rules; both are reported, the row is rejected once.
        "two-problems-one-row",
        with_cells({(3, "rater_age"): ""}),
        "2 errors (DICES-350); 6 rows read, 1 would be rejected "
        "[1 inconsistent-rater, 1 missing-value]",
        [
            ("missing-value", L[3], "rater_age", "", "rater_age must not be empty"),
            (
                "inconsistent-rater",
                L[3],
                "rater_age",
                "",
                f"rater {RATER_0} has rater_age 'gen z' on line {L[0]}, but '' here",
            ),
        ],
    ),
]


def describe(problem: Problem) -> str:
    """How the CLI prints a problem on stderr."""
    kind, line, column, _value, message = problem
    place = "file" if line is None else f"line {line}"
    if column:
        place += f", column {column}"
    return f"  {place}: {message} [{kind}]"


def written(data: Path) -> list[str]:
    """Everything a command left in the data directory (its lock file aside)."""
    if not data.exists():
        return []
    return sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.name != ".lock")


def validate_records(stdout: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(stdout)))


def as_record(path: Path, problem: Problem, severity: str = "error") -> dict[str, str]:
    kind, line, column, value, message = problem
    return {
        "file": str(path),
        "type": kind,
        "severity": severity,
        "line": "" if line is None else str(line),
        "column": column or "",
        "value": value or "",
        "message": message,
    }


# --- the tests -------------------------------------------------------------------------


def test_the_corpus_covers_every_problem_type() -> None:
    covered = {kind for case in CASES for kind, *_ in case.problems}
    errors = {str(t) for t in ProblemType} - WARNING_TYPES
    # inconsistent-overall has its own test below; new-value and incomplete-dataset theirs in
    # tests/formats/test_real_values.py
    assert covered == errors


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ingest_refuses_bad_file(case: Case, runner: CliRunner, tmp_path: Path) -> None:
    path, data = tmp_path / "bad.csv", tmp_path / "data"
    path.write_bytes(case.data)

    result = runner.invoke(app, ["ingest", str(path), "--data", str(data)])

    assert result.exit_code == 1
    assert result.stdout == ""
    expected = [
        f"Error: {path} is not valid DICES data; nothing was written",
        f"{path}: {case.summary}",
        *(describe(p) for p in case.problems),
    ]
    assert result.stderr == "\n".join(expected) + "\n"
    assert "Traceback" not in result.output
    assert written(data) == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_lists_problems(case: Case, runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(case.data)

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    assert validate_records(result.stdout) == [as_record(path, p) for p in case.problems]
    assert result.stderr == f"{path}: {case.summary}\n"


def test_rejects_cannot_save_a_file_with_a_broken_header(runner: CliRunner, tmp_path: Path) -> None:
    """--rejects writes the good rows of a file, but not when the header itself is wrong."""
    path, data, rejects = tmp_path / "bad.csv", tmp_path / "data", tmp_path / "rejects.csv"
    path.write_bytes(plus("comment", "ok"))

    result = runner.invoke(
        app, ["ingest", str(path), "--data", str(data), "--rejects", str(rejects)]
    )

    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path} is not valid DICES data; nothing was written\n")
    assert written(data) == []
    assert not rejects.exists()


def test_rejects_cannot_save_a_file_whose_rows_are_all_bad(
    runner: CliRunner, tmp_path: Path
) -> None:
    path, data, rejects = tmp_path / "bad.csv", tmp_path / "data", tmp_path / "rejects.csv"
    path.write_bytes(with_cells({(row, "phase"): "Phase9" for row in range(6)}))

    result = runner.invoke(
        app, ["ingest", str(path), "--data", str(data), "--rejects", str(rejects)]
    )

    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: {path}: every row was rejected; nothing was written"
    assert (
        lines[1]
        == f"{path}: 6 errors (DICES-350); 6 rows read, 6 would be rejected [6 not-in-enum]"
    )
    assert len(lines) == 2 + 6
    assert written(data) == []


# A valid 2-conversation x 3-rater DICES-350 file is far smaller than the published one.
SMALL_FILE_INCOMPLETE: list[Problem] = [
    (
        "incomplete-dataset",
        None,
        None,
        f"{found} of {expected} {noun}",
        f"the file holds {found} of the {expected} {noun} of DICES-350; it may be cut short",
    )
    for found, noun, expected in [
        (2, "conversations", "350"),
        (3, "raters", "123"),
        (6, "ratings", "43,050"),
    ]
]


def test_inconsistent_overall_is_a_warning(runner: CliRunner, tmp_path: Path) -> None:
    """Q_overall disagreeing with its sub-questions is reported, counted and kept as given."""
    path, data = tmp_path / "warn.csv", tmp_path / "data"
    # Row 1 answers Yes to a sub-question (Q_overall Yes), row 2 Unsure (Q_overall Unsure).
    path.write_bytes(with_cells({(1, "Q_overall"): "No", (2, "Q_overall"): "Yes"}))

    result = runner.invoke(app, ["ingest", str(path), "--data", str(data)])

    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"DICES-350: 6 rows read = 6 written + 0 rejected; 2 conversations, 3 raters "
        f"-> {data / '350'}\n"
        "  warning: 2 rows have a Q_overall that disagrees with their sub-questions "
        "(kept as given) [inconsistent-overall]\n"
        "  warning: the file holds fewer than the published DICES-350: 2 of 350 conversations, "
        "3 of 123 raters, 6 of 43,050 ratings; it may be cut short [incomplete-dataset]\n"
    )
    manifest = json.loads((data / "350" / "manifest.json").read_text())
    assert manifest["warnings"] == {"incomplete-dataset": 3, "inconsistent-overall": 2}
    assert manifest["rows"] == {"read": 6, "written": 6, "rejected": 0}

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 0
    warnings = [
        *SMALL_FILE_INCOMPLETE,
        (
            "inconsistent-overall",
            L[1],
            "Q_overall",
            "No",
            "Q_overall is 'No' but its sub-questions imply 'Yes'",
        ),
        (
            "inconsistent-overall",
            L[2],
            "Q_overall",
            "Yes",
            "Q_overall is 'Yes' but its sub-questions imply 'Unsure'",
        ),
    ]
    assert validate_records(result.stdout) == [as_record(path, w, "warning") for w in warnings]
    assert result.stderr == (
        f"{path}: valid (DICES-350); 6 rows read, 0 would be rejected "
        "[3 incomplete-dataset, 2 inconsistent-overall]\n"
    )


# --- line numbers ------------------------------------------------------------------------


def _with_errors(eol: str, structural: bool) -> bytes:
    """4 conversations x 3 raters (12 records of 3 lines) with bad phases in rows 0, 5, 11.

    `structural` adds a NUL byte in row 7, which sends the file down the strict parser.
    """
    body = rows("350", 4, 3)
    for row in (0, 5, 11):
        body[row]["phase"] = "Phase0"
    if structural:
        body[7]["response"] = "@@NUL@@"
    for row in body:
        row["context"] = row["context"].replace("\n", eol)
    data = to_csv(header("350"), [list(r.values()) for r in body], eol)
    return data.replace(b"@@NUL@@", b"\x00")


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("structural", [False, True], ids=["fast-parse", "strict-parse"])
def test_line_numbers_count_newlines_inside_quotes(
    eol: str, structural: bool, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    data = _with_errors(eol, structural)
    path.write_bytes(data)
    # Header on line 1, every record 3 lines: rows 0, 5, 7, 11 start on 2, 17, 23, 35.
    expected = {2: "not-in-enum", 17: "not-in-enum", 35: "not-in-enum"}
    if structural:
        expected[23] = "nul-character"
    assert {line_of(data, str(row)) for row in (0, 5, 7, 11)} == {2, 17, 23, 35}

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    found = {int(r["line"]): r["type"] for r in validate_records(result.stdout)}
    assert found == expected


def test_line_numbers_skip_blank_lines(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    data = with_cells({(4, "phase"): "Phase0"}).replace(b"\n3,", b"\n\n\n3,")
    path.write_bytes(data)
    assert line_of(data, "4") == L[4] + 2

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    assert [(r["type"], r["line"]) for r in validate_records(result.stdout)] == [
        ("not-in-enum", str(L[4] + 2))
    ]


def test_line_numbers_after_a_multiline_header(runner: CliRunner, tmp_path: Path) -> None:
    """A quoted header cell may span lines; records then start one line later."""
    data = with_cells({(1, "phase"): "Phase0"}).replace(b",context,", b',"con\ntext",', 1)
    path = tmp_path / "bad.csv"
    path.write_bytes(data)

    result = runner.invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    problems = [(r["type"], r["line"], r["column"]) for r in validate_records(result.stdout)]
    # "con\ntext" is not a column name: the header is refused before any row is checked.
    assert problems[0] == ("unexpected-column", "1", "con\ntext")
    assert ("not-in-enum", str(L[1] + 1), "phase") in problems


# --- other refusals -------------------------------------------------------------------------


def test_truncated_gzip_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    path, data = tmp_path / "bad.csv.gz", tmp_path / "data"
    path.write_bytes(gzip.compress(build())[:60])

    result = runner.invoke(app, ["ingest", str(path), "--data", str(data)])

    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: the file looks gzip-compressed but cannot be read: "
        "Compressed file ended before the end-of-stream marker was reached\n"
    )
    assert written(data) == []


def test_two_files_of_one_dataset_are_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    first, second, data = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "data"
    first.write_bytes(build())
    second.write_bytes(build())

    result = runner.invoke(app, ["ingest", str(first), str(second), "--data", str(data)])

    assert result.exit_code == 2
    assert f"{first} and {second} are both DICES-350; ingest one at a time" in result.stderr
    assert written(data) == []


def test_one_bad_file_refuses_the_whole_call(runner: CliRunner, tmp_path: Path) -> None:
    """Ingest is all or nothing per call: a good DICES-990 is not written beside a bad 350."""
    good, bad, data = tmp_path / "good.csv", tmp_path / "bad.csv", tmp_path / "data"
    good.write_bytes(build("990"))
    bad.write_bytes(with_cells({(3, "phase"): "Phase9"}))

    result = runner.invoke(app, ["ingest", str(good), str(bad), "--data", str(data)])

    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {bad} is not valid DICES data; nothing was written\n")
    assert written(data) == []


def test_dataset_option_overrides_detection(runner: CliRunner, tmp_path: Path) -> None:
    """--dataset 990 on a DICES-350 file: every 350-only column is unexpected, none missing."""
    path = tmp_path / "350.csv"
    path.write_bytes(build())

    result = runner.invoke(app, ["validate", str(path), "--dataset", "990", "--format", "csv"])

    assert result.exit_code == 1
    problems = {(r["type"], r["column"]) for r in validate_records(result.stdout)}
    assert ("missing-column", "rater_locale") in problems
    assert ("unexpected-column", "answer_time_ms") in problems
    assert ("unexpected-column", "safety_gold") in problems
