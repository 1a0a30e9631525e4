"""Hostile and broken input: mutated DICES files never crash `dices validate` or `dices ingest`.

Each example is a small valid DICES file (tests/fixtures/dices_csv.py) put through random
mutations, then given to `dices validate --format csv` and `dices ingest`. Whatever the
mutations, both commands end with exit 0 or exit 1 and no traceback, and agree:

* accepted (exit 0): the ingested dataset exports to exactly the records that Python's
  strict csv reader reads from the input; when every mutation keeps the file valid (columns
  reordered or renamed in case, Excel-style CRLF + BOM, other quoting, gzip, blank lines,
  odd but legal text), to exactly the cells the file was built from;
* refused (exit 1): nothing is written, and every error names its line, and its column
  unless it is about the whole file (`empty-file`, `no-rows`) or a record whose structure is
  broken (`wrong-field-count`, `bad-quoting`, `unterminated-quote`) or the header as a whole
  (`unknown-dataset`). A mutation with a known effect (a NUL byte, invalid UTF-8, a number out
  of range, a field dropped...) must be reported as that problem, on the line where the
  record starts and in the column where it was made.

The example count comes from the Hypothesis profile: "ci" (the default, registered in
tests/conftest.py) keeps this file well under a minute; `--hypothesis-profile=long` runs
1,000 examples per test (docs/reliability.md).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fixtures.dices_csv import header, quote, rows, to_csv
from hypothesis import event, given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families.schema import DATASETS, Entity, Kind, canonical_names
from dices_cli.problems import SHOWN_VALUE_CHARS, ProblemType

pytestmark = pytest.mark.slow  # a hostile corpus

# --- where a problem must say it is -----------------------------------------------------------

FILE_LEVEL = {  # no line, no column
    ProblemType.EMPTY_FILE,
    ProblemType.NO_ROWS,
    ProblemType.INCOMPLETE_DATASET,
}
RECORD_LEVEL = {  # a line, but no column: a broken record (or header) has no reliable columns
    ProblemType.WRONG_FIELD_COUNT,
    ProblemType.RECORD_TOO_LONG,
    ProblemType.BAD_QUOTING,
    ProblemType.UNTERMINATED_QUOTE,
    ProblemType.UNKNOWN_DATASET,
}
CELL_LEVEL = {  # a line and a column (for the header's problems, the column's name)
    ProblemType.MISSING_COLUMN,
    ProblemType.UNEXPECTED_COLUMN,
    ProblemType.DUPLICATE_COLUMN,
    ProblemType.INVALID_UTF8,
    ProblemType.NUL_CHARACTER,
    ProblemType.MISSING_VALUE,
    ProblemType.NOT_AN_INTEGER,
    ProblemType.OUT_OF_RANGE,
    ProblemType.NOT_IN_ENUM,
    ProblemType.MALFORMED_LIST,
    ProblemType.DUPLICATE_ID,
    ProblemType.DUPLICATE_RATING,
    ProblemType.INCONSISTENT_CONVERSATION,
    ProblemType.INCONSISTENT_RATER,
    ProblemType.INCONSISTENT_OVERALL,
    ProblemType.NEW_VALUE,
}

ANY = "*"  # an expected problem whose column is not predictable (a header cell shown escaped)
MiB = 1 << 20
HUGE_SIZES = (512, 150_000, MiB, 10 * MiB)  # 150,000 > the csv module's default field limit
HUGE_UNITS = ("x", "\u00e9", "a\nb", '"', "\u4e2d", "\r")
ONE_IN_SIX = (False, False, False, False, False, True)  # uniform, unlike integers(0, 5) == 0
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what counts as a line, as editors count them


def test_every_problem_type_has_a_place() -> None:
    """A new problem type must be placed here, and each in one place only."""
    places = [*FILE_LEVEL, *RECORD_LEVEL, *CELL_LEVEL]
    assert sorted(places) == sorted(ProblemType)


# --- a DICES file as cells, mutated, then rendered to bytes ------------------------------------


@dataclass
class Draft:
    """A file being built: its cells, how to write them, and what the mutations must cause.

    Records are numbered as in `records`: 0 is the header, 1 the first row. `expected`
    holds (problem type, record, column) triples that must be reported when the file is
    refused; `valid` is True when the file must be accepted with exactly these cells, False
    when it must be refused, None when either is right (the raw bytes were mutated).
    """

    dataset: str
    records: list[list[str]]
    keys: list[tuple[str, str]]  # per row (record - 1): its original (item_id, rater_id)
    seed: int
    valid: bool | None = True
    expected: set[tuple[str, int, str | None]] = field(default_factory=set)
    raw: dict[str, bytes] = field(default_factory=dict)  # placeholder -> bytes, after encoding
    broken: set[int] = field(default_factory=set)  # records with a wrong field count
    touched: set[tuple[int, str]] = field(default_factory=set)  # cells already mutated
    header_fatal: bool = False  # the header stops the check before any row is read
    eol: str = "\n"
    cell_eol: str = "\n"
    quoting: str = "minimal"  # minimal | all | some
    bom: bool = False
    final_eol: bool = True
    blank_after: set[int] = field(default_factory=set)
    latin1: bool = False
    gzip: bool = False
    byte_edits: list[tuple[str, float, bytes]] = field(default_factory=list)  # raw mutations
    applied: list[str] = field(default_factory=list)

    def __repr__(self) -> str:  # the cells can be megabytes: show what was done, not them
        sizes = sorted({len(c) for record in self.records for c in record})[-3:]
        options = (
            f"eol={self.eol!r}, cell_eol={self.cell_eol!r}, quoting={self.quoting}, "
            f"bom={self.bom}, final_eol={self.final_eol}, latin1={self.latin1}, gzip={self.gzip}"
        )
        return (
            f"Draft(DICES-{self.dataset}, {len(self.records) - 1} rows, applied={self.applied}, "
            f"valid={self.valid}, expected={sorted(self.expected, key=str)}, "
            f"blank_after={self.blank_after}, byte_edits={self.byte_edits}, raw={self.raw}, "
            f"{options}, longest cells={sizes}, header={self.records[0]})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how Hypothesis shows it
        printer.text(repr(self))

    @property
    def names(self) -> list[str]:
        """The canonical name of every header cell (a cell's own text if it names nothing)."""
        return canonical_names(DATASETS[self.dataset], self.records[0])

    def column(self, name: str) -> int:
        return self.names.index(name)

    def expect(self, kind: ProblemType, record: int, column: str | None) -> None:
        self.valid = False
        self.expected.add((str(kind), record, column))

    def placeholder(self, raw: bytes) -> str:
        token = f"@@RAW{len(self.raw)}@@"
        self.raw[token] = raw
        return token

    def group(self, record: int, entity: Entity) -> list[int]:
        """The records that share this record's conversation or rater (itself included)."""
        if entity is Entity.RATING:
            return [record]
        which = 0 if entity is Entity.ITEM else 1
        key = self.keys[record - 1][which]
        return [i + 1 for i, k in enumerate(self.keys) if k[which] == key]

    def cells(self) -> list[list[str]]:
        """The cells the file holds as read back: as built, with cell line ends as written."""
        return [[c.replace("\n", self.cell_eol) for c in record] for record in self.records]


def render(draft: Draft) -> tuple[bytes, list[int]]:
    """The file's bytes and the line where each record starts."""
    chooser = random.Random(draft.seed)
    pieces: list[tuple[str, bool]] = []  # (text, whether it is a record or a blank line)
    for number, record in enumerate(draft.cells()):
        cells = [
            quote(c, draft.quoting == "all" or (draft.quoting == "some" and chooser.random() < 0.3))
            for c in record
        ]
        pieces.append((",".join(cells) + draft.eol, True))
        if number in draft.blank_after:
            pieces.append((draft.eol, False))
    if not draft.final_eol:
        text, is_record = pieces[-1]
        pieces[-1] = (text.removesuffix(draft.eol), is_record)
    starts, line = [], 1
    for text, is_record in pieces:
        if is_record:
            starts.append(line)
        line += len(LINE_BREAK.findall(text))
    data = "".join(text for text, _ in pieces).encode("latin-1" if draft.latin1 else "utf-8")
    for token, raw in draft.raw.items():
        data = data.replace(token.encode(), raw)
    if draft.bom:
        data = b"\xef\xbb\xbf" + data
    for kind, fraction, raw in draft.byte_edits:
        at = int(fraction * len(data))
        data = data[:at] if kind == "truncate" else data[:at] + raw + data[at:]
    if draft.gzip:
        data = gzip.compress(data)
    return data, starts


def reencode_latin1(draft: Draft) -> None:
    """Re-saved as Latin-1 (a character it lacks becomes '?'): legal while the text is ASCII,
    invalid UTF-8 in every cell with a character beyond it."""
    draft.latin1 = True
    for number, record in enumerate(draft.records):
        for position, cell in enumerate(record):
            record[position] = cell = cell.encode("latin-1", "replace").decode("latin-1")
            if any("\x80" <= c <= "\xff" for c in cell):
                named = number and position < len(draft.names)
                draft.expect(
                    ProblemType.INVALID_UTF8, number, draft.names[position] if named else ANY
                )
                draft.header_fatal = draft.header_fatal or number == 0


def settle(draft: Draft) -> None:
    """Keep only the expectations that the combination of mutations leaves certain."""
    if draft.header_fatal:  # no row is read: only the header's problems can be expected
        draft.expected = {e for e in draft.expected if e[1] == 0}
    if ("invalid-utf8", 0, ANY) in draft.expected:  # no name can be matched: that is all
        draft.expected = {("invalid-utf8", 0, ANY)}
    # A record with a wrong field count has no cells; one with a NUL byte or invalid UTF-8
    # is not checked further.
    unreadable = {r for k, r, _ in draft.expected if k in ("nul-character", "invalid-utf8")}
    draft.expected = {
        (kind, record, column)
        for kind, record, column in draft.expected
        if (record not in draft.broken or kind == "wrong-field-count")
        and (record not in unreadable or kind in ("nul-character", "invalid-utf8") or not record)
    }
    if draft.byte_edits:  # the bytes were cut or spliced: anything may have happened
        draft.valid, draft.expected = None, set()


# --- cell values ---------------------------------------------------------------------------

# Legal in a text column, and each kept exactly: odd characters, quotes, formula-looking text.
ODD_TEXT = (
    "",
    " padded ",
    'a "quoted" word',
    '"',
    '""',
    ",",
    "tab\there",
    "lone\rcarriage return",
    "two\n\nlines",
    "\x01\x02\x07\x08\x0b\x0c\x0e\x1b\x1f\x7f",
    "next line\x85and line separator\u2028and paragraph\u2029",
    "zero\u200bwidth and \ufeffBOM inside",
    "emoji \U0001f600 and \u202eRTL override",
    '=HYPERLINK("http://x")',
    "+1",
    "-1",
    "@SUM(A1)",
    "café! naïve Zoë. ½ cup © señor",
    "\\n two characters \\r",
)
# Wrong in an integer column: (value, the problem it must be reported as).
BAD_INTEGERS = (
    ("-1", ProblemType.OUT_OF_RANGE),
    (str(2**63), ProblemType.OUT_OF_RANGE),
    ("99999999999999999999999999", ProblemType.OUT_OF_RANGE),
    ("253402300800", None),  # out of range for answer_timestamp only
    ("1e5", ProblemType.NOT_AN_INTEGER),
    ("0x1F", ProblemType.NOT_AN_INTEGER),
    (" 12", ProblemType.NOT_AN_INTEGER),
    ("12 ", ProblemType.NOT_AN_INTEGER),
    ("012", ProblemType.NOT_AN_INTEGER),
    ("-0", ProblemType.NOT_AN_INTEGER),
    ("+5", ProblemType.NOT_AN_INTEGER),
    ("1_000", ProblemType.NOT_AN_INTEGER),
    ("12.0", ProblemType.NOT_AN_INTEGER),
    ("\uff11\uff12", ProblemType.NOT_AN_INTEGER),  # fullwidth digits
    ("\u0661\u0662", ProblemType.NOT_AN_INTEGER),  # Arabic-Indic digits
    ("", ProblemType.MISSING_VALUE),
)
BAD_ENUMS = ("yes", " No", "No ", "N/A", "Unsure\n", "Phase0", "null", "\u00a0", "Yes\x00")
BAD_LISTS = ("not a list", "[", '["a"', "[1, 2]", '["a"]]')
INVALID_UTF8 = (
    b"\xff",
    b"\xfe\xff",
    b"\x80",
    b"\xc3",
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xc0\xaf",  # overlong "/"
    b"\xed\xa0\x80",  # a UTF-16 surrogate
    b"\xf4\x90\x80\x80",  # beyond U+10FFFF
    b"\xf8\x88\x80\x80\x80",
)
EXTRA_COLUMNS = ("comment", "rater_idx", "=cmd|' /C calc'!A0", "Unnamed: 0", "")
TEXT_CHARACTERS = st.characters(exclude_characters="\x00", exclude_categories=["Cs"])
RAW_BYTES = (b'"', b'""', b",", b"\n", b"\r", b"\r\n", b"\x00", b"\xff", b'"\n"', b" ")


# --- mutations -------------------------------------------------------------------------------

Mutation = Callable[[st.DrawFn, Draft], None]


def _row(draw: st.DrawFn, draft: Draft) -> int:
    return draw(st.integers(1, len(draft.records) - 1))


def _known(draft: Draft) -> list[str]:
    dataset = DATASETS[draft.dataset]
    return [n for n in draft.names if n in dataset.names and draft.names.count(n) == 1]


def _cell(
    draw: st.DrawFn, draft: Draft, kinds: tuple[Kind, ...], strict: bool = False
) -> tuple[int, str] | None:
    """An untouched cell of a known column of one of these kinds, in an unbroken row;
    `strict`: of a column that refuses values it does not list (not a rater demographic)."""
    dataset = DATASETS[draft.dataset]
    names = [
        n
        for n in _known(draft)
        if dataset.column(n).kind in kinds and not (strict and dataset.column(n).extensible)
    ]
    if not names:
        return None
    record, name = _row(draw, draft), draw(st.sampled_from(names))
    if (record, name) in draft.touched or record in draft.broken:
        return None
    draft.touched.add((record, name))
    return record, name


def _set(draft: Draft, record: int, name: str, value: str) -> None:
    draft.records[record][draft.column(name)] = value


def reorder_columns(draw: st.DrawFn, draft: Draft) -> None:
    order = draw(st.permutations(range(len(draft.records[0]))))
    draft.records = [[record[i] for i in order] for record in draft.records]


def rename_in_case(draw: st.DrawFn, draft: Draft) -> None:
    chooser = random.Random(draw(st.integers(0, 2**32)))
    spell = (str.upper, str.lower, str.swapcase, str.title, lambda s: s)
    draft.records[0] = [chooser.choice(spell)(cell) for cell in draft.records[0]]


def odd_text(draw: st.DrawFn, draft: Draft) -> None:
    """A text cell (for its whole conversation or rater) that is odd but legal."""
    dataset = DATASETS[draft.dataset]
    found = _cell(draw, draft, (Kind.TEXT,))
    if found is None:
        return
    record, name = found
    value = draw(st.one_of(st.sampled_from(ODD_TEXT), st.text(TEXT_CHARACTERS, max_size=20)))
    if "@@" in value:
        return  # would read as a placeholder for raw bytes
    for member in draft.group(record, dataset.column(name).entity):
        draft.touched.add((member, name))
        _set(draft, member, name, value)


def huge_text(draw: st.DrawFn, draft: Draft) -> None:
    """A text cell of up to 10 MiB (for its whole conversation or rater): legal, kept whole."""
    dataset = DATASETS[draft.dataset]
    found = _cell(draw, draft, (Kind.TEXT,))
    if found is None:
        return
    record, name = found
    size = draw(st.sampled_from(HUGE_SIZES))
    unit = "x" if size == HUGE_SIZES[-1] else draw(st.sampled_from(HUGE_UNITS))
    value = unit * (size // len(unit.encode()))
    event(f"huge text field: {len(value.encode()):,} bytes of {unit!r}")
    for member in draft.group(record, dataset.column(name).entity):
        draft.touched.add((member, name))
        _set(draft, member, name, value)


def huge_typed(draw: st.DrawFn, draft: Draft) -> None:
    """A number or an answer of up to 10 MiB: refused, and named."""
    found = _cell(draw, draft, (Kind.INTEGER, Kind.ENUM), strict=True)
    if found is None:
        return
    record, name = found
    size = draw(st.sampled_from(HUGE_SIZES))
    integer = DATASETS[draft.dataset].column(name).kind is Kind.INTEGER
    _set(draft, record, name, ("9" if integer else "Y") * size)
    kind = ProblemType.OUT_OF_RANGE if integer else ProblemType.NOT_IN_ENUM
    draft.expect(kind, record, name)


def nul_byte(draw: st.DrawFn, draft: Draft) -> None:
    found = _cell(draw, draft, tuple(Kind))
    if found is None:
        return
    record, name = found
    cell = draft.records[record][draft.column(name)]
    at = draw(st.integers(0, len(cell)))
    _set(draft, record, name, cell[:at] + "\x00" + cell[at:])
    draft.expect(ProblemType.NUL_CHARACTER, record, name)


def control_character(draw: st.DrawFn, draft: Draft) -> None:
    """A control character in a number or an answer: that value is refused, and named."""
    found = _cell(draw, draft, (Kind.INTEGER, Kind.TIMESTAMP, Kind.ENUM), strict=True)
    if found is None:
        return
    record, name = found
    cell = draft.records[record][draft.column(name)]
    char = draw(st.sampled_from(["\x01", "\x07", "\x1b", "\x7f", "\t", "\x0c", "\x85"]))
    at = draw(st.integers(0, len(cell)))
    _set(draft, record, name, cell[:at] + char + cell[at:])
    kind = DATASETS[draft.dataset].column(name).kind
    problem = ProblemType.NOT_IN_ENUM if kind is Kind.ENUM else ProblemType.NOT_AN_INTEGER
    draft.expect(problem, record, name)


def invalid_utf8(draw: st.DrawFn, draft: Draft) -> None:
    found = _cell(draw, draft, tuple(Kind))
    if found is None:
        return
    record, name = found
    cell = draft.records[record][draft.column(name)]
    at = draw(st.integers(0, len(cell)))
    token = draft.placeholder(draw(st.sampled_from(INVALID_UTF8)))
    _set(draft, record, name, cell[:at] + token + cell[at:])
    draft.expect(ProblemType.INVALID_UTF8, record, name)


def bad_number(draw: st.DrawFn, draft: Draft) -> None:
    found = _cell(draw, draft, (Kind.INTEGER, Kind.TIMESTAMP))
    if found is None:
        return
    record, name = found
    value, problem = draw(st.sampled_from(BAD_INTEGERS))
    if problem is None:
        if name != "answer_timestamp":
            return
        problem = ProblemType.OUT_OF_RANGE
    _set(draft, record, name, value)
    draft.expect(problem, record, name)


def bad_answer(draw: st.DrawFn, draft: Draft) -> None:
    found = _cell(draw, draft, (Kind.ENUM, Kind.REASON_LIST), strict=True)
    if found is None:
        return
    record, name = found
    column = DATASETS[draft.dataset].column(name)
    if column.kind is Kind.REASON_LIST:
        _set(draft, record, name, draw(st.sampled_from(BAD_LISTS)))
        draft.expect(ProblemType.MALFORMED_LIST, record, name)
        return
    value = draw(st.sampled_from(["", *BAD_ENUMS]))
    if value == "" and column.nullable:
        return
    _set(draft, record, name, value)
    if "\x00" in value:
        draft.expect(ProblemType.NUL_CHARACTER, record, name)
    elif value == "":
        draft.expect(ProblemType.MISSING_VALUE, record, name)
    else:
        draft.expect(ProblemType.NOT_IN_ENUM, record, name)


def drop_field(draw: st.DrawFn, draft: Draft) -> None:
    record = _row(draw, draft)
    if record in draft.broken:
        return  # a field dropped and one added would make a whole record again
    cells = draft.records[record]
    del cells[draw(st.integers(0, len(cells) - 1))]
    draft.broken.add(record)
    draft.expect(ProblemType.WRONG_FIELD_COUNT, record, None)


def add_field(draw: st.DrawFn, draft: Draft) -> None:
    record = _row(draw, draft)
    if record in draft.broken:
        return  # a field dropped and one added would make a whole record again
    cells = draft.records[record]
    cells.insert(draw(st.integers(0, len(cells))), draw(st.sampled_from(["", "x", "No", "1"])))
    draft.broken.add(record)
    draft.expect(ProblemType.WRONG_FIELD_COUNT, record, None)


def drop_column(draw: st.DrawFn, draft: Draft) -> None:
    known = _known(draft)
    name = draw(st.sampled_from(known))
    position = draft.column(name)
    for record in draft.records:
        del record[position]
    draft.expect(ProblemType.MISSING_COLUMN, 0, name)


def add_column(draw: st.DrawFn, draft: Draft) -> None:
    name = draw(st.sampled_from(EXTRA_COLUMNS))
    if name.strip().lower() in {n.lower() for n in draft.names} or name in draft.records[0]:
        return
    position = draw(st.integers(0, len(draft.records[0])))
    for number, record in enumerate(draft.records):
        record.insert(position, name if number == 0 else "1")
    draft.expect(ProblemType.UNEXPECTED_COLUMN, 0, name or ANY)  # "" is named by its place


def duplicate_column(draw: st.DrawFn, draft: Draft) -> None:
    name = draw(st.sampled_from(_known(draft)))
    source = draft.column(name)
    position = draw(st.integers(0, len(draft.records[0])))
    for number, record in enumerate(draft.records):
        record.insert(position, record[source].upper() if number == 0 else record[source])
    draft.expect(ProblemType.DUPLICATE_COLUMN, 0, name)
    draft.header_fatal = True


def broken_header_cell(draw: st.DrawFn, draft: Draft) -> None:
    """Invalid UTF-8 or a NUL byte in a header name: that column is unknown."""
    name = draw(st.sampled_from(_known(draft)))
    position = draft.column(name)
    cell = draft.records[0][position]
    at = draw(st.integers(0, len(cell)))
    if draw(st.booleans()):
        draft.records[0][position] = cell[:at] + draft.placeholder(b"\xff") + cell[at:]
        draft.expect(ProblemType.INVALID_UTF8, 0, ANY)
        draft.header_fatal = True
    else:
        draft.records[0][position] = cell[:at] + "\x00" + cell[at:]
        draft.expect(ProblemType.UNEXPECTED_COLUMN, 0, ANY)
        draft.expect(ProblemType.MISSING_COLUMN, 0, name)


def duplicate_record(draw: st.DrawFn, draft: Draft) -> None:
    """A row written twice: the copy repeats an id and a rating."""
    record = _row(draw, draft)
    if record in draft.broken or any(r == record for r, _ in draft.touched):
        return
    if not {"id", "rater_id", "item_id"} <= set(_known(draft)):
        return
    copy = record + 1
    draft.records.insert(copy, list(draft.records[record]))
    draft.keys.insert(copy - 1, draft.keys[record - 1])

    def shifted(r: int) -> int:
        return r + 1 if r >= copy else r

    draft.expected = {(k, shifted(r), c) for k, r, c in draft.expected}
    draft.broken = {shifted(r) for r in draft.broken}
    draft.touched = {(shifted(r), c) for r, c in draft.touched} | {(copy, "id")}
    draft.blank_after = {shifted(r) for r in draft.blank_after}
    draft.expect(ProblemType.DUPLICATE_ID, copy, "id")
    draft.expect(ProblemType.DUPLICATE_RATING, copy, "item_id")


def blank_lines(draw: st.DrawFn, draft: Draft) -> None:
    """Empty lines between records (or at the end): no record, so legal."""
    draft.blank_after.add(draw(st.integers(0, len(draft.records) - 1)))


def truncate(draw: st.DrawFn, draft: Draft) -> None:
    draft.byte_edits.append(("truncate", draw(st.integers(0, 1000)) / 1000, b""))
    draft.valid = None


def inject_bytes(draw: st.DrawFn, draft: Draft) -> None:
    raw = draw(st.sampled_from(RAW_BYTES))
    draft.byte_edits.append(("insert", draw(st.integers(0, 1000)) / 1000, raw))
    draft.valid = None


LEGAL: tuple[Mutation, ...] = (reorder_columns, rename_in_case, odd_text, huge_text, blank_lines)
COLUMNS: tuple[Mutation, ...] = (
    reorder_columns,
    rename_in_case,
    drop_column,
    add_column,
    duplicate_column,
    broken_header_cell,
)
CELLS: tuple[Mutation, ...] = (
    odd_text,
    huge_text,
    huge_typed,
    nul_byte,
    control_character,
    invalid_utf8,
    bad_number,
    bad_answer,
)
RECORDS: tuple[Mutation, ...] = (drop_field, add_field, duplicate_record, blank_lines)
BYTES: tuple[Mutation, ...] = (truncate, inject_bytes)


@st.composite
def drafts(draw: st.DrawFn, legal_only: bool = False, raw: bool = False) -> Draft:
    """A small valid DICES file, mutated: column, cell, record, then byte mutations."""
    name = draw(st.sampled_from(["350", "990"]))
    table = rows(name, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    draft = Draft(
        name,
        [header(name), *[list(row.values()) for row in table]],
        [(row["item_id"], row["rater_id"]) for row in table],
        seed=draw(st.integers(0, 2**32)),
    )
    if legal_only:
        stages: list[tuple[Mutation, ...]] = [LEGAL]
    else:
        stages = [COLUMNS, CELLS, RECORDS, *([BYTES] if raw else [])]
    for stage in stages:
        chosen = draw(st.lists(st.sampled_from(stage), max_size=2))
        for mutation in sorted(chosen, key=stage.index):  # a row is copied after it is broken
            mutation(draw, draft)
            draft.applied.append(mutation.__name__)
            event(f"mutation: {mutation.__name__}")
    if not legal_only and draw(st.sampled_from(ONE_IN_SIX)):
        reencode_latin1(draft)
        draft.applied.append("latin1")
        event("mutation: latin1")
    # How the file is written: how a spreadsheet re-saves it, or how a script writes it.
    draft.eol = draw(st.sampled_from(["\n", "\r\n"]))
    draft.cell_eol = draw(st.sampled_from(["\n", draft.eol]))
    draft.quoting = draw(st.sampled_from(["minimal", "all", "some"]))
    draft.bom = draw(st.booleans())
    draft.final_eol = draw(st.booleans())
    draft.gzip = draw(st.sampled_from(ONE_IN_SIX))
    settle(draft)
    return draft


# --- running the commands --------------------------------------------------------------------


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert "This is a bug in dices" not in result.stderr, result.stderr
    return result


def written(data: Path) -> list[str]:
    if not data.exists():
        return []
    return sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.name != ".lock")


def reference_records(data: bytes) -> list[list[str]] | None:
    """The records Python's strict csv reader reads, blank lines skipped; None if it cannot."""
    if data.startswith(b"\x1f\x8b"):
        data = gzip.decompress(data)
    limit = csv.field_size_limit(2**31 - 1)  # no limit on a field's size (the default: 128 KiB)
    try:
        text = data.decode("utf-8-sig")
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        return [record for record in reader if record]
    except (UnicodeDecodeError, csv.Error):
        return None
    finally:
        csv.field_size_limit(limit)


def read_csv(data: bytes) -> list[list[str]]:
    records = reference_records(data)
    assert records is not None
    return records


@dataclass
class Outcome:
    accepted: bool
    problems: list[dict[str, str]]
    exported: list[list[str]] | None


def run(draft: Draft) -> tuple[bytes, list[int], Outcome]:
    """Validate, ingest (and export, when accepted) the rendered file; check they agree."""
    data, starts = render(draft)
    with tempfile.TemporaryDirectory() as scratch:
        path, store = Path(scratch) / "input.csv", Path(scratch) / "data"
        path.write_bytes(data)
        checked = invoke("validate", str(path), "--format", "csv")
        problems = list(csv.DictReader(io.StringIO(checked.stdout, newline="")))
        ingested = invoke("ingest", str(path), "--data", str(store))
        assert ingested.exit_code == checked.exit_code, (checked.stderr, ingested.stderr)
        if ingested.exit_code == 1:
            first = ingested.stderr.splitlines()[0]
            assert first == f"Error: {path} is not valid DICES data; nothing was written"
            assert written(store) == []
            return data, starts, Outcome(False, problems, None)
        assert not [p for p in problems if p["severity"] == "error"]
        exported = invoke("export", "--dataset", draft.dataset, "--data", str(store))
        rows_read = len(read_csv(exported.stdout_bytes)) - 1
        manifest = json.loads((store / draft.dataset / "manifest.json").read_text())
        assert manifest["rows"] == {"read": rows_read, "written": rows_read, "rejected": 0}
        return data, starts, Outcome(True, problems, read_csv(exported.stdout_bytes))


def check_refusal(outcome: Outcome, data: bytes, starts: list[int], draft: Draft) -> None:
    """Every error is placed; the mutations with a known effect are reported where made."""
    errors = [p for p in outcome.problems if p["severity"] == "error"]
    assert errors, "refused without an error"
    text = gzip.decompress(data) if draft.gzip else data
    lines = len(re.findall(rb"\r\n|\r|\n", text)) + 1
    for problem in errors:
        kind = ProblemType(problem["type"])
        if kind in FILE_LEVEL:
            assert problem["line"] == problem["column"] == "", problem
            continue
        assert 1 <= int(problem["line"]) <= lines, problem
        assert (problem["column"] != "") == (kind in CELL_LEVEL), problem
    found = {(p["type"], int(p["line"]), p["column"]) for p in errors if p["line"]}
    for kind, record, column in draft.expected:
        line = starts[record]
        if column == ANY:
            assert any(f[:2] == (kind, line) for f in found), (kind, line, sorted(found))
        else:
            assert (kind, line, column or "") in found, (kind, line, column, sorted(found))


def check(draft: Draft) -> None:
    data, starts, outcome = run(draft)
    reference = reference_records(data)
    if draft.valid is True:
        assert outcome.accepted, (draft.applied, outcome.problems[:5])
        assert outcome.exported == draft.cells()
    elif draft.valid is False:
        assert not outcome.accepted, draft.applied
    if outcome.accepted:
        # Whatever the bytes became, what was kept is what a strict CSV reader reads.
        assert reference is not None
        assert outcome.exported == reference
    else:
        check_refusal(outcome, data, starts, draft)


# --- the properties ----------------------------------------------------------------------


@given(drafts(legal_only=True))
def test_legal_quirks_are_accepted_with_exactly_their_cells(draft: Draft) -> None:
    """Reordered or case-renamed columns, CRLF + BOM, any quoting, gzip, blank lines,
    control characters, quotes and 10 MiB in text: accepted, every cell kept exactly."""
    check(draft)


@given(drafts())
def test_broken_cells_records_and_headers_are_refused_where_they_are(draft: Draft) -> None:
    """NUL bytes, invalid UTF-8, numbers out of range, huge values, fields dropped or added,
    columns dropped, added or repeated, Latin-1: refused, each problem on its line and
    column; or accepted exactly, when the mutations happen to keep the file valid."""
    check(draft)


@given(drafts(raw=True))
def test_truncated_or_spliced_bytes_never_crash(draft: Draft) -> None:
    """Truncated anywhere, stray quotes, line breaks, NUL or invalid bytes spliced in:
    accepted with exactly the records a strict CSV reader sees, or refused with placed
    problems."""
    check(draft)


# --- the largest fields, on both parsers ------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True], ids=["fast-parse", "strict-parse"])
def test_a_10_mib_text_field_is_kept_whole(strict: bool) -> None:
    """Ten MiB of text in every row's context, read by Polars (the fast path) or by the csv
    module (the strict path, which a lone CR forces), which by default stops at 128 KiB."""
    name = "350"
    table = rows(name, 1, 2)
    big = "context " * (10 * MiB // 8)
    draft = Draft(
        name,
        [header(name), *[list(r.values()) for r in table]],
        [(r["item_id"], r["rater_id"]) for r in table],
        seed=0,
    )
    for record in (1, 2):
        _set(draft, record, "context", big + ("\r" if strict else ""))
    check(draft)


def test_a_10_mib_number_is_refused_with_a_short_message(runner: CliRunner, tmp_path: Path) -> None:
    name = "350"
    table = rows(name, 1, 2)
    draft = Draft(
        name,
        [header(name), *[list(r.values()) for r in table]],
        [(r["item_id"], r["rater_id"]) for r in table],
        seed=0,
    )
    _set(draft, 2, "answer_time_ms", "9" * 10 * MiB)
    data, starts = render(draft)
    path = tmp_path / "big.csv"
    path.write_bytes(data)

    result = runner.invoke(app, ["ingest", str(path), "--data", str(tmp_path / "data")])

    assert result.exit_code == 1
    assert result.stderr.splitlines()[2] == (
        f"  line {starts[2]}, column answer_time_ms: {'9' * 60}... is outside the range "
        "0..9223372036854775807 [out-of-range]"
    )


def _refusal(runner: CliRunner, path: Path, data: bytes) -> list[dict[str, str]]:
    """The error records of `dices validate --format csv`, after checking ingest refuses too."""
    path.write_bytes(data)
    ingested = runner.invoke(app, ["ingest", str(path), "--data", str(path.parent / "data")])
    assert ingested.exit_code == 1
    assert ingested.stderr.startswith(
        f"Error: {path} is not valid DICES data; nothing was written\n"
    )
    checked = runner.invoke(app, ["validate", str(path), "--format", "csv"])
    assert checked.exit_code == 1
    return [
        {k: r[k] for k in ("type", "line", "column", "value", "message")}
        for r in csv.DictReader(io.StringIO(checked.stdout, newline=""))
    ]


@pytest.mark.parametrize("quoted", [False, True], ids=["plain", "quoted"])
def test_a_header_longer_than_1_mib_is_no_dices_header(
    quoted: bool, runner: CliRunner, tmp_path: Path
) -> None:
    name = "350"
    table = rows(name, 1, 1)
    long_name = "x" * (2 * MiB)
    head = [*header(name), quote(long_name, quoted)]
    body = [[*(quote(v) for v in table[0].values()), "1"]]
    data = "".join(",".join(record) + "\n" for record in [head, *body]).encode()

    assert _refusal(runner, tmp_path / "wide.csv", data) == [
        {
            "type": "unknown-dataset",
            "line": "1",
            "column": "",
            "value": "",
            "message": "the header does not end within its first 1 MiB, and a DICES header is "
            "a few KB; check that this is a DICES file",
        }
    ]


def test_an_unnamed_column_is_named_by_its_place(runner: CliRunner, tmp_path: Path) -> None:
    """pandas writes its index as a first column with an empty name."""
    name = "990"
    table = rows(name, 1, 2)
    data = to_csv(["", *header(name)], [[str(i), *r.values()] for i, r in enumerate(table)])

    assert _refusal(runner, tmp_path / "pandas.csv", data) == [
        {
            "type": "unexpected-column",
            "line": "1",
            "column": "#1",
            "value": "",
            "message": "header cell 1 is empty; every DICES-990 column has a name",
        }
    ]


def test_long_values_are_shortened_in_messages(runner: CliRunner, tmp_path: Path) -> None:
    """The record keeps the value's first 1,000 characters (a problem record is never huge);
    the message quotes its first 60."""
    name = "350"
    table = rows(name, 1, 1)
    table[0]["response"] = "r" * MiB + "\x00"
    table[0]["context"] = "c" * MiB + "@@BAD@@"
    data = to_csv(header(name), [list(table[0].values())]).replace(b"@@BAD@@", b"\xff")

    problems = _refusal(runner, tmp_path / "long.csv", data)

    assert [(p["type"], p["line"], p["column"], p["message"]) for p in problems] == [
        ("invalid-utf8", "2", "context", f"'{'c' * 60}...' is not valid UTF-8"),
        ("nul-character", "2", "response", f"'{'r' * 60}...' holds a NUL byte"),
    ]
    assert [p["value"] for p in problems] == ["c" * SHOWN_VALUE_CHARS, "r" * SHOWN_VALUE_CHARS]
