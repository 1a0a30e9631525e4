"""Commands that ask questions of ingested data: query (canned SQL) and sql (ad hoc)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from dices_cli.commands.options import DataDir, Force, OutputFile, OutputFormat
from dices_cli.render import emit, say

QUERY_HELP = """Run a canned query: the field's standard questions, as documented SQL.

`dices query --list` names them all; `dices query NAME --explain` says what one tells you.

Examples:

    dices query overview

    dices query qoverall-by-demographic --by rater_race --by rater_gender

    dices query gold-vs-crowd --rule threshold --threshold 0.3 --format json

    dices query item-distribution -o items.parquet

    dices query agreement --by rater_age --permutations 2000 --seed 7

    dices filter-raters --min-quality 0.6 --ids-only | dices query overview --raters -
"""

DatasetOption = Annotated[
    Literal["all", "350", "990"],
    typer.Option("--dataset", "-d", help="Which ingested dataset(s) to query."),
]
ExcludeRemoved = Annotated[
    bool,
    typer.Option(
        "--exclude-removed",
        help="Leave out the raters the DICES authors removed (19 in DICES-350, 12 in DICES-990).",
    ),
]
RatersFile = Annotated[
    str | None,
    typer.Option(
        "--raters",
        metavar="FILE|-",
        help="Keep only these raters: one id a line, or a CSV with a rater_id column; - is stdin.",
    ),
]
MinQuality = Annotated[
    float | None,
    typer.Option(
        "--min-quality",
        metavar="Q",
        help="Keep only raters whose quality score is at least Q "
        "(0 to 1; see dices filter-raters).",
    ),
]


def _canned_help(query: str, name: str, text: str) -> str:
    """Help for a numeric option of one canned query: `text`, then the range and default
    that the query's .sql header declares (their one home)."""
    from dices_cli.queries.catalog import get_query

    parameter = get_query(query).parameter(name)
    assert parameter is not None and parameter.range is not None
    low, high = parameter.range
    return f"{query}: {text} ({low} to {high}; default {parameter.default})."


def rater_selection(
    exclude_removed: bool, raters: str | None, min_quality: float | None = None
) -> Any:
    """The rater selection every query honours, from the shared options."""
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.raters import parse_rater_ids

    selection = RaterSelection(exclude_removed=exclude_removed, min_quality=min_quality)
    if exclude_removed:
        selection.description.append("without the raters the DICES authors removed")
    if raters is not None:
        if raters == "-":
            data, source = sys.stdin.buffer.read(), "stdin"
        else:
            try:
                data, source = Path(raters).read_bytes(), raters
            except OSError as error:
                from dices_cli.errors import DicesError

                raise DicesError(f"cannot read --raters {raters}: {error.strerror}") from error
        selection.keep_ids = parse_rater_ids(data, source)
        selection.description.append(f"{len(selection.keep_ids)} raters from {source}")
    return selection


def read_paths(data: Path | None, raters: str | None) -> list[Path]:
    """What a query reads, which -o must not overwrite: the data directory, --raters FILE."""
    from dices_cli.store import resolve_data_dir

    return [resolve_data_dir(data), *([Path(raters)] if raters not in (None, "-") else [])]


def _list_queries(fmt: Any, output: Path | None, force: bool) -> None:
    from dices_cli.output import Table
    from dices_cli.queries.catalog import catalog

    rows = [
        (
            q.name,
            " ".join(q.datasets),
            " ".join(f"--{p.name.replace('_', '-')}" for p in q.parameters),
            q.summary,
        )
        for q in catalog().values()
    ]
    columns = ["name", "datasets", "parameters", "summary"]
    emit(Table(columns, [False] * 4, rows), fmt, output, title="Canned queries", force=force)


def _explain(name: str) -> None:
    from dices_cli.output import open_stdout
    from dices_cli.queries.catalog import get_query

    query = get_query(name)
    with open_stdout():
        print(f"{query.name}: {query.summary}\n")
        print(query.explanation + "\n")
        print(f"Datasets: {', '.join('DICES-' + d for d in query.datasets)}")
        for parameter in query.parameters:
            default = "required" if parameter.required else f"default {parameter.default or 'none'}"
            kind = parameter.type
            if parameter.range is not None:
                kind += f" in [{parameter.range[0]}, {parameter.range[1]}]"
            choices = f" Choices: {', '.join(parameter.choices)}." if parameter.choices else ""
            print(f"  {parameter.option} ({kind}, {default}): {parameter.help}{choices}")
        print(f"\nSQL: {query.path}")
        if query.compute is not None:
            print(f"Then computed in Python by: {query.compute}")


def _bind(query: Any, given: dict[str, Any]) -> dict[str, Any]:
    """Bound values for every parameter of `query`; refuses options it does not take."""
    from dices_cli.errors import UsageError

    for option, value in given.items():
        if value not in (None, [], False) and query.parameter(option) is None:
            takes = (
                ", ".join(f"--{p.name.replace('_', '-')}" for p in query.parameters) or "no options"
            )
            raise UsageError(
                f"{query.name} does not take --{option.replace('_', '-')}; it takes: {takes}"
            )
    if given.get("threshold") is not None and given.get("rule") != "threshold":
        raise UsageError("--threshold applies only with --rule threshold")
    return {p.name: p.convert(given.get(p.name)) for p in query.parameters}


