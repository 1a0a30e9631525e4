"""The Python API's `raters=`: which raters a method's result is of, as a `RaterFilterResult`,
rater ids or an ids file."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError, Option, UsageError

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.queries.engine import RaterSelection


@dataclass(frozen=True)
class RaterFilterResult:
    """What `Data.filter_raters` found: one row per rater (`raters`: score, components, kept),
    the `audit` of what the filter changes (one row per dataset), and the `kept` rater ids,
    which `raters=` of the other methods takes as it is."""

    raters: pl.DataFrame
    audit: pl.DataFrame
    kept: frozenset[int]
    description: str

    def __repr__(self) -> str:
        """One line: how many raters were kept of how many, by which rule (the ids and the
        tables are the attributes, not the printout)."""
        return (
            f"RaterFilterResult({len(self.kept)} of {self.raters.height} raters kept: "
            f"{self.description})"
        )


def selection_of(
    raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None,
    exclude_removed: bool,
    min_quality: float | None,
) -> RaterSelection:
    """`raters=` as the API takes it: a `RaterFilterResult`, rater ids, or an ids file."""
    from dices_cli.raters.id_list import parse_rater_ids
    from dices_cli.raters.selection import rater_selection

    if raters is None:
        return rater_selection(exclude_removed, min_quality=min_quality)
    if isinstance(raters, RaterFilterResult):
        ids, source = raters.kept, "filter_raters"
    elif isinstance(raters, str | os.PathLike):
        try:
            data = Path(raters).read_bytes()
        except OSError as error:
            raise DicesError(
                "cannot read ", Option("raters"), f" {raters}: {error.strerror}"
            ) from error
        ids, source = parse_rater_ids(data, str(raters)), str(raters)
    else:
        ids, source = rater_ids(raters), "a list"
    return rater_selection(exclude_removed, ids, source, min_quality)


def rater_ids(raters: object) -> frozenset[int]:
    """Rater ids given as numbers: whole numbers (a float only when it is one), never
    truncated (1.5 is not rater 1)."""
    if isinstance(raters, bytes | Mapping) or not isinstance(raters, Iterable):
        raise UsageError(
            Option("raters"),
            " is a RaterFilterResult, rater ids or an ids file, not ",
            type(raters).__name__,
        )
    ids: set[int] = set()
    for given in raters:
        if isinstance(given, float) and given.is_integer():
            ids.add(int(given))
            continue
        try:
            if isinstance(given, bool):
                raise TypeError
            ids.add(operator.index(given))
        except TypeError:
            raise UsageError(
                Option("raters"), f" holds {given!r}, which is not a rater id (a whole number)"
            ) from None
    return frozenset(ids)
