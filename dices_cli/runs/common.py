"""What every command of the layer shares: how it tells the user things on the way, and the
checks of plain arguments, which name the parameter as an `Option`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from dices_cli.families import Family
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.store.datasets import Store

# Something said to the user about a result (`note: ...`, `warning: ...`, `raters: ...`).
Tell = Callable[[str], None]


def unsaid(_text: str) -> None:
    """A `Tell` for a caller that says nothing."""


def data_store(data: Path | None) -> Store:
    """The data directory a command reads or writes: `data`, else $DICES_DATA, else
    ./dices-data; the datasets declared there are registered."""
    from dices_cli.store.datasets import Store, resolve_data_dir

    return Store(resolve_data_dir(data))


def data_dir(data: Path | None) -> Path:
    """Where `data_store` would be, without opening it (an input -o must not overwrite)."""
    from dices_cli.store.datasets import resolve_data_dir

    return resolve_data_dir(data)


def selection_of(
    exclude_removed: bool = False,
    ids: bytes | None = None,
    source: str = "",
    min_quality: float | None = None,
) -> RaterSelection:
    """The rater selection every query honours: without the raters the DICES authors
    removed, only the raters of the ids file `ids` (its bytes, read from `source`), at
    least `min_quality`."""
    from dices_cli.raters.selection import rater_selection

    if ids is None:
        return rater_selection(exclude_removed, min_quality=min_quality)
    from dices_cli.raters.id_list import parse_rater_ids

    return rater_selection(exclude_removed, parse_rater_ids(ids, source), source, min_quality)


def refuse_rater_selection(family: Family, chosen: bool) -> None:
    """A usage error when raters are `chosen` of `family`, whose raters cannot be chosen."""
    if chosen:
        raise UsageError(
            f"{family.lacks('rater ids')}; ",
            Option("exclude_removed"),
            ", ",
            Option("raters"),
            " and ",
            Option("min_quality"),
            " choose raters",
        )


def chooses(selection: RaterSelection) -> bool:
    """Whether `selection` chooses raters (rather than seeing them all)."""
    return bool(
        selection.exclude_removed
        or selection.keep_ids is not None
        or selection.min_quality is not None
    )


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise UsageError(Option(name), f" must be one of: {', '.join(choices)} (got {value!r})")


def check_dataset(dataset: str) -> None:
    """`dataset` is all or a stored dataset of some family. The declared families' are
    listed (their declarations parsed) only for a name no family of code of its own has."""
    from dices_cli.families import all_members, coded_members

    if dataset not in ("all", *coded_members()):
        check_choice("dataset", dataset, ("all", *all_members()))


def in_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:  # False for NaN
        raise UsageError(Option(name), f" must be between {low:g} and {high:g} (got {value:g})")


def size_of(max_size: int | str) -> int:
    """The bytes a `max_size` stands for: a number, or a size such as 500M or 4G."""
    from dices_cli.read.source import parse_size

    if isinstance(max_size, int) and not isinstance(max_size, bool):
        if max_size < 1:
            raise UsageError(Option("max_size"), f" must be at least 1 (got {max_size})")
        return max_size
    try:
        return parse_size(str(max_size))
    except ValueError as error:
        raise UsageError(Option("max_size"), f" {error}") from None


def checked_files(files: Sequence[str | os.PathLike[str]], store: bool = False) -> list[Path]:
    """The files to read, each there and not a directory, stdin ("-") at most once.
    `store`: the command writes to a data directory, which a directory given among the
    files may have been meant as."""
    from pathlib import Path

    from dices_cli.read.source import STDIN

    paths = [Path(given) for given in files]
    for path in paths:
        if str(path) != STDIN and not path.exists() and not path.is_symlink():
            raise UsageError(f"'{path}' does not exist")
        if path.is_dir():
            meant = ("; a data directory is given as ", Option("data"), f" {path}") if store else ()
            raise UsageError(f"'{path}' is a directory: give the files to read", *meant)
    if sum(str(path) == STDIN for path in paths) > 1:
        raise UsageError(f"{STDIN} (stdin) can be given once")
    return paths


@contextlib.contextmanager
def max_size_named() -> Iterator[None]:
    """An input over the size limit says which parameter raises it."""
    from dices_cli.read.source import TooLargeError

    try:
        yield
    except TooLargeError as error:
        raise DicesError(f"{error}; ", Option("max_size"), " raises the limit") from error


def check_names(command: str, given: Iterable[str], taken: Collection[str]) -> None:
    """A usage error for the first of the keyword arguments `given` that `command` does not
    take, saying those it takes."""
    for name in given:
        if name not in taken:
            said = [part for n in sorted(taken) for part in (", ", Option(n))][1:]
            raise UsageError(f"{command} does not take ", Option(name), "; it takes: ", *said)


def one_or_several(given: Any) -> Sequence[Any]:
    """One value or several: a string or a path is one (not its characters)."""
    if given is None:
        return ()
    if isinstance(given, str | os.PathLike) or not isinstance(given, Iterable):
        return (given,)
    return tuple(given)
