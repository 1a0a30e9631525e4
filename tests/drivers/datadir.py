"""Helpers for the crash, concurrency and disk-error tests: smaller DICES files, a driver
paused inside a write, and checks of what a reader of a data directory sees."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import polars as pl

DRIVER = Path(__file__).resolve().with_name("pause_at.py")
TABLES = ("items", "raters", "ratings")
TEMP_PREFIX = ".tmp-"


def subset(source: Path, target: Path, conversations: int) -> Path:
    """A valid DICES file with the rows of the first `conversations` conversations."""
    csv.field_size_limit(sys.maxsize)
    with source.open(newline="", encoding="utf-8") as inp:
        reader = csv.reader(inp)
        header = next(reader)
        item = header.index("item_id")
        kept: set[str] = set()
        rows = []
        for row in reader:
            if row[item] not in kept and len(kept) == conversations:
                continue
            kept.add(row[item])
            rows.append(row)
    with target.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    return target


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Version:
    """A complete dataset version as a reader sees it."""

    sha256: str  # of the source file, from the manifest
    counts: dict[str, int]  # conversations, raters, ratings
    path: Path


def visible(data: Path, name: str) -> Version | None:
    """What a reader of `data` sees of dataset `name`, checked to be whole; None if absent.

    Whole means: the link points to a published (not temporary) version, whose manifest
    reads, whose three Parquet files read in full, hold as many rows as the manifest says,
    and refer only to each other's conversations and raters.
    """
    link = data / name
    if not link.is_symlink():
        assert not link.exists(), f"{link} is not a symlink"
        return None
    target = link.resolve(strict=True)
    assert target.parent == (data / ".store").resolve()
    assert not target.name.startswith(TEMP_PREFIX), f"{link} points to a temporary {target}"
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    frames = {table: pl.read_parquet(target / f"{table}.parquet") for table in TABLES}
    counts = manifest["counts"]
    assert frames["items"].height == counts["conversations"]
    assert frames["raters"].height == counts["raters"]
    assert frames["ratings"].height == counts["ratings"]
    ratings = frames["ratings"]
    assert set(ratings["item_id"]) == set(frames["items"]["item_id"])
    assert set(ratings["rater_id"]) <= set(frames["raters"]["rater_id"])
    return Version(manifest["source"]["sha256"], dict(counts), target)


def leftovers(data: Path) -> list[str]:
    """Temporary entries of an interrupted write, in DIR and DIR/.store."""
    found = [p.name for p in data.glob(TEMP_PREFIX + "*")]
    store = data / ".store"
    if store.is_dir():
        found += [f".store/{p.name}" for p in store.glob(TEMP_PREFIX + "*")]
    return sorted(found)


def versions(data: Path, name: str) -> list[str]:
    """The published versions of `name` in DIR/.store, temporary ones left out."""
    return sorted(p.name for p in (data / ".store").glob(f"{name}-*"))


def dices_command() -> list[str]:
    return [sys.executable, "-m", "dices_cli"]


class Paused:
    """`dices ARGS...` in a driver process that stops at `point` (see pause_at.py).

    Use as a context manager: on leaving, a driver still running is killed.
    """

    def __init__(self, point: str, *arguments: str, cwd: Path | None = None) -> None:
        self.point = point.partition(":")[0]
        read, write = os.pipe()
        self.stdout = tempfile.TemporaryFile()  # noqa: SIM115 - closed in __exit__
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, str(DRIVER), point, str(write), *arguments],
            stdin=subprocess.PIPE,
            stdout=self.stdout,
            stderr=self.stderr,
            pass_fds=(write,),
            cwd=cwd,
        )
        os.close(write)
        self.signal = os.fdopen(read, "rb")

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_paused(self, timeout: float = 120) -> None:
        """Block until the driver says it paused at its point; fail if it ends without."""
        ready, _, _ = select.select([self.signal], [], [], timeout)
        line = self.signal.readline().decode() if ready else ""
        if line != f"paused at {self.point}\n":
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"the driver did not pause at {self.point} (exit {self.process.returncode}): "
                f"{self.output()[1]}"
            )

    def kill(self) -> None:
        """SIGKILL: no clean-up code of ours runs, as in a crash or a power cut of the process."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        assert self.process.returncode == -signal.SIGKILL

    def resume(self, timeout: float = 120) -> tuple[int, str, str]:
        """Let the driver go on; its exit code, stdout and stderr."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"\n")
        self.process.stdin.close()
        self.process.wait(timeout)
        return (self.process.returncode, *self.output())

    def output(self) -> tuple[str, str]:
        texts = []
        for handle in (self.stdout, self.stderr):
            handle.seek(0)
            texts.append(handle.read().decode(errors="replace"))
        return texts[0], texts[1]

    def __enter__(self) -> Paused:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        self.signal.close()
        self.stdout.close()
        self.stderr.close()


def run_dices(*arguments: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`python -m dices_cli ARGS...` in a fresh process."""
    return subprocess.run(
        [*dices_command(), *arguments], capture_output=True, text=True, check=False, **kwargs
    )
