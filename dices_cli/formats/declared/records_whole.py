"""Whether Polars saw every record of a delimited file whole, from the cells it gave and
the counts of one pass over the file's bytes (`ByteFacts`).

Polars pads a short record with nulls and reads a blank line as a record of nulls; it
raises on a long one. The bytes say when it did: the file's body is exactly its cells'
bytes, a separator between each two cells of a record, a line end after each record
(a carriage return before it in a CRLF file), two quotes around each quoted cell and a
second quote for each quote inside a cell. A padded record lacks separators, a blank
line has a line end without them, and either breaks the sum (`checksum.adds_up`, which
also trusts Polars' parse of a DICES file).

A cell holds a quote, a line break or a carriage return only in a quoted file; those are
counted per cell only when the file's first bytes hold a quote (`CellCounts.quoted`): a
file whose first quote comes later is not trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dices_cli.read.checksum import BOM, ByteFacts, CellSums, adds_up

PEEK_BYTES = 1 << 20  # the first bytes looked at for a quote


@dataclass
class CellCounts(CellSums):
    """Running sums over the cells of a file's records, fed a frame of records at a time."""

    quoted: bool = True  # whether to count the quotes, line breaks and carriage returns in cells

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


def header_line(first: bytes) -> bytes:
    """The header's line as stored, its line end included, without a byte-order mark."""
    first = first.removeprefix(BOM)
    end = first.find(b"\n")
    return first if end < 0 else first[: end + 1]


def whole(cells: CellCounts, facts: ByteFacts, header: bytes, columns: int) -> bool:
    """Whether `cells`, `columns` to a record, and the syntax around them are exactly the
    file's bytes, line breaks and quotes (`checksum.adds_up`)."""
    if facts.quotes and not cells.quoted:
        return False  # quotes the cells were not counted for
    if not header.endswith(b"\n") and cells.records:
        return False  # no header line ends within the bytes looked at
    return adds_up(cells, facts, header, 1, columns)
