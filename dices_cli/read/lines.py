"""The physical lines of a CSV text, numbered as editors number them, in bounded memory.

A line ends at LF, CRLF or a lone CR (at LF alone for JSON Lines, where a CR is blank).
Lines are decoded as UTF-8 with surrogateescape, so each encodes back to exactly its bytes,
invalid ones included. The reader holds only the
line being read (rejected records are read back by their line numbers), skips runs of blank
lines between records at the speed of `bytes.count` (a legal file may hold millions), and
refuses a record longer than MAX_RECORD_BYTES without holding the rest of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"
CHUNK = 1 << 20
# A DICES record is a few KB; 24 MiB holds two of the largest legal cells we test (10 MiB)
# and bounds what one runaway record (an unterminated quote before gigabytes of text, a
# NUL-filled tail) costs: the csv module holds a field as 4-byte characters, and doubles
# its buffer as it grows (about 8 bytes per byte at the peak, within the fixed 300 MB).
MAX_RECORD_BYTES = 24 << 20
_LINE_END = re.compile(rb"\r\n?|\n")
_LF = re.compile(rb"\n")
_NOT_LINE_END = re.compile(rb"[^\r\n]")


class RecordTooLongError(Exception):
    """The record being read is longer than MAX_RECORD_BYTES; its line was skipped."""


class Lines:
    """Iterates the lines of `handle` (binary, from its start) as str, each with its end."""

    def __init__(self, handle: BinaryIO, lf_only: bool = False) -> None:
        self.handle = handle
        self._line_end = _LF if lf_only else _LINE_END
        self.buffer = bytearray()
        self.position = 0  # in buffer
        self.eof = False
        self.count = 0  # lines read (or skipped) so far
        self.first = 1  # the line the current record starts on
        self.record_bytes = 0  # its bytes so far (its lines are not kept: a record of
        # millions of short lines would cost 50 bytes of object per line)
        self._started = False  # the BOM is dropped before the first line

    def __iter__(self) -> Iterator[str]:
        return self

    def _fill(self) -> bool:
        """Read more bytes into the buffer; False at the end of the text."""
        if self.eof:
            return False
        del self.buffer[: self.position]
        self.position = 0
        chunk = self.handle.read(CHUNK)
        if not self._started:
            self._started = True
            chunk = chunk.removeprefix(BOM)
        self.eof = not chunk
        self.buffer += chunk
        return not self.eof

    def start_record(self) -> None:
        """Begin a record: skip the blank lines before it, and forget the last one's lines."""
        while True:
            found = _NOT_LINE_END.search(self.buffer, self.position)
            end = found.start() if found else len(self.buffer)
            if found is None and not self.eof and end > self.position and self.buffer[-1] == 13:
                end -= 1  # a CR at the end of the buffer may be the first half of a CRLF
            run = bytes(self.buffer[self.position : end])
            self.count += len(run) - run.count(b"\r\n")
            self.position = end
            if found is not None or not self._fill():
                break
        self.record_bytes, self.first = 0, self.count + 1

    def __next__(self) -> str:
        searched = self.position  # the bytes before this hold no line end
        while True:
            found = self._line_end.search(self.buffer, searched)
            # A line end found before the buffer's last byte is final; a CR at the very end
            # might still be followed by an LF.
            if found is not None and (found.end() < len(self.buffer) or self.eof):
                end = found.end()
                break
            if len(self.buffer) - self.position > MAX_RECORD_BYTES - self.record_bytes:
                self._skip_line()
                raise RecordTooLongError
            searched = len(self.buffer) - 1 - self.position  # kept across the refill below
            if not self._fill():
                end = len(self.buffer)
                if end == self.position:
                    raise StopIteration
                break
            searched = max(searched, 0)
        line = bytes(self.buffer[self.position : end])
        self.position = end
        self.count += 1
        self.record_bytes += len(line)
        if self.record_bytes > MAX_RECORD_BYTES:
            raise RecordTooLongError
        return line.decode("utf-8", errors="surrogateescape")

    def _skip_line(self) -> None:
        """Drop the rest of the current line without holding it."""
        while (found := self._line_end.search(self.buffer, self.position)) is None:
            self.position = len(self.buffer)
            if not self._fill():
                break
        if found is not None:
            self.position = found.end()
        self.count += 1

    def forget(self) -> None:
        """Start counting afresh (for a reader that wants lines, not records)."""
        self.record_bytes = 0


