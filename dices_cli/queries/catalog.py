"""The canned queries: `.sql` files whose header comment names and documents them.

A header is the leading block of `--` comment lines:

    -- name: qoverall-by-demographic
    -- summary: Q_overall answers per demographic group, with 95% intervals.
    -- datasets: 350 990
    -- uses: gold-vs-crowd AS cells          (optional: another query as a CTE)
    -- param by: columns, required: Rater columns to group by; several intersect.
    -- param threshold: float in [0, 1] = 0.5: Share of Yes that makes the crowd say Yes.
    -- condition: threshold only with rule = threshold   (optional: when a value may be given)
    -- compute: dices_cli.metrics.compute:compute   (optional: a Python step after the SQL)
    -- column dataset: '350' or '990'.
    -- column {by}: The group columns the `by` parameter names.
    -- column share_yes: Share of Yes among the ratings.
    -- chart: share_yes [share_yes_ci_low, share_yes_ci_high] by {by} per dataset   (optional)
    -- answer: share_yes, share_yes_ci_low, share_yes_ci_high
    -- explanation:
    --   Free text, as many lines as needed, until the header ends.

Parameter types: `columns` (a list of column names from the group-by choices), `question`
(one answer column, such as Q_overall), `float`, `integer`, `choice(a|b)`; a declared
dataset's queries (`sql/declared/`) take `attributes` (its rater attributes) and `label`
(one of its labels), which `dices_cli.queries.declared` checks against its declaration.
A `scales:` line names the scales (binary nominal ordinal) whose labels a declared
dataset's query takes. Each parameter
is bound by name (`$threshold`), never pasted.

A `float` or `integer` parameter must declare its range, `in [low, high]` (both ends
included), and its default must lie in it; a value outside the range, and NaN or infinity,
is a usage error that names the range. The range is the parameter's one documented home:
the query's explanation and the command line's help show it.

A `condition` line says that a parameter may be given only when another has a value
(`threshold only with rule = threshold`): giving it otherwise is a usage error.

`column` lines declare the result's columns, in order, each with what it holds; `{NAME}`
stands for the columns a `columns` parameter names, in `GROUP_COLUMN_ORDER` (the data's).
A test runs every query and checks that its columns are the declared ones.

A `chart` line declares the bar chart the command line draws of the result (`Chart`): one
bar per row, as long as the `value` column, with the interval from the columns in brackets
(optional), labelled by the `by` columns (`{NAME}`: a `columns` parameter's), one panel per
value of the `per` columns (optional). Every column it names is a declared column.

An `answer` line names the declared columns that answer the query's question: a table on a
narrow terminal keeps them (with the ids and group columns) and leaves out the others first
(`dices_cli.cli.tabular`); the help lists them first. Every query declares its answer.

A `columns` parameter names rater columns. A dataset that lacks one (DICES-350 has no
rater_locale) cannot be broken down by it: `schema.missing_group_column` says so, and the
engine leaves that dataset out when every dataset is asked for, or refuses it when it is named.

`compute: module:function` names a function(pyarrow.Table, parameters) -> Table that turns
the SQL's result into the query's result, for what SQL cannot do well (permutation tests). The
SQL is given only the parameters it names; the function gets all of them.

Adding a query is adding a file. The directory is `sql_directory()`: $DICES_SQL_DIR when
set (a catalogue of one's own), else the one that ships with dices. The SQL dices runs
itself (`sql/_NAME.sql`, the shared macros) is `dices_cli.queries.own_sql`'s.

Errors name parameters, never command-line options: `ParameterError` and its kin carry
the facts (parameter, value, what is allowed) for the command line to word.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError
from dices_cli.families.schema import DATASETS, Entity, answer_columns
from dices_cli.queries.own_sql import packaged_sql_directory

if TYPE_CHECKING:
    import pyarrow as pa

    from dices_cli.output import Table

# Rater and rating columns a result can be broken down by.
GROUP_COLUMNS = (
    "rater_gender",
    "rater_race",
    "rater_raw_race",
    "rater_age",
    "rater_education",
    "rater_locale",
    "phase",
)

# The order a result keeps group columns in, whatever order they are given in: the data's
# (the views' columns: a rating's, then a rater's), which the queries' COLUMNS(...) keep.
GROUP_COLUMN_ORDER = tuple(
    name
    for entity in (Entity.RATING, Entity.RATER)
    for name in dict.fromkeys(c.name for d in DATASETS.values() for c in d.of(entity))
    if name in GROUP_COLUMNS
)

_PARAM = re.compile(
    r"^param (?P<name>[a-z_]+): "
    r"(?P<type>columns|attributes|label|question|float|integer|choice\([a-z|-]+\))"
    r"(?: in \[(?P<low>[^,\]]+), (?P<high>[^,\]]+)\])?"
    r"(?:, (?P<required>required)| = (?P<default>[^:]+))?: (?P<help>.+)$"
)
_CONDITION = re.compile(r"^(?P<name>[a-z_]+) only with (?P<other>[a-z_]+) = (?P<value>\S+)$")
_COLUMN = re.compile(r"^column (?P<name>[A-Za-z0-9_]+|\{[a-z_]+\}): (?P<help>.+)$")
_NAMES = r"(?:\w+|\{[a-z_]+\})(?:, (?:\w+|\{[a-z_]+\}))*"
_CHART = re.compile(
    r"^chart: (?P<value>\w+)(?: \[(?P<low>\w+), (?P<high>\w+)\])?"
    rf"(?: by (?P<labels>{_NAMES}))?(?: per (?P<panels>{_NAMES}))?$"
)
NUMERIC = {"float": float, "integer": int}
# The datasets line of the queries of every declared dataset (sql/declared/).
DECLARED = "declared"
SCALES = ("binary", "nominal", "ordinal")
SQL_DIR_VARIABLE = "DICES_SQL_DIR"


class UnknownQueryError(UsageError):
    """There is no query of that name; `known` are the ones there are."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"there is no query {name!r}; choose from: {', '.join(known)}")
        self.name = name
        self.known = tuple(known)


