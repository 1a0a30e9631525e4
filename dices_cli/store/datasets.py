"""The data directory: where ingested datasets live, and how they are replaced atomically.

Layout of DIR:

    DIR/350 -> .store/350-<stamp>      a symlink to the current version of a dataset
    DIR/.store/350-<stamp>/            items.parquet, raters.parquet, ratings.parquet,
                                       manifest.json (each family stores its own tables:
                                       ProsocialDialog, DIR/prosocial, has no raters)
    DIR/.store/.tmp-*                  a version being written (removed if left behind)
    DIR/.adopting-350                  see `Store._adopt` (put in place if left behind)
    DIR/.lock                          held while a process writes

A new version is written in full under a temporary name, renamed, and then published by
replacing the symlink in one rename. Readers resolve the symlink once, so they see the old
version or the new one, never a mix; the previous version is kept until the next write so
that a reader that resolved it just before the switch can finish. A reader that reads a
dataset more than once (`dices report`: many queries, the models, the provenance) opens it
inside `Store.pinned()`: every open gives the version resolved first, and that version is
held (a shared `flock` on its directory) so that no write prunes it while it is read.

The manifest records the size and SHA-256 of every Parquet file of its version (under
"files"). Opening a dataset checks its manifest's structure, and a reader checks the sizes
before it reads (a stat per file); `StoredDataset.verify` reads every file and compares the
checksums. A damaged version is reported as such, with the advice to ingest it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import (
    DamagedDataError,
    DatasetExistsError,
    DicesError,
    LockedError,
    NotIngestedError,
    Option,
    UsageError,
    system_reason,
)
from dices_cli.families import Family, all_members, coded_members, family_of
from dices_cli.families.registered import user_declarations
from dices_cli.families.schema import DATASETS, canonical_names
from dices_cli.output import MANIFEST, STORE

if TYPE_CHECKING:
    import polars as pl

DATA_ENV = "DICES_DATA"
DEFAULT_DIR = "dices-data"
TEMP_PREFIX = ".tmp-"
ADOPTING_PREFIX = ".adopting-"
# Times a pinned open resolves the link again when the version it found was pruned before it
# could hold it: each retry means two more complete ingests meanwhile.
PIN_ATTEMPTS = 20

# What the commands read from every family's manifest (`info`, `verify`): key -> type, or the
# shape of a nested object (see `_shape_problem`); each family declares the rest
# (`Family.manifest`).
MANIFEST_SHAPE: dict[str, Any] = {
    "dataset": str,
    "rows": {"rejected": int},
    "counts": {"ratings": int},
    "created": str,
}
SOURCE_SHAPE = {"name": str, "sha256": str}  # one file a version was made from


def files_shape(family: Family) -> dict[str, Any]:
    """The "files" record; manifests written before it was added cannot be verified."""
    return {f"{table}.parquet": {"size": int, "sha256": str} for table in family.tables}


def resolve_data_dir(explicit: Path | None) -> Path:
    """--data, else $DICES_DATA, else ./dices-data. One dataset's folder inside a data
    directory (DIR/350, which holds a manifest) is a usage error that names DIR."""
    root = explicit if explicit is not None else Path(os.environ.get(DATA_ENV) or DEFAULT_DIR)
    if (root / MANIFEST).is_file():
        raise UsageError(
            f"{root} is one dataset of the data directory {root.parent}; give the directory: ",
            Option("data"),
            f" {root.parent}",
        )
    return root


@dataclass(frozen=True)
class StoredDataset:
    """One published version of a dataset, resolved to its own directory."""

    name: str
    path: Path

    @property
    def family(self) -> Family:
        return family_of(self.name)

    @property
    def title(self) -> str:
        """The dataset's name in messages: DICES-350, ProsocialDialog."""
        return self.family.title_of(self.name)

    @property
    def tables(self) -> tuple[str, ...]:
        return self.family.tables

    @functools.cached_property  # a published version never changes
    def manifest(self) -> dict[str, Any]:
        """The manifest, checked to hold what the commands read from it."""
        path = self.path / MANIFEST
        try:
            loaded = json.loads(path.read_bytes())
        except FileNotFoundError:
            raise self._damaged(path, "is missing") from None
        except OSError as error:
            raise self.unreadable(path, error) from error
        except ValueError as error:  # invalid JSON or invalid UTF-8
            raise self._damaged(path, f"is not valid JSON ({error})") from error
        if problem := self._manifest_problem(loaded):
            raise self._damaged(path, f"is damaged ({problem})")
        manifest: dict[str, Any] = loaded
        return manifest

    def _manifest_problem(self, manifest: Any) -> str | None:
        """What makes `manifest` unusable for this dataset, if anything."""
        family = self.family
        if problem := _shape_problem(manifest, MANIFEST_SHAPE, "") or _shape_problem(
            manifest, family.manifest, ""
        ):
            return problem
        if manifest["dataset"] != self.name:
            return f"it describes {family.title_of(str(manifest['dataset']))}"
        if "files" in manifest and (
            problem := _shape_problem(manifest["files"], files_shape(family), "files")
        ):
            return problem
        if not isinstance(manifest.get("filter"), dict | None):
            return "filter is neither a JSON object nor null"
        if "sources" not in manifest and "source" not in manifest:
            return "it has no sources"
        sources = sources_of(manifest)
        if not isinstance(sources, list):
            return "sources is not a list"
        for i, source in enumerate(sources):
            if problem := _shape_problem(source, SOURCE_SHAPE, f"sources[{i}]"):
                return problem
        return _header_problem(self.name, manifest)

    def _damaged(self, path: Path, what: str) -> DamagedDataError:
        return DamagedDataError(f"{self.title}: {path} {what}")

    def unreadable(self, path: Path, error: Exception | str) -> DamagedDataError:
        """The error for a stored file that a reader could not decode (`error`, or the
        reader's reason)."""
        reason = error if isinstance(error, str) else system_reason(error)
        return self._damaged(path, f"cannot be read ({reason})")

    def table_path(self, table: str) -> Path:
        return self.path / f"{table}.parquet"

    def check_sizes(self) -> None:
        """Refuse a version whose Parquet files are not all there, each with the size the
        manifest records. A stat per file: this catches a missing or truncated file, not a
        changed byte (`verify` reads the files for that)."""
        for table in self.tables:
            self._check_size(self.table_path(table))

    def _check_size(self, path: Path) -> None:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise self._damaged(path, "is missing") from None
        except OSError as error:
            raise self.unreadable(path, error) from error
        recorded = self.manifest.get("files", {}).get(path.name)
        if recorded is not None and size != recorded["size"]:
            raise self._damaged(path, f"is damaged ({size} bytes, expected {recorded['size']})")

    def verify(self) -> list[DamagedDataError]:
        """Every way this version differs from what its manifest records, one error per
        damaged file; none when every file has its recorded size and SHA-256."""
        try:
            files: dict[str, dict[str, Any]] | None = self.manifest.get("files")
            if files is None:
                raise self._damaged(
                    self.path / MANIFEST,
                    "records no checksums (an earlier dices wrote it), so its files "
                    "cannot be verified",
                )
        except DamagedDataError as error:
            return [error]
        problems = []
        for file, recorded in files.items():
            try:
                self._verify_file(self.path / file, recorded["sha256"])
            except DamagedDataError as error:
                problems.append(error)
        return problems

    def _verify_file(self, path: Path, expected: str) -> None:
        from dices_cli.read import checksum  # only to verify (queries check sizes alone)

        self._check_size(path)
        try:
            actual = checksum.sha256_file(path).sha256
        except OSError as error:
            raise self.unreadable(path, error) from error
        if actual != expected:
            raise self._damaged(path, f"is damaged (sha256 {actual}, expected {expected})")

    def read(self, table: str) -> pl.DataFrame:
        import polars as pl
        from polars.exceptions import PolarsError

        path = self.table_path(table)
        self._check_size(path)
        try:
            return pl.read_parquet(path)
        except (OSError, PolarsError) as error:
            raise self.unreadable(path, error) from error


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        if user_declarations(root):  # the datasets declared by the user's own files
            from dices_cli.families import register_directory
            from dices_cli.families.declaration import DeclarationError

            try:
                register_directory(root)
            except DeclarationError as error:
                raise UsageError(str(error)) from None
        self._pinned: dict[str, tuple[StoredDataset, int]] | None = None  # see `pinned`

    def link(self, name: str) -> Path:
        return self.root / name

    def exists(self, name: str) -> bool:
        return self.link(name).exists()

    def available(self) -> list[str]:
        """The DICES datasets ingested here (what the DICES queries and reports read)."""
        return [name for name in DATASETS if self.exists(name)]

    def ingested(self) -> list[str]:
        """Every dataset of every family ingested here. The declared families' datasets
        (their declarations parsed) are looked for only when the directory holds a name
        that no family of code of its own has."""
        coded = coded_members()
        try:
            others = {name for name in os.listdir(self.root) if not name.startswith(".")}
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError:
            others = {""}  # not listed: every family's datasets are looked for
        members = all_members() if others - set(coded) else coded
        return [name for name in members if self.exists(name)]

    def open(self, name: str) -> StoredDataset:
        """The version of `name` readers see now; inside `pinned()`, the one seen first."""
        if self._pinned is not None and name in self._pinned:
            return self._pinned[name][0]
        if not self.exists(name):
            raise NotIngestedError(
                f"{family_of(name).title_of(name)} is not ingested in {self.root}", root=self.root
            )
        if self._pinned is None:
            return StoredDataset(name, self.link(name).resolve())
        stored, handle = self._hold(name)
        self._pinned[name] = (stored, handle)
        return stored

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Inside: each dataset is resolved once, at its first `open`, and every later open
        gives that same version, kept from being pruned until the block ends, whatever
        ingests replace the dataset meanwhile. Inside another such block, the outer one
        holds them."""
        if self._pinned is not None:
            yield
            return
        self._pinned = {}
        try:
            yield
        finally:
            for _, handle in self._pinned.values():
                os.close(handle)  # lets go of the shared lock
            self._pinned = None

    def _hold(self, name: str) -> tuple[StoredDataset, int]:
        """The current version of `name` with a shared lock held on its directory (the
        descriptor returned). A writer prunes a version only when it can lock it alone
        (`_prune`); one pruned between resolving the link and locking it is gone once the
        lock is had, and the link is resolved again."""
        for _ in range(PIN_ATTEMPTS):
            path = self.link(name).resolve()
            try:
                handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # pruned after two replacements in a row: resolve again
            except OSError as error:
                raise DicesError(f"cannot read {path}: {system_reason(error)}") from error
            fcntl.flock(handle, fcntl.LOCK_SH)  # waits only for a prune under way
            if os.fstat(handle).st_nlink > 0:  # not removed meanwhile
                return StoredDataset(name, path), handle
            os.close(handle)
        raise DicesError(
            f"{family_of(name).title_of(name)} in {self.root} was replaced {PIN_ATTEMPTS} times "
            "while it was being opened; run this again when no ingest is under way"
        )

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
        for marker in self.root.glob(ADOPTING_PREFIX + "*"):
            link = self.link(marker.name.removeprefix(ADOPTING_PREFIX))
            with contextlib.suppress(OSError):
                if marker.exists() and not link.exists():  # stopped inside _adopt: finish it
                    marker.replace(link)
                else:
                    marker.unlink()

    def check_replaceable(self, name: str, force: bool) -> None:
        if self.exists(name) and not force:
            raise DatasetExistsError(
                f"{family_of(name).title_of(name)} is already ingested in {self.root}; use ",
                Option("force"),
                " to replace it",
            )

    def publish(
        self, name: str, tables: Mapping[str, pl.DataFrame | Path], manifest: dict[str, Any]
    ) -> StoredDataset:
        """Write a complete new version of `name` and switch to it atomically. A table given
        as a path is a Parquet file written already: it is moved in.

        Call inside `locked()`.
        """
        from polars.exceptions import PolarsError  # Polars wraps I/O errors in its own

        store = self.root / STORE
        version = _version_name(name)
        temp = store / f"{TEMP_PREFIX}{version}"
        final = store / version
        new_link = self.root / f"{TEMP_PREFIX}{version}"
        try:
            store.mkdir(parents=True, exist_ok=True)
            temp.mkdir()
            for table, frame in tables.items():
                if isinstance(frame, Path):
                    shutil.move(frame, temp / f"{table}.parquet")
                else:
                    frame.write_parquet(temp / f"{table}.parquet", statistics=True)
            # Read back (from the page cache: a few ms), so the checksums are of what is stored.
            manifest = {**manifest, "files": _file_records(temp, tables)}
            (temp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            _fsync_tree(temp)
            temp.rename(final)
            previous = self._current(name)
            new_link.symlink_to(Path(STORE) / version)
            new_link.replace(self.link(name))
        except (OSError, PolarsError) as error:
            # The link was not switched (that is the last step), so nothing here is visible.
            shutil.rmtree(temp, ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            with contextlib.suppress(OSError):
                new_link.unlink(missing_ok=True)
            raise DicesError(
                f"could not write {family_of(name).title_of(name)} to {self.root}: "
                f"{system_reason(error)}; "
                "the previous data (if any) is unchanged"
            ) from error
        self._prune(name, keep={final.resolve(), previous})
        return StoredDataset(name, final)

    def _current(self, name: str) -> Path | None:
        """The version readers see now, if any, as a directory of the store."""
        link = self.link(name)
        if not link.exists():
            return None
        return link.resolve() if link.is_symlink() else self._adopt(name)

    def _adopt(self, name: str) -> Path:
        """Move a real directory DIR/name (a copy of the data directory made with its links
        resolved, `cp -rL`) into the store as a version, and link it, so that a link can
        replace it: a rename cannot put a link in place of a directory.

        DIR/name is absent between the two renames; if the process stops there, the next
        writer finishes the job (`_remove_stale`) from the marker link made first.
        """
        adopted = self.root / STORE / _version_name(name)
        marker = self.root / f"{ADOPTING_PREFIX}{name}"
        marker.symlink_to(Path(STORE) / adopted.name)
        self.link(name).rename(adopted)
        marker.replace(self.link(name))
        return adopted.resolve()

    def _prune(self, name: str, keep: set[Path | None]) -> None:
        """Remove the versions of `name` other than `keep`, but for those a reader holds
        (`pinned`): the next write removes them."""
        for version in (self.root / STORE).glob(f"{name}-*"):
            if version.resolve() in keep:
                continue
            try:
                handle = os.open(version, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue  # gone already, or not a directory of ours
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(handle)  # in use
                continue
            try:
                shutil.rmtree(version, ignore_errors=True)
            finally:
                os.close(handle)


def _version_name(name: str) -> str:
    return f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def _file_records(directory: Path, tables: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of each table's Parquet file in `directory`, for the manifest."""
    from dices_cli.read import checksum

    records = {}
    for table in tables:
        digest = checksum.sha256_file(directory / f"{table}.parquet")
        records[f"{table}.parquet"] = {"size": digest.size, "sha256": digest.sha256}
    return records