def encoded(lines: Iterable[str]) -> bytes:
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def verbatim_records(
    handle: BinaryIO, spans: Iterable[tuple[int, int]]
) -> Iterator[tuple[int, bytes]]:
    """(first, bytes) of each record that starts on line `first` and spans `count` lines, in
    one streaming pass: `spans` come in file order, and are not held. A line too long for any
    record is left out."""
    lines = Lines(handle)
    for first, count in spans:
        kept: list[str] = []
        while lines.count < first + count - 1:
            try:
                line: str | None = next(lines)
            except StopIteration:
                break
            except RecordTooLongError:  # skipped, not held
                line = None
            lines.forget()
            if line is not None and lines.count >= first:
                kept.append(line)
        yield first, encoded(kept)


def first_overlong(
    handle: BinaryIO, quoted: bool = False, openers: bytes = b"", most_openers: int = 0
) -> int | None:
    """The line on which the first record longer than MAX_RECORD_BYTES starts (or, given
    `openers`, the first holding more than `most_openers` of those bytes); None when there
    is none. A record ends at LF; with `quoted`, only at an LF outside double quotes (a CSV
    record: a quote toggles, and an escaped "" toggles twice). For readers that hold a whole
    file (Polars, PyArrow): one pass a chunk at a time, at numpy speed (a few seconds per GB)."""
    import numpy as np

    length = opened = parity = 0  # of the record under way: bytes, openers, quotes mod 2
    line = 1  # where the record under way starts
    lines = 0  # LFs before the chunk
    while chunk := handle.read(CHUNK):
        data = np.frombuffer(chunk, np.uint8)
        feeds = np.flatnonzero(data == ord("\n"))
        ending = np.arange(len(feeds))  # the LFs that end a record, as indices of `feeds`
        if quoted:
            quotes = np.flatnonzero(data == ord('"'))
            ending = np.flatnonzero((parity + np.searchsorted(quotes, feeds)) % 2 == 0)
            parity = (parity + len(quotes)) % 2
        cuts = np.concatenate(([0], feeds[ending] + 1, [len(data)]))
        sizes = np.diff(cuts)
        sizes[0] += length
        too_long = sizes > MAX_RECORD_BYTES
        if openers:
            found = np.zeros(len(data), dtype=bool)
            for opener in openers:  # one comparison per opener: far faster than np.isin
                found |= data == opener
            at = np.flatnonzero(found)
            counts = np.diff(np.searchsorted(at, cuts))
            counts[0] += opened
            too_long |= counts > most_openers
            opened = int(counts[-1])
        starts = np.concatenate(([line], lines + ending + 2))
        if too_long.any():
            return int(starts[np.argmax(too_long)])
        length, line, lines = int(sizes[-1]), int(starts[-1]), lines + len(feeds)
    return None


def header_fields(handle: BinaryIO, separator: bytes, most: int) -> int:
    """The fields of the first record of a CSV (or TSV) text, counted up to `most` + 1: the
    separators outside double quotes before the first LF outside them, plus one. Reads no
    more than that record, a chunk at a time, and holds none of its fields."""
    import numpy as np

    fields, parity = 1, 0  # quotes so far mod 2
    while chunk := handle.read(CHUNK):
        data = np.frombuffer(chunk, np.uint8)
        quotes = np.flatnonzero(data == ord('"'))
        feeds = np.flatnonzero(data == ord("\n"))
        ending = feeds[(parity + np.searchsorted(quotes, feeds)) % 2 == 0]
        end = int(ending[0]) if len(ending) else len(data)
        cuts = np.flatnonzero(data[:end] == separator[0])
        fields += int(np.count_nonzero((parity + np.searchsorted(quotes, cuts)) % 2 == 0))
        parity = (parity + len(quotes)) % 2
        if len(ending) or fields > most:
            break
    return min(fields, most + 1)
