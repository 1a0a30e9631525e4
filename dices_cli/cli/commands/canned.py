"""`dices query NAME`: one command per canned query, generated from the query catalogue.

Each `.sql` file's header (dices_cli.queries.catalog) makes its command: the summary and
explanation are its help, each `param` line an option (its type, range, default and
allowed values), the `column` lines the help's list of columns. The options every query
takes are declared once, by `_options_every_query_takes`. The catalogue is read only when
a query command is wanted, never for `dices --help`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import core as click_core
from typer._click import exceptions as click_exceptions
from typer._click import types as click_types
from typer._click.globals import get_current_context
from typer._types import TyperChoice
from typer.core import TyperCommand, TyperOption

from dices_cli.cli.commands.answers import emit_shaped, run_query
from dices_cli.cli.commands.listing import ListingGroup
from dices_cli.cli.commands.options import (
    ColumnsOption,
    DataDir,
    ExcludeRemoved,
    Force,
    LimitOption,
    MinQuality,
    OutputFile,
    OutputFormat,
    RatersFile,
    SortOption,
)
from dices_cli.cli.commands.quiet import quiet_option
from dices_cli.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from dices_cli.output import Format
    from dices_cli.queries.catalog import Parameter, Query
    from dices_cli.shape import Shape

QUERY_HELP = """Run a canned query: the field's standard questions, as documented SQL.

`dices query --list` names them all; `dices query NAME --help` says what one tells you, \
with its options and columns.

Examples:

    dices query overview

    dices query qoverall-by-demographic --by rater_race --by rater_gender

    dices query gold-vs-crowd --rule threshold --threshold 0.3 --format json

    dices query item-distribution --sort -entropy_bits --limit 10

    dices query agreement --by rater_age --permutations 2000 --seed 7

    dices filter-raters --min-quality 0.6 --ids-only | dices query overview --raters -