def sources_of(manifest: dict[str, Any]) -> Any:
    """The files a version was made from, as its manifest records them: "sources", or
    DICES's one "source" as a list of one."""
    return manifest["sources"] if "sources" in manifest else [manifest["source"]]


def _header_problem(name: str, manifest: dict[str, Any]) -> str | None:
    """What is amiss with a DICES manifest's header (the CSV header the export writes back),
    if anything; None for another family's, which has none."""
    if name not in DATASETS:
        return None
    dataset = DATASETS[name]
    header = manifest["header"]
    if not all(isinstance(cell, str) for cell in header):
        return "header holds a value that is not text"
    names = canonical_names(dataset, header)
    for column in dataset.names:
        if column not in names:
            return f"its header lacks the column {column}"
        if names.count(column) > 1:
            return f"its header names the column {column} twice"
    if unknown := [
        cell for cell, column in zip(header, names, strict=True) if column not in dataset.names
    ]:
        return f"its header names {unknown[0]!r}, which is not a {dataset.title} column"
    return None


_KIND_NAMES = {str: "text", int: "a whole number", list: "a list"}


def _shape_problem(value: Any, shape: dict[str, Any], where: str) -> str | None:
    """How `value` differs from `shape` (see MANIFEST_SHAPE), if it does; `where` names it."""
    if not isinstance(value, dict):
        return f"{where or 'it'} is not a JSON object"
    for key, expected in shape.items():
        name = f"{where}.{key}" if where else key
        if key not in value:
            return f"it has no {name}"
        if isinstance(expected, dict):
            if problem := _shape_problem(value[key], expected, name):
                return problem
        elif not isinstance(value[key], expected) or isinstance(value[key], bool):
            return f"{name} is not {_KIND_NAMES[expected]}"
    return None


