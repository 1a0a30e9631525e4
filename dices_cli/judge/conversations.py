"""The conversations a judge run asks about, as the store's items rows (dataset, item_id,
context, response): read from the stored Parquet files by a DuckDB session once per stored
version, and kept beside the judge's cache as JSON for the runs after.

Importing DuckDB and opening a session cost a judge run more CPU than anything else it does
before its first request, and Arrow's Parquet reader costs more to import than DuckDB. A
stored version never changes (an ingest publishes a new one, `dices_cli.store.datasets`),
so the copy, `DIR/judge/items-<hash of the dataset's name>.json`, is keyed by the version
every ingested dataset links to, and used only while they are the same. A copy that is not
one (damaged, of other versions, from another dices, not a regular file) is not read: the
rows come from the Parquet files again, and the copy is replaced (written whole under a
temporary name, then renamed). The copy is kept only in a data directory that has a judge
cache (a dry run or a baseline on a fresh one writes nothing); one that cannot be written
is left out.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli import __version__
from dices_cli.read.untrusted import UntrustedError, loads_json, open_regular_file
from dices_cli.store.judge_cache import cache_directory

if TYPE_CHECKING:
    from dices_cli.store.datasets import Store

Row = tuple[str, Any, Any, Any]  # dataset, item_id (int or text), context, response
FORMAT = 1  # of the copy: a change of what it holds changes this
MAX_COPY_BYTES = 1 << 30
MAX_COPY_DEPTH = 4


def stored_rows(store: Store, dataset: str, read: Callable[[], list[Row]]) -> list[Row]:
    """The items rows of `dataset`: from the copy of the versions ingested now, else
    `read()` (from the Parquet files), the copy then written."""
    key = _key(store, dataset)
    path = cache_directory(store.root) / f"items-{_hashed(dataset)}.json"
    rows = _copied(path, key)
    if rows is not None:
        return rows
    rows = read()
    # Kept where the judge keeps its cache already: a dry run or an offline baseline on a
    # data directory never judged writes nothing. Not when an ingest published another
    # version meanwhile.
    if path.parent.is_dir() and _key(store, dataset) == key:
        _write(path, {"key": key, "rows": rows})
    return rows


def _hashed(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key(store: Store, dataset: str) -> list[Any]:
    """What the rows depend on: the dataset asked for, each ingested dataset's version."""
    versions = [[name, store.link(name).resolve().name] for name in store.ingested()]
    return [FORMAT, __version__, dataset, versions]


def _copied(path: Path, key: list[Any]) -> list[Row] | None:
    """The rows of the copy at `path` when it is one of `key` (None: it is not)."""
    try:
        with open_regular_file(path) as handle:  # a buffer of its size, not of the cap
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(size + 1) if size <= MAX_COPY_BYTES else b""
        if len(data) != size:  # larger than the cap, or written to as it was read
            return None
        copy = loads_json(data, MAX_COPY_BYTES, MAX_COPY_DEPTH)
    except (UntrustedError, OSError):
        return None
    rows = copy.get("rows") if isinstance(copy, dict) and copy.get("key") == key else None
    if not isinstance(rows, list):
        return None
    if not all(isinstance(row, list) and len(row) == 4 and _fits(*row) for row in rows):
        return None
    return [tuple(row) for row in rows]


def _fits(dataset: Any, item_id: Any, context: Any, response: Any) -> bool:
    return (
        isinstance(dataset, str)
        and (isinstance(item_id, str) or type(item_id) is int)
        and (context is None or isinstance(context, str))
        and (response is None or isinstance(response, str))
    )


def _write(path: Path, copy: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("x", encoding="utf-8") as handle:
            json.dump(copy, handle, ensure_ascii=False, separators=(",", ":"))
        os.replace(temporary, path)
    except (OSError, ValueError):  # a copy not written: the next run reads the Parquet again
        with contextlib.suppress(OSError):
            temporary.unlink()
