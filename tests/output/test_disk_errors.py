"""A full disk or a data directory that cannot be written: a clear error, exit 1, the
previous data as it was, and nothing half-written left behind.

We run as root, for whom file permissions block nothing, so an unwritable directory is
one under a regular file (ENOTDIR), and a full disk is simulated by making the writers
fail as the system makes them fail; one test fills a real (tmpfs) file system.
"""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from drivers.datadir import leftovers, sha256, subset, versions, visible
from fixtures.dices_csv import build
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.store import datasets as store_module

pytestmark = pytest.mark.slow  # ingests that fail at each write, in fresh processes

NO_SPACE = os.strerror(errno.ENOSPC)  # "No space left on device"


@pytest.fixture(scope="module")
def new_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("new") / "dices_350_new.csv", 40)


def refusal(data: Path, reason: str, dataset: str = "350") -> str:
    return (
        f"Error: could not write DICES-{dataset} to {data}: {reason}; "
        "the previous data (if any) is unchanged\n"
    )


def ingest(runner: CliRunner, data: Path, *files: Path) -> Any:
    return runner.invoke(app, ["ingest", *map(str, files), "--force", "--data", str(data)])


def fail(code: int) -> Callable[..., Any]:
    """A stand-in that fails as the system does, with `code` (errno) and its words."""

    def failing(*_: Any, **__: Any) -> Any:
        raise OSError(code, os.strerror(code))

    return failing


no_space = fail(errno.ENOSPC)