def _fsync_tree(directory: Path) -> None:
    """Flush the files to disk before the rename makes them visible."""
    for path in directory.iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())


# What `inventory` counts, by the kind of units a dataset's manifest counts (DICES's
# conversations, ProsocialDialog's dialogues, a declared dataset's items), and the
# manifest's name for a unit.
UNITS = {
    "conversations": ("conversations", "raters", "ratings"),
    "dialogues": ("dialogues", "utterances", "annotations"),
    "items": ("items", "raters", "ratings"),
}
COUNTED_AS = {"utterances": "items", "annotations": "ratings"}


def _units_of(counts: dict[str, Any]) -> str:
    return next((kind for kind in ("conversations", "dialogues") if kind in counts), "items")


def inventory(store: Store) -> list[dict[str, Any]]:
    """One record per ingested dataset: what it holds and where it came from. Each family's
    units are counted as they are: DICES's conversations, raters and ratings,
    ProsocialDialog's dialogues, utterances and annotations (it has no raters), a declared
    dataset's items, raters and ratings; a kind's columns are there when one of its datasets
    is, empty in the other datasets' rows."""
    ingested = [(name, store.open(name)) for name in store.ingested()]
    kinds = {name: _units_of(stored.manifest["counts"]) for name, stored in ingested}
    units = list(dict.fromkeys(u for kind in UNITS if kind in kinds.values() for u in UNITS[kind]))
    records = []
    for name, stored in ingested:
        manifest = stored.manifest
        counts = manifest["counts"]
        own = UNITS[kinds[name]]
        sources = sources_of(manifest)
        records.append(
            {
                "dataset": name,
                **{u: counts.get(COUNTED_AS.get(u, u)) if u in own else None for u in units},
                "rows_rejected": manifest["rows"]["rejected"],
                "source": ", ".join(source["name"] for source in sources),
                "sha256": ", ".join(source["sha256"] for source in sources),
                "ingested": manifest["created"],
                "filter": (manifest.get("filter") or {}).get("description"),
                "path": str(stored.path),
            }
        )
    return records


def verify(store: Store) -> list[tuple[StoredDataset, list[DamagedDataError]]]:
    """Each ingested dataset with its damaged files, one error each (see
    `StoredDataset.verify`); reads every stored file in full."""
    names = store.ingested()
    if not names:
        raise NotIngestedError(
            f"nothing is ingested in {store.root}; run `dices ingest FILE` first"
        )
    return [(stored, stored.verify()) for stored in map(store.open, names)]