class ParameterError(UsageError):
    """A value a query's parameter cannot take. `reason` says why without naming the
    parameter (`must be a number between 0 and 1 (got 2)`), so that the command line can
    put its own name for it in front."""

    def __init__(self, parameter: str, reason: str) -> None:
        super().__init__(f"parameter {parameter} {reason}")
        self.parameter = parameter
        self.reason = reason


class MissingParameterError(ParameterError):
    """A required parameter was not given."""

    def __init__(self, parameter: str) -> None:
        super().__init__(parameter, "is required")


class ConditionError(ParameterError):
    """A parameter was given although another does not have the value it needs."""

    def __init__(self, parameter: str, other: str, value: str) -> None:
        super().__init__(parameter, f"applies only when {other} is {value}")
        self.other = other
        self.value = value


def usage_error(error: ParameterError) -> UsageError:
    """A parameter's error as the caller says it, each parameter an `Option`: the command
    line says `--threshold must be ...`, the Python API `threshold must be ...`."""
    option = Option(error.parameter)
    if isinstance(error, ConditionError):
        return UsageError(option, " applies only with ", Option(error.other), f" {error.value}")
    if isinstance(error, MissingParameterError):
        return UsageError("this query needs ", option)
    return UsageError(option, f" {error.reason}")


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str | None
    required: bool
    help: str
    range: tuple[str, str] | None = None  # a numeric parameter's [low, high], as written

    @property
    def choices(self) -> tuple[str, ...]:
        if self.type == "columns":
            return GROUP_COLUMNS
        if self.type == "question":
            return tuple(answer_columns(DATASETS.values()))
        if self.type.startswith("choice("):
            return tuple(self.type[len("choice(") : -1].split("|"))
        return ()

    @property
    def range_text(self) -> str:
        """The range in words, e.g. "a number between 0 and 1"."""
        assert self.range is not None
        kind = "a whole number" if self.type == "integer" else "a number"
        return f"{kind} between {self.range[0]} and {self.range[1]}"

    def convert(self, raw: object) -> object:
        """The value to bind: from the CLI's value, or this parameter's default."""
        if raw is None or raw == []:
            if self.required:
                raise MissingParameterError(self.name)
            raw = [] if self.type in ("columns", "attributes") else self.default
        if self.type in NUMERIC:
            return self._number(raw)
        if self.type == "attributes":  # checked against the dataset's raters when run
            return [str(c) for c in raw] if isinstance(raw, list | tuple) else [str(raw)]
        if self.type == "label":  # None: the dataset's first label
            return None if raw is None else str(raw)
        if self.type == "columns":
            columns = list(raw) if isinstance(raw, list | tuple) else [str(raw)]
            unknown = [c for c in columns if c not in GROUP_COLUMNS]
            if unknown:
                raise ParameterError(
                    self.name,
                    f"names an unknown column {unknown[0]!r}; choose from: "
                    + ", ".join(GROUP_COLUMNS),
                )
            return columns
        if self.type == "question" and str(raw) not in self.choices:
            raise ParameterError(  # the list is long: point to it rather than print it
                self.name,
                f"names {raw!r}, not a No/Yes/Unsure answer column; the query's help lists them",
            )
        if str(raw) not in self.choices:
            raise ParameterError(
                self.name, f"must be one of: {', '.join(self.choices)} (got {raw!r})"
            )
        return str(raw)

    @property
    def bounds(self) -> tuple[float, float]:
        """The declared range as numbers of the parameter's type."""
        assert self.range is not None
        low, high = (NUMERIC[self.type](end) for end in self.range)
        return low, high

    def _number(self, raw: object) -> float:
        """A value inside the declared range, which is finite: NaN and infinity never are."""
        low, high = self.bounds
        try:
            value = NUMERIC[self.type](str(raw))
        except ValueError:  # not a number of this type
            value = math.nan
        if not low <= value <= high:  # False for NaN
            raise ParameterError(self.name, f"must be {self.range_text} (got {raw})")
        return value