def query(
    name: Annotated[
        str | None, typer.Argument(help="The query to run.", show_default=False)
    ] = None,
    list_: Annotated[bool, typer.Option("--list", "-l", help="List the canned queries.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Say what the query tells you.")
    ] = False,
    dataset: DatasetOption = "all",
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help="Group by this rater column (repeat for intersections)."),
    ] = None,
    rule: Annotated[
        str | None, typer.Option("--rule", help="gold-vs-crowd: plurality or threshold.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help=_canned_help("gold-vs-crowd", "threshold", "with --rule threshold, share of Yes"),
        ),
    ] = None,
    question: Annotated[
        str | None,
        typer.Option("--question", help="agreement: the answer column (default: Q_overall)."),
    ] = None,
    unsure: Annotated[
        str | None,
        typer.Option("--unsure", help="agreement: Unsure is a category (default) or missing."),
    ] = None,
    permutations: Annotated[
        int | None,
        typer.Option(
            "--permutations",
            help=_canned_help("agreement", "permutations", "relabellings for p-values"),
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed", help=_canned_help("agreement", "seed", "random seed of the permutations")
        ),
    ] = None,
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    show_sql: Annotated[
        bool, typer.Option("--show-sql", help="Print the SQL and its parameters to stderr.")
    ] = False,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    from dices_cli.errors import UsageError
    from dices_cli.output import check_output
    from dices_cli.queries.catalog import get_query, missing_group_column, render_sql
    from dices_cli.queries.engine import open_session
    from dices_cli.schema import DATASETS
    from dices_cli.selection import resolve
    from dices_cli.store import Store, resolve_data_dir

    if list_:
        _list_queries(fmt, output, force)
        return
    if name is None:
        raise UsageError("name a query, or use --list to see them")
    if explain:
        _explain(name)
        return
    if output is not None:  # before the work
        check_output(output, force, read_paths(data, raters))
    canned = get_query(name)
    given = {"by": by or [], "rule": rule, "threshold": threshold, "question": question}
    given |= {"unsure": unsure, "permutations": permutations, "seed": seed}
    parameters = _bind(canned, given)
    selection = rater_selection(exclude_removed, raters, min_quality)
    if show_sql:
        say(f"-- parameters: {parameters}\n{render_sql(canned)}")
    store = Store(resolve_data_dir(data))
    columns = canned.group_columns(parameters)
    selection = resolve(store, dataset, selection, needs=canned.datasets, columns=columns)
    session = open_session(store, dataset, selection, needs=canned.datasets, columns=columns)
    queried = {d.name for d in session.datasets}
    for skipped in sorted(set(store.available()) - queried if dataset == "all" else ()):
        if lacking := missing_group_column(DATASETS[skipped], columns):
            note = f"{lacking}, so it is left out"
        else:
            note = f"{name} does not apply to DICES-{skipped}; showing the datasets it applies to"
        say(f"note: {note}")
    if session.selection.description:
        say(f"raters: {'; '.join(session.selection.description)}")
    inputs = read_paths(data, raters)
    emit(session.run(canned, parameters), fmt, output, title=name, force=force, inputs=inputs)


def sql(
    statement: Annotated[
        str | None,
        typer.Argument(
            help="One SELECT over items, raters, ratings, ratings_wide.", show_default=False
        ),
    ] = None,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema", help="List the views' columns, types and ENUM values instead of a query."
        ),
    ] = False,
    dataset: DatasetOption = "all",
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    table: Annotated[
        list[str] | None,
        typer.Option(
            "--table",
            metavar="NAME=FILE",
            help="Load your own CSV, TSV, JSON Lines or Parquet file (- for stdin) as table "
            "NAME, e.g. predictions to join with ratings_wide. Repeatable.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Stop the query after this many seconds (at least 0.1; inf: no limit).",
            min=0.1,
        ),
    ] = 60.0,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    """Run your own read-only SQL over the ingested data.

    Views: items, raters, ratings, ratings_wide (ratings joined to raters and items) and
    published_removed, each with a `dataset` column. The data is loaded into memory and
    the connection locked: one SELECT only, no files, no extensions, no settings.

    --schema lists every column of the views: view, column, type and, for an ENUM, its
    values joined by '|'.

    Examples:

        dices sql --schema

        dices sql "SELECT rater_age, count(*) FROM ratings_wide GROUP BY ALL ORDER BY ALL"

        dices sql "SELECT * FROM items WHERE dataset = '350' AND safety_gold = 'Yes'" -f jsonl

        dices sql --table p=predictions.csv \\
            "SELECT label, safety_gold, count(*) FROM p JOIN items USING (item_id) GROUP BY ALL"
    """
    from dices_cli.errors import UsageError
    from dices_cli.output import check_output
    from dices_cli.queries.engine import open_session
    from dices_cli.queries.sandbox import add_tables, read_table, run_sql, user_tables
    from dices_cli.selection import resolve
    from dices_cli.store import Store, resolve_data_dir

    if (statement is None) == (not schema):
        raise UsageError("give either one SELECT statement or --schema")
    tables = user_tables(table or [])
    inputs = read_paths(data, raters) + [Path(f) for f in tables.values() if f != "-"]
    if output is not None:  # before the work
        check_output(output, force, inputs)
    store = Store(resolve_data_dir(data))
    selection = resolve(store, dataset, rater_selection(exclude_removed, raters, min_quality))
    if statement is None:
        loaded = {name: read_table(name, given) for name, given in tables.items()}
        session = open_session(store, dataset, selection)
        add_tables(session, loaded)
        emit(session.schema(), fmt, output, title="sql", force=force, inputs=inputs)
        return
    with run_sql(store, dataset, statement, selection, timeout, tables) as result:
        emit(result, fmt, output, title="sql", force=force, inputs=inputs)


def register(app: typer.Typer) -> None:
    app.command(help=QUERY_HELP, no_args_is_help=True)(query)
    app.command(no_args_is_help=True)(sql)
