"""The one pass over an input file (SHA-256 and byte counts): the file's, prefetched or not."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dices_cli.read import checksum
from dices_cli.read.source import open_source


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
    assert checksum.scan(fd).digest == expected(path)
    assert checksum.scan(fd).digest == expected(path)  # again, without a prefetch


def test_a_file_changed_after_the_prefetch_is_hashed_again(opened: tuple[Path, int]) -> None:
    path, fd = opened
    checksum.prefetch([path])
    path.write_bytes(b"newer")  # the same inode, rewritten
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert checksum.scan(fd).digest == expected(path)


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
    assert checksum.scan(fd).digest == checksum.Digest(len(data), hashlib.sha256(data).hexdigest())


def test_what_cannot_be_prefetched_is_skipped_quietly(tmp_path: Path) -> None:
    before = dict(checksum._started)
    checksum.prefetch([tmp_path / "missing.csv", tmp_path, Path("/dev/null")])
    assert checksum._started == before


def test_a_fifo_is_not_even_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader opened for a moment would let a writer in, and its bytes could be lost."""
    fifo = tmp_path / "ratings.csv"
    os.mkfifo(fifo)
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str | Path, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    checksum.prefetch([fifo])
    assert opened == []


def test_a_gzip_file_is_not_prefetched(tmp_path: Path) -> None:
    """Its own bytes are hashed as they are decompressed: a prefetch would read them again."""
    path = tmp_path / "a.csv.gz"
    path.write_bytes(gzip.compress(b"id\n1\n"))
    before = dict(checksum._started)
    checksum.prefetch([path])
    assert checksum._started == before


def expected_facts(text: bytes) -> checksum.ByteFacts:
    body = text.removeprefix(checksum.BOM)
    return checksum.ByteFacts(
        text_bytes=len(body),
        newlines=body.count(b"\n"),
        quotes=body.count(b'"'),
        carriage_returns=body.count(b"\r"),
        ends_with_newline=body.endswith(b"\n"),
        has_nul=b"\x00" in body,
        has_lone_cr=body.count(b"\r") != body.count(b"\r\n"),
    )


PIECES = st.sampled_from([checksum.BOM, b"\r", b"\n", b"\r\n", b'"', b"\x00", b"a", b",", b"\xbf"])


@given(pieces=st.lists(PIECES, max_size=40), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_the_counts_do_not_depend_on_where_the_text_is_cut(
    pieces: list[bytes], cuts: list[int]
) -> None:
    """A spool counts its text in chunks of any size (the first may be two bytes)."""
    text = b"".join(pieces)
    bounds = sorted({0, len(text), *(min(cut, len(text)) for cut in cuts)})
    counts = checksum.TextCounts()
    for start, end in itertools.pairwise(bounds):
        counts.add(text[start:end])
    assert counts.facts() == expected_facts(text)


@given(pieces=st.lists(PIECES, min_size=1, max_size=40))
def test_a_plain_file_and_its_gzip_give_the_same_digest_of_their_own_bytes_and_text_counts(
    pieces: list[bytes],
) -> None:
    text = b"".join(pieces)
    with tempfile.TemporaryDirectory() as scratch:
        plain, packed = Path(scratch) / "a.csv", Path(scratch) / "a.csv.gz"
        plain.write_bytes(text)
        packed.write_bytes(gzip.compress(text))
        for path in (plain, packed):
            with open_source(path) as source:
                assert source.facts() == expected_facts(text)
                assert source.digest() == expected(path)


def test_a_prefetch_counts_in_its_one_pass(tmp_path: Path) -> None:
    text = b"a,b\n1,2\n" * 1000
    path = tmp_path / "b.csv"
    path.write_bytes(text)
    checksum.prefetch([path])
    with open_source(path) as source:
        assert source._scan().facts == expected_facts(text)
        assert source.digest() == expected(path)
