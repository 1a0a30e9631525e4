"""The data directory: where ingested datasets live, and how they are replaced atomically.

Layout of DIR:

    DIR/350 -> .store/350-<stamp>      a symlink to the current version of a dataset
    DIR/.store/350-<stamp>/            items.parquet, raters.parquet, ratings.parquet,
                                       manifest.json
    DIR/.store/.tmp-*                  a version being written (removed if left behind)
    DIR/.lock                          held while a process writes

A new version is written in full under a temporary name, renamed, and then published by
replacing the symlink in one rename. Readers resolve the symlink once, so they see the old
version or the new one, never a mix; the previous version is kept until the next write so
that a reader that resolved it just before the switch can finish.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import (
    DatasetExistsError,
    DicesError,
    LockedError,
    NotIngestedError,
    system_reason,
)
from dices_cli.schema import DATASETS

if TYPE_CHECKING:
    import polars as pl

DATA_ENV = "DICES_DATA"
DEFAULT_DIR = "dices-data"
STORE = ".store"
TEMP_PREFIX = ".tmp-"
MANIFEST = "manifest.json"


def resolve_data_dir(explicit: Path | None) -> Path:
    """--data, else $DICES_DATA, else ./dices-data."""
    if explicit is not None:
        return explicit
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DIR)


@dataclass(frozen=True)
class StoredDataset:
    """One published version of a dataset, resolved to its own directory."""

    name: str
    path: Path

    @property
    def manifest(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        return loaded

    def table_path(self, table: str) -> Path:
        return self.path / f"{table}.parquet"

    def read(self, table: str) -> pl.DataFrame:
        import polars as pl

        return pl.read_parquet(self.table_path(table))


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root

    def link(self, name: str) -> Path:
        return self.root / name

    def exists(self, name: str) -> bool:
        return self.link(name).exists()

    def available(self) -> list[str]:
        return [name for name in DATASETS if self.exists(name)]

    def open(self, name: str) -> StoredDataset:
        if not self.exists(name):
            raise NotIngestedError(
                f"DICES-{name} is not ingested in {self.root}; "
                f"run `dices ingest FILE --data {self.root}` first"
            )
        return StoredDataset(name, self.link(name).resolve())

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's write lock; refuse at once if another process holds it."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            handle = (self.root / ".lock").open("a+b", buffering=0)  # unbuffered: see below
        except OSError as error:
            raise DicesError(f"cannot write to {self.root}: {error.strerror}") from error
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().decode(errors="replace").strip() or "another process"
                raise LockedError(
                    f"{self.root} is being written by {holder}; "
                    "wait for it to finish, then run this again"
                ) from None
            handle.truncate(0)
            # Only a note for whoever is refused; on a full disk it fails, and publish()
            # reports that clearly, so no buffered write may be left to fail at close.
            with contextlib.suppress(OSError):
                handle.write(f"dices (pid {os.getpid()})".encode())
            try:
                self._remove_stale()
                yield
            finally:
                handle.truncate(0)
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _remove_stale(self) -> None:
        """Delete what an interrupted write left behind (we hold the lock, so nobody writes)."""
        store = self.root / STORE
        if store.is_dir():
            for leftover in store.glob(TEMP_PREFIX + "*"):
                shutil.rmtree(leftover, ignore_errors=True)
        for leftover in self.root.glob(TEMP_PREFIX + "*"):
            leftover.unlink(missing_ok=True)

    def check_replaceable(self, name: str, force: bool) -> None:
        if self.exists(name) and not force:
            raise DatasetExistsError(
                f"DICES-{name} is already ingested in {self.root}; use --force to replace it"
            )

    def publish(
        self, name: str, tables: dict[str, pl.DataFrame], manifest: dict[str, Any]
    ) -> StoredDataset:
        """Write a complete new version of `name` and switch to it atomically.

        Call inside `locked()`.
        """
        from polars.exceptions import PolarsError  # Polars wraps I/O errors in its own

        store = self.root / STORE
        version = f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        temp = store / f"{TEMP_PREFIX}{version}"
        final = store / version
        new_link = self.root / f"{TEMP_PREFIX}{version}"
        try:
            store.mkdir(parents=True, exist_ok=True)
            temp.mkdir()
            for table, frame in tables.items():
                frame.write_parquet(temp / f"{table}.parquet", statistics=True)
            (temp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            _fsync_tree(temp)
            temp.rename(final)
            previous = self.link(name).resolve() if self.exists(name) else None
            new_link.symlink_to(Path(STORE) / version)
            new_link.replace(self.link(name))
        except (OSError, PolarsError) as error:
            # The link was not switched (that is the last step), so nothing here is visible.
            shutil.rmtree(temp, ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            with contextlib.suppress(OSError):
                new_link.unlink(missing_ok=True)
            raise DicesError(
                f"could not write DICES-{name} to {self.root}: {system_reason(error)}; "
                "the previous data (if any) is unchanged"
            ) from error
        self._prune(name, keep={final.resolve(), previous})
        return StoredDataset(name, final)

    def _prune(self, name: str, keep: set[Path | None]) -> None:
        for version in (self.root / STORE).glob(f"{name}-*"):
            if version.resolve() not in keep:
                shutil.rmtree(version, ignore_errors=True)


def _fsync_tree(directory: Path) -> None:
    """Flush the files to disk before the rename makes them visible."""
    for path in directory.iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())


def inventory(store: Store) -> list[dict[str, Any]]:
    """One record per ingested dataset: what it holds and where it came from."""
    records = []
    for name in store.available():
        stored = store.open(name)
        manifest = stored.manifest
        records.append(
            {
                "dataset": name,
                **manifest["counts"],
                "rows_rejected": manifest["rows"]["rejected"],
                "source": manifest["source"]["name"],
                "sha256": manifest["source"]["sha256"],
                "ingested": manifest["created"],
                "filter": (manifest.get("filter") or {}).get("description"),
                "path": str(stored.path),
            }
        )
    return records
