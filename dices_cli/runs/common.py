"""What every command of the layer shares: how it tells the user things on the way, and the
checks of plain arguments, which name the parameter as an `Option`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

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


def check_names(command: str, given: Iterable[str], taken: Collection[str]) -> None:
    """A usage error for the first of the keyword arguments `given` that `command` does not
    take, saying those it takes."""
    for name in given:
        if name not in taken:
            said = [part for n in sorted(taken) for part in (", ", Option(n))][1:]
            raise UsageError(f"{command} does not take ", Option(name), "; it takes: ", *said)


def one_or_several(given: Any) -> Sequence[Any]:
    """One value or several: a string or a path is one (not its characters)."""
    import os

    if given is None:
        return ()
    if isinstance(given, str | os.PathLike) or not isinstance(given, Iterable):
        return (given,)
    return tuple(given)
