"""Background SHA-256 of input files: the digest is the file's, prefetched or not."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from dices_cli import checksum


def expected(path: Path) -> checksum.Digest:
    data = path.read_bytes()
    return checksum.Digest(len(data), hashlib.sha256(data).hexdigest())


def test_a_prefetched_digest_is_the_files(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"x" * (3 * checksum.CHUNK + 5))
    checksum.prefetch([path, path])  # twice: hashed once
    assert checksum.sha256(path) == expected(path)
    assert checksum.sha256(path) == expected(path)  # again, without a prefetch


def test_a_file_changed_after_the_prefetch_is_hashed_again(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"old")
    checksum.prefetch([path])
    path.write_bytes(b"newer")
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert checksum.sha256(path) == expected(path)


def test_an_unreadable_file_is_reported_when_its_digest_is_asked_for(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    checksum.prefetch([missing])  # skipped quietly
    with pytest.raises(FileNotFoundError):
        checksum.sha256(missing)
