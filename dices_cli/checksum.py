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


# A prefetched digest counts only for the file as it was then: same size, same mtime.
_Key = tuple[Path, int, int]
_started: dict[_Key, Future[Digest]] = {}
_lock = threading.Lock()


def _key(path: Path) -> _Key:
    status = os.stat(path)
    return (path.resolve(), status.st_size, status.st_mtime_ns)


def _hash(path: Path) -> Digest:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return Digest(size, digest.hexdigest())


def _run(path: Path, future: Future[Digest]) -> None:
    try:
        future.set_result(_hash(path))
    except BaseException as error:  # handed to whoever asks for the digest
        future.set_exception(error)


def prefetch(paths: Iterable[Path]) -> None:
    """Start hashing `paths` in the background; a file that cannot be read is skipped here
    and reported by `sha256`. Daemon threads: an early exit does not wait for them."""
    for path in paths:
        try:
            key = _key(path)
        except OSError:
            continue
        with _lock:
            if key in _started:
                continue
            future: Future[Digest] = Future()
            _started[key] = future
        threading.Thread(target=_run, args=(path, future), daemon=True).start()


def sha256(path: Path) -> Digest:
    """The file's size and SHA-256: the prefetched ones if the file is unchanged since."""
    with _lock:
        future = _started.pop(_key(path), None)
    return _hash(path) if future is None else future.result()
