"""SHA-256 of input files, which can be started early and finished on a spare core.

Hashing releases the GIL, so a command can `prefetch` its input files before it imports
Polars (a tenth of a second of Python on one core) and collect each digest with `sha256`
when it writes the manifest. Without a prefetch, `sha256` hashes the file there and then.
This module imports nothing heavy, so that it can start before the imports it overlaps.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 22


@dataclass(frozen=True)
class Digest:
    size: int  # bytes, as stored
    sha256: str


# A prefetched digest counts only for the very file that is read later, as it was then:
# same device and inode (not another file renamed into place), same size, same mtime.
_Key = tuple[int, int, int, int]
_started: dict[_Key, Future[Digest | None]] = {}
_lock = threading.Lock()


def _key(status: os.stat_result) -> _Key:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _hash_fd(fd: int) -> Digest:
    """Hash an open file from its start, without moving its offset (pread)."""
    digest, size = hashlib.sha256(), 0
    while chunk := os.pread(fd, CHUNK, size):
        digest.update(chunk)
        size += len(chunk)
    return Digest(size, digest.hexdigest())


def _run(path: Path, key: _Key, future: Future[Digest | None]) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            same = _key(os.fstat(fd)) == key
            digest = _hash_fd(fd) if same else None
            # A file written while it was hashed has a digest that belongs to no version of it.
            future.set_result(digest if same and _key(os.fstat(fd)) == key else None)
        finally:
            os.close(fd)
    except OSError:
        future.set_result(None)  # `sha256` hashes the file it is given, and says why it cannot


def prefetch(paths: Iterable[Path]) -> None:
    """Start hashing the regular files among `paths` in the background (daemon threads: an
    early exit does not wait for them). Anything else is hashed by whoever reads it."""
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            continue
        if not os.path.isfile(path):
            continue  # a pipe or a device: reading it here would take its bytes away
        key = _key(status)
        with _lock:
            if key in _started:
                continue
            future: Future[Digest | None] = Future()
            _started[key] = future
        threading.Thread(target=_run, args=(path, key, future), daemon=True).start()


def sha256(fd: int) -> Digest:
    """The size and SHA-256 of the open file `fd`: prefetched if that is this very file,
    unchanged since; otherwise hashed now."""
    with _lock:
        future = _started.pop(_key(os.fstat(fd)), None)
    prefetched = future.result() if future is not None else None
    return prefetched if prefetched is not None else _hash_fd(fd)


def sha256_file(path: Path) -> Digest:
    """The size and SHA-256 of the file at `path`, hashed now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _hash_fd(fd)
    finally:
        os.close(fd)
