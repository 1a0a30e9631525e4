"""Gathering the cells a reader reads into String frames, handed to the validation a batch at
a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from dices_cli.evaluate.predictions.columns import COLUMNS, LINE
from dices_cli.evaluate.predictions.validation import Validation

if TYPE_CHECKING:
    import polars as pl


BATCH_ROWS = 8192  # rows gathered as Python values before they become a frame
BATCH_BYTES = 4 << 20  # or the characters they were read from
VALIDATED_ROWS = 1 << 18  # rows typed and checked at a time
HELD_BYTES = 16 << 20  # of cells read a record at a time, held before they are checked
# The validation of rows of some known columns, None when they cannot be validated.
Validating = Callable[[list[str]], "Validation | None"]


class Rows:
    """The cells of the known columns, gathered into String frames a batch at a time and,
    with `validate`, handed to its Validation a VALIDATED_ROWS (or HELD_BYTES) at a time,
    so that only the typed rows of a file are held, never its cells (bench/predictions.py
    measures the peak).

    `columns`: the known columns the file has; None for a JSON Lines file, whose columns
    are those some record names (`seen`): they are taken from the records read before the
    first hand-over, and a record naming another one later makes the rows handed over
    stale (`finish` then says None, and the caller reads the file again, knowing them), as
    does a first guess that cannot be validated (`validate` says None).
    """

    def __init__(
        self,
        columns: list[str] | None,
        validate: Validating | None = None,
    ) -> None:
        self.columns, self.validate = columns, validate
        self.validation = validate(columns) if validate and columns is not None else None
        self.seen: set[str] = set()
        self.lines: list[int] = []
        self.rows: list[Mapping[str, str | None]] = []  # the cells of each row of `lines`
        self.batch_size = 0  # the characters they were read from
        self.frames: list[pl.DataFrame] = []
        self.held = self.held_bytes = 0  # rows in frames, and their cells' bytes
        self.stale = False
        self.records = 0  # read, broken ones too

    def add(self, line: int, cells: Mapping[str, str | None], size: int) -> None:
        """The cells of a row (a known column it lacks is None), read from `size`
        characters of text."""
        self.lines.append(line)
        self.rows.append(cells)
        self.batch_size += size
        if len(self.lines) == BATCH_ROWS or self.batch_size >= BATCH_BYTES:
            self._flush()

    def add_frame(self, first: int, frame: pl.DataFrame) -> None:
        """String cells of some known columns, the first on line `first`."""
        import polars as pl

        self._flush()
        lines = pl.int_range(first, first + frame.height, dtype=pl.Int64, eager=True)
        missing = [pl.lit(None, pl.String).alias(n) for n in COLUMNS if n not in frame.columns]
        self._held(frame.with_columns(*missing, lines.alias(LINE)).select(LINE, *COLUMNS))

    def _flush(self) -> None:
        import polars as pl

        if not self.lines:
            return
        cells = {name: [row.get(name) for row in self.rows] for name in COLUMNS}
        frame = pl.DataFrame(
            {LINE: self.lines, **cells},
            schema={LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)},
        )
        self.lines, self.rows, self.batch_size = [], [], 0
        self._held(frame)

    def _held(self, frame: pl.DataFrame) -> None:
        self.frames.append(frame)
        self.held += frame.height
        self.held_bytes += int(frame.estimated_size())
        full = self.held >= VALIDATED_ROWS or self.held_bytes >= HELD_BYTES
        if self.validate is not None and full:
            self._hand_over()

    def _hand_over(self) -> None:
        """The rows held, to the validation (dropped when it is stale)."""
        import polars as pl

        assert self.validate is not None
        frames, self.frames, self.held, self.held_bytes = self.frames, [], 0, 0
        if self.columns is None:
            self.columns = [name for name in COLUMNS if name in self.seen]
            self.validation = self.validate(self.columns)
        self.stale = self.stale or not self.seen <= set(self.columns)
        if frames and not self.stale and self.validation is not None:
            # One chunk a column, as PyArrow's batches are: typed columns chunked apart
            # made the duplicate check copy the typed frame.
            self.validation.add(pl.concat(frames).select(LINE, *self.columns).rechunk())

    def finish(self) -> Validation | None:
        """The validation of every row (None when the columns were taken too early, and
        with them the rows handed over), once the file is read; `columns` are then the
        file's."""
        self._flush()
        self._hand_over()
        assert self.columns is not None
        self.columns = [name for name in COLUMNS if name in self.seen or name in self.columns]
        return None if self.stale else self.validation

    def frame(self) -> pl.DataFrame:
        """The rows held, of the known columns (all of them when `columns` is None)."""
        import polars as pl

        self._flush()
        schema = {LINE: pl.Int64, **dict.fromkeys(COLUMNS, pl.String)}
        columns = COLUMNS if self.columns is None else self.columns
        return pl.concat([pl.DataFrame(schema=schema), *self.frames]).select(LINE, *columns)