@dataclass(frozen=True)
class Condition:
    """`parameter` may be given only when `other` is bound to `value`."""

    parameter: str
    other: str
    value: str


@dataclass(frozen=True)
class Column:
    """A column of a query's result; `name` `{by}` stands for the columns `by` names."""

    name: str
    help: str

    @property
    def group_parameter(self) -> str | None:
        return self.name[1:-1] if self.name.startswith("{") else None


@dataclass(frozen=True)
class Chart:
    """A bar chart of a result: one bar per row, as long as its `value`, with the interval
    from `low` to `high` when both are given, labelled by the `labels` columns' values, in
    one panel per value of the `panels` columns. `{NAME}` stands for the group columns of
    the `columns` parameter NAME until `resolved`."""

    value: str
    low: str | None = None
    high: str | None = None
    labels: tuple[str, ...] = ()
    panels: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """Every column the chart reads, as declared."""
        ends = [self.low, self.high] if self.low is not None and self.high is not None else []
        return [self.value, *ends, *self.labels, *self.panels]

    def resolved(self, parameters: Mapping[str, Any]) -> Chart:
        """The chart with each `{NAME}` replaced by the columns the bound `parameters` name."""
        return replace(
            self,
            labels=tuple(_expanded(self.labels, parameters)),
            panels=tuple(_expanded(self.panels, parameters)),
        )


def _expanded(names: Sequence[str], parameters: Mapping[str, Any]) -> list[str]:
    """`names` with each `{NAME}` replaced by the group columns parameter NAME is bound to,
    in GROUP_COLUMN_ORDER."""
    expanded: list[str] = []
    for name in names:
        if name.startswith("{"):
            expanded.extend(sorted(parameters[name[1:-1]], key=GROUP_COLUMN_ORDER.index))
        else:
            expanded.append(name)
    return expanded


@dataclass(frozen=True)
class Query:
    name: str
    summary: str
    explanation: str
    datasets: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    uses: tuple[str, str] | None  # (query name, CTE alias)
    compute: str | None  # "module:function" run on the SQL's result
    body: str
    path: Path
    columns: tuple[Column, ...] = ()
    conditions: tuple[Condition, ...] = ()
    chart: Chart | None = None
    answer: tuple[str, ...] = ()  # the declared columns that answer the query's question
    scales: tuple[str, ...] = SCALES  # a declared dataset's query: the scales it takes

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def bind(self, given: Mapping[str, object]) -> dict[str, Any]:
        """The value to bind for every parameter, from the values `given` by name (None or
        absent: not given, so the default). Refuses a value a condition does not allow."""
        bound = {p.name: p.convert(given.get(p.name)) for p in self.parameters}
        for condition in self.conditions:
            if given.get(condition.parameter) not in (None, []) and (
                bound[condition.other] != condition.value
            ):
                raise ConditionError(condition.parameter, condition.other, condition.value)
        return bound

    def output_columns(self, parameters: Mapping[str, Any]) -> list[str]:
        """The result's columns for the bound `parameters`, as the header declares them."""
        return _expanded([column.name for column in self.columns], parameters)

    def group_columns(self, parameters: dict[str, Any]) -> list[str]:
        """The rater columns the bound `parameters` break the result down by."""
        return [c for p in self.parameters if p.type == "columns" for c in parameters[p.name]]

    def expanded_answer(self, parameters: dict[str, Any]) -> list[str]:
        """The columns that answer the question, for the bound `parameters`."""
        return _expanded(self.answer, parameters)


