"""One pass over an input's bytes: their SHA-256, and the counts that tell the CSV parser
whether Polars saw every record whole (`ByteFacts`), so that no other pass is needed for them.

The pass over a plain file can start early and finish on a spare core: hashing releases the
GIL (counting holds it only for moments), so a command can `prefetch` its input files before
it imports Polars (a tenth of a second of Python on one core), and `scan` collects each
result when the parser wants the counts.
Without a prefetch, `scan` reads the file there and then. A gzip file is not prefetched: its
own bytes are hashed, and its text counted, as it is decompressed (`dices_cli.read.source`).
This module imports nothing heavy, so that it can start before the imports it overlaps.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future

CHUNK = 1 << 18  # hashed, then counted (line breaks, quotes), while in the CPU cache
# Every byte but line breaks and quotes, deleted by `bytes.translate` in one pass: a pass of
# `bytes.count` costs as much as that, and counting the few bytes left costs little (it
# holds the GIL, which the import of Polars beside it waits for; bench/ingest.py).
_ALL_BUT_LINE_BREAKS_AND_QUOTES = bytes(b for b in range(256) if b not in b'\n"')
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Digest:
    size: int  # bytes, as stored
    sha256: str


@dataclass(frozen=True)
class ByteFacts:
    """What one pass over a CSV text learns, for the fast parse to be trusted."""

    text_bytes: int  # of the CSV text, without a BOM
    newlines: int  # in the CSV text
    quotes: int
    carriage_returns: int
    ends_with_newline: bool
    has_nul: bool
    has_lone_cr: bool  # a CR not followed by LF: a line break Polars would not see


@dataclass
class CellSums:
    """What a parser's records add up to, set against the text's ByteFacts (`adds_up`)."""

    records: int = 0
    bytes: int = 0  # of every cell's value
    quotes: int = 0  # inside cells' values
    line_breaks: int = 0  # inside cells' values
    carriage_returns: int = 0  # inside cells' values


def adds_up(
    sums: CellSums, facts: ByteFacts, header: bytes, header_lines: int, columns: int
) -> bool:
    """Whether the records' cells, `columns` to a record, and the CSV syntax around them are
    exactly the text after its `header` (its bytes, line ends included, over `header_lines`
    lines): every line break, and every byte.

    Body bytes = cell bytes + separators + line ends + quote characters, where every quoted
    cell adds 2 quotes and every quote inside a cell is written twice. Polars silently pads
    short records, reads a blank line as a record and drops text after a closing quote
    (`"a"b` -> `a`); each breaks this equation.
    """
    if facts.has_nul or facts.has_lone_cr:
        return False
    records = sums.records
    record_ends = records - (0 if facts.ends_with_newline else 1)
    if facts.newlines != header_lines + record_ends + sums.line_breaks:
        return False  # a line break the records do not account for
    body_bytes = facts.text_bytes - len(header)
    if records == 0:
        return body_bytes == 0
    quoting = facts.quotes - header.count(b'"') - 2 * sums.quotes  # two per quoted cell
    if quoting < 0 or quoting % 2 or quoting // 2 > records * columns:
        return False
    crlf_ends = facts.carriage_returns - header.count(b"\r") - sums.carriage_returns
    expected = (
        sums.bytes
        + records * (columns - 1)
        + record_ends
        + crlf_ends
        + quoting
        + sums.quotes  # the second quote of every escaped ""
    )
    return crlf_ends >= 0 and body_bytes == expected


@dataclass
class TextCounts:
    """Running counts over a CSV text, fed in chunks split anywhere."""

    size: int = 0  # a byte-order mark included
    head: bytes = b""  # the first bytes, to tell a byte-order mark
    newlines: int = 0
    quotes: int = 0
    carriage_returns: int = 0
    crlf: int = 0
    has_nul: bool = False
    last: bytes = b""

    def add(self, chunk: bytes) -> None:
        if len(self.head) < len(BOM):
            self.head = (self.head + chunk[: len(BOM)])[: len(BOM)]
        self.size += len(chunk)
        kept = chunk.translate(None, _ALL_BUT_LINE_BREAKS_AND_QUOTES)
        newlines = kept.count(b"\n")
        self.newlines += newlines
        self.quotes += len(kept) - newlines
        self.has_nul = self.has_nul or b"\x00" in chunk
        if b"\r" in chunk:
            self.carriage_returns += chunk.count(b"\r")
            self.crlf += chunk.count(b"\r\n")
        if self.last == b"\r" and chunk.startswith(b"\n"):
            self.crlf += 1  # a CRLF split between two chunks
        self.last = chunk[-1:] or self.last

    def facts(self) -> ByteFacts:
        bom = len(BOM) if self.head == BOM else 0
        return ByteFacts(
            text_bytes=self.size - bom,
            newlines=self.newlines,
            quotes=self.quotes,
            carriage_returns=self.carriage_returns,
            ends_with_newline=self.last == b"\n",
            has_nul=self.has_nul,
            has_lone_cr=self.carriage_returns != self.crlf,
        )


@dataclass(frozen=True)
class Scan:
    digest: Digest  # of the bytes as given
    facts: ByteFacts  # of their CSV text (for a plain file, the same bytes)


# A prefetched scan counts only for the very file that is read later, as it was then:
# same device and inode (not another file renamed into place), same size, same mtime.
_Key = tuple[int, int, int, int]
_started: dict[_Key, Future[Scan | None]] = {}
_lock = threading.Lock()


def _key(status: os.stat_result) -> _Key:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _read(fd: int, *consumers: Callable[[bytes], None]) -> int:
    """Feed an open file, from its start, to `consumers` in chunks without moving its offset
    (pread); returns its size."""
    size = 0
    while chunk := os.pread(fd, CHUNK, size):
        for consume in consumers:
            consume(chunk)
        size += len(chunk)
    return size


def _scan_fd(fd: int) -> Scan:
    digest, counts = hashlib.sha256(), TextCounts()
    size = _read(fd, digest.update, counts.add)
    return Scan(Digest(size, digest.hexdigest()), counts.facts())


def _run(fd: int, key: _Key, future: Future[Scan | None]) -> None:
    try:
        scanned = _scan_fd(fd)
        # A file written while it was read has a scan that belongs to no version of it.
        future.set_result(scanned if _key(os.fstat(fd)) == key else None)
    except OSError:
        future.set_result(None)  # `scan` reads the file it is given, and says why it cannot
    finally:
        os.close(fd)


def prefetch(paths: Iterable[Path]) -> None:
    """Start scanning the plain regular files among `paths` in the background (daemon threads:
    an early exit does not wait for them). Anything else is read by whoever reads it."""
    for path in paths:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                continue  # a FIFO opened here, even for a moment, could take a writer's bytes
            # Not blocking, should a FIFO have been put in the file's place since.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        key = _plain_file_key(fd)
        # Here, not at the top: concurrent.futures imports logging, which every query's start
        # would pay (the store imports this module for `dices verify`; bench/startup.py).
        from concurrent.futures import Future

        future: Future[Scan | None] = Future()
        with _lock:
            new = key is not None and key not in _started
            if new:
                _started[key] = future  # type: ignore[index]
        if new:
            threading.Thread(target=_run, args=(fd, key, future), daemon=True).start()
        else:
            os.close(fd)


def _plain_file_key(fd: int) -> _Key | None:
    """The key of a plain regular file; None for anything else, and for a gzip file (hashed
    as it is decompressed)."""
    try:
        status = os.fstat(fd)
        if stat.S_ISREG(status.st_mode) and os.pread(fd, 2, 0) != GZIP_MAGIC:
            return _key(status)
    except OSError:
        pass  # whoever reads the file says why it cannot
    return None


def scan(fd: int) -> Scan:
    """The digest and byte counts of the open plain file `fd`: prefetched if that is this very
    file, unchanged since; otherwise read now."""
    with _lock:
        future = _started.pop(_key(os.fstat(fd)), None)
    prefetched = future.result() if future is not None else None
    return prefetched if prefetched is not None else _scan_fd(fd)


def sha256_file(path: Path) -> Digest:
    """The size and SHA-256 of the file at `path`, hashed now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def sha256_fd(fd: int) -> Digest:
    """The size and SHA-256 of the open file `fd`, from its start, hashed now."""
    digest = hashlib.sha256()
    return Digest(_read(fd, digest.update), digest.hexdigest())
