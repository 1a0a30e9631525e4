"""Background SHA-256 of input files: the digest is the file's, prefetched or not."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dices_cli import checksum


def expected(path: Path) -> checksum.Digest:
    data = path.read_bytes()
    return checksum.Digest(len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "a.csv"
    path.write_bytes(b"x" * (3 * checksum.CHUNK + 5))
    fd = os.open(path, os.O_RDONLY)
    yield path, fd
    os.close(fd)


def test_a_prefetched_digest_is_the_files(opened: tuple[Path, int]) -> None:
    path, fd = opened
    checksum.prefetch([path, path])  # twice: hashed once
    assert checksum.sha256(fd) == expected(path)
    assert checksum.sha256(fd) == expected(path)  # again, without a prefetch


def test_a_file_changed_after_the_prefetch_is_hashed_again(opened: tuple[Path, int]) -> None:
    path, fd = opened
    checksum.prefetch([path])
    path.write_bytes(b"newer")  # the same inode, rewritten
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert checksum.sha256(fd) == expected(path)


def test_a_file_renamed_into_place_is_not_taken_for_the_one_that_was_read(
    opened: tuple[Path, int],
) -> None:
    path, fd = opened
    other = path.with_name("b.csv")
    other.write_bytes(b"y" * (3 * checksum.CHUNK + 5))
    os.utime(other, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns))
    os.replace(other, path)  # same name, size and mtime: another file
    checksum.prefetch([path])
    data = b"x" * (3 * checksum.CHUNK + 5)
    assert checksum.sha256(fd) == checksum.Digest(len(data), hashlib.sha256(data).hexdigest())


def test_what_cannot_be_prefetched_is_skipped_quietly(tmp_path: Path) -> None:
    before = dict(checksum._started)
    checksum.prefetch([tmp_path / "missing.csv", tmp_path, Path("/dev/null")])
    assert checksum._started == before