def _header_lines(text: str) -> tuple[list[str], str]:
    lines = text.splitlines()
    header: list[str] = []
    for index, line in enumerate(lines):
        if not line.startswith("--"):
            return header, "\n".join(lines[index:])
        header.append(line[2:].strip() if not line.startswith("--   ") else "  " + line[5:])
    return header, ""


def parse_query(path: Path, text: str) -> Query:
    header, body = _header_lines(text)
    fields: dict[str, str] = {}
    parameters = []
    columns: list[Column] = []
    conditions: list[Condition] = []
    explanation: list[str] = []
    chart = None
    answer: tuple[str, ...] = ()
    in_explanation = False
    for line in header:
        if in_explanation and line.startswith("  "):
            explanation.append(line.strip())
            continue
        in_explanation = False
        if line.startswith("param "):
            match = _PARAM.match(line)
            if match is None:
                raise ValueError(f"{path.name}: malformed parameter line: {line}")
            parameters.append(_parameter(path, match))
        elif line.startswith("column "):
            column = _COLUMN.match(line)
            if column is None:
                raise ValueError(f"{path.name}: malformed column line: {line}")
            columns.append(Column(column["name"], column["help"]))
        elif line.startswith("condition:"):
            condition = _CONDITION.match(line.partition(":")[2].strip())
            if condition is None:
                raise ValueError(f"{path.name}: malformed condition line: {line}")
            conditions.append(Condition(condition["name"], condition["other"], condition["value"]))
        elif line.startswith("chart:"):
            chart = _chart(path, line)
        elif line.startswith("answer:"):
            answer = tuple(name.strip() for name in line.partition(":")[2].split(","))
        elif line.startswith("explanation:"):
            in_explanation = True
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    uses = None
    if "uses" in fields:
        base, _, alias = fields["uses"].partition(" AS ")
        uses = (base.strip(), alias.strip())
    query = Query(
        name=fields["name"],
        summary=fields["summary"],
        explanation=" ".join(explanation),
        datasets=tuple(fields.get("datasets", "350 990").split()),
        parameters=tuple(parameters),
        uses=uses,
        compute=fields.get("compute"),
        body=body.strip().rstrip(";"),
        path=path,
        columns=tuple(columns),
        conditions=tuple(conditions),
        chart=chart,
        answer=answer,
        scales=tuple(fields.get("scales", " ".join(SCALES)).split()),
    )
    _check_references(query)
    return query


def _check_references(query: Query) -> None:
    """Conditions and `{NAME}` columns name parameters the query has, of the right kind."""
    for condition in query.conditions:
        other = query.parameter(condition.other)
        if query.parameter(condition.parameter) is None or other is None:
            raise ValueError(f"{query.path.name}: condition names an unknown parameter")
        if condition.value not in other.choices:
            raise ValueError(
                f"{query.path.name}: condition: {condition.other} cannot be {condition.value}"
            )
    for column in query.columns:
        group = column.group_parameter
        kind = None if group is None else getattr(query.parameter(group), "type", None)
        if group is not None and kind not in ("columns", "attributes"):
            raise ValueError(f"{query.path.name}: column {column.name}: not a columns parameter")
    declared = {column.name for column in query.columns}
    for name in query.chart.names if query.chart is not None else []:
        if name not in declared:
            raise ValueError(f"{query.path.name}: chart: {name} is not a declared column")
    for name in query.answer:
        if name not in declared:
            raise ValueError(f"{query.path.name}: answer: {name} is not a declared column")
    for scale in query.scales:
        if scale not in SCALES:
            raise ValueError(f"{query.path.name}: scales: {scale} is not one of {SCALES}")


def _chart(path: Path, line: str) -> Chart:
    match = _CHART.match(line)
    if match is None:
        raise ValueError(
            f"{path.name}: malformed chart line (chart: VALUE [LOW, HIGH] by COLUMNS per COLUMNS)"
            f": {line}"
        )
    return Chart(
        match["value"],
        match["low"],
        match["high"],
        tuple(match["labels"].split(", ")) if match["labels"] else (),
        tuple(match["panels"].split(", ")) if match["panels"] else (),
    )


