"""`dices query`: a canned query over the store, for the raters chosen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError
from dices_cli.runs.common import Tell, chooses, refuse_rater_selection, unsaid

if TYPE_CHECKING:
    from dices_cli.families import Family
    from dices_cli.output import Result
    from dices_cli.queries.catalog import Query
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.store.datasets import Store


def no_such_query(name: str) -> str:
    """There is no query `name`: the nearest name first, then every query, the ones of a
    family other than DICES marked with it."""
    import difflib

    from dices_cli.families import family_of
    from dices_cli.queries.catalog import DECLARED, command_queries

    queries = command_queries()
    nearest = difflib.get_close_matches(name, list(queries), n=1)
    guess = f": did you mean {nearest[0]!r}? The" if nearest else "; the"
    listed = []
    for query in queries.values():
        if query.datasets == (DECLARED,):
            listed.append(f"{query.name} (declared datasets only)")
            continue
        owner = family_of(query.datasets[0])
        listed.append(query.name if owner.name == "dices" else f"{query.name} ({owner.title} only)")
    return f"no query {name!r}{guess} queries are: {', '.join(listed)}"


def other_families() -> list[Family]:
    """Every family but DICES."""
    from dices_cli.families import FAMILIES

    return [family for name, family in FAMILIES.items() if name != "dices"]


def offers(family: Family, name: str) -> bool:
    """Whether `family` has its own version of the query `name` that applies to it: for a
    declared dataset, one its declaration offers (gold-vs-crowd: a reference label)."""
    from dices_cli.queries.catalog import family_queries

    own = name in family_queries(family.name)
    return own and (family.declared is None or name in family.queries)


@dataclass(frozen=True)
class CannedRun:
    """A canned query's result, and what a table of it always shows (its focus's arguments:
    the bound parameters; None for another family's query, which has no group columns)."""

    result: Result
    query: Query
    parameters: dict[str, Any] | None


def run_canned(
    store: Store,
    canned: Query,
    given: Mapping[str, Any],
    dataset: str,
    selection: RaterSelection,
    typed: bool = True,
    tell: Tell = unsaid,
    show_sql: Tell | None = None,
) -> CannedRun:
    """Run `canned` over `dataset` with the values `given` to its parameters (absent or None:
    the default), for the raters of `selection`. `typed`: as for `Session.run`. Notes (a
    dataset left out, the raters seen) go to `tell`; the SQL and its parameters to
    `show_sql`."""

    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.queries.catalog import ParameterError, family_queries, render_sql, usage_error
    from dices_cli.queries.engine import connect, open_session, statement_names
    from dices_cli.raters.selection import resolve

    family = family_asked(canned, dataset, store)
    if family is not None:
        refuse_rater_selection(family, chooses(selection))
        own = family_queries(family.name).get(canned.name)
        result = run_family_query(canned, given, family, store, typed, show_sql)
        assert own is not None  # run_family_query refuses a query the family lacks
        return CannedRun(result, own, None)
    try:
        parameters = canned.bind(given)
    except ParameterError as error:
        raise usage_error(error) from None
    if show_sql is not None:
        show_sql(f"-- parameters: {parameters}\n{render_sql(canned)}")
    columns = canned.group_columns(parameters)
    selection = resolve(store, dataset, selection, needs=canned.datasets, columns=columns)
    # Only the views the query reads, and the stored files behind them: binding a view is
    # part of a small answer's time (ratings_wide the most; bench/queries.py).
    connection = connect()
    named = statement_names(render_sql(canned), connection)
    session = open_session(
        store,
        dataset,
        selection,
        needs=canned.datasets,
        columns=columns,
        named=named,
        connection=connection,
    )
    queried = {d.name for d in session.datasets}
    for skipped in sorted(set(store.available()) - queried if dataset == "all" else ()):
        if lacking := missing_group_column(DATASETS[skipped], columns):
            note = f"{lacking}, so it is left out"
        else:
            note = (
                f"{canned.name} does not apply to DICES-{skipped}; "
                "showing the datasets it applies to"
            )
        tell(f"note: {note}")
    ingested = set(store.ingested()) if dataset == "all" else set()
    if ingested - set(DATASETS):  # another family's dataset is ingested too
        for other in other_families():
            if ingested & set(other.members) and offers(other, canned.name):
                tell(
                    f"note: {other.title} is ingested too; -d {other.name} runs its own "
                    f"{canned.name}"
                )
    if session.selection.description:
        tell(f"raters: {'; '.join(session.selection.description)}")
    return CannedRun(session.run(canned, parameters, typed=typed), canned, parameters)


def family_asked(canned: Query, dataset: str, store: Store) -> Family | None:
    """The family other than DICES a run is for: the one `dataset` names; with all, the one a
    query of its own belongs to, or the one with its own version of a DICES query when no
    DICES dataset is ingested. None for DICES."""
    from dices_cli.families import FAMILIES, family_of
    from dices_cli.queries.catalog import DECLARED

    if dataset in FAMILIES:
        return FAMILIES[dataset]
    if canned.datasets == (DECLARED,):
        raise UsageError(
            f"{canned.name} applies to declared datasets only: give ",
            Option("dataset"),
            " NAME (dices info lists the ingested ones)",
        )
    owner = family_of(canned.datasets[0])
    if owner.name == "dices":
        if dataset != "all" or store.available():
            return None
        ingested = set(store.ingested())
        return next(
            (
                family
                for family in other_families()
                if ingested & set(family.members) and offers(family, canned.name)
            ),
            None,
        )
    if dataset != "all":
        raise UsageError(
            f"{canned.name} applies to {owner.title} only: give ",
            Option("dataset"),
            f" {owner.name}",
        )
    return owner


def run_family_query(
    canned: Query,
    given: Mapping[str, Any],
    family: Family,
    store: Store,
    typed: bool = True,
    show_sql: Tell | None = None,
) -> Result:
    """Run the family's own version of `canned` (`typed`, as for `Session.run`); a parameter
    it does not take, or a query it does not have, is a usage error that says what the family
    lacks."""
    from dices_cli.queries.catalog import family_queries, render_sql
    from dices_cli.queries.family import FamilySession

    own = family_queries(family.name).get(canned.name)
    if own is None and family.declared is not None:
        offered = [q for q in family_queries(family.name) if offers(family, q)]
        raise UsageError(
            f"{canned.name} asks DICES's or ProsocialDialog's own questions; {family.title}'s "
            f"queries are: {', '.join(offered)}"
        )
    if own is None:
        raise UsageError(f"{family.lacks()}; {canned.name} needs them")
    taken = {p.name for p in own.parameters}
    for name, value in given.items():
        if name not in taken and value not in (None, (), []):
            lacks = family.lacks("rater ids", "demographics")
            raise UsageError(f"{lacks}; `{canned.name} ", Option(name), "` needs them")
    parameters = own.bind({k: v for k, v in given.items() if k in taken})
    if show_sql is not None:
        show_sql(f"-- parameters: {parameters}\n{render_sql(own)}")
    if family.declared is not None:
        from dices_cli.queries.declared import DeclaredSession

        return DeclaredSession(store, family.members[0]).run(own, parameters, typed)
    return FamilySession(store, family.members[0]).run(own, parameters, typed)
