"""A prefetch that only hashes (a declared dataset's files, whose reader never asks for the
byte counts): the digest is the file's, and counts asked for later are counted then."""

from __future__ import annotations

from pathlib import Path

from dices_cli.read import checksum
from dices_cli.read.source import open_source
from tests.read.test_checksum import expected, expected_facts


def test_a_hash_only_prefetch_gives_the_digest_and_counts_when_asked(tmp_path: Path) -> None:
    text = b'a,b\r\n"x\ny",2\n' * (checksum.CHUNK // 7)
    path = tmp_path / "a.csv"
    path.write_bytes(text)
    checksum.prefetch([path], counted=False)
    with open_source(path) as source:
        assert source.digest() == expected(path)
        assert source._scan().facts is None  # the prefetch counted nothing
        assert source.facts() == expected_facts(text)
        assert source.facts() == expected_facts(text)  # once counted, kept


def test_a_counting_prefetch_counts_in_its_one_pass(tmp_path: Path) -> None:
    text = b"a,b\n1,2\n" * 1000
    path = tmp_path / "b.csv"
    path.write_bytes(text)
    checksum.prefetch([path])
    with open_source(path) as source:
        assert source._scan().facts == expected_facts(text)
        assert source.digest() == expected(path)