"""

QueryDataset = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="Which ingested dataset(s) to query: all, 350, 990; prosocial for "
        "ProsocialDialog's own queries; a declared dataset's name (dices info lists them) "
        "for the queries over its labels and raters.",
    ),
]
ShowSql = Annotated[
    bool, typer.Option("--show-sql", help="Print the SQL and its parameters to stderr.")
]


def _options_every_query_takes(
    dataset: QueryDataset = "all",
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    show_sql: ShowSql = False,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    """Only a signature: the options every canned query takes, declared here once (Typer
    makes them); `run_query` gets their values."""


def option_name(parameter: str) -> str:
    """The command-line option of a query parameter."""
    return f"--{parameter.replace('_', '-')}"


class FiniteFloatRange(click_types.FloatRange):
    """A float in a closed range, which NaN is not (Click's range lets NaN through)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value} is not in the range {self._describe_range()}.", param, ctx)
        return number


def _option(parameter: Parameter) -> TyperOption:
    """The option of one query parameter, as its header line declares it."""
    kind: Any = None
    metavar = None
    help_text = parameter.help
    if parameter.range is not None:
        low, high = parameter.bounds
        kind = (
            FiniteFloatRange(low, high)
            if parameter.type == "float"
            else click_types.IntRange(low, high)
        )
    elif parameter.type == "columns":  # long names: in the help, not the metavar
        kind, metavar = TyperChoice(parameter.choices), "COLUMN"
        help_text += " One of: " + ", ".join(parameter.choices) + "."
    elif parameter.type == "question":  # names too long and too many to list in the help
        kind, metavar = TyperChoice(parameter.choices), "COLUMN"
        help_text += (
            " A column with the values No|Yes|Unsure in `dices sql --schema`; "
            "a wrong name is refused with the list."
        )
    elif parameter.type == "attributes":  # the dataset's own: checked when it is read
        metavar = "ATTRIBUTE"
    elif parameter.type == "label":
        metavar = "LABEL"
    elif parameter.choices:
        kind = TyperChoice(parameter.choices)
    several = parameter.type in ("columns", "attributes")
    return TyperOption(
        param_decls=[option_name(parameter.name), parameter.name],
        type=kind,
        multiple=several,
        required=parameter.required,
        default=None if several else parameter.default,
        metavar=metavar,
        show_default=True,
        help=help_text,  # plain text: Rich markup when help is drawn (`QueryCommand`)
    )


def _help(query: Query, markup: Callable[[str], str] = str) -> str:
    """The command's help: what `--explain` prints, each paragraph through `markup`."""
    datasets = _datasets_said(query)
    computed = f"; then computed by {query.compute}" if query.compute else ""
    columns = "\n".join(
        f"  {c.name if c.group_parameter is None else f'({option_name(c.group_parameter)})'}: "
        + c.help
        for c in query.columns
    )
    paragraphs = [
        query.summary,
        query.explanation,
        f"Datasets: {datasets}. SQL: {query.path.name}{computed}.",
        f"Answer (kept on a narrow screen): {', '.join(query.answer)}." if query.answer else "",
        f"Columns:\n{columns}",
        _chart_help(query),
    ]
    return "\n\n".join(markup(p) for p in paragraphs if p)


def _datasets_said(query: Query) -> str:
    """The datasets a query applies to, and the families whose own version it has."""
    from dices_cli.families import family_of
    from dices_cli.queries.catalog import DECLARED, family_queries
    from dices_cli.runs.canned import offers, other_families

    if query.datasets == (DECLARED,):
        scales = " or ".join(query.scales)
        return f"any declared dataset, with -d NAME (a label of a {scales} scale)"
    said = ", ".join(family_of(d).title_of(d) for d in query.datasets)
    for family in other_families():
        own = family_queries(family.name).get(query.name)
        if own is not None and own is not query and offers(family, query.name):
            sql = f"{own.path.parent.name}/{own.path.name}"
            said += f"; {family.title} with -d {family.name} ({sql}: its own columns)"
    return said


def _chart_help(query: Query) -> str:
    """What --format chart draws for the query ("" when it draws nothing)."""
    chart = query.chart
    if chart is None:
        return ""

    def said(names: tuple[str, ...]) -> str:
        return ", ".join(
            f"the {option_name(n[1:-1])} columns" if n.startswith("{") else n for n in names
        )

    interval = f", its interval from {chart.low} to {chart.high}" if chart.low else ""
    labels = f", labelled by {said(chart.labels)}" if chart.labels else ""
    panels = f", a panel per {said(chart.panels)}" if chart.panels else ""
    return f"Chart (--format chart): one bar per row of {chart.value}{interval}{labels}{panels}."


class QueryCommand(TyperCommand):
    """One canned query as a command; an option another query takes gets our message.

    Its help and its own options' help are plain text until help is drawn, then Rich
    markup (`marked_up`): a run never imports Rich for help it does not show (its import
    is a large part of a small query's start: bench/queries.py)."""

    def __init__(self, query: Query, **kwargs: Any) -> None:
        self.query = query
        self._help: str | None = None
        super().__init__(**kwargs)
        self._marked_up = False

    @property
    def help(self) -> str:
        """The command's help (`_help`), made when first read: a run does not read it, and
        its list of datasets reads every family's queries."""
        if self._help is None:
            self._help = _help(self.query)
        return self._help

    @help.setter
    def help(self, text: str | None) -> None:
        self._help = text

    def marked_up(self) -> QueryCommand:
        """This command with its help texts escaped as Rich markup, for Typer to draw (once:
        escaped twice, they would show the escapes)."""
        if not self._marked_up:
            from rich.markup import escape

            self.help = _help(self.query, escape)
            own = {parameter.name for parameter in self.query.parameters}
            for param in self.params:
                if param.name in own and isinstance(param, TyperOption) and param.help:
                    param.help = escape(param.help)
            self._marked_up = True
        return self

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.marked_up()
        super().format_help(ctx, formatter)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click_exceptions.NoSuchOption as error:
            from dices_cli.queries.catalog import catalog, declared_queries

            queries = [*catalog().values(), *declared_queries().values()]
            taken = {option_name(p.name) for q in queries for p in q.parameters}
            if error.option_name not in taken:
                raise
            takes = ", ".join(option_name(p.name) for p in self.query.parameters)
            raise UsageError(
                f"{self.query.name} does not take {error.option_name}; "
                f"it takes: {takes or 'no options'}"
            ) from None


def _explain_option(query: Query) -> TyperOption:
    def explain(ctx: Any, _param: Any, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            _explain(query)
            ctx.exit()

    return TyperOption(
        param_decls=["--explain"],
        is_flag=True,
        expose_value=False,
        is_eager=True,  # before a required option is missed
        callback=explain,
        help="Say what the query tells you, its parameters and its SQL file, and stop.",
    )


def query_command(query: Query) -> QueryCommand:
    """The command of one canned query."""
    from typer.main import get_params_convertors_ctx_param_name_from_function

    shared, convertors, _ = get_params_convertors_ctx_param_name_from_function(
        _options_every_query_takes
    )
    clashes = {p.name for p in query.parameters} & {p.name for p in shared}
    if clashes:
        raise ValueError(f"{query.path.name}: parameter {min(clashes)} is an option of dices query")
    shared_names = {p.name for p in shared if p.name}

    def run(**values: Any) -> None:
        options = {
            name: convertors[name](value) if name in convertors else value
            for name, value in values.items()
            if name in shared_names
        }
        # Only what was typed: a default is the catalogue's to give, and a condition
        # (`threshold only with rule = threshold`) is about what the user gave.
        typed = get_current_context().get_parameter_source
        given = {
            p.name: values[p.name]
            for p in query.parameters
            if typed(p.name) is not click_core.ParameterSource.DEFAULT
        }
        run_query(query, given, **options)

    own: list[click_core.Parameter] = [_option(p) for p in query.parameters]
    return QueryCommand(
        query,
        name=query.name,
        callback=run,
        params=[*own, *shared, _explain_option(query), quiet_option()],
        options_metavar="[OPTIONS]",
        rich_markup_mode="rich",
    )


def _declared_version(args: list[str]) -> Query | None:
    """The declared datasets' version of the query `args` name (`sql/declared/`) when its
    --dataset names a dataset that is not DICES's or ProsocialDialog's (a declared one,
    known to the registry only once the data directory is read): it takes its own options."""
    from dices_cli.families import FAMILIES
    from dices_cli.queries.catalog import command_query, declared_queries

    if not any(word.startswith(("-d", "--dataset")) for word in args[1:]):
        return None  # no dataset named (`_dataset_named`): no catalogue read for one
    own = declared_queries().get(args[0])
    if own is None:
        return None
    dataset = _dataset_named(args[1:], _valued(command_query(args[0])) | _valued(own))
    if dataset is None or dataset == "all":
        return None
    known = next((f for f in FAMILIES.values() if dataset in f.members), None)
    return None if known is not None and known.declared is None else own


def _valued(query: Query | None) -> set[str]:
    """The options of `query`'s command that take a value (`--sort`, `--columns`...)."""
    if query is None:
        return set()
    options = [p for p in query_command(query).params if isinstance(p, TyperOption)]
    return {name for p in options if not (p.is_flag or p.count) for name in p.opts}


def _dataset_named(args: list[str], valued: set[str]) -> str | None:
    """The dataset the last -d/--dataset in `args` names. The value of another option is
    never read as an option: in `--sort -dataset` the leading - means descending."""
    dataset = None
    words = iter(args)
    for word in words:
        name, equals, value = word.partition("=")
        if word in ("-d", "--dataset"):
            dataset = next(words, dataset)
        elif name == "--dataset" and equals:
            dataset = value
        elif word.startswith("-d"):  # -d990 (a long option starts with --)
            dataset = word[2:]
        elif word == "--":
            break
        elif word in valued:
            next(words, None)
    return dataset


def _no_such_query(name: str) -> str:
    """There is no query `name`: the API's message, and where the queries are described."""
    from dices_cli.runs.canned import no_such_query

    return f"{no_such_query(name)} (`dices query --list` describes them)"


class QueryGroup(ListingGroup):
    """`dices query`: its commands are the catalogue's queries, read when first wanted."""

    def list_commands(self, ctx: Any) -> list[str]:
        from dices_cli.queries.catalog import command_queries

        return list(command_queries())

    def get_command(self, ctx: Any, cmd_name: str) -> click_core.Command | None:
        from dices_cli.queries.catalog import command_query

        query = command_query(cmd_name)
        if query is None:
            return None
        command = query_command(query)
        return command.marked_up() if self.listing else command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        from dices_cli.queries.catalog import command_query

        if not args[0].startswith("-") and command_query(args[0]) is None:
            raise UsageError(_no_such_query(args[0]))
        own = _declared_version(args)
        if own is not None:  # its own options and help
            command = query_command(own)
            return own.name, command.marked_up() if self.listing else command, args[1:]
        return super().resolve_command(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return ["NAME", "[OPTIONS]"]


def query_group(
    ctx: typer.Context,
    list_: Annotated[bool, typer.Option("--list", "-l", help="List the canned queries.")] = False,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    if ctx.invoked_subcommand is not None:
        if list_ or not shape.is_identity or fmt is not None or output is not None or force:
            raise UsageError("give a query's options after its name: dices query NAME [OPTIONS]")
        return
    if not list_:
        raise UsageError("name a query, or use --list to see them")
    _list_queries(shape, fmt, output, force)


def _list_queries(shape: Shape, fmt: Format | None, output: Path | None, force: bool) -> None:
    from dices_cli.cli.focus import Focus
    from dices_cli.output import Table
    from dices_cli.queries.catalog import command_queries
    from dices_cli.runs.canned import offers, other_families

    rows = [
        (
            q.name,
            " ".join(
                dict.fromkeys(
                    [
                        *q.datasets,
                        *(
                            "declared" if f.declared is not None else f.name
                            for f in other_families()
                            if offers(f, q.name)
                        ),
                    ]
                )
            ),
            " ".join(option_name(p.name) for p in q.parameters),
            q.summary,
        )
        for q in command_queries().values()
    ]
    columns = ["name", "datasets", "parameters", "summary"]
    listed = Table(columns, [False] * 4, rows)
    summaries = Focus(answer=("summary",))  # whole, wrapped at the terminal's width
    emit_shaped(listed, shape, fmt, output, "Canned queries", force, [], focus=summaries)


def _explain(query: Query) -> None:
    """What the query tells, its parameters and its SQL file, written as every result is."""
    from dices_cli.output import Output

    lines = [f"{query.name}: {query.summary}", "", query.explanation, ""]
    lines.append(f"Datasets: {_datasets_said(query)}")
    for parameter in query.parameters:
        default = "required" if parameter.required else f"default {parameter.default or 'none'}"
        kind = parameter.type
        if parameter.range is not None:
            kind += f" in [{parameter.range[0]}, {parameter.range[1]}]"
        choices = f" Choices: {', '.join(parameter.choices)}." if parameter.choices else ""
        option = option_name(parameter.name)
        lines.append(f"  {option} ({kind}, {default}): {parameter.help}{choices}")
    lines += ["", f"SQL: {query.path}"]
    if query.compute is not None:
        lines.append(f"Then computed in Python by: {query.compute}")
    with Output.build(None, None).open() as handle:
        handle.write(("\n".join(lines) + "\n").encode("utf-8"))


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        cls=QueryGroup,
        help=QUERY_HELP,
        invoke_without_command=True,
        no_args_is_help=True,
        rich_markup_mode="rich",
    )
    group.callback()(query_group)
    app.add_typer(group, name="query")