def _parquet_half_then_no_space(original: Callable[..., Any]) -> Callable[..., Any]:
    """Writes items and raters; ratings.parquet gets half its bytes, then the disk is full."""

    def write(frame: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> Any:
        path = Path(file)
        if path.name != "ratings.parquet":
            return original(frame, file, *args, **kwargs)
        original(frame, file, *args, **kwargs)
        with path.open("r+b") as handle:
            handle.truncate(path.stat().st_size // 2)
        raise OSError(errno.ENOSPC, NO_SPACE)

    return write


def _polars_no_space(*_: Any, **__: Any) -> Any:
    # What Polars 2 really raises when the disk fills up under write_parquet (seen on a full
    # tmpfs): its own error, no errno, the system's words inside.
    raise pl.exceptions.ComputeError(
        "parquet: File out of specification: underlying IO error: "
        "No space left on device (os error 28)"
    )


def _only_manifest(original: Callable[..., Any]) -> Callable[..., Any]:
    def write_text(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == store_module.MANIFEST:
            raise OSError(errno.ENOSPC, NO_SPACE)
        return original(self, *args, **kwargs)

    return write_text


def _only_temp(original: Callable[..., Any], code: int) -> Callable[..., Any]:
    """Fail a Path method when it acts on a temporary name of the store, as the OS would."""

    def call(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name.startswith(store_module.TEMP_PREFIX):
            raise OSError(code, os.strerror(code))
        return original(self, *args, **kwargs)

    return call


# (what fails, how to make it fail, the reason the message gives)
FAILURES: list[tuple[str, Callable[[pytest.MonkeyPatch], None], str]] = [
    (
        "the first Parquet file",
        lambda mp: mp.setattr(pl.DataFrame, "write_parquet", no_space),
        NO_SPACE,
    ),
    (
        "halfway through ratings.parquet",
        lambda mp: mp.setattr(
            pl.DataFrame, "write_parquet", _parquet_half_then_no_space(pl.DataFrame.write_parquet)
        ),
        NO_SPACE,
    ),
    (
        "Polars' own error for a full disk",
        lambda mp: mp.setattr(pl.DataFrame, "write_parquet", _polars_no_space),
        NO_SPACE,
    ),
    (
        "the manifest",
        lambda mp: mp.setattr(pathlib.Path, "write_text", _only_manifest(pathlib.Path.write_text)),
        NO_SPACE,
    ),
    (
        "fsync",
        lambda mp: mp.setattr(os, "fsync", no_space),
        NO_SPACE,
    ),
    (
        "an I/O error at fsync",
        lambda mp: mp.setattr(os, "fsync", fail(errno.EIO)),
        os.strerror(errno.EIO),
    ),
    (
        "the new link, after the version was renamed into place",
        lambda mp: mp.setattr(
            pathlib.Path, "symlink_to", _only_temp(pathlib.Path.symlink_to, errno.ENOSPC)
        ),
        NO_SPACE,
    ),
    (
        "switching the link",
        lambda mp: mp.setattr(pathlib.Path, "replace", _only_temp(pathlib.Path.replace, errno.EIO)),
        os.strerror(errno.EIO),
    ),
]


@pytest.mark.parametrize(
    ("failure", "reason"), [(f[1], f[2]) for f in FAILURES], ids=[f[0] for f in FAILURES]
)
def test_a_failed_write_leaves_the_previous_data_and_nothing_else(
    failure: Callable[[pytest.MonkeyPatch], None],
    reason: str,
    ingested_copy: Path,
    new_350: Path,
    runner: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = ingested_copy
    before = {name: visible(data, name) for name in ("350", "990")}
    published = versions(data, "350")
    with monkeypatch.context() as patched:
        failure(patched)
        result = ingest(runner, data, new_350)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == refusal(data, reason)
    assert {name: visible(data, name) for name in ("350", "990")} == before
    assert leftovers(data) == []
    assert versions(data, "350") == published  # no orphan version either
    # And once there is room again, the same command works.
    result = ingest(runner, data, new_350)
    assert result.exit_code == 0, result.output
    version = visible(data, "350")
    assert version is not None and version.sha256 == sha256(new_350)


def test_a_failed_first_write_leaves_nothing_ingested(
    tmp_path: Path, new_350: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setattr(pl.DataFrame, "write_parquet", no_space)
    result = ingest(runner, data, new_350)
    assert result.exit_code == 1
    assert result.stderr == refusal(data, NO_SPACE)
    assert visible(data, "350") is None
    assert leftovers(data) == []
    assert versions(data, "350") == []


def test_a_full_disk_on_the_second_dataset_keeps_the_first(
    ingested_copy: Path,
    new_350: Path,
    replica_990: Path,
    runner: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Datasets are replaced one at a time: DICES-350 is new, DICES-990 as it was."""
    data = ingested_copy
    new_990 = subset(replica_990, data.parent / "dices_990_new.csv", 40)
    before = visible(data, "990")
    original = pl.DataFrame.write_parquet

    def write(frame: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> Any:
        if "990-" in Path(file).parent.name:
            raise OSError(errno.ENOSPC, NO_SPACE)
        return original(frame, file, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", write)
    result = ingest(runner, data, new_350, new_990)
    assert result.exit_code == 1
    assert result.stderr == refusal(data, NO_SPACE, "990")
    version = visible(data, "350")
    assert version is not None and version.sha256 == sha256(new_350)
    assert visible(data, "990") == before
    assert leftovers(data) == []


def test_a_data_directory_under_a_file(tmp_path: Path, new_350: Path, runner: CliRunner) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n", encoding="utf-8")
    data = blocker / "data"
    result = ingest(runner, data, new_350)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: cannot write to {data}: Not a directory\n"
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_data_directory_that_is_a_file(
    tmp_path: Path, new_350: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a short name, so that Typer's error box does not wrap it
    blocker = Path("a-file")
    blocker.write_text("not a directory\n", encoding="utf-8")
    result = ingest(runner, blocker, new_350)
    assert result.exit_code == 2
    assert result.stdout == ""
    words = " ".join(result.stderr.replace("│", " ").split())
    assert "Invalid value for '--data': Directory 'a-file' is a file." in words
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"


def test_a_store_that_is_a_file(ingested_copy: Path, new_350: Path, runner: CliRunner) -> None:
    """DIR/.store replaced by a file (a broken copy, say): a clear error, not a crash."""
    data = ingested_copy
    shutil.rmtree(data / ".store")
    (data / ".store").write_text("", encoding="utf-8")
    result = ingest(runner, data, new_350)
    assert result.exit_code == 1
    assert result.stderr == refusal(data, os.strerror(errno.EEXIST))
    assert (data / ".store").read_text(encoding="utf-8") == ""
    assert leftovers(data) == []


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs: needs root (or CAP_SYS_ADMIN); skipped where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_really_full_disk(tiny_disk: Path, new_350: Path, runner: CliRunner) -> None:
    data = tiny_disk / "data"
    result = ingest(runner, data, new_350)
    assert result.exit_code == 0, result.output
    before = visible(data, "350")
    published = versions(data, "350")
    # Fill what is left, then try to replace the dataset.
    with (tiny_disk / "filler").open("wb", buffering=0) as filler:
        with pytest.raises(OSError) as full:
            while True:
                filler.write(b"\0" * 65536)
        assert full.value.errno == errno.ENOSPC
    result = ingest(runner, data, new_350)
    assert result.exit_code == 1
    assert result.stderr == refusal(data, NO_SPACE)
    assert visible(data, "350") == before
    assert leftovers(data) == []
    assert versions(data, "350") == published


def test_o_on_a_really_full_disk_leaves_no_truncated_file(
    tiny_disk: Path, tmp_path: Path, runner: CliRunner
) -> None:
    """-o FILE on a disk with room for 8 KiB of a 1.3 MB result: a plain error, no file."""
    source, data = tmp_path / "dices_350.csv", tmp_path / "data"
    source.write_bytes(build("350"))
    assert ingest(runner, data, source).exit_code == 0
    spare = tiny_disk / "spare"
    spare.write_bytes(b"\0" * 8192)
    with (tiny_disk / "filler").open("wb", buffering=0) as filler:
        with pytest.raises(OSError) as full:
            while True:
                filler.write(b"\0" * 4096)
        assert full.value.errno == errno.ENOSPC
    spare.unlink()
    out = tiny_disk / "result.csv"
    result = runner.invoke(
        app,
        ["sql", "SELECT range AS n FROM range(200000)", "--data", str(data), "-o", str(out)],
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: cannot write {out}: {NO_SPACE}\n"
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]
