"""`dices sql`: one read-only SELECT of the caller's over the views, or the views' schema."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError
from dices_cli.runs.common import check_dataset, chooses, refuse_rater_selection

if TYPE_CHECKING:
    from dices_cli.output import Result
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.queries.sandbox import QueryTimeoutError
    from dices_cli.store.datasets import Store


@contextlib.contextmanager
def run_sql(
    store: Store,
    statement: str | None,
    dataset: str = "all",
    selection: RaterSelection | None = None,
    *,
    schema: bool = False,
    tables: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    timeout: float = 60.0,
    small_cells: int | None = None,
    stuck: Callable[[QueryTimeoutError], None] | None = None,
) -> Iterator[Result]:
    """The result of `statement` over `dataset`'s views for the raters of `selection`, or,
    with `schema`, the views' columns; `tables` ({NAME: FILE}) are tables of the caller's
    that the statement may name. Read the result inside the `with` block: the time limit
    holds until it ends (`dices_cli.queries.sandbox.run_sql`: `small_cells`, `stuck`).
    A family without raters takes no rater selection."""
    from dices_cli.families import FAMILIES
    from dices_cli.queries import sandbox
    from dices_cli.queries.family import session_for
    from dices_cli.raters.selection import rater_selection, resolve

    check_dataset(dataset)
    if (statement is None) == (not schema):
        raise UsageError("give either one SELECT statement or ", Option("schema"))
    family = FAMILIES.get(dataset)
    selection = selection or rater_selection()
    if family is not None:
        refuse_rater_selection(family, chooses(selection))
    named = _named(tables)
    chosen = None if family is not None else resolve(store, dataset, selection)
    if statement is None:
        loaded = {name: sandbox.read_table(name, given) for name, given in named.items()}
        session = session_for(store, dataset, chosen)
        sandbox.add_tables(session, loaded)
        yield session.schema()
        return
    with sandbox.run_sql(
        store, dataset, statement, chosen, timeout, named, small_cells, stuck
    ) as result:
        yield result


def _named(tables: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """The caller's tables as {NAME: FILE}, checked before anything is read."""
    from dices_cli.queries.sandbox import check_table_names
    from dices_cli.read.source import STDIN

    pairs = list(tables.items() if isinstance(tables, Mapping) else tables)
    check_table_names([name for name, _ in pairs])
    if [given for _, given in pairs].count(STDIN) > 1:
        raise UsageError(f"{STDIN} (stdin) can be given once: as the file of one table")
    return dict(pairs)
