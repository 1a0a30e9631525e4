"""What every command of the layer shares: how it tells the user things on the way, and the
checks of plain arguments, which name the parameter as an `Option`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError

if TYPE_CHECKING:
    from dices_cli.families import Family
    from dices_cli.queries.engine import RaterSelection

# Something said to the user about a result (`note: ...`, `warning: ...`, `raters: ...`).
Tell = Callable[[str], None]


def unsaid(_text: str) -> None:
    """A `Tell` for a caller that says nothing."""


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
