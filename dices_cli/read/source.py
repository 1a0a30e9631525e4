"""An input file, opened once: the bytes that are checked are the bytes that are hashed.

A plain regular file is read in place through the descriptor opened first, so a file renamed
or replaced meanwhile does not mix into it, and a file rewritten in place is noticed
(`check_unchanged`). Anything else (a gzip file, a pipe, a FIFO, stdin as `-`) is read once,
as it arrives, into a private temporary file of CSV text, which is then read like a plain
file; the digest of the bytes as given, and the counts over the text that the parser
checks Polars against, are taken in that same pass, and the text may grow only up to a
limit, so that a small gzip that inflates to terabytes is refused early. A plain file is
hashed and counted in one pass of its own (`dices_cli.read.checksum`), so that it is read twice
at most: that pass, and the parser.

Imports nothing heavy: `dices ingest` opens its inputs before Polars is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from dices_cli.errors import DicesError

# The checksums and gzip are imported by the methods that read a file: `dices sql` imports
# this module (its sandbox reads `--table NAME=-` through it) but mostly reads none, and
# they would add to its start (bench/startup.py).
if TYPE_CHECKING:
    from dices_cli.read import checksum

STDIN = "-"
COPY_CHUNK = 1 << 20
DEFAULT_MAX_SIZE = 2 << 30  # 2 GiB of CSV text; a DICES file is about 50 MB


class UnreadableError(DicesError):
    """The bytes are not a file we can read at all (say, a truncated gzip stream)."""


class TooLargeError(DicesError):
    """A compressed or piped input holds more text than the limit allows."""

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(
            f"{name} holds more than {format_size(limit)} of CSV text once read "
            "(a DICES file is about 50 MB); nothing was written"
        )
        self.limit = limit


class ChangedError(DicesError):
    """The file changed while it was being read, so no checksum describes what was read."""


_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


def parse_size(text: str) -> int:
    """Bytes from a size such as 2G, 500M, 64K or 1000 (binary units; KiB, MB, GB accepted)."""
    spelled = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = spelled.rstrip("KMGT"), spelled[len(spelled.rstrip("KMGT")) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or not 0 < value < float(1 << 60):
        raise ValueError(f"must be a size such as 500M or 4G, not {text!r}")
    return int(value * (1 << _UNITS[unit]))


def format_size(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):g} {unit}"
    return f"{size} bytes"


class _Reader(io.RawIOBase):
    """Reads an open file from its start with pread, so no other reader moves its offset."""

    def __init__(self, fd: int, position: int = 0) -> None:
        self.fd, self.position = fd, position

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = os.pread(self.fd, len(buffer), self.position)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


class _Hashing(io.RawIOBase):
    """A stream that hashes and counts every byte read through it (`first` already read)."""

    def __init__(self, stream: BinaryIO, first: bytes) -> None:
        self.stream, self.pending = stream, first
        self.digest, self.size = hashlib.sha256(first), len(first)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.pending:
            data, self.pending = self.pending[: len(buffer)], self.pending[len(buffer) :]
        else:
            data = self.stream.read(len(buffer))
            self.digest.update(data)
            self.size += len(data)
        buffer[: len(data)] = data
        return len(data)


class Source:
    """One input: `name` as given, and its CSV text readable as a plain file any number of times.

    Use `open_source`, which closes it.
    """

    def __init__(self, given: str, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self.name = "stdin" if given == STDIN else given
        self.path = None if given == STDIN else Path(given)
        self._text = -1  # descriptor of the CSV text: the file itself, or the spool
        self._given = -1  # descriptor of a regular file as given (hashed, watched for change)
        self._given_status: os.stat_result | None = None
        self._scanned: checksum.Scan | None = None  # digest and byte counts, once known
        self._spool_file: BinaryIO | None = None
        self.compressed = False  # whether the bytes given are gzip (the text is inside)
        try:
            if self.path is None:
                self._scanned = self._spool(sys.stdin.buffer, max_size)
            else:
                self._open_file(self.path, max_size)
        except BaseException:
            self.close()
            raise

    def _open_file(self, path: Path, max_size: int) -> None:
        from dices_cli.read import checksum

        try:
            self._given = os.open(path, os.O_RDONLY)
            status = os.fstat(self._given)
            if stat.S_ISDIR(status.st_mode):
                raise DicesError(f"cannot read {self.name}: it is a directory")
            if stat.S_ISREG(status.st_mode) and os.pread(self._given, 2, 0) != checksum.GZIP_MAGIC:
                self._text, self._given_status = self._given, status
                return
            # gzip, a pipe, a FIFO, a device: read once, the checksum taken on the way
            with (
                self._reader(self._given)
                if stat.S_ISREG(status.st_mode)
                else open(self._given, "rb", closefd=False) as stream
            ):
                self._scanned = self._spool(stream, max_size)
            os.close(self._given)
            self._given = -1
        except OSError as error:
            raise DicesError(f"cannot read {self.name}: {error.strerror or error}") from error

    def _spool(self, stream: BinaryIO, max_size: int) -> checksum.Scan:
        """Copy the CSV text of `stream` (decompressed if it is gzip) to a private temporary
        file; return the digest of the bytes as given and the counts over the text, taken on
        the way."""
        import gzip

        from dices_cli.read import checksum

        first = b""
        while len(first) < 2 and (more := stream.read(2 - len(first))):
            first += more
        given = _Hashing(stream, first)
        text: BinaryIO = given  # type: ignore[assignment]
        if first == checksum.GZIP_MAGIC:
            text = gzip.GzipFile(fileobj=given, mode="rb")  # type: ignore[assignment]
            self.compressed = True
        # Private (0600) and already unlinked; closed by close().
        spool = self._spool_file = tempfile.TemporaryFile(prefix="dices-")  # noqa: SIM115
        self._text = spool.fileno()
        counts = checksum.TextCounts()
        try:
            while chunk := text.read(COPY_CHUNK):
                counts.add(chunk)
                if counts.size > max_size:
                    raise TooLargeError(self.name, max_size)
                spool.write(chunk)
            spool.flush()
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            raise UnreadableError(
                f"{self.name}: the file looks gzip-compressed but cannot be read: {error}"
            ) from error
        except OSError as error:
            raise DicesError(
                f"cannot copy {self.name} to a temporary file in {tempfile.gettempdir()}: "
                f"{error.strerror or error}"
            ) from error
        return checksum.Scan(checksum.Digest(given.size, given.digest.hexdigest()), counts.facts())

    @property
    def display_name(self) -> str:
        """The file's own name, without its folders ("stdin" for stdin)."""
        return self.name if self.path is None else self.path.name

    @staticmethod
    def _reader(fd: int, position: int = 0) -> io.BufferedReader:
        return io.BufferedReader(_Reader(fd, position), buffer_size=COPY_CHUNK)

    @property
    def size(self) -> int:
        """Bytes of CSV text (a byte-order mark included)."""
        return os.fstat(self._text).st_size

    @property
    def fileno(self) -> int:
        """The descriptor of the CSV text (for mmap)."""
        return self._text

    @property
    def text_path(self) -> str:
        """A path naming the CSV text, for readers that want a path (Polars)."""
        return f"/dev/fd/{self._text}"

    def open_text(self, at: int = 0) -> io.BufferedReader:
        """A new reader of the CSV text from its start, or from its byte `at` (independent
        of any other reader)."""
        return self._reader(self._text, at)

    def read(self, limit: int) -> bytes:
        """The first `limit` bytes of the CSV text."""
        return os.pread(self._text, limit, 0)

    def check_unchanged(self) -> None:
        """Raise ChangedError when the file was written to since it was opened."""
        if self._given_status is None:
            return
        now, before = os.fstat(self._given), self._given_status
        if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            raise ChangedError(
                f"{self.name} changed while it was being read; nothing was written. "
                "Run the command again once the file is complete"
            )

    def digest(self) -> checksum.Digest:
        """Size and SHA-256 of the bytes as given (a gzip file's own bytes, not its text)."""
        return self._scan().digest

    def facts(self) -> checksum.ByteFacts:
        """Counts over the whole CSV text, taken in the pass that hashes it."""
        return self._scan().facts

    def _scan(self) -> checksum.Scan:
        from dices_cli.read import checksum

        if self._scanned is None:  # a plain file: prefetched, or read now
            try:
                self._scanned = checksum.scan(self._given)
            except OSError as error:
                raise DicesError(f"cannot read {self.name}: {error.strerror}") from error
        return self._scanned

    def close(self) -> None:
        if self._spool_file is not None:
            self._spool_file.close()
        if self._given >= 0:
            os.close(self._given)
        self._text = self._given = -1
        self._spool_file = None


@contextlib.contextmanager
def open_source(given: str | Path, max_size: int = DEFAULT_MAX_SIZE) -> Iterator[Source]:
    source = Source(str(given), max_size)
    try:
        yield source
    finally:
        source.close()
