"""Run the `dices` command line in this process, pausing at a named point of a write.

    python tests/drivers/pause_at.py POINT[:N] FD dices-arguments...

The crash and concurrency tests use it to stop `dices ingest` at an exact point of
`Store.publish` (no timing, no hook in the product): when the N-th (default first) event
named POINT happens, the driver writes "paused at POINT\\n" to file descriptor FD and
waits for a line on stdin. The test then kills it (SIGKILL) to simulate a crash there, or
writes a line to let it finish. Everything is done by wrapping functions from outside:
the code that runs is the product's own.

Points, in the order a write reaches them:

    locked          the lock is held and stale leftovers are removed; nothing written
    temp-dir        DIR/.store/.tmp-<version>/ exists, empty (before the first table)
    ratings-half    items and raters written, ratings.parquet half written (truncated)
    tables          every table written, manifest.json not yet
    fsynced         the complete version flushed to disk, still under its .tmp- name
    renamed         .tmp-<version> renamed to <version>; DIR/350 still the old version
    linked          the new symlink made as DIR/.tmp-<version>; not yet switched
    switched        DIR/350 switched to the new version; older versions not yet pruned
    pruned          older versions pruned; the lock still held
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

POINTS = (
    "locked",
    "temp-dir",
    "ratings-half",
    "tables",
    "fsynced",
    "renamed",
    "linked",
    "switched",
    "pruned",
)


class Pause:
    def __init__(self, point: str, occurrence: int, fd: int) -> None:
        self.point, self.occurrence, self.fd = point, occurrence, fd
        self.seen: dict[str, int] = {}

    def due(self, point: str) -> bool:
        """Whether the next event named `point` is the one to pause at."""
        return point == self.point and self.seen.get(point, 0) + 1 == self.occurrence

    def at(self, point: str) -> bool:
        """Count an event; True (after pausing) when it is the one asked for."""
        due = self.due(point)
        self.seen[point] = self.seen.get(point, 0) + 1
        if not due:
            return False
        os.write(self.fd, f"paused at {point}\n".encode())
        sys.stdin.readline()  # until the test kills us or lets us go on
        return True


def _wrap(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    setattr(owner, name, make(getattr(owner, name)))


def install(pause: Pause) -> None:
    import polars as pl

    from dices_cli.store import datasets as store

    def is_temp(path: pathlib.Path) -> bool:
        return path.name.startswith(store.TEMP_PREFIX)

    def after_remove_stale(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any) -> None:
            original(self)
            pause.at("locked")

        return wrapper

    def write_parquet(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(frame: Any, file: Any, *args: Any, **kwargs: Any) -> Any:
            path = pathlib.Path(file)
            if is_temp(path.parent) and not any(path.parent.iterdir()):
                pause.at("temp-dir")
            result = original(frame, file, *args, **kwargs)
            if is_temp(path.parent) and path.name == "ratings.parquet":
                if pause.due("ratings-half"):  # as if stopped halfway through writing it
                    with path.open("r+b") as handle:
                        handle.truncate(path.stat().st_size // 2)
                if pause.at("ratings-half"):
                    result = original(frame, file, *args, **kwargs)  # let go on: write it whole
            return result

        return wrapper

    def write_text(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
            if self.name == store.MANIFEST and is_temp(self.parent):
                pause.at("tables")
            return original(self, *args, **kwargs)

        return wrapper

    def fsync_tree(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(directory: pathlib.Path) -> None:
            original(directory)
            pause.at("fsynced")

        return wrapper

    def after_path_call(point: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
                result = original(self, *args, **kwargs)
                if is_temp(self):
                    pause.at(point)
                return result

            return wrapper

        return make

    def after_prune(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            pause.at("pruned")

        return wrapper

    _wrap(store.Store, "_remove_stale", after_remove_stale)
    _wrap(pl.DataFrame, "write_parquet", write_parquet)
    _wrap(pathlib.Path, "write_text", write_text)
    _wrap(store, "_fsync_tree", fsync_tree)
    _wrap(pathlib.Path, "rename", after_path_call("renamed"))
    _wrap(pathlib.Path, "symlink_to", after_path_call("linked"))
    _wrap(pathlib.Path, "replace", after_path_call("switched"))
    _wrap(store.Store, "_prune", after_prune)


def main() -> None:
    spec, fd, *arguments = sys.argv[1:]
    point, _, occurrence = spec.partition(":")
    if point not in POINTS:
        sys.exit(f"unknown point {point!r}; choose from: {', '.join(POINTS)}")
    install(Pause(point, int(occurrence or 1), int(fd)))
    from dices_cli.cli.main import app

    app(arguments, prog_name="dices")


if __name__ == "__main__":
    main()
