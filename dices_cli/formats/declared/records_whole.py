"""Whether Polars saw every record of a delimited file whole, from the cells it gave and
the counts of one pass over the file's bytes (`ByteFacts`).

Polars pads a short record with nulls and reads a blank line as a record of nulls; it
raises on a long one. The bytes say when it did: the file's body is exactly its cells'
bytes, a separator between each two cells of a record, a line end after each record
(a carriage return before it in a CRLF file), two quotes around each quoted cell and a
second quote for each quote inside a cell. A padded record lacks separators, a blank
line has a line end without them, and either breaks the sum. (The same sum trusts
Polars' parse of a DICES file: `dices_cli.formats.dices.csvparse`.)

A cell holds a quote, a line break or a carriage return only in a quoted file; those are
counted per cell only when the file's first bytes hold a quote (`CellCounts.quoted`): a
file whose first quote comes later is not trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dices_cli.read.checksum import BOM, ByteFacts

PEEK_BYTES = 1 << 20  # the first bytes looked at for a quote


@dataclass
class CellCounts:
    """Running sums over the cells of a file's records, fed a frame of records at a time."""

    quoted: bool  # whether to count the quotes, line breaks and carriage returns in cells
    records: int = 0
    bytes: int = 0
    quotes: int = 0
    line_breaks: int = 0
    carriage_returns: int = 0

    def add(self, frame: pl.DataFrame) -> None:
        every = pl.all().fill_null("")
        measures = [every.str.len_bytes().cast(pl.Int64).sum().name.suffix("/bytes")]
        if self.quoted:
            measures += [
                every.str.count_matches(text, literal=True)
                .cast(pl.Int64)
                .sum()
                .name.suffix(f"/{name}")
                for name, text in (
                    ("quotes", '"'),
                    ("line_breaks", "\n"),
                    ("carriage_returns", "\r"),
                )
            ]
        sums = dict.fromkeys(("bytes", "quotes", "line_breaks", "carriage_returns"), 0)
        for key, value in frame.select(measures).row(0, named=True).items():
            sums[key.rpartition("/")[2]] += value or 0
        self.records += frame.height
        self.bytes += sums["bytes"]
        self.quotes += sums["quotes"]
        self.line_breaks += sums["line_breaks"]
        self.carriage_returns += sums["carriage_returns"]


def first_bytes_quoted(first: bytes) -> bool:
    """Whether the file's first bytes hold a quote (its cells are then counted in full)."""
    return b'"' in first


def header_line(first: bytes) -> bytes:
    """The header's line as stored, its line end included, without a byte-order mark."""
    first = first.removeprefix(BOM)
    end = first.find(b"\n")
    return first if end < 0 else first[: end + 1]


def whole(cells: CellCounts, facts: ByteFacts, header: bytes, columns: int) -> bool:
    """Whether `cells`, `columns` to a record, and the syntax around them are exactly the
    file's bytes, line breaks and quotes."""
    if facts.has_nul or facts.has_lone_cr or (facts.quotes and not cells.quoted):
        return False
    if not header.endswith(b"\n"):
        return cells.records == 0 and facts.text_bytes == len(header)
    records = cells.records
    body_bytes = facts.text_bytes - len(header)
    body_quotes = facts.quotes - header.count(b'"')
    crlf_ends = facts.carriage_returns - header.count(b"\r") - cells.carriage_returns
    record_ends = records - (0 if facts.ends_with_newline else 1)
    if records == 0:
        return body_bytes == 0
    if facts.newlines != 1 + record_ends + cells.line_breaks:
        return False
    quoting = body_quotes - 2 * cells.quotes  # two per quoted cell
    if quoting < 0 or quoting % 2 or quoting // 2 > records * columns:
        return False
    expected = (
        cells.bytes
        + records * (columns - 1)
        + record_ends
        + crlf_ends
        + quoting
        + cells.quotes  # the second quote of every escaped ""
    )
    return crlf_ends >= 0 and body_bytes == expected
