"""The canned queries: `.sql` files whose header comment names and documents them.

A header is the leading block of `--` comment lines:

    -- name: qoverall-by-demographic
    -- summary: Q_overall answers per demographic group, with a 95% Wilson interval.
    -- datasets: 350 990
    -- uses: gold-vs-crowd AS cells          (optional: another query as a CTE)
    -- param by: columns, required: Rater columns to group by; several intersect.
    -- param threshold: float in [0, 1] = 0.5: Share of Yes that makes the crowd say Yes.
    -- compute: dices_cli.metrics.compute:compute   (optional: a Python step after the SQL)
    -- explanation:
    --   Free text, as many lines as needed, until the header ends.

Parameter types: `columns` (a list of column names from the group-by choices), `question`
(one answer column, such as Q_overall), `float`, `integer`, `choice(a|b)`. Each parameter
is bound by name (`$threshold`), never pasted.

A `float` or `integer` parameter must declare its range, `in [low, high]` (both ends
included), and its default must lie in it; a value outside the range, and NaN or infinity,
is a usage error that names the range. The range is the parameter's one documented home:
`dices query NAME --explain` and the options' help show it.

A `columns` parameter names rater columns. A dataset that lacks one (DICES-350 has no
rater_locale) cannot be broken down by it: `missing_group_column` says so, and the engine
leaves that dataset out of `--dataset all` or refuses it when it is named.

`compute: module:function` names a function(pyarrow.Table, parameters) -> Table that turns
the SQL's result into the query's result, for what SQL cannot do well (permutation tests). The
SQL is given only the parameters it names; the function gets all of them.

Adding a query is adding a file.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import UsageError
from dices_cli.schema import DATASETS, Dataset, answer_columns

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

_PARAM = re.compile(
    r"^param (?P<name>[a-z_]+): (?P<type>columns|question|float|integer|choice\([a-z|]+\))"
    r"(?: in \[(?P<low>[^,\]]+), (?P<high>[^,\]]+)\])?"
    r"(?:, (?P<required>required)| = (?P<default>[^:]+))?: (?P<help>.+)$"
)
NUMERIC = {"float": float, "integer": int}


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str | None
    required: bool
    help: str
    range: tuple[str, str] | None = None  # a numeric parameter's [low, high], as written

    @property
    def option(self) -> str:
        return f"--{self.name.replace('_', '-')}"

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
                raise UsageError(f"this query needs {self.option}")
            raw = [] if self.type == "columns" else self.default
        if self.type in NUMERIC:
            return self._number(raw)
        if self.type == "columns":
            columns = list(raw) if isinstance(raw, list | tuple) else [str(raw)]
            unknown = [c for c in columns if c not in GROUP_COLUMNS]
            if unknown:
                raise UsageError(
                    f"unknown {self.option} column {unknown[0]!r}; choose from: "
                    + ", ".join(GROUP_COLUMNS)
                )
            return columns
        if self.type == "question" and str(raw) not in self.choices:
            raise UsageError(  # the list is long: point to it rather than print it
                f"unknown {self.option} {raw!r}: not a No/Yes/Unsure answer column; "
                "the query's --explain lists them"
            )
        if str(raw) not in self.choices:
            raise UsageError(
                f"{self.option} must be one of: {', '.join(self.choices)} (got {raw!r})"
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
            raise UsageError(f"{self.option} must be {self.range_text} (got {raw})")
        return value


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

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def group_columns(self, parameters: dict[str, Any]) -> list[str]:
        """The rater columns the bound `parameters` break the result down by."""
        return [c for p in self.parameters if p.type == "columns" for c in parameters[p.name]]


def missing_group_column(dataset: Dataset, columns: Sequence[str]) -> str | None:
    """Why `dataset` cannot be broken down by `columns` (it lacks one), or None if it can."""
    for column in columns:
        if column not in dataset.names:
            owners = " and ".join(d.title for d in DATASETS.values() if column in d.names)
            return f"{column} is a {owners} column; {dataset.title} has no {column}"
    return None


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
    explanation: list[str] = []
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
        elif line.startswith("explanation:"):
            in_explanation = True
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    uses = None
    if "uses" in fields:
        base, _, alias = fields["uses"].partition(" AS ")
        uses = (base.strip(), alias.strip())
    return Query(
        name=fields["name"],
        summary=fields["summary"],
        explanation=" ".join(explanation),
        datasets=tuple(fields.get("datasets", "350 990").split()),
        parameters=tuple(parameters),
        uses=uses,
        compute=fields.get("compute"),
        body=body.strip().rstrip(";"),
        path=path,
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
        except (ValueError, UsageError) as error:
            raise ValueError(
                f"{path.name}: parameter {parameter.name}: bad range or default: {error}"
            ) from None
    return parameter


def sql_directory() -> Path:
    """`dices_cli/sql` in an installed wheel; the repository's `sql/` in a source checkout."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "sql"
    return packaged if packaged.is_dir() else package.parent / "sql"


@cache
def catalog() -> dict[str, Query]:
    """Every canned query by name; files starting with `_` are shared preludes, not queries."""
    queries = {}
    for path in sorted(sql_directory().glob("*.sql")):
        if path.name.startswith("_"):
            continue
        query = parse_query(path, path.read_text(encoding="utf-8"))
        queries[query.name] = query
    return queries


def get_query(name: str) -> Query:
    queries = catalog()
    if name not in queries:
        raise UsageError(
            f"there is no query {name!r}; choose from: {', '.join(sorted(queries))} "
            "(`dices query --list` describes them)"
        )
    return queries[name]


def internal_sql(name: str) -> str:
    """An SQL file the code runs itself (sql/_NAME.sql), not a canned query."""
    return (sql_directory() / f"_{name}.sql").read_text(encoding="utf-8")


def prelude() -> str:
    """Macros every query may use (sql/_macros.sql)."""
    return internal_sql("macros")


def render_sql(query: Query) -> str:
    """The full statement: the query's body, with the query it uses as a CTE."""
    if query.uses is None:
        return query.body
    base, alias = query.uses
    inner = render_sql(get_query(base))
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
