"""How many times `dices ingest` reads its input: the checksum is taken in the pass that
counts the bytes, so a plain file is read twice (that pass and the parser), and a gzip file's
own bytes once (the spool, which hashes them and counts its text), its text once more (the
parser). Counted without timing: every reader the code uses is wrapped, and the bytes it
hands over are added up per file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import mmap
import os
import shutil
import threading
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.formats.dices.csvparse import HEADER_PREFIX

SAMPLE = files("dices_cli") / "data" / "dices_350_sample.csv.gz"
MAGIC_CHECKS = 16  # the two bytes that tell a gzip file, looked at a few times

FileKey = tuple[int, int]  # device, inode: a file whatever its name (a spool has none)


def key_of(fd: int) -> FileKey:
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


class ReadCounter:
    """Bytes handed over per file by os.read, os.pread, mmap searches and Polars' reader."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes: Counter[FileKey] = Counter()
        self.lock = threading.Lock()
        pread, read, read_csv = os.pread, os.read, pl.read_csv
        counter = self

        def counting_pread(fd: int, length: int, offset: int) -> bytes:
            data = pread(fd, length, offset)
            self.add(key_of(fd), len(data))
            return data

        def counting_read(fd: int, length: int) -> bytes:
            data = read(fd, length)
            self.add(key_of(fd), len(data))
            return data

        def counting_read_csv(source: Any, *args: Any, **kwargs: Any) -> pl.DataFrame:
            status = os.stat(source)  # Polars reads the whole file (a path, /dev/fd/N)
            self.add((status.st_dev, status.st_ino), status.st_size)
            return read_csv(source, *args, **kwargs)

        class CountingMmap(mmap.mmap):
            def __new__(cls, fileno: int, length: int, *args: Any, **kwargs: Any) -> Any:
                mapped = super().__new__(cls, fileno, length, *args, **kwargs)
                mapped.key = key_of(fileno)
                return mapped

            def find(self, sub: Any, start: Any = 0, end: Any = None) -> int:
                found = super().find(sub, start, end)
                stop = len(self) if end is None else min(end, len(self))
                counter.add(self.key, (stop if found == -1 else found + len(sub)) - start)
                return found

        monkeypatch.setattr(os, "pread", counting_pread)
        monkeypatch.setattr(os, "read", counting_read)
        monkeypatch.setattr(mmap, "mmap", CountingMmap)
        monkeypatch.setattr(pl, "read_csv", counting_read_csv)

    def add(self, key: FileKey, size: int) -> None:
        with self.lock:  # the checksum may be taken on another thread
            self.bytes[key] += size


def ingest_counted(
    runner: CliRunner, path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Counter[FileKey], dict[str, Any]]:
    with monkeypatch.context() as patched:
        counter = ReadCounter(patched)
        result = runner.invoke(app, ["ingest", str(path), "--data", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    data = tmp_path / "data" / "350"
    # The store hashes the Parquet files it wrote: not the input.
    for written in data.iterdir():
        status = written.stat()
        counter.bytes.pop((status.st_dev, status.st_ino), None)
    return counter.bytes, json.loads((data / "manifest.json").read_text())


def assert_checksum(manifest: dict[str, Any], given: bytes) -> None:
    source = manifest["source"]
    assert (source["size"], source["sha256"]) == (len(given), hashlib.sha256(given).hexdigest())


def test_a_plain_file_is_read_twice(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass that hashes and counts, and Polars; the header is looked at in its first MiB."""
    text = gzip.decompress(SAMPLE.read_bytes())
    path = tmp_path / "dices_350.csv"
    path.write_bytes(text)
    assert len(text) > 3 * HEADER_PREFIX  # the header's MiB is a small part of it

    read, manifest = ingest_counted(runner, path, tmp_path, monkeypatch)

    with path.open("rb") as opened:
        given = key_of(opened.fileno())
    assert set(read) == {given}
    passes = read[given] / len(text)
    assert read[given] <= 2 * len(text) + HEADER_PREFIX + MAGIC_CHECKS, f"{passes:.2f} passes"
    assert_checksum(manifest, text)


def test_a_gzip_file_is_read_once_and_its_text_once(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compressed bytes by the spool (hashed, and their text counted, on the way), the
    spooled text by Polars; the header is looked at in the text's first MiB."""
    path = tmp_path / "dices_350.csv.gz"
    with SAMPLE.open("rb") as sample, path.open("wb") as copy:
        shutil.copyfileobj(sample, copy)
    given_bytes = path.read_bytes()
    text_size = len(gzip.decompress(given_bytes))

    read, manifest = ingest_counted(runner, path, tmp_path, monkeypatch)

    with path.open("rb") as opened:
        given = key_of(opened.fileno())
    spools = [key for key in read if key != given]  # the private temporary file
    assert len(spools) == 1
    assert read[given] <= len(given_bytes) + MAGIC_CHECKS
    assert read[spools[0]] <= text_size + HEADER_PREFIX, f"{read[spools[0]] / text_size:.2f}"
    assert_checksum(manifest, given_bytes)
