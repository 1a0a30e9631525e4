"""A declared dataset of one long CSV (TSV) ratings file, in one pass of bounded memory.

The large files (10^7 ratings and more) are of this shape. Polars parses the file as the
whole read does (`read._read_delimited`: the same parser and options), in batches of
BATCH_ROWS records parsed in parallel ahead of their use; each batch is read by the
declaration as `build` reads a whole file (the same expressions: `label_read`,
`with_positive`), its ratings go to Parquet through one Polars sink, and what the tables
and the checks need of it is folded into a tally: the counts, each rater's and item's
first row and attributes, and a hash of each (item, rater) pair. Memory holds a few
batches, the raters and items, and the pair hashes. Of a batch's rows, only an entity's
first and each new combination of its attributes' values (by a 64-bit hash of them) are
grouped, not every rating. The cells' bytes are summed as they pass, and the file's
bytes must add up to them (`records_whole`): Polars pads a short record and reads a
blank line as a record, which the whole read then reports.

What needs the records themselves (a row without its item or rater, a label outside its
scale, a second rating of an item by a rater, a rater or an item whose attributes differ
between rows) is only counted here: when any is found the caller reads the file whole
(`read_file`, `build`), which says which records and on which lines. So does a file
Polars cannot parse, or whose bytes do not add up. Both ways store the same tables
(tests/formats/test_declared_stream.py holds them equal).

An entity's attribute is the same on every row that gives one (else the count above),
so its first value is its greatest; its rows' order is the order of its first row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dices_cli.families.declaration import DatasetDeclaration, FileSpec
from dices_cli.formats.declared.build import ITEM_SEPARATOR, Built, label_read, typed, with_positive
from dices_cli.formats.declared.read import ITEM, RATER, ROW
from dices_cli.formats.declared.records_whole import PEEK_BYTES, CellCounts, header_line, whole
from dices_cli.read.source import Source

RATINGS_FILE = "ratings.parquet"  # in the folder `stream` is given


def streamable(spec: FileSpec, fmt: str) -> bool:
    """Whether a file can be stored by `stream`: a long CSV (TSV) of ratings."""
    long = spec.role == "ratings" and spec.layout == "long" and bool(spec.item and spec.rater)
    return long and fmt in ("csv", "tsv")


BATCH_ROWS = 1 << 19  # records per batch: what memory holds of the ratings at once


def stream(
    declared: DatasetDeclaration, spec: FileSpec, source: Source, fmt: str, folder: Path
) -> tuple[Built, int] | None:
    """The tables of the file, its ratings written to folder/RATINGS_FILE, and the records
    read; None when a record needs a problem or a warning, or Polars cannot parse the file
    (then nothing is kept: read it whole)."""
    target = folder / RATINGS_FILE
    try:
        # The whole read's parse (`read._read_delimited`), a batch at a time.
        scan = pl.scan_csv(
            source.text_path,
            separator="\t" if fmt == "tsv" else ",",
            infer_schema=False,
            raise_if_empty=False,
            extra_columns="raise",
            missing_columns="raise",
        )
        header = scan.collect_schema().names()
        if header and header[0].startswith("\ufeff"):
            scan = scan.rename({header[0]: header[0].removeprefix("\ufeff")})
            header = scan.collect_schema().names()
        if not header or any(c not in header for c in spec.required()):
            return None
        first = source.read(PEEK_BYTES)
        # The cells' quotes, line breaks and CRs are counted when the first bytes hold a quote.
        cells = CellCounts(quoted=b'"' in first)
        reading = _Reading(declared, spec, source.display_name, header, cells)
        batches = scan.collect_batches(chunk_size=BATCH_ROWS)
        sink = pl.io.plugins.register_io_source(
            lambda *_: reading.batches(batches), schema=reading.schema
        )
        sink.sink_parquet(target, statistics=True)
    except pl.exceptions.PolarsError:
        target.unlink(missing_ok=True)
        return None
    if not whole(reading.cells, source.facts(), header_line(first), len(header)):
        target.unlink(missing_ok=True)
        return None  # a record padded, a blank line: the whole read says which
    tally = reading.tally
    again = tally.records - pl.concat(tally.pairs).n_unique() if tally.pairs else 0
    raters, items = (
        _entities(parts, key) for parts, key in ((tally.raters, RATER), (tally.items, ITEM))
    )
    differ = [frame["_differ"].sum() for frame in (raters, items)]
    if tally.keyless or tally.outside or again or any(differ):
        target.unlink(missing_ok=True)
        return None
    tables: dict[str, pl.DataFrame | Path] = {
        "items": _table(items, ITEM),
        "raters": _table(raters, RATER),
        "ratings": target,
    }
    missing = dict.fromkeys(declared.labels, 0)
    missing.update(tally.missing)
    built = Built(tables, missing, {0: set()}, {"ratings": tally.records}, repeated=again)
    return built, tally.records


@dataclass
class _Tally:
    """What the batches add up to."""

    records: int = 0
    keyless: int = 0  # rows without an item or rater id
    outside: int = 0  # labels outside their scale
    missing: dict[str, int] = field(default_factory=dict)
    pairs: list[pl.Series] = field(default_factory=list)  # each batch's (item, rater) hashes
    raters: list[pl.DataFrame] = field(default_factory=list)  # each batch's raters
    items: list[pl.DataFrame] = field(default_factory=list)


class _Reading:
    """The batches of one file read by its declaration, tallied as they pass."""

    def __init__(
        self,
        declared: DatasetDeclaration,
        spec: FileSpec,
        name: str,
        header: list[str],
        cells: CellCounts,
    ) -> None:
        self.tally = _Tally(missing=dict.fromkeys(spec.labels, 0))
        self.cells = cells  # summed over every batch's cells
        self.named = [_from_name(p, name).alias(c) for c, p in spec.from_name.items()]
        self.reads = {
            label: label_read(f"_raw_{label}", label, declared.scales[label], stripped=True)
            for label in spec.labels
        }
        self.declared, self.spec = declared, spec
        self.rater_attributes = dict(spec.rater_attributes)
        self.item_attributes = {**spec.text, **spec.item_attributes}
        empty = pl.DataFrame(schema=dict.fromkeys(header, pl.String))
        self.schema = self._ratings(self._rows(empty, 0, strip=True)).schema

    def _rows(self, frame: pl.DataFrame, offset: int, strip: bool) -> pl.DataFrame:
        """The batch's rows with their keys, labels and flags; `strip`: of spaces around
        the keys and labels."""
        raw = [
            (pl.col(column).str.strip_chars() if strip else pl.col(column)).alias(f"_raw_{label}")
            for label, column in self.spec.labels.items()
        ]
        flags = []
        for label, (value, absent, outside) in self.reads.items():
            flags += [value, absent.alias(f"_absent_{label}"), outside.alias(f"_outside_{label}")]
        return (
            frame.with_row_index(ROW, offset)
            .with_columns(*self.named, *raw)
            .with_columns(*_keys(self.spec, strip), *flags)
        )

    def _ratings(self, rows: pl.DataFrame) -> pl.DataFrame:
        answers = [pl.col(c).alias(n) for n, c in self.spec.answers.items()]
        ratings = rows.select(ITEM, RATER, *self.reads, *answers)
        frame: pl.DataFrame = with_positive(ratings, self.declared)
        return frame

    def _read(self, frame: pl.DataFrame, offset: int) -> _Batch:
        """The batch read as `build` reads it. Stripping every cell is most of a batch's
        work, and most files have nothing to strip: the batch is first read as it is, and
        again stripped only when a cell that stripping could change is seen, a key in
        its raters' or items' first rows (each distinct key is among them) or a label
        outside its scale (a value with spaces around it reads as outside, or as the
        value itself)."""
        plain = len(self.spec.item) == 1
        batch = self._batch(self._rows(frame, offset, strip=not plain))
        if plain and not batch.clean():
            batch = self._batch(self._rows(frame, offset, strip=True))
        return batch

    def _batch(self, rows: pl.DataFrame) -> _Batch:
        counts = rows.select(
            (pl.col(ITEM).is_null() | pl.col(RATER).is_null()).sum().alias("keyless"),
            *(pl.col(f"_outside_{label}").sum() for label in self.reads),
            *(pl.col(f"_absent_{label}").sum() for label in self.reads),
        ).row(0, named=True)
        return _Batch(
            rows,
            counts,
            _firsts(rows, RATER, self.rater_attributes),
            _firsts(rows, ITEM, self.item_attributes),
            list(self.reads),
        )

    def batches(self, reader: Any) -> Iterator[pl.DataFrame]:
        tally = self.tally
        for frame in reader:
            self.cells.add(frame)
            batch = self._read(frame, tally.records)
            rows, counts = batch.rows, batch.counts
            tally.records += rows.height
            tally.keyless += counts["keyless"]
            for label in self.reads:
                tally.outside += counts[f"_outside_{label}"]
                tally.missing[label] += counts[f"_absent_{label}"]
            tally.pairs.append(rows.select(_hashed([ITEM, RATER])).to_series())
            tally.raters.append(_entity(batch.raters, RATER, self.rater_attributes))
            tally.items.append(_entity(batch.items, ITEM, self.item_attributes))
            yield self._ratings(rows)


@dataclass
class _Batch:
    """One batch read: its rows, their counts and its raters' and items' first rows."""

    rows: pl.DataFrame
    counts: dict[str, int]
    raters: pl.DataFrame
    items: pl.DataFrame
    labels: list[str]

    def clean(self) -> bool:
        """Whether stripping could change nothing: no key with spaces around it or empty,
        no label outside its scale."""
        if any(self.counts[f"_outside_{label}"] for label in self.labels):
            return False
        for frame, key in ((self.raters, RATER), (self.items, ITEM)):
            value = pl.col(key)
            if frame.select(((value != value.str.strip_chars()) | (value == "")).any()).item():
                return False
        return True


def _keys(spec: FileSpec, strip: bool) -> list[pl.Expr]:
    """ITEM and RATER; unless `strip`, a single item column and the rater column as they
    are (`_Batch.clean` says when that is the same)."""
    if not strip:
        return [pl.col(spec.item[0]).alias(ITEM), pl.col(spec.rater or "").alias(RATER)]
    parts = [pl.col(c).str.strip_chars() for c in spec.item]
    item = pl.concat_str(parts, separator=ITEM_SEPARATOR)
    rater = pl.col(spec.rater or "").str.strip_chars()
    return [item.replace("", None).alias(ITEM), rater.replace("", None).alias(RATER)]


def _from_name(pattern: str, name: str) -> pl.Expr:
    """A column read from the file's name, as `read` makes it."""
    import re

    found = re.search(pattern, name)
    return pl.lit(found.group(1) if found else None, pl.String)