def _parameter(path: Path, match: re.Match[str]) -> Parameter:
    """A parameter from its header line; a numeric one must have a range holding its default."""
    bounds = (match["low"], match["high"]) if match["low"] is not None else None
    parameter = Parameter(
        match["name"],
        match["type"],
        match["default"],
        bool(match["required"]),
        match["help"],
        bounds,
    )
    if (parameter.type in NUMERIC) != (bounds is not None):
        raise ValueError(
            f"{path.name}: parameter {parameter.name}: a float or integer parameter, "
            "and only one, declares its range as `in [low, high]`"
        )
    if bounds is not None:
        try:
            low, high = parameter.bounds
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ValueError(f"[{low}, {high}] is not a finite range")
            if parameter.default is not None:
                parameter.convert(None)
        except (ValueError, ParameterError) as error:
            raise ValueError(
                f"{path.name}: parameter {parameter.name}: bad range or default: {error}"
            ) from None
    return parameter


def sql_directory() -> Path:
    """Where the canned queries are: $DICES_SQL_DIR if set, else the packaged directory
    (`own_sql.packaged_sql_directory()`)."""
    chosen = os.environ.get(SQL_DIR_VARIABLE)
    return Path(chosen) if chosen else packaged_sql_directory()


def catalog() -> dict[str, Query]:
    """Every canned query by name; files starting with `_` are shared preludes, not queries."""
    return _read_catalog(sql_directory())


@cache
def _read_catalog(directory: Path) -> dict[str, Query]:
    queries = {}
    for path in sorted(directory.glob("*.sql")):
        if path.name.startswith("_"):
            continue
        query = parse_query(path, path.read_text(encoding="utf-8"))
        queries[query.name] = query
    return queries


def family_queries(family: str) -> dict[str, Query]:
    """The canned queries written for a family other than DICES (`sql/FAMILY/NAME.sql`;
    a declared dataset's: `sql/declared/NAME.sql`, over the one model), by name: the same
    name as a DICES query where they mean the same."""
    from dices_cli.families import FAMILIES

    known = FAMILIES.get(family)
    declared = known is not None and known.declared is not None
    return _read_catalog(sql_directory() / (DECLARED if declared else family))


def declared_queries() -> dict[str, Query]:
    """The canned queries of every declared dataset (`sql/declared/NAME.sql`)."""
    return _read_catalog(sql_directory() / DECLARED)


def command_queries() -> dict[str, Query]:
    """Every query that is a `dices query` command: the DICES catalogue, then the queries
    that only another family has (by the name of the first family that has it).

    The declared families (after those of code of their own) all have the declared
    datasets' queries: their declarations are parsed only when no built-in one exists (a
    declaration file declares at least one dataset), so a query's run does not parse them."""
    from dices_cli.families import FAMILIES
    from dices_cli.families.registered import BUILT_IN

    commands = dict(catalog())
    for family in FAMILIES.coded():
        if family.name != "dices":
            for name, query in family_queries(family.name).items():
                commands.setdefault(name, query)
    if any(BUILT_IN.glob("*.toml")) or any(f.declared is not None for f in FAMILIES.values()):
        for name, query in declared_queries().items():
            commands.setdefault(name, query)
    return commands


def command_query(name: str) -> Query | None:
    """The query of the `dices query` command `name` (`command_queries`), or None: a DICES
    query without reading the other families' catalogues."""
    return catalog().get(name) or command_queries().get(name)


def get_query(name: str) -> Query:
    queries = catalog()
    if name not in queries:
        raise UnknownQueryError(name, sorted(queries))
    return queries[name]


def render_sql(query: Query) -> str:
    """The full statement: the query's body, with the query it uses as a CTE."""
    if query.uses is None:
        return query.body
    base, alias = query.uses
    # The query it uses is in its own folder: DICES's catalogue, or sql/declared/.
    inner = render_sql(_read_catalog(query.path.parent).get(base) or get_query(base))
    if query.body.upper().startswith("WITH "):
        return f"WITH {alias} AS ({inner}),\n{query.body[5:]}"
    return f"WITH {alias} AS ({inner})\n{query.body}"


def compute_step(query: Query) -> Callable[[pa.Table, dict[str, Any]], Table] | None:
    """The function the query's `compute:` header names, or None when it has none."""
    if query.compute is None:
        return None
    module, _, function = query.compute.partition(":")
    step: Callable[[pa.Table, dict[str, Any]], Table] = getattr(
        importlib.import_module(module), function
    )
    return step
