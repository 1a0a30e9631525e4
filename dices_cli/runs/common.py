"""What every command of the layer shares: how it tells the user things on the way, and the
checks of plain arguments, which name the parameter as an `Option`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError

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


def in_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:  # False for NaN
        raise UsageError(Option(name), f" must be between {low:g} and {high:g} (got {value:g})")