def _hashed(columns: list[str]) -> pl.Expr:
    """A 64-bit hash of the values of `columns` in a row (each column hashed with its own
    seed, the hashes combined by exclusive or)."""
    hashes = [pl.col(c).hash(seed=seed) for seed, c in enumerate(columns)]
    combined = hashes[0]
    for one in hashes[1:]:
        combined = combined.xor(one)
    return combined


def _firsts(rows: pl.DataFrame, key: str, columns: dict[str, str]) -> pl.DataFrame:
    """The rows of `rows` that `_entity` needs: each entity's first row, and the first row
    of each further combination of its attributes' values (found by their hash), so that
    a few rows per entity are grouped instead of every rating."""
    first = pl.col(key).is_first_distinct()
    if columns:
        first = first | _hashed([key, *dict.fromkeys(columns.values())]).is_first_distinct()
    return rows.filter(first)


def _entity(rows: pl.DataFrame, key: str, columns: dict[str, str]) -> pl.DataFrame:
    """One row per entity of a batch: its first row, each attribute's value and the least
    and greatest hash of its values (two differ: the attribute takes two values)."""
    hashes = {
        n: pl.when(pl.col(c).is_not_null()).then(pl.col(c).hash()) for n, c in columns.items()
    }
    return rows.group_by(key).agg(
        pl.col(ROW).min(),
        *(pl.col(c).max().alias(n) for n, c in columns.items()),
        *(h.min().alias(f"_low_{n}") for n, h in hashes.items()),
        *(h.max().alias(f"_high_{n}") for n, h in hashes.items()),
    )


def _entities(parts: list[pl.DataFrame], key: str) -> pl.DataFrame:
    """The batches' entities as one row each, and `_differ`: how many of its attributes
    take two values."""
    every = pl.concat(parts) if parts else pl.DataFrame(schema={key: pl.String, ROW: pl.UInt32})
    names = [c for c in every.columns if c != key and c != ROW and not c.startswith("_")]
    merged = every.group_by(key).agg(
        pl.col(ROW).min(),
        *(pl.col(n).max() for n in names),
        pl.sum_horizontal(
            *(
                (pl.col(f"_low_{n}").min() != pl.col(f"_high_{n}").max()).fill_null(False)
                for n in names
            ),
            pl.lit(0),
        ).alias("_differ"),
    )
    return merged


def _table(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    return typed(frame.sort(ROW).drop(ROW, "_differ").filter(pl.col(key).is_not_null()))
